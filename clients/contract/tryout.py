"""Put the four contract apps (apps/) through what a production service
meets, against one server, and print what each answered and how soon.

    python3 clients/contract/tryout.py

Needs: a redis-server (RL_SERVER_BIN, default on PATH) and the module
(RL_MODULE, default target/release/libredis_ratelimit.so); a Python with the
Python client and FastAPI (RL_PYTHON, default target/client-python-venv's,
as .ci/client-python makes it); Node.js with clients/node's packages
installed (npm ci there); the Rust app (RL_RUST_APP, default
target/debug/examples/contract_app: cargo build -p redis-ratelimit-client
--example contract_app). Every process it starts, it stops.

What it does, in order:
1. the same client (X-Client-Id) sends 3 requests through each service in
   turn, the limit being 5: which pass, and which keys Redis holds;
2. the server frozen (SIGSTOP), the apps failing open: one request each;
3. the same, the apps failing closed;
4. the server killed: one request each;
5. the server started again on its port: each app's first request;
6. a sliding log of 20,000 (the server's default cap is 10,000): does each
   app start, and with what words does it stop.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
WAIT = 10.0  # the longest a request is given: past it, "no answer"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Server:
    """A redis-server with the module, on a port it keeps across restarts."""

    def __init__(self) -> None:
        self.binary = os.environ.get("RL_SERVER_BIN") or shutil.which("redis-server") or "redis-server"
        self.module = os.environ.get("RL_MODULE") or str(ROOT / "target" / "release" / "libredis_ratelimit.so")
        self.port = free_port()
        self.dir = tempfile.mkdtemp(prefix="rl-tryout-")
        self.process: subprocess.Popen[bytes] | None = None
        self.start()

    def start(self) -> None:
        args = [self.binary, "--port", str(self.port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"]
        args += ["--dir", self.dir, "--loadmodule", self.module]
        self.process = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 10
        while self.command("PING") != "PONG":
            if time.monotonic() > deadline:
                raise RuntimeError(f"{self.binary} did not start on port {self.port}")
            time.sleep(0.02)

    def command(self, *args: str) -> str:
        cli = shutil.which("redis-cli") or "redis-cli"
        done = subprocess.run([cli, "-p", str(self.port), *args], capture_output=True, text=True, timeout=5)
        return done.stdout.strip()

    def signal(self, sig: int) -> None:
        assert self.process is not None
        self.process.send_signal(sig)

    def kill(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(signal.SIGCONT)
            self.process.kill()
            self.process.wait()

    def stop(self) -> None:
        self.kill()
        shutil.rmtree(self.dir, ignore_errors=True)


SERVICES = [
    ("Python (FastAPI, redis-py)", "python", {}),
    ("Node.js (Express, ioredis)", "node", {}),
    ("Node.js (Express, node-redis)", "node", {"RL_REDIS_CLIENT": "node-redis"}),
    ("Rust (axum, redis::Client)", "rust", {}),
]


def command_of(kind: str) -> list[str]:
    if kind == "python":
        python = os.environ.get("RL_PYTHON") or str(ROOT / "target" / "client-python-venv" / "bin" / "python")
        return [python, str(HERE / "apps" / "app.py")]
    if kind == "node":
        return ["node", str(HERE / "apps" / "app.js")]
    return [os.environ.get("RL_RUST_APP") or str(ROOT / "target" / "debug" / "examples" / "contract_app")]


class App:
    """One app, started; `port` once it listens, else `exit` and `said`."""

    def __init__(self, kind: str, extra: dict[str, str], redis_port: int, **env: str) -> None:
        environment = {**os.environ, **extra, **env, "PORT": "0", "REDIS_PORT": str(redis_port)}
        self.log = tempfile.TemporaryFile()
        started = time.monotonic()
        self.process = subprocess.Popen(
            command_of(kind), env=environment, stdout=subprocess.PIPE, stderr=self.log, cwd=ROOT
        )
        assert self.process.stdout is not None
        line = self.process.stdout.readline().decode()
        self.seconds = time.monotonic() - started
        self.port = int(line.split()[1]) if line.startswith("listening ") else None
        if self.port is None:
            self.process.wait(timeout=WAIT)
        self.exit = self.process.returncode

    def said(self) -> str:
        """The first line of its standard error that gives the server's words."""
        self.log.seek(0)
        lines = self.log.read().decode(errors="replace").splitlines()
        words = [line for line in lines if "limit must be" in line]
        return (words or lines or [""])[0].strip()

    def get(self, client: str = "tryout") -> tuple[str, float, dict[str, str]]:
        request = urllib.request.Request(f"http://127.0.0.1:{self.port}/", headers={"X-Client-Id": client})
        started = time.monotonic()
        try:
            with urllib.request.urlopen(request, timeout=WAIT) as response:
                status, headers = str(response.status), dict(response.headers)
        except urllib.error.HTTPError as error:
            status, headers = str(error.code), dict(error.headers)
        except OSError as error:
            status, headers = f"no answer ({type(error).__name__})", {}
        return status, (time.monotonic() - started) * 1000, {k.lower(): v for k, v in headers.items()}

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        self.log.close()


