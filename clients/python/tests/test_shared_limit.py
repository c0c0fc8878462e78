"""Services in two languages share one limit: the Python middleware
(clients/contract/apps/app.py) and the Node.js one (app.js, Express and
ioredis) on one server, each limiting GET / by X-Client-Id with a limit
named "api" (GCRA, 5 a minute in bursts of 5). Five requests pass in all,
whichever service gets them; the sixth is refused by either; the keys are
the contract's layout."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from .conftest import Servers, reset

APPS = Path(__file__).resolve().parents[2] / "contract" / "apps"
NODE_CLIENT = APPS.parents[1] / "node"


class App:
    """An app of clients/contract/apps, started with PORT=0; its port read
    from its "listening <port>" line."""

    def __init__(self, command: list[str], redis_port: int) -> None:
        env = {**os.environ, "PORT": "0", "REDIS_PORT": str(redis_port)}
        self.process = subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        lines: list[str] = []
        reader = threading.Thread(target=self._read, args=(lines,), daemon=True)
        reader.start()
        reader.join(30)
        if not lines or not lines[-1].startswith("listening "):
            self.stop()
            raise RuntimeError(f"{' '.join(command)} did not start:\n{''.join(lines)}")
        self.url = f"http://127.0.0.1:{int(lines[-1].split()[1])}"

    def _read(self, lines: list[str]) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            lines.append(line)
            if line.startswith("listening "):
                return

    def stop(self) -> None:
        self.process.kill()
        self.process.wait()


def node_ready() -> str | None:
    """Why app.js cannot run here, or None."""
    if shutil.which("node") is None:
        return "no node on PATH (.ci/client-python installs it)"
    if not (NODE_CLIENT / "node_modules" / "ioredis").is_dir():
        return "clients/node has no node_modules (npm ci there; .ci/client-python does)"
    return None


@pytest.fixture
def apps(servers: Servers) -> Iterator[tuple[str, str, object]]:
    reason = node_ready()
    if reason:
        pytest.skip(reason)
    server = servers.get("module")
    reset(server)
    python_app = App([sys.executable, str(APPS / "app.py")], server.port)
    try:
        node_app = App(["node", str(APPS / "app.js")], server.port)
        try:
            yield python_app.url, node_app.url, server
        finally:
            node_app.stop()
    finally:
        python_app.stop()


@pytest.mark.parametrize("order", ["python first", "node first"])
def test_one_limit_across_python_and_node(apps: tuple[str, str, object], order: str) -> None:
    python_url, node_url, server = apps
    urls = [python_url, node_url] if order == "python first" else [node_url, python_url]
    statuses = []
    with httpx.Client(headers={"X-Client-Id": "alice"}, timeout=10) as http:
        for i in range(7):
            statuses.append(http.get(urls[i % 2] + "/").status_code)
        other = http.get(urls[1] + "/", headers={"X-Client-Id": "bob"})
    # Five in all pass; the sixth and seventh are refused, one by each service.
    assert statuses == [200] * 5 + [429, 429]
    assert other.status_code == 200
    keys = sorted(server.client().keys("*"))  # type: ignore[attr-defined]
    assert keys == [b"ratelimit:{alice}:api", b"ratelimit:{bob}:api"]


def test_the_apps_answer_alike(apps: tuple[str, str, object]) -> None:
    """The same refusal, headers included, from either service."""
    python_url, node_url, _ = apps
    with httpx.Client(headers={"X-Client-Id": "carol"}, timeout=10) as http:
        for _ in range(5):
            assert http.get(python_url + "/").status_code == 200
        refused = [http.get(url + "/") for url in (python_url, node_url)]
    assert [r.status_code for r in refused] == [429, 429]
    for response in refused:
        assert response.headers["RateLimit-Policy"] == '"api";q=5;w=60'
        assert response.headers["RateLimit"] == '"api";r=0;t=60'
        # 12 s per unit: the next unit is due within 12 s of the fifth.
        assert 1 <= int(response.headers["Retry-After"]) <= 12
