"""A rate-limited HTTP handler with the Python client: two limits, one decision.

Each client (the X-Client-Id header) has two policies, decided together by
one `all_of` (RL.ALL: a request counts against both only when both allow
it):
- "burst": 3 at once, then one every 10 seconds (GCRA);
- "hourly": 3 per hour (an exact sliding log).
The decision maps onto the IETF rate-limit header fields
(draft-ietf-httpapi-ratelimit-headers-10): RateLimit-Policy lists the
policies, RateLimit reports the binding one, and a refusal is a 429 with
Retry-After.

When the (simulated) upstream work of an admitted request fails with a 5xx
(GET /fail), the handler answers 502 and gives the request's unit back to
both limits (a refund): the RateLimit header then shows the state after the
refund.

GET /login?account=...&password=... protects a login against guessing: 5
failed attempts in 15 minutes, per account and per client address, lock both
out for an hour (a take with block=3600). Only failures count; while locked,
every attempt is a 429 with Retry-After, the right password included.

    pip install ./clients/python
    REDIS_PORT=6379 python app.py      # serves, then calls itself 12 times
"""

import os
import threading
import urllib.error
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlsplit

import redis
from redis_ratelimit_client import RateLimits

r = redis.Redis(host=os.environ.get("REDIS_HOST", "127.0.0.1"), port=int(os.environ.get("REDIS_PORT", "6379")))
limits = RateLimits(r)

API = limits.all_of(
    limits.gcra(rate=1, per=10, burst=3, name="burst"),
    limits.sliding_log(limit=3, window=3600, name="hourly"),
)
COST = 1  # units a request takes, and what a refund gives back


def rate_limit(client_id, refund=False):
    """(blocked, headers) for one request of this client. With refund=True,
    gives the request's units back to every limit instead of taking them
    (never refused; the headers show the state after the refund)."""
    # One hash tag per client keeps its limiters in one Cluster slot.
    keys = [f"ratelimit:{{{client_id}}}:{limiter.name}" for limiter in API.limiters]
    decision = API.refund(keys, COST) if refund else API.take(keys, COST)
    return not decision.allowed, API.headers(decision)


# Failed logins: 5 in any 15 minutes per account and per address (exact
# sliding logs); the sixth blocks both for an hour.
LOGINS = limits.all_of(
    limits.sliding_log(limit=5, window=900, name="account"),
    limits.sliding_log(limit=5, window=900, name="address"),
)
LOGIN_BLOCK = 3600
PASSWORDS = {"alice-python": "correct horse"}  # the (simulated) user database


def login_limit(account, address, failed):
    """(blocked, headers) of a login attempt. failed=False only asks whether
    the account or the address is locked out (a query, which records
    nothing); failed=True counts a failed attempt, and the one that goes over
    the limit blocks the limits it exceeds for LOGIN_BLOCK seconds. (Keys of
    two slots: on a Redis Cluster, use two limiters, one per key, each with
    block.)"""
    keys = [f"login:account:{account}", f"login:address:{address}"]
    decision = LOGINS.take(keys, block=LOGIN_BLOCK) if failed else LOGINS.query(keys)
    return not decision.allowed, LOGINS.headers(decision)


def login(query, address):
    """Status and headers of GET /login?account=...&password=..."""
    params = parse_qs(query)
    account = params.get("account", [""])[0]
    password = params.get("password", [""])[0]
    blocked, headers = login_limit(account, address, failed=False)
    if blocked:
        return 429, headers
    if PASSWORDS.get(account) == password:
        return 200, {}
    blocked, headers = login_limit(account, address, failed=True)
    return (429 if blocked else 401), headers


class UpstreamError(Exception):
    """The upstream work failed with this 5xx status."""

    def __init__(self, status):
        super().__init__(status)
        self.status = status


def upstream(path):
    """The work behind the limiter (simulated): GET /fail fails with a 502."""
    if path == "/fail":
        raise UpstreamError(502)
    return b"ok\n"


class Handler(BaseHTTPRequestHandler):
    def do_GET(self):
        url = urlsplit(self.path)
        if url.path == "/login":
            address = self.headers.get("X-Forwarded-For", self.client_address[0])
            status, headers = login(url.query, address)
            body = b"ok\n" if status == 200 else b"denied\n"
            self.respond(status, headers, body)
            return
        client_id = self.headers.get("X-Client-Id", self.client_address[0])
        blocked, headers = rate_limit(client_id)
        if blocked:
            status, body = 429, b"too many requests\n"
        else:
            try:
                status, body = 200, upstream(self.path)
            except UpstreamError as failure:
                # The work was not done, so the client does not pay for it:
                # give its unit back. Refund only what this request took:
                # nothing ties a refund to the request, so refunding units
                # never taken would hand out free ones.
                _, headers = rate_limit(client_id, refund=True)
                status, body = failure.status, b"bad gateway\n"
        self.respond(status, headers, body)

    def respond(self, status, headers, body):
        self.send_response(status)
        for name, value in headers.items():
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


def main():
    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{server.server_address[1]}"
    for i, path in enumerate(["/", "/fail", "/", "/", "/"]):
        request = urllib.request.Request(url + path, headers={"X-Client-Id": "example-python"})
        try:
            response = urllib.request.urlopen(request)
        except urllib.error.HTTPError as error:
            response = error
        if i == 0:
            print(f"RateLimit-Policy: {response.headers['RateLimit-Policy']}")
        shown = " ".join(f"{n}: {response.headers[n]}" for n in ["RateLimit", "Retry-After"] if response.headers[n])
        # A 502: the upstream work failed and the handler refunded the unit.
        refunded = " (unit refunded)" if response.status == 502 else ""
        print(f"{response.status} {shown}{refunded}")
    # Six wrong passwords, then the right one: locked out all the same. The
    # account (one per example) and the address (as a proxy would pass it)
    # are this example's own.
    for password in ["guess"] * 6 + ["correct horse"]:
        request = urllib.request.Request(
            f"{url}/login?account=alice-python&password={password.replace(' ', '+')}",
            headers={"X-Forwarded-For": "203.0.113.1"},
        )
        try:
            response = urllib.request.urlopen(request)
        except urllib.error.HTTPError as error:
            response = error
        shown = " ".join(f"{n}: {response.headers[n]}" for n in ["RateLimit", "Retry-After"] if response.headers[n])
        print(f"login ({'right' if password != 'guess' else 'wrong'} password): {response.status} {shown}")
    server.shutdown()


if __name__ == "__main__":
    main()
