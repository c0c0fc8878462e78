"""Serve one quick-start app (examples/python/quickstart.py,
examples/node/quickstart.js, clients/rust/examples/quickstart.rs) and check
its answers: the first request passes with its RateLimit headers, and a
burst past the limit's 20 gets a 429 with Retry-After. Used by .ci/examples.

    python3 examples/quickstart_check.py REDIS_PORT NAME -- command to serve it...

The command gets PORT and REDIS_URL in its environment.
"""

import os
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def get(port: int) -> tuple[int, dict[str, str]]:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=5) as response:
            return response.status, {k.lower(): v for k, v in response.headers.items()}
    except urllib.error.HTTPError as error:
        return error.code, {k.lower(): v for k, v in error.headers.items()}


def main() -> int:
    redis_port, name, command = sys.argv[1], sys.argv[2], sys.argv[4:]
    assert sys.argv[3] == "--", "usage: quickstart_check.py REDIS_PORT NAME -- command..."
    port = free_port()
    env = {**os.environ, "PORT": str(port), "REDIS_URL": f"redis://127.0.0.1:{redis_port}"}
    app = subprocess.Popen(command, env=env)
    try:
        deadline = time.monotonic() + 300  # a first build of the Rust example included
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                if app.poll() is not None:
                    print(f"quick start {name}: exited with {app.returncode} before serving", file=sys.stderr)
                    return 1
                if time.monotonic() > deadline:
                    print(f"quick start {name}: not serving after 300 s", file=sys.stderr)
                    return 1
                time.sleep(0.1)
        first = get(port)
        want = (200, '"api";q=20;w=2', '"api";r=19;t=1')
        got = (first[0], first[1].get("ratelimit-policy"), first[1].get("ratelimit"))
        if got != want:
            print(f"quick start {name}: the first request answered {got}, not {want}", file=sys.stderr)
            return 1
        # 20 at once, then one per 100 ms: a burst of requests meets a 429
        # unless each took 100 ms.
        for sent in range(2, 200):
            status, headers = get(port)
            if status == 429:
                got = (headers.get("retry-after"), headers.get("ratelimit"))
                if got != ("1", '"api";r=0;t=2'):
                    print(f"quick start {name}: the 429 carried {got}", file=sys.stderr)
                    return 1
                print(f"quick start {name}: 200 with its RateLimit headers, then 429 at request {sent}")
                return 0
            if status != 200:
                print(f"quick start {name}: request {sent} answered {status}", file=sys.stderr)
                return 1
        print(f"quick start {name}: 200 requests and no 429", file=sys.stderr)
        return 1
    finally:
        app.terminate()
        try:
            app.wait(timeout=10)
        except subprocess.TimeoutExpired:
            app.kill()
            app.wait()


if __name__ == "__main__":
    sys.exit(main())
