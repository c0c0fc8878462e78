"""The backend search (SPEC 18), counted on the server: the module where it
is loaded; the functions library when it answers this client's version,
loaded by the client otherwise; the scripts where Functions are missing or
denied. What the server lost (a FUNCTION FLUSH, a SCRIPT FLUSH) is loaded
again and the call sent once more, once."""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

import pytest
import redis

from redis_ratelimit_client import RateLimitError, ServerError, __version__
from redis_ratelimit_client._backend import library

from .conftest import Servers, reset
from .servers import Server

HOUR = 3_600_000


def calls(server: Server, command: str) -> int:
    """Calls of a command (``function|load``...) since the last reset,
    refused ones included."""
    stats = server.client().info("commandstats").get(f"cmdstat_{command}", {})
    return int(stats.get("calls", 0)) + int(stats.get("rejected_calls", 0))


def fresh(servers: Servers, name: str) -> Server:
    server: Server = servers.get(name)
    reset(server)
    server.client().config_resetstat()
    return server


def library_version(server: Server) -> str:
    return server.client().execute_command("FCALL", "rl_version", 0).decode()


def test_module_found_once(servers: Servers, connect: Callable[..., Any]) -> None:
    server = fresh(servers, "module")
    limits = connect(server.port)
    api = limits.gcra(rate=1, per=3600, burst=3)
    assert [api.take("k").remaining for _ in range(3)] == [2, 1, 0]
    assert limits.backend() == "module"
    # One probe (RL.GCRA without arguments: the arity error), then the calls.
    assert calls(server, "rl.gcra") == 4
    assert calls(server, "fcall") == 0 and calls(server, "function|load") == 0


def test_functions_already_loaded(servers: Servers, connect: Callable[..., Any]) -> None:
    server = fresh(servers, "functions")
    server.client().execute_command("FUNCTION", "LOAD", library())
    server.client().config_resetstat()
    limits = connect(server.port)
    api = limits.gcra(rate=1, per=3600, burst=3)
    assert api.take("k").raw == (0, 3, 2, -1, HOUR)
    assert limits.backend() == "functions"
    assert calls(server, "function|load") == 0
    assert calls(server, "fcall") == 2  # rl_version, then rl_gcra


def test_functions_loaded_by_the_client(servers: Servers, connect: Callable[..., Any]) -> None:
    server = fresh(servers, "functions")
    limits = connect(server.port)
    assert limits.backend() == "functions"
    assert calls(server, "function|load") == 1
    assert library_version(server) == __version__
    assert limits.gcra(rate=1, per=3600, burst=3).take("k").raw == (0, 3, 2, -1, HOUR)


def test_another_version_is_replaced(servers: Servers, connect: Callable[..., Any]) -> None:
    server = fresh(servers, "functions")
    older = "#!lua name=ratelimit\nredis.register_function('rl_version', function() return '0.0.1' end)"
    server.client().execute_command("FUNCTION", "LOAD", older)
    limits = connect(server.port)
    assert limits.backend() == "functions"
    assert library_version(server) == __version__


def test_library_lost_is_reloaded_once(servers: Servers, connect: Callable[..., Any]) -> None:
    server = fresh(servers, "functions")
    limits = connect(server.port)
    api = limits.gcra(rate=1, per=3600, burst=3)
    assert api.take("k").remaining == 2
    server.client().execute_command("FUNCTION", "FLUSH")  # as a failover to a replica without it
    assert api.take("k").remaining == 1  # reloaded, sent once more, counted once
    assert api.take("k").remaining == 0
    assert calls(server, "function|load") == 2  # the client's first load, and the reload


def test_a_reload_that_fails_is_not_retried(servers: Servers, connect: Callable[..., Any]) -> None:
    server = fresh(servers, "functions")
    admin = server.client()
    admin.execute_command("FUNCTION", "LOAD", library())
    # A user who may call functions but not load them, as on some services.
    admin.execute_command("ACL", "SETUSER", "caller", "on", ">secret", "~*", "+@all", "-function")
    try:
        limits = connect(server.port, redis_options={"username": "caller", "password": "secret"})
        api = limits.gcra(rate=1, per=3600, burst=3)
        assert api.take("k").remaining == 2
        admin.execute_command("FUNCTION", "FLUSH")
        admin.config_resetstat()
        with pytest.raises(ServerError, match="Function not found"):
            api.take("k")
        assert calls(server, "function|load") == 1  # one reload, refused, and no loop
        assert calls(server, "fcall") == 1
    finally:
        admin.execute_command("ACL", "DELUSER", "caller")


