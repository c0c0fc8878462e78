#!/usr/bin/env python3
"""The client's cost: calls per second through ``Limiter.take`` against the
same command sent raw with redis-py's ``execute_command``, one connection,
one call at a time (pipeline 1), in the same run.

    python clients/python/bench.py [--calls 20000] [--rounds 5]

Then a flood: one identity against a limit of 100 a minute, without and
with the local memory of refusals (``local_refusals``), counting the
server's calls.

Starts its own servers on free loopback ports: Redis 7 (``redis-server`` on
PATH, or RL_REDIS7) with the module (RL_MODULE, default
target/release/libredis_ratelimit.so), and one without it for the functions
library. Raw and client calls alternate in chunks of 500, so that a noisy
neighbour slows both alike; the rates are over every round, and the last
column is the spread of the rounds' ratios.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

import redis
import redis.asyncio

sys.path.insert(0, str(Path(__file__).resolve().parent))

from redis_ratelimit_client import AsyncRateLimits, RateLimits
from redis_ratelimit_client._backend import library
from redis_ratelimit_client._io_async import AsyncDriver
from redis_ratelimit_client._io_sync import SyncDriver
from tests.servers import Server, module, redis7

# Always allowed, so that both sides do the same work on every call.
RATE, PER_MS = 1_000_000, 1000
CHUNK = 500


def rate(calls: int, run: Callable[[int], None]) -> float:
    start = time.perf_counter()
    run(calls)
    return calls / (time.perf_counter() - start)


def sync_pair(port: int, backend: str) -> tuple[Callable[[int], None], Callable[[int], None]]:
    client = redis.Redis(port=port)
    api = RateLimits(client, backend=backend).gcra(rate=RATE, per=PER_MS / 1000, burst=RATE)
    head = ("RL.GCRA",) if backend == "module" else ("FCALL", "rl_gcra", 1)
    args = (*head, "bench:raw", RATE - 1, RATE, PER_MS, 1, "MS")
    execute = client.execute_command
    take = api.take

    def raw(n: int) -> None:
        for _ in range(n):
            execute(*args)

    def through_client(n: int) -> None:
        for _ in range(n):
            take("bench:client")

    return raw, through_client


def async_pair(
    port: int, backend: str, loop: asyncio.AbstractEventLoop
) -> tuple[Callable[[int], None], Callable[[int], None]]:
    client = redis.asyncio.Redis(port=port)
    api = AsyncRateLimits(client, backend=backend).gcra(rate=RATE, per=PER_MS / 1000, burst=RATE)
    head = ("RL.GCRA",) if backend == "module" else ("FCALL", "rl_gcra", 1)
    args = (*head, "bench:raw", RATE - 1, RATE, PER_MS, 1, "MS")
    execute = client.execute_command
    take = api.take

    async def raw(n: int) -> None:
        for _ in range(n):
            await execute(*args)

    async def through_client(n: int) -> None:
        for _ in range(n):
            await take("bench:client")

    def blocking(run: Callable[[int], Awaitable[None]]) -> Callable[[int], None]:
        return lambda n: loop.run_until_complete(run(n))

    return blocking(raw), blocking(through_client)


REPLY = [0, RATE, RATE - 1, -1, 1]


class InstantDriver(SyncDriver):
    """The sync driver, its sends answered at once."""

    __slots__ = ()

    def _send(self, step: object, deadline: float) -> list[int]:
        return REPLY


class AsyncInstantDriver(AsyncDriver):
    __slots__ = ()

    async def _send(self, step: object, deadline: float) -> list[int]:
        return REPLY


async def answer(step: object, deadline: float) -> list[int]:
    return REPLY


def client_cost(calls: int, rounds: int, loop: asyncio.AbstractEventLoop) -> tuple[float, float]:
    """Microseconds the client adds to a call over a connection that costs
    nothing, sync and async (the medians of the rounds): the drivers' send
    answers at once, so what remains is the arguments, the steps, the
    deadline and the Decision."""
    limits = RateLimits(redis.Redis(port=1), backend="module")
    api = limits.gcra(rate=RATE, per=PER_MS / 1000, burst=RATE)
    limits._driver.__class__ = InstantDriver
    async_limits = AsyncRateLimits(redis.asyncio.Redis(port=1), backend="module")
    async_api = async_limits.gcra(rate=RATE, per=PER_MS / 1000, burst=RATE)
    async_limits._driver.__class__ = AsyncInstantDriver

    def raw() -> None:
        for _ in range(calls):
            list(REPLY)

    async def async_raw() -> None:
        for _ in range(calls):
            await answer(None, 0.0)

    async def async_client() -> None:
        for _ in range(calls):
            await async_api.take("bench:client")

    sync_costs, async_costs = [], []
    for _ in range(rounds):
        start = time.perf_counter()
        raw()
        middle = time.perf_counter()
        for _ in range(calls):
            api.take("bench:client")
        sync_costs.append((time.perf_counter() - 2 * middle + start) / calls * 1e6)
        start = time.perf_counter()
        loop.run_until_complete(async_raw())
        middle = time.perf_counter()
        loop.run_until_complete(async_client())
        async_costs.append((time.perf_counter() - 2 * middle + start) / calls * 1e6)
    return statistics.median(sync_costs), statistics.median(async_costs)


def server_calls(client: redis.Redis, command: str) -> int:
    stats = client.info("commandstats").get(f"cmdstat_{command}", {})
    return int(stats.get("calls", 0))


def flood(port: int, seconds: float) -> None:
    """One identity floods a limit of 100 a minute (bursts of 100) for
    ``seconds``, one call at a time, without and with the local memory of
    refusals: the requests answered, the allowed ones, and the server's
    calls (INFO commandstats)."""
    admin = redis.Redis(port=port)
    print(f"| local_refusals | requests in {seconds:g} s | allowed | server calls | server calls per request |")
    print("|---|---|---|---|---|")
    for local_refusals in (0, 1000):
        admin.flushall()
        admin.config_resetstat()
        limits = RateLimits(redis.Redis(port=port), backend="module", local_refusals=local_refusals)
        api = limits.gcra(rate=100, per=60, burst=100)
        requests = allowed = 0
        end = time.perf_counter() + seconds
        while time.perf_counter() < end:
            allowed += api.take("flood:203.0.113.7").allowed
            requests += 1
        limits.close()
        sent = server_calls(admin, "rl.gcra")
        print(f"| {local_refusals} | {requests:,} | {allowed} | {sent:,} | {sent / requests:.4f} |", flush=True)


def measure(name: str, raw: Callable[[int], None], client: Callable[[int], None], calls: int, rounds: int) -> None:
    """Raw and client runs alternate in chunks of CHUNK calls, so that a
    burst of load from elsewhere on the machine falls on both alike. The
    rates are over every round; the ratio's spread is that of the rounds."""
    raw(CHUNK)  # warm up: connect, find the backend, load the library
    client(CHUNK)
    chunks = max(1, calls // CHUNK)
    raw_total = client_total = 0.0
    ratios = []
    for _ in range(rounds):
        raw_time = client_time = 0.0
        for _ in range(chunks):
            start = time.perf_counter()
            raw(CHUNK)
            middle = time.perf_counter()
            client(CHUNK)
            raw_time += middle - start
            client_time += time.perf_counter() - middle
        raw_total += raw_time
        client_total += client_time
        ratios.append(raw_time / client_time)
    done = rounds * chunks * CHUNK
    r, c = done / raw_total, done / client_total
    print(
        f"| {name} | {r:,.0f} | {c:,.0f} | {c / r:.3f} | {min(ratios):.3f} to {max(ratios):.3f} |",
        flush=True,
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--calls", type=int, default=20000, help="calls per run (default 20000)")
    parser.add_argument("--rounds", type=int, default=5, help="alternating rounds (default 5)")
    parser.add_argument("--flood", type=float, default=2.0, help="seconds of each flood (default 2)")
    options = parser.parse_args()
    with_module = Server(redis7(), "--loadmodule", module())
    functions = Server(redis7())
    loop = asyncio.new_event_loop()
    try:
        functions.client().execute_command("FUNCTION", "LOAD", "REPLACE", library())
        print(
            f"Python {sys.version.split()[0]}, redis-py {redis.__version__}, "
            f"{options.rounds} rounds of {options.calls} calls each way"
        )
        print("| backend, client | raw calls/s | client calls/s | client / raw | ratio in the rounds |")
        print("|---|---|---|---|---|")
        measure("module, sync", *sync_pair(with_module.port, "module"), options.calls, options.rounds)
        measure("module, async", *async_pair(with_module.port, "module", loop), options.calls, options.rounds)
        measure("functions, sync", *sync_pair(functions.port, "functions"), options.calls, options.rounds)
        measure("functions, async", *async_pair(functions.port, "functions", loop), options.calls, options.rounds)
        sync_cost, async_cost = client_cost(options.calls * 5, options.rounds, loop)
        print(
            f"The client's own cost, over a connection that answers at once: {sync_cost:.2f} us a call (sync), "
            f"{async_cost:.2f} us (async)"
        )
        print()
        flood(with_module.port, options.flood)
    finally:
        loop.close()
        with_module.stop()
        functions.stop()


if __name__ == "__main__":
    main()
