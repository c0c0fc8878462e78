"""Faults on real servers, each started by the test (only those are frozen
or killed): a frozen server (SIGSTOP), a killed one, one restarted on the
same port, a port that accepts and never answers, a dropped connection.
The deadline holds (the call ends within its timeout and 50 ms), the
failure policy holds (Unavailable, or a decision marked failed_open; the
middleware's 503 with Retry-After, or the app reached, marked), and the
first call once the server answers again succeeds.

Run with ``-s`` to see the times measured."""

from __future__ import annotations

import asyncio
import os
import signal
import time
from collections.abc import Callable, Iterator
from datetime import timedelta
from typing import Any

import httpx
import pytest
import redis.asyncio
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import PlainTextResponse
from starlette.routing import Route

from redis_ratelimit_client import AsyncRateLimits, Decision, Unavailable
from redis_ratelimit_client.asgi import RateLimitMiddleware

from .fake import CLOSE, BlackHole, FakeRedis
from .servers import Server, module, redis7

TIMEOUT_MS = 250
LATE_MS = 50  # the contract's bound on lateness
BOUND = (TIMEOUT_MS + LATE_MS) / 1000
DEADLINE = f"rate limiter unavailable: no answer within {TIMEOUT_MS} ms"


@pytest.fixture
def own_server() -> Iterator[Server]:
    """A server with the module, this test's alone."""
    server = Server(redis7(), "--loadmodule", module())
    try:
        yield server
    finally:
        try:
            os.kill(server.process.pid, signal.SIGCONT)
        except ProcessLookupError:
            pass
        server.stop()


def timed(call: Callable[[], Any]) -> tuple[Any, float]:
    """What ``call`` answered or raised, and the seconds it took."""
    start = time.perf_counter()
    try:
        result = call()
    except Exception as error:
        result = error
    return result, time.perf_counter() - start


def report(what: str, seconds: float) -> None:
    print(f"\n{what}: {seconds * 1000:.1f} ms")


def assert_failed_open(decision: Any) -> None:
    assert isinstance(decision, Decision)
    assert (decision.allowed, decision.failed_open, decision.remaining, decision.retry_after) == (True, True, 0, None)


def test_frozen_server(own_server: Server, connect: Callable[..., Any], mode: str) -> None:
    closed = connect(own_server.port)
    opened = connect(own_server.port, fail_open=True)
    for limits in (closed, opened):
        assert limits.gcra(rate=10, per=1).take("k").allowed  # connected, backend found
    os.kill(own_server.process.pid, signal.SIGSTOP)
    raised, seconds = timed(lambda: closed.gcra(rate=10, per=1).take("k"))
    assert isinstance(raised, Unavailable) and str(raised) == DEADLINE
    assert TIMEOUT_MS / 1000 <= seconds <= BOUND
    report(f"frozen, {mode}, to Unavailable", seconds)
    decision, seconds = timed(lambda: opened.gcra(rate=10, per=1).take("k"))
    assert_failed_open(decision)
    assert seconds <= BOUND
    # A new client finds the backend within the deadline too.
    fresh = connect(own_server.port)
    raised, seconds = timed(lambda: fresh.gcra(rate=10, per=1).take("k"))
    assert isinstance(raised, Unavailable) and str(raised) == DEADLINE and seconds <= BOUND
    os.kill(own_server.process.pid, signal.SIGCONT)
    # Thawed: the next call succeeds (the connections cut short were closed).
    assert closed.gcra(rate=10, per=1).take("after").remaining == 9


def test_killed_then_restarted(own_server: Server, connect: Callable[..., Any], mode: str) -> None:
    limits = connect(own_server.port)
    opened = connect(own_server.port, fail_open=True)
    api = limits.gcra(rate=1, per=3600, burst=5)
    assert api.take("k").remaining == 4
    assert opened.gcra(rate=1, per=3600, burst=5).take("o").remaining == 4
    own_server.process.kill()
    own_server.process.wait()
    raised, seconds = timed(lambda: api.take("k"))
    assert isinstance(raised, Unavailable)
    assert str(raised).startswith("rate limiter unavailable: Error 111 connecting to 127.0.0.1:")
    assert seconds <= BOUND
    report(f"killed, {mode}, to Unavailable", seconds)
    decision, seconds = timed(lambda: opened.gcra(rate=1, per=3600, burst=5).take("o"))
    assert_failed_open(decision)
    assert seconds <= BOUND
    # Started again on the same port (empty: no save): the first call once
    # it answers succeeds, with no backoff.
    restarted = Server(redis7(), "--loadmodule", module(), port=own_server.port)
    try:
        decision, seconds = timed(lambda: api.take("k"))
        assert isinstance(decision, Decision) and decision.remaining == 4
        report(f"restarted, {mode}, the first call", seconds)
        assert seconds <= BOUND
    finally:
        restarted.stop()


