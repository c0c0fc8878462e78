"""A rate-limited HTTP handler with redis-py and RL.ALL: two limits, one decision.

Each client (the X-Client-Id header) has two policies, decided together by
one RL.ALL call (a request counts against both only when both allow it):
- "burst": 3 at once, then one every 10 seconds (GCRA);
- "hourly": 3 per hour (an exact sliding log).
The reply maps onto the IETF rate-limit header fields
(draft-ietf-httpapi-ratelimit-headers-10): RateLimit-Policy lists the
policies, RateLimit reports the binding one, and a refusal is a 429 with
Retry-After.

    pip install redis
    REDIS_PORT=6379 python app.py      # serves, then calls itself 4 times
"""

import os
import threading
import urllib.error
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import redis

r = redis.Redis(host=os.environ.get("REDIS_HOST", "127.0.0.1"), port=int(os.environ.get("REDIS_PORT", "6379")))

# (name, algorithm and parameters, quota, window in seconds)
POLICIES = [
    ("burst", ["GCRA", 2, 1, 10], 3, 30),
    ("hourly", ["SLIDING_LOG", 3, 3600], 3, 3600),
]
POLICY_HEADER = ", ".join(f'"{name}";q={quota};w={window}' for name, _, quota, window in POLICIES)


def rate_limit(client_id):
    """(status, headers) for one request of this client."""
    # One hash tag per client keeps its limiters in one Cluster slot.
    keys = [f"ratelimit:{{{client_id}}}:{name}" for name, _, _, _ in POLICIES]
    specs = [arg for _, spec, _, _ in POLICIES for arg in spec]
    blocked, _limit, remaining, retry_after, reset, position = r.execute_command(
        "RL.ALL", len(keys), *keys, *specs
    )
    binding = POLICIES[position - 1][0]
    headers = {
        "RateLimit-Policy": POLICY_HEADER,
        "RateLimit": f'"{binding}";r={remaining};t={reset}',
    }
    if blocked:
        headers["Retry-After"] = str(retry_after)
        return 429, headers
    return 200, headers


class Handler(BaseHTTPRequestHandler):
    def do_GET(self):
        status, headers = rate_limit(self.headers.get("X-Client-Id", self.client_address[0]))
        body = b"ok\n" if status == 200 else b"too many requests\n"
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
    url = f"http://127.0.0.1:{server.server_address[1]}/"
    for i in range(4):
        request = urllib.request.Request(url, headers={"X-Client-Id": "example-python"})
        try:
            response = urllib.request.urlopen(request)
        except urllib.error.HTTPError as refused:
            response = refused
        if i == 0:
            print(f"RateLimit-Policy: {response.headers['RateLimit-Policy']}")
        shown = " ".join(f"{n}: {response.headers[n]}" for n in ["RateLimit", "Retry-After"] if response.headers[n])
        print(f"{response.status} {shown}")
    server.shutdown()


if __name__ == "__main__":
    main()