def start_all(server: Server, **env: str) -> list[App]:
    apps = [App(kind, extra, server.port, **env) for _, kind, extra in SERVICES]
    for (name, _, _), app in zip(SERVICES, apps):
        if app.port is None:
            raise RuntimeError(f"{name} did not start: {app.said()}")
    return apps


def answer(status: str, ms: float, headers: dict[str, str]) -> str:
    extra = ""
    if status in ("429", "503") and "retry-after" in headers:
        extra = f", Retry-After {headers['retry-after']}"
    return f"{status} after {ms:.0f} ms{extra}"


def main() -> int:
    server = Server()
    rows: list[tuple[str, list[str]]] = []
    apps: list[App] = []
    try:
        # 1. One client through every service, 3 requests each, a limit of 5.
        apps = start_all(server)
        statuses: list[list[str]] = [[] for _ in apps]
        for _ in range(3):
            for i, app in enumerate(apps):
                statuses[i].append(app.get()[0])
        keys = server.command("KEYS", "*").split()
        rows.append(
            ("the same client id, 3 requests through each service in turn, limit 5", [" ".join(s) for s in statuses])
        )
        rows.append(("keys in Redis after it", [", ".join(f"`{k}`" for k in keys)] * len(apps)))
        closed = apps

        # 2. Frozen, failing open; 3. frozen, failing closed.
        opened = start_all(server, RL_FAIL_OPEN="1")
        apps = closed + opened
        server.signal(signal.SIGSTOP)
        rows.append(("server frozen (SIGSTOP), failing open", [answer(*app.get("frozen")) for app in opened]))
        rows.append(("server frozen (SIGSTOP), failing closed", [answer(*app.get("frozen")) for app in closed]))
        server.signal(signal.SIGCONT)
        for app in opened:
            app.stop()
        apps = closed

        # 4. Killed; 5. back on its port.
        server.kill()
        rows.append(("server killed, failing closed", [answer(*app.get("killed")) for app in closed]))
        time.sleep(1)  # down for a while, as a restart is
        server.start()
        rows.append(("server back after a restart: the first request", [answer(*app.get("back")) for app in closed]))

        # 6. A limit the server refuses.
        server.command("FLUSHALL")
        refused = []
        for _, kind, extra in SERVICES:
            app = App(kind, extra, server.port, RL_LIMIT="sliding_log:20000")
            if app.port is None:
                refused.append(f"start fails (exit {app.exit}, {app.seconds:.1f} s): {app.said()}")
            else:
                refused.append(f"starts; then {app.get()[0]}")
            app.stop()
        rows.append(("`sliding_log(limit=20000)` (the server's cap is 10,000)", refused))
    finally:
        for app in apps:
            app.stop()
        server.stop()

    print("| what was done | " + " | ".join(name for name, _, _ in SERVICES) + " |")
    print("|---" * (len(SERVICES) + 1) + "|")
    for what, cells in rows:
        print(f"| {what} | " + " | ".join(cells) + " |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