def test_black_hole(connect: Callable[..., Any], mode: str) -> None:
    with BlackHole() as hole:
        limits = connect(hole.port)
        raised, seconds = timed(lambda: limits.gcra(rate=10, per=1).take("k"))
        assert isinstance(raised, Unavailable) and str(raised) == DEADLINE
        assert TIMEOUT_MS / 1000 <= seconds <= BOUND
        report(f"black hole, {mode}, to Unavailable", seconds)
        decision, seconds = timed(lambda: connect(hole.port, fail_open=True).gcra(rate=10, per=1).take("k", 2))
        assert_failed_open(decision)
        assert decision.granted == 2 and seconds <= BOUND


def test_dropped_connection(own_server: Server, connect: Callable[..., Any]) -> None:
    """CLIENT KILL of the limiter's idle connections: the next call sees the
    closed socket before sending, and succeeds on a new connection."""
    limits = connect(own_server.port)
    api = limits.gcra(rate=1, per=3600, burst=5)
    assert api.take("k").remaining == 4
    admin = own_server.client()
    killed = admin.client_kill_filter(_type="normal", skipme=True)
    assert killed >= 1
    deadline = time.monotonic() + 5
    while len(admin.client_list(_type="normal")) > 1:  # the kills take effect
        assert time.monotonic() < deadline
        time.sleep(0.005)
    assert api.take("k").remaining == 3


def test_connection_closed_while_waiting(connect: Callable[..., Any]) -> None:
    """The server closes the connection instead of answering: Unavailable at
    once, and the call is not sent again (it may have run)."""
    with FakeRedis(lambda args: CLOSE) as fake:
        limits = connect(fake.port, backend="module")
        raised, seconds = timed(lambda: limits.gcra(rate=10, per=1).take("k"))
        assert isinstance(raised, Unavailable) and str(raised).startswith("rate limiter unavailable: ")
        assert seconds <= BOUND
        assert len(fake.commands) == 1


# -- the middleware --------------------------------------------------------------


async def get(port: int, fail_open: bool | None) -> tuple[httpx.Response, list[Any], float]:
    """One request through the middleware (in-process: the time is the
    limiter's), its start-up check already done."""
    client = redis.asyncio.Redis(host="127.0.0.1", port=port)
    limits = AsyncRateLimits(client, timeout=timedelta(milliseconds=TIMEOUT_MS))
    marks: list[Any] = []

    async def home(request: Request) -> PlainTextResponse:
        marks.append(request.state.rate_limit)
        return PlainTextResponse("ok")

    middleware = RateLimitMiddleware(
        Starlette(routes=[Route("/", home)]),
        limiter=limits.gcra(rate=10, per=1, name="api"),
        key=lambda scope: "client",
        fail_open=fail_open,
    )
    middleware._guard.checked = True  # as after the lifespan's start
    try:
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=middleware), base_url="http://test") as http:
            start = time.perf_counter()
            response = await http.get("/")
            return response, marks, time.perf_counter() - start
    finally:
        await limits.aclose()
        await client.aclose()


@pytest.mark.parametrize("fail_open", [False, True], ids=["fail closed", "fail open"])
def test_middleware_with_a_frozen_server(own_server: Server, fail_open: bool) -> None:
    redis.Redis(port=own_server.port).ping()
    os.kill(own_server.process.pid, signal.SIGSTOP)
    response, marks, seconds = asyncio.run(get(own_server.port, fail_open))
    os.kill(own_server.process.pid, signal.SIGCONT)
    assert seconds <= BOUND
    report(f"frozen, middleware, {'fail open' if fail_open else 'fail closed'}", seconds)
    if fail_open:
        assert (response.status_code, response.text) == (200, "ok")
        assert_failed_open(marks[0])
        assert "RateLimit" not in response.headers
    else:
        assert (response.status_code, response.text) == (503, "rate limiter unavailable\n")
        assert response.headers["Retry-After"] == "1"
        assert marks == []
    # Thawed: the next request is decided by the server.
    response, marks, _ = asyncio.run(get(own_server.port, fail_open))
    assert response.status_code == 200 and marks[0].failed_open is False
    assert response.headers["RateLimit"] == '"api";r=9;t=1'
