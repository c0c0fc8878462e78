"""Bad parameters fail at construction (or before a call is sent), with a
message that names the parameter. The clients here point at a port where
nothing listens: any command sent would raise a ConnectionError instead."""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta
from typing import Any

import pytest
import redis
import redis.asyncio
from redis.backoff import NoBackoff
from redis.retry import Retry

from redis_ratelimit_client import AsyncRateLimits, InvalidParameter, RateLimits

from .servers import free_port

NOWHERE = free_port()
limits = RateLimits(redis.Redis(port=NOWHERE, retry=Retry(NoBackoff(), 0)))

BAD: list[tuple[Callable[[], Any], str]] = [
    (lambda: limits.gcra(rate=0, per=1), "rate must be an integer from 1 to 1000000000, got 0"),
    (lambda: limits.gcra(rate=1.5, per=1), "rate must be an integer, got float"),
    (lambda: limits.gcra(rate=True, per=1), "rate must be an integer, got bool"),
    (lambda: limits.gcra(rate=10, per=1, burst=0), "burst must be an integer from 1 to 1000000000, got 0"),
    (lambda: limits.gcra(rate=10, per=0), "per must be from 1 ms to 1000000000 s, got 0"),
    (lambda: limits.gcra(rate=10, per=-1), "per must be from 1 ms to 1000000000 s, got -1"),
    (lambda: limits.gcra(rate=10, per=0.0005), "per must be a whole number of milliseconds, got 0.0005 s"),
    (lambda: limits.gcra(rate=10, per=1.0001), "per must be a whole number of milliseconds, got 1.0001 s"),
    (lambda: limits.gcra(rate=10, per=float("inf")), "per must be a finite number of seconds, got inf"),
    (
        lambda: limits.gcra(rate=10, per=timedelta(microseconds=1500)),
        "per must be a whole number of milliseconds, got 0:00:00.001500",
    ),
    (
        lambda: limits.gcra(rate=10, per="1s"),
        "per must be a duration (seconds as int or float, or a timedelta), got str",
    ),
    (lambda: limits.gcra(rate=10, per=10**9 + 1), "per must be from 1 ms to 1000000000 s, got 1000000001"),
    (lambda: limits.token_bucket(capacity=0, refill=1, per=1), "capacity must be an integer from 1"),
    (lambda: limits.token_bucket(capacity=1, refill=0, per=1), "refill must be an integer from 1"),
    (lambda: limits.fixed_window(limit=0, window=60), "limit must be an integer from 1 to 1000000000, got 0"),
    (lambda: limits.fixed_window(limit=1, window=timedelta(0)), "window must be from 1 ms"),
    (lambda: limits.sliding_log(limit=2_000_000, window=60), "limit must be an integer from 1 to 1000000, got 2000000"),
    (lambda: limits.sliding_counter(limit=-1, window=60), "limit must be an integer from 1 to 1000000000, got -1"),
    (lambda: limits.concurrency(limit=0, timeout=60), "limit must be an integer from 1 to 1000000, got 0"),
    (lambda: limits.concurrency(limit=1, timeout=0.0001), "timeout must be a whole number of milliseconds"),
    (lambda: limits.gcra(rate=1, per=1, name='say "hi"'), "name must be printable ASCII without quotes"),
    (lambda: limits.gcra(rate=1, per=1, name=""), "name must be a non-empty string"),
    (
        lambda: limits.gcra(rate=1, per=1, name="{tag}"),
        "name must be printable ASCII without quotes, backslashes or braces",
    ),
    (
        lambda: limits.all_of(limits.gcra(rate=1, per=1), limits.gcra(rate=2, per=1)),
        "all_of: two limiters are named 'gcra'; give each its own name=",
    ),
    (lambda: limits.all_of(), "all_of needs at least one limiter"),
    (
        lambda: limits.all_of(RateLimits(redis.Redis(port=NOWHERE)).gcra(1, 1)),
        "every limiter must come from this client",
    ),
    (lambda: limits.gcra(1, 1).take("k", -1), "n must be an integer from 0 to 1000000000, got -1"),
    (lambda: limits.gcra(1, 1).take("k", 1.0), "n must be an integer, got float"),
    (lambda: limits.gcra(1, 1).take("k", wait=-1), "wait must be from 0 ms"),
    (lambda: limits.gcra(1, 1).take("k", wait=0.0001), "wait must be a whole number of milliseconds"),
    (lambda: limits.gcra(1, 1).take("k", block=0), "block must be from 1 ms"),
    (lambda: limits.gcra(1, 1).refund("k", -2), "n must be an integer from 0"),
    (lambda: limits.concurrency(1, 1).acquire("k", timeout=0), "timeout must be from 1 ms"),
    (lambda: limits.concurrency(1, 1).release("k", 0), "lease must be an integer from 1 to 9223372036854775807, got 0"),
    (lambda: limits.concurrency(1, 1).renew("k", "12"), "lease must be an integer, got str"),
    (lambda: limits.concurrency(1, 1).lease("k", 0), "n must be at least 1 for a lease, got 0"),
]


@pytest.mark.parametrize(("make", "message"), BAD, ids=[message for _, message in BAD])
def test_bad_parameters_fail_before_any_call(make: Callable[[], Any], message: str) -> None:
    with pytest.raises(InvalidParameter) as raised:
        make()
    assert message in str(raised.value)
    assert isinstance(raised.value, ValueError)


def test_durations_in_every_form() -> None:
    for per in (1, 1.0, timedelta(seconds=1), 0.001 * 1000):
        assert limits.gcra(rate=10, per=per).spec.params == (9, 10, 1000)
    assert limits.gcra(rate=10, per=0.1).spec.params == (9, 10, 100)
    assert limits.gcra(rate=10, per=1.1).spec.params == (9, 10, 1100)
    assert limits.token_bucket(capacity=5, refill=1, per=timedelta(milliseconds=250)).spec.params == (5, 1, 250)
    assert limits.sliding_log(limit=3, window=0.001).spec.params == (3, 1)


def test_policies_for_the_headers() -> None:
    assert limits.gcra(rate=1, per=10, burst=3, name="burst").policy == '"burst";q=3;w=30'
    assert limits.gcra(rate=10, per=1).policy == '"gcra";q=10;w=1'
    assert limits.gcra(rate=3, per=1, burst=1).policy == '"gcra";q=1;w=1'  # 333.3 ms, rounded up
    assert limits.token_bucket(capacity=1200, refill=1200, per=3600).policy == '"token_bucket";q=1200;w=3600'
    assert limits.fixed_window(limit=100, window=60).policy == '"fixed_window";q=100;w=60'
    assert limits.sliding_log(limit=5, window=0.5).policy == '"sliding_log";q=5;w=1'
    assert limits.sliding_counter(limit=5, window=90).policy == '"sliding_counter";q=5;w=90'


def test_async_limiters_are_checked_the_same() -> None:
    async_limits = AsyncRateLimits(redis.asyncio.Redis(port=NOWHERE))
    with pytest.raises(InvalidParameter, match="rate must be an integer from 1"):
        async_limits.gcra(rate=0, per=1)
    with pytest.raises(InvalidParameter, match="every limiter must come from this client"):
        async_limits.all_of(limits.gcra(1, 1))  # type: ignore[arg-type]


def test_a_call_needs_the_server() -> None:
    """The counterpart: good parameters do reach the (absent) server."""
    with pytest.raises(redis.ConnectionError):
        limits.gcra(rate=1, per=1).take("k")
