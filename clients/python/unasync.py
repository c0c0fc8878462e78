#!/usr/bin/env python3
"""Make the sync client from the async one, or check that it was.

src/redis_ratelimit_client/_sync.py is _async.py with its coroutines made
plain functions (as httpcore makes its sync code with unasync): every call's
logic lives once, in the sans-IO core (_core.py, _calls.py) and in
_async.py's thin methods, and the two drivers (_io_async.py, _io_sync.py)
carry the steps each its own way.

    python3 clients/python/unasync.py          # write _sync.py again
    python3 clients/python/unasync.py --check  # exit 1 if it differs
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
PACKAGE = HERE / "src" / "redis_ratelimit_client"
ASYNC = PACKAGE / "_async.py"
SYNC = PACKAGE / "_sync.py"

# Whole lines or phrases first, then words; in this order.
REPLACEMENTS = [
    (
        "The asynchronous client, over ``redis.asyncio``'s ``Redis`` or ``RedisCluster``.",
        "The synchronous client, over redis-py's ``Redis`` or ``RedisCluster``.",
    ),
    (
        "_sync.py is made from this file by clients/python/unasync.py: edit this one.",
        "Made from _async.py by clients/python/unasync.py: edit that one, then run it.",
    ),
    ("import redis.asyncio\nimport redis.asyncio.cluster\n", "import redis\nimport redis.cluster\n"),
    ("redis.asyncio.cluster.RedisCluster", "redis.cluster.RedisCluster"),
    ("redis.asyncio.Redis", "redis.Redis"),
    ("a ``redis.asyncio`` client", "a redis-py client"),
    ("; every call is awaited", ""),
    ("an async context manager: ``async with", "a context manager: ``with"),
    ("``async with`` block", "``with`` block"),
    ("async def __aenter__", "def __enter__"),
    ("async def __aexit__", "def __exit__"),
]
WORDS = [
    ("_io_async", "_io_sync"),
    ("AsyncDriver", "SyncDriver"),
    ("AsyncRedis", "SyncRedis"),
    ("AsyncRateLimits", "RateLimits"),
    ("AsyncLimiter", "Limiter"),
    ("AsyncAllOf", "AllOf"),
    ("AsyncConcurrency", "Concurrency"),
    ("AsyncLease", "Lease"),
    ("aclose", "close"),
]
SYNTAX = [(r"\basync def ", "def "), (r"\bawait ", ""), (r"\basync with ", "with ")]


def unasync(text: str) -> str:
    for old, new in REPLACEMENTS:
        if old not in text:
            raise SystemExit(f"unasync: {ASYNC.name} no longer has {old!r}: update REPLACEMENTS")
        text = text.replace(old, new)
    for old, new in WORDS:
        text = re.sub(rf"\b{old}\b", new, text)
    for pattern, new in SYNTAX:
        text = re.sub(pattern, new, text)
    return text


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true", help=f"exit 1 if {SYNC.name} is not made from {ASYNC.name}")
    made = unasync(ASYNC.read_text())
    if parser.parse_args().check:
        if not SYNC.is_file() or SYNC.read_text() != made:
            sys.exit(f"unasync: {SYNC.name} is not what {ASYNC.name} makes: run python3 clients/python/unasync.py")
        print(f"unasync: {SYNC.name} is made from {ASYNC.name}")
    else:
        SYNC.write_text(made)
        print(f"unasync: wrote {SYNC.name} from {ASYNC.name}")


if __name__ == "__main__":
    main()
