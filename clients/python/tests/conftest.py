"""Fixtures: servers per backend, and the sync and async clients behind one
blocking interface, so that every behaviour test runs on every backend with
both clients and asserts the same values."""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Callable, Iterator
from typing import Any

import pytest
import redis
import redis.asyncio

import redis_ratelimit_client as rl

from .servers import Cluster, Server, module, redis6, redis7

# -- servers, one of each kind per session ------------------------------------


class Servers:
    """Started on first use, stopped at the end of the session."""

    def __init__(self) -> None:
        self._started: dict[str, Any] = {}

    def get(self, name: str) -> Any:
        if name not in self._started:
            self._started[name] = self._start(name)
        return self._started[name]

    def _start(self, name: str) -> Any:
        if name == "module":  # Redis 7 with the module
            return Server(redis7(), "--loadmodule", module())
        if name == "functions":  # Redis 7 without the module
            return Server(redis7())
        if name == "redis6":  # no Functions: the scripts
            return Server(redis6())
        if name == "evalonly":  # Redis 7 that denies FUNCTION, as some services do
            return Server(redis7(), "--rename-command", "FUNCTION", '""')
        if name == "cluster-module":
            return Cluster(redis7(), "--loadmodule", module())
        if name == "cluster-functions":
            return Cluster(redis7())
        if name == "cluster-evalonly":
            return Cluster(redis7(), "--rename-command", "FUNCTION", '""')
        raise KeyError(name)

    def stop(self) -> None:
        for server in self._started.values():
            server.stop()


@pytest.fixture(scope="session")
def servers() -> Iterator[Servers]:
    started = Servers()
    yield started
    started.stop()


def reset(server: Server) -> None:
    """No keys, no functions, no scripts: each test finds the backend anew."""
    admin = server.client()
    admin.flushall()
    try:
        admin.execute_command("FUNCTION", "FLUSH")
    except redis.ResponseError:
        pass  # Redis 6, or FUNCTION renamed away
    admin.script_flush()


# The backends, and the server each is found on.
BACKEND_SERVER = {"module": "module", "functions": "functions", "scripts": "redis6"}


@pytest.fixture(params=["module", "functions", "scripts"])
def backend(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def server(servers: Servers, backend: str) -> Server:
    found: Server = servers.get(BACKEND_SERVER[backend])
    reset(found)
    return found


# -- the async client behind a blocking interface ------------------------------

ASYNC_TYPES = (rl.AsyncRateLimits, rl.AsyncLimiter, rl.AsyncAllOf, rl.AsyncConcurrency, rl.AsyncLease)


class Blocking:
    """Calls an async client's methods and runs what they return to
    completion on the test's loop, so that one test body drives both
    clients. ``async with`` becomes ``with``."""

    def __init__(self, target: Any, loop: asyncio.AbstractEventLoop) -> None:
        self._target = target
        self._loop = loop

    def _wrap(self, value: Any) -> Any:
        return Blocking(value, self._loop) if isinstance(value, ASYNC_TYPES) else value

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self._target, name)
        if not callable(attr):
            return self._wrap(attr)

        def call(*args: Any, **kwargs: Any) -> Any:
            args = tuple(a._target if isinstance(a, Blocking) else a for a in args)
            result = attr(*args, **kwargs)
            if inspect.isawaitable(result):
                result = self._loop.run_until_complete(result)
            return self._wrap(result)

        return call

    def __enter__(self) -> Any:
        return self._wrap(self._loop.run_until_complete(self._target.__aenter__()))

    def __exit__(self, *exc: Any) -> None:
        self._loop.run_until_complete(self._target.__aexit__(*exc))

    def __repr__(self) -> str:
        return f"Blocking({self._target!r})"


@pytest.fixture(params=["sync", "async"])
def mode(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def connect(mode: str) -> Iterator[Callable[..., Any]]:
    """connect(port, cluster=False, redis_options={...}, **RateLimits
    options) -> a RateLimits, sync or async (behind Blocking); closed, with
    its redis-py client, at the end of the test."""
    loop = asyncio.new_event_loop()
    made: list[tuple[Any, Any]] = []

    def make(port: int, *, cluster: bool = False, redis_options: dict[str, Any] | None = None, **options: Any) -> Any:
        kw = redis_options or {}
        if mode == "sync":
            sync_client = (
                redis.cluster.RedisCluster(host="127.0.0.1", port=port, **kw)
                if cluster
                else redis.Redis(host="127.0.0.1", port=port, **kw)
            )
            sync_limits = rl.RateLimits(sync_client, **options)
            made.append((sync_client, sync_limits))
            return sync_limits
        if cluster:
            async_client: Any = redis.asyncio.cluster.RedisCluster(host="127.0.0.1", port=port, **kw)
        else:
            async_client = redis.asyncio.Redis(host="127.0.0.1", port=port, **kw)
        async_limits = rl.AsyncRateLimits(async_client, **options)
        made.append((async_client, async_limits))
        return Blocking(async_limits, loop)

    yield make
    for client, limits in made:
        if mode == "sync":
            limits.close()
            client.close()
        else:
            loop.run_until_complete(limits.aclose())
            loop.run_until_complete(client.aclose())
    loop.close()


@pytest.fixture
def limits(server: Server, connect: Callable[..., Any]) -> Any:
    """A RateLimits (sync or async) on the backend's server."""
    return connect(server.port)