def test_redis6_uses_the_scripts(servers: Servers, connect: Callable[..., Any]) -> None:
    server = fresh(servers, "redis6")
    limits = connect(server.port)
    api = limits.gcra(rate=1, per=3600, burst=3)
    assert api.take("k").raw == (0, 3, 2, -1, HOUR)
    assert limits.backend() == "scripts"
    server.client().script_flush()
    server.client().config_resetstat()
    assert api.take("k").remaining == 1  # NOSCRIPT, SCRIPT LOAD, sent once more: counted once
    assert calls(server, "evalsha") == 2
    assert calls(server, "script") == 1


def test_a_service_that_denies_functions_uses_the_scripts(
    servers: Servers, connect: Callable[..., Any], caplog: pytest.LogCaptureFixture
) -> None:
    server = fresh(servers, "evalonly")
    limits = connect(server.port)
    with caplog.at_level(logging.WARNING, logger="redis_ratelimit_client"):
        assert limits.backend() == "scripts"
    assert "could not be loaded" in caplog.text
    assert limits.gcra(rate=1, per=3600, burst=3).take("k").raw == (0, 3, 2, -1, HOUR)


def test_a_named_backend_is_used_as_is(servers: Servers, connect: Callable[..., Any]) -> None:
    """backend="functions" on a server with the module: FCALL, the library
    loaded on the first "Function not found"; and both editions read the
    same key exactly."""
    server = fresh(servers, "module")
    module_limits = connect(server.port)
    functions_limits = connect(server.port, backend="functions")
    assert functions_limits.backend() == "functions"
    by_module = module_limits.gcra(rate=1, per=3600, burst=3)
    by_functions = functions_limits.gcra(rate=1, per=3600, burst=3)
    assert by_module.take("k").remaining == 2
    assert by_functions.take("k").remaining == 1
    assert by_module.take("k").remaining == 0
    # The first FCALL found no function; the library was loaded and the call
    # sent once more.
    assert calls(server, "function|load") == 1
    assert calls(server, "fcall") == 2


def test_an_unknown_backend_name() -> None:
    from redis_ratelimit_client import RateLimits

    with pytest.raises(RateLimitError, match="backend must be one of module, functions, scripts"):
        RateLimits(redis.Redis(), backend="lua")


def test_requests_that_start_together_search_once(servers: Servers) -> None:
    """Twenty requests at once on a fresh client: one search, one load, and
    twenty units taken (threads for the sync client, tasks for the async)."""
    import asyncio
    from concurrent.futures import ThreadPoolExecutor

    import redis.asyncio

    from redis_ratelimit_client import AsyncRateLimits, RateLimits

    server = fresh(servers, "functions")
    sync_limits = RateLimits(redis.Redis(port=server.port))
    api = sync_limits.gcra(rate=1, per=3600, burst=100)
    with ThreadPoolExecutor(20) as pool:
        assert sorted(pool.map(lambda _: api.take("sync").remaining, range(20))) == list(range(80, 100))
    sync_limits.close()
    assert calls(server, "function|load") == 1
    assert calls(server, "fcall") == 21  # one rl_version, twenty rl_gcra

    async def together() -> list[int]:
        client = redis.asyncio.Redis(port=server.port)
        async_limits = AsyncRateLimits(client)
        try:
            async_api = async_limits.gcra(rate=1, per=3600, burst=100)
            decisions = await asyncio.gather(*(async_api.take("async") for _ in range(20)))
            return sorted(d.remaining for d in decisions)
        finally:
            await async_limits.aclose()
            await client.aclose()

    server.client().execute_command("FUNCTION", "FLUSH")
    server.client().config_resetstat()
    assert asyncio.run(together()) == list(range(80, 100))
    assert calls(server, "function|load") == 1
    assert calls(server, "fcall") == 21  # one rl_version, twenty rl_gcra
