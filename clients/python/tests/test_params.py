"""Bad parameters fail at construction (or before a call is sent), with a
message that names the parameter. The clients here point at a port where
nothing listens: any command sent would raise Unavailable instead."""

from __future__ import annotations

import socket
from collections.abc import Callable
from datetime import timedelta
from typing import Any

import pytest
import redis
import redis.asyncio

from redis_ratelimit_client import AsyncRateLimits, InvalidParameter, RateLimits, Unavailable

# A port held bound, never listening, for the whole run: a connection to it
# is refused, and no server a later test starts on a free port can be given
# it (a port only found free could be, and would answer).
_HELD = socket.socket()
_HELD.bind(("127.0.0.1", 0))
NOWHERE = int(_HELD.getsockname()[1])
limits = RateLimits(redis.Redis(port=NOWHERE))

NAME_RULE = 'name must be a non-empty string of printable ASCII without ", \\, { or }'

# Python's own forms (the ranges of every parameter are the contract's:
# test_contract.py runs them).
BAD: list[tuple[Callable[[], Any], str]] = [
    (lambda: limits.gcra(rate=1.5, per=1), "rate must be an integer, got float"),
    (lambda: limits.gcra(rate=True, per=1), "rate must be an integer, got bool"),
    (lambda: limits.gcra(rate=10, per=-1), "per must be from 1 ms to 1000000000000 ms, got -1000 ms"),
    (lambda: limits.gcra(rate=10, per=0.0005), "per must be a whole number of milliseconds, got 0.5 ms"),
    (lambda: limits.gcra(rate=10, per=1.0001), "per must be a whole number of milliseconds, got 1000.1 ms"),
    (lambda: limits.gcra(rate=10, per=float("inf")), "per must be a finite number of seconds, got inf"),
    (
        lambda: limits.gcra(rate=10, per=timedelta(microseconds=1500)),
        "per must be a whole number of milliseconds, got 1.5 ms",
    ),
    (
        lambda: limits.gcra(rate=10, per="1s"),
        "per must be a duration (seconds as int or float, or a timedelta), got str",
    ),
    (lambda: limits.gcra(rate=10, per=10**9 + 1), "per must be from 1 ms to 1000000000000 ms, got 1000000001000 ms"),
    (lambda: limits.gcra(rate=1, per=1, name='say "hi"'), NAME_RULE),
    (lambda: limits.gcra(rate=1, per=1, name="{tag}"), NAME_RULE),
    (lambda: limits.gcra(rate=1, per=1, name="caf\u00e9"), NAME_RULE),
    (lambda: limits.gcra(rate=1, per=1, name=7), NAME_RULE),
    (
        lambda: limits.all_of(limits.gcra(rate=1, per=1), limits.gcra(rate=2, per=1)),
        "two limiters are named 'gcra': give each its own name",
    ),
    (
        lambda: limits.all_of(RateLimits(redis.Redis(port=NOWHERE)).gcra(1, 1)),
        "all_of: every limiter must come from this client",
    ),
    (lambda: limits.gcra(1, 1).take("k", 1.0), "n must be an integer, got float"),
    (lambda: limits.gcra(1, 1).take(None), "key must be a non-empty string, got NoneType"),
    (lambda: limits.gcra(1, 1).take(42), "key must be a non-empty string, got int"),
    (lambda: limits.gcra(1, 1).take(b""), "key must be a non-empty string"),
    (lambda: limits.all_of(limits.gcra(1, 1)).take([None]), "key must be a non-empty string, got NoneType"),
    (lambda: limits.gcra(1, 1).check(""), "key must be a non-empty string"),
    (lambda: limits.concurrency(1, 1).acquire(None), "key must be a non-empty string, got NoneType"),
    (lambda: limits.concurrency(1, 1).renew("k", "12"), "lease must be an integer, got str"),
    (lambda: limits.concurrency(1, 1).lease("k", 0), "n must be at least 1 for a lease, got 0"),
    (lambda: RateLimits(redis.Redis(port=NOWHERE), fail_open=1), "fail_open must be True or False, got int"),
    (
        lambda: RateLimits(redis.Redis(port=NOWHERE), timeout="1s"),
        "timeout must be a duration (seconds as int or float, or a timedelta), got str",
    ),
]


@pytest.mark.parametrize(("make", "message"), BAD, ids=[message for _, message in BAD])
def test_bad_parameters_fail_before_any_call(make: Callable[[], Any], message: str) -> None:
    with pytest.raises(InvalidParameter) as raised:
        make()
    assert str(raised.value) == message
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
    with pytest.raises(Unavailable) as raised:
        limits.gcra(rate=1, per=1).take("k")
    assert str(raised.value).startswith("rate limiter unavailable: Error 111 connecting to localhost:")


def test_a_sentinel_client_is_refused_at_construction() -> None:
    """Its connections find the primary through the sentinels, with their
    own timeouts and retries, which no deadline would bound: said at once,
    not found out as an outage at the first call."""
    import redis.asyncio.sentinel
    import redis.sentinel

    for make, sentinel in (
        (RateLimits, redis.sentinel.Sentinel([("127.0.0.1", NOWHERE)])),
        (AsyncRateLimits, redis.asyncio.sentinel.Sentinel([("127.0.0.1", NOWHERE)])),
    ):
        with pytest.raises(InvalidParameter) as refused:
            make(sentinel.master_for("mymaster"))
        assert str(refused.value) == (
            "a Sentinel client is not supported (finding the primary through the sentinels is not bounded "
            "by the deadline): pass a client of the primary's address, or a RedisCluster"
        )
