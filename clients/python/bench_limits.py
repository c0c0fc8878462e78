#!/usr/bin/env python3
"""The cost of the ``limits`` storage (redis_ratelimit_client.limits): each
strategy of ``limits`` through the storage, ``Strategy(storage).hit(item,
identity)``, against this client's limiter of the same algorithm and
parameters, ``limiter.take(key)``, on the same server in the same run.

    python clients/python/bench_limits.py [--calls 2000] [--rounds 15]

Direct and adapter calls alternate in chunks of ``--calls``; each chunk is
timed by the process's CPU time (``time.process_time``) and by the wall
clock. The table gives the median over the rounds of each, per call, and the
median of the rounds' ratios (adapter / direct). Every call is allowed
(limits of 1,000,000 an hour), so both sides do the same work.

Starts its own Redis 7 (``redis-server`` on PATH, or RL_REDIS7) with the
module (RL_MODULE, default target/release/libredis_ratelimit.so) on a free
loopback port.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import redis
import redis.asyncio

sys.path.insert(0, str(Path(__file__).resolve().parent))

import limits.aio.strategies
import limits.strategies
from limits import parse
from limits.storage import storage_from_string

import redis_ratelimit_client.limits  # noqa: F401  (registers the schemes)
from bench import InstantDriver
from redis_ratelimit_client import AsyncRateLimits, RateLimits
from tests.servers import Server, module, redis7

LIMIT = 1_000_000
ITEM = parse(f"{LIMIT}/hour")
STRATEGIES = {  # limits' name: this client's limiter
    "moving-window": "sliding_log",
    "sliding-window-counter": "sliding_counter",
    "fixed-window": "fixed_window",
}

Run = Callable[[int], None]


def mode_of(ours: Any) -> str:
    return "async" if isinstance(ours, AsyncRateLimits) else "sync"


def sync_pair(port: int, strategy: str) -> tuple[Run, Run, Callable[[], None]]:
    ours = RateLimits(redis.Redis(port=port), timeout=5)
    take = getattr(ours, STRATEGIES[strategy])(limit=LIMIT, window=3600).take
    key = f"bench:direct:{mode_of(ours)}:{strategy}"
    storage = storage_from_string(f"redis-ratelimit://127.0.0.1:{port}?timeout=5")
    hit = limits.strategies.STRATEGIES[strategy](storage).hit

    def direct(n: int) -> None:
        for _ in range(n):
            take(key)

    def adapter(n: int) -> None:
        for _ in range(n):
            hit(ITEM, strategy)

    def close() -> None:
        ours.close()
        ours.redis.close()
        storage.close()  # type: ignore[union-attr]

    return direct, adapter, close


def async_pair(port: int, strategy: str, loop: asyncio.AbstractEventLoop) -> tuple[Run, Run, Callable[[], None]]:
    ours = AsyncRateLimits(redis.asyncio.Redis(port=port), timeout=5)
    take = getattr(ours, STRATEGIES[strategy])(limit=LIMIT, window=3600).take
    key = f"bench:direct:{mode_of(ours)}:{strategy}"
    storage: Any = storage_from_string(f"async+redis-ratelimit://127.0.0.1:{port}?timeout=5")
    hit = limits.aio.strategies.STRATEGIES[strategy](storage).hit

    async def direct(n: int) -> None:
        for _ in range(n):
            await take(key)

    async def adapter(n: int) -> None:
        for _ in range(n):
            await hit(ITEM, strategy)

    async def close() -> None:
        await ours.aclose()
        await ours.redis.aclose()
        await storage.aclose()

    return (
        lambda n: loop.run_until_complete(direct(n)),
        lambda n: loop.run_until_complete(adapter(n)),
        lambda: loop.run_until_complete(close()),
    )


def timed(run: Run, calls: int) -> tuple[float, float]:
    """(CPU µs, wall µs) per call."""
    cpu, wall = time.process_time(), time.perf_counter()
    run(calls)
    return (time.process_time() - cpu) / calls * 1e6, (time.perf_counter() - wall) / calls * 1e6


def measure(name: str, direct: Run, adapter: Run, calls: int, rounds: int) -> None:
    direct(200)  # warm up: connect, find the backend
    adapter(200)
    d_cpu, d_wall, a_cpu, a_wall, cpu_ratio, wall_ratio = [], [], [], [], [], []
    for i in range(rounds):
        # Alternate which side goes first, so neither always follows the other.
        order = (direct, adapter) if i % 2 == 0 else (adapter, direct)
        results = {id(run): timed(run, calls) for run in order}
        (dc, dw), (ac, aw) = results[id(direct)], results[id(adapter)]
        d_cpu.append(dc)
        d_wall.append(dw)
        a_cpu.append(ac)
        a_wall.append(aw)
        cpu_ratio.append(ac / dc)
        wall_ratio.append(aw / dw)
    med = statistics.median
    print(
        f"| {name} | {med(d_cpu):.1f} | {med(a_cpu):.1f} | {med(cpu_ratio):.3f} "
        f"| {med(d_wall):.1f} | {med(a_wall):.1f} | {med(wall_ratio):.3f} |",
        flush=True,
    )


def own_cost(calls: int, rounds: int) -> None:
    """The µs the adapter adds to a call, over a connection that answers at
    once (bench.py's InstantDriver): what remains is limits' own work (the
    key, the expiry, the strategy) and the storage's, the medians of the
    rounds of ``hit`` less ``take``."""
    print("The adapter's own cost over a connection that answers at once (sync, median of the rounds):")
    for strategy, algorithm in STRATEGIES.items():
        storage: Any = storage_from_string("redis-ratelimit://127.0.0.1:1?backend=module")
        storage.limits._driver.__class__ = InstantDriver
        hit = limits.strategies.STRATEGIES[strategy](storage).hit
        ours = RateLimits(redis.Redis(port=1), backend="module")
        ours._driver.__class__ = InstantDriver
        take = getattr(ours, algorithm)(limit=LIMIT, window=3600).take
        added, base = [], []
        for _ in range(rounds):
            start = time.process_time()
            for _ in range(calls):
                take("k")
            middle = time.process_time()
            for _ in range(calls):
                hit(ITEM, "k")
            base.append((middle - start) / calls * 1e6)
            added.append((time.process_time() - 2 * middle + start) / calls * 1e6)
        print(
            f"- {strategy}: {statistics.median(added):.2f} µs over the client's {statistics.median(base):.2f} µs",
            flush=True,
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--calls", type=int, default=2000, help="calls per chunk (default 2000)")
    parser.add_argument("--rounds", type=int, default=15, help="alternating rounds (default 15)")
    options = parser.parse_args()
    server = Server(redis7(), "--loadmodule", module())
    loop = asyncio.new_event_loop()
    try:
        # A log of up to a million entries: every call of the run is allowed.
        server.client().config_set("ratelimit.sliding_log_max_limit", LIMIT)
        print(
            f"Python {sys.version.split()[0]}, redis-py {redis.__version__}, limits {limits.__version__}, "
            f"{options.rounds} rounds of {options.calls} calls each way, the module"
        )
        print(
            "| strategy, client | direct CPU µs | adapter CPU µs | CPU adapter / direct "
            "| direct wall µs | adapter wall µs | wall adapter / direct |"
        )
        print("|---|---:|---:|---:|---:|---:|---:|")
        for strategy in STRATEGIES:
            for mode in ("sync", "async"):
                direct, adapter, close = (
                    sync_pair(server.port, strategy) if mode == "sync" else async_pair(server.port, strategy, loop)
                )
                measure(f"{strategy}, {mode}", direct, adapter, options.calls, options.rounds)
                close()
        print()
        own_cost(options.calls * 10, options.rounds)
    finally:
        loop.close()
        server.stop()


if __name__ == "__main__":
    main()
