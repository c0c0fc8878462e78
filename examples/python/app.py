"""A rate-limited HTTP handler with redis-py and RL.GCRA.

Each client (the X-Client-Id header) may make 3 requests at once, then one
every 20 seconds (3 per minute). The limiter's reply maps onto HTTP: 429 and
Retry-After when refused, RateLimit-* headers always.

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


def rate_limit(client_id):
    """(status, headers) for one request of this client."""
    blocked, limit, remaining, retry_after, reset = r.execute_command(
        "RL.GCRA", f"ratelimit:{client_id}", 2, 3, 60  # max_burst 2, 3 per 60 s
    )
    headers = {
        "RateLimit-Limit": str(limit),
        "RateLimit-Remaining": str(remaining),
        "RateLimit-Reset": str(reset),
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
    for _ in range(4):
        request = urllib.request.Request(url, headers={"X-Client-Id": "example-python"})
        try:
            response = urllib.request.urlopen(request)
        except urllib.error.HTTPError as refused:
            response = refused
        names = ["RateLimit-Limit", "RateLimit-Remaining", "RateLimit-Reset", "Retry-After"]
        shown = " ".join(f"{n}={response.headers[n]}" for n in names if response.headers[n] is not None)
        print(f"{response.status} {shown}")
    server.shutdown()


if __name__ == "__main__":
    main()
