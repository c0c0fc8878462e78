"""Every limiter, option and error, on every backend (module, functions,
scripts), through the sync and the async client: the same calls give the
same values.

Durations are exact where a reply depends on no elapsed time (the first
call on a key); elsewhere a limiter of hours is checked to within the second
that a test takes at most: ``within(ms, expected)``.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest

from redis_ratelimit_client import Decision, InvalidParameter, LimitExceeded, ServerError

HOUR = 3_600_000
DAYS_30 = 30 * 86_400  # a fixed window no test run crosses (in seconds)


def within(ms: int | None, expected: int, slack: int = 1000) -> bool:
    """expected - slack < ms <= expected: a duration measured after at most
    ``slack`` ms of elapsed time."""
    return ms is not None and expected - slack < ms <= expected


def test_gcra_burst_then_refusal(limits: Any) -> None:
    api = limits.gcra(rate=1, per=3600, burst=3)
    first = api.take("user:42")
    assert first.raw == (0, 3, 2, -1, HOUR)
    assert (first.allowed, first.limit, first.remaining, first.granted) == (True, 3, 2, 1)
    assert first.retry_after is None and first.retry_after_ms is None
    assert first.reset == timedelta(hours=1)
    assert first.binding == 1 and first.lease is None and first.failed_open is False
    second, third = api.take("user:42"), api.take("user:42")
    assert (second.remaining, third.remaining) == (1, 0)
    assert within(second.reset_ms, 2 * HOUR) and within(third.reset_ms, 3 * HOUR)
    refused = api.take("user:42")
    assert (refused.allowed, refused.remaining, refused.granted) == (False, 0, 0)
    assert within(refused.retry_after_ms, HOUR) and within(refused.reset_ms, 3 * HOUR)
    assert refused.retry_after == timedelta(milliseconds=refused.retry_after_ms or 0)
    never = api.take("user:42", 4)  # more than the burst: never
    assert (never.allowed, never.retry_after) == (False, None)


def test_gcra_default_burst_is_the_rate(limits: Any) -> None:
    assert limits.gcra(rate=10, per=timedelta(seconds=1)).take("k").raw == (0, 10, 9, -1, 100)


def test_token_bucket(limits: Any) -> None:
    bucket = limits.token_bucket(capacity=5, refill=1, per=3600)
    assert bucket.take("b", 2).raw == (0, 5, 3, -1, 2 * HOUR)
    refused = bucket.take("b", 4)
    assert (refused.allowed, refused.remaining, refused.granted) == (False, 3, 0)
    assert within(refused.retry_after_ms, HOUR)


def test_fixed_window(limits: Any) -> None:
    window = limits.fixed_window(limit=3, window=DAYS_30)
    decisions = [window.take("f") for _ in range(4)]
    assert [d.remaining for d in decisions] == [2, 1, 0, 0]
    assert [d.allowed for d in decisions] == [True, True, True, False]
    refused = decisions[-1]
    # Refused until the window ends, which is when it is fully rested.
    assert refused.retry_after_ms == refused.reset_ms
    assert 0 < refused.reset_ms <= DAYS_30 * 1000


def test_sliding_log(limits: Any) -> None:
    log = limits.sliding_log(limit=3, window=3600)
    assert log.take("s").raw == (0, 3, 2, -1, HOUR)
    assert [log.take("s").remaining for _ in range(2)] == [1, 0]
    refused = log.take("s")
    assert (refused.allowed, refused.remaining) == (False, 0)
    assert within(refused.retry_after_ms, HOUR)


def test_sliding_counter(limits: Any) -> None:
    counter = limits.sliding_counter(limit=3, window=DAYS_30)
    assert [counter.take("c").remaining for _ in range(3)] == [2, 1, 0]
    refused = counter.take("c")
    assert (refused.allowed, refused.remaining) == (False, 0)
    # The window's 3 units weigh on the next window until a third of it has
    # passed: refused until then at least.
    window_ms = DAYS_30 * 1000
    assert refused.retry_after_ms is not None
    assert window_ms // 3 < refused.retry_after_ms <= window_ms + window_ms // 3


def test_peek_and_query_change_nothing(limits: Any) -> None:
    api = limits.gcra(rate=1, per=3600, burst=3)
    assert api.peek("p").raw == (0, 3, 2, -1, HOUR)
    assert api.take("p", peek=True).raw == (0, 3, 2, -1, HOUR)
    query = api.query("p")
    assert query.raw == (0, 3, 3, -1, 0)
    assert (query.allowed, query.granted) == (True, 0)
    assert api.take("p", 0).raw == (0, 3, 3, -1, 0)


def test_refund(limits: Any) -> None:
    api = limits.gcra(rate=1, per=3600, burst=3)
    assert api.take("r", 2).remaining == 1
    refunded = api.refund("r")
    assert (refunded.allowed, refunded.remaining, refunded.retry_after, refunded.granted) == (True, 2, None, 1)
    assert within(refunded.reset_ms, HOUR)
    assert api.refund("r", 1, peek=True).remaining == 3
    assert api.query("r").remaining == 2
    # Never past fully rested.
    assert api.refund("r", 5).raw == (0, 3, 3, -1, 0)


def test_force_charges_past_the_limit(limits: Any) -> None:
    api = limits.gcra(rate=1, per=3600, burst=3)
    api.take("d", 3)
    forced = api.take("d", 2, force=True)
    assert (forced.allowed, forced.remaining, forced.granted, forced.retry_after) == (True, 0, 2, None)
    assert within(forced.reset_ms, 5 * HOUR)
    # The debt: the next unit waits for 3 intervals, not 1.
    assert within(api.take("d").retry_after_ms, 3 * HOUR)


def test_wait_reserves_a_later_slot(limits: Any) -> None:
    paced = limits.gcra(rate=1, per=3600, burst=1)
    assert paced.take("w").raw == (0, 1, 0, -1, HOUR)
    reserved = paced.take("w", wait=7200)
    assert (reserved.allowed, reserved.remaining, reserved.granted) == (True, 0, 1)
    assert within(reserved.retry_after_ms, HOUR)  # wait this long, then do the work
    assert within(reserved.reset_ms, 2 * HOUR)
    # The next slot is two intervals away: past a one-hour wait.
    refused = paced.take("w", wait=timedelta(hours=1))
    assert (refused.allowed, refused.granted) == (False, 0)
    assert within(refused.retry_after_ms, HOUR)


def test_at_most_grants_what_is_free(limits: Any) -> None:
    api = limits.gcra(rate=1, per=3600, burst=3)
    api.take("a")
    partial = api.take("a", 5, at_most=True)
    assert (partial.allowed, partial.granted, partial.remaining) == (True, 2, 0)
    assert len(partial.raw) == 6 and partial.raw[5] == 2
    none = api.take("a", 2, at_most=True)
    assert (none.allowed, none.granted) == (False, 0)
    assert within(none.retry_after_ms, HOUR)


def test_block_locks_the_key_out(limits: Any) -> None:
    logins = limits.sliding_log(limit=2, window=900)
    assert [logins.take("l", block=3600).allowed for _ in range(2)] == [True, True]
    refused = logins.take("l", block=3600)
    assert (refused.allowed, refused.remaining) == (False, 0)
    assert within(refused.retry_after_ms, HOUR) and within(refused.reset_ms, HOUR)
    # Blocked for every caller, with or without BLOCK; a query says so.
    query = logins.query("l")
    assert query.allowed is False and within(query.retry_after_ms, HOUR)


def test_wait_on_a_window_is_a_server_error(limits: Any) -> None:
    with pytest.raises(ServerError) as raised:
        limits.fixed_window(limit=3, window=60).take("x", wait=1)
    assert raised.value.code == "ERR"
    assert raised.value.message == (
        "ERR WAIT does not work with RL.FIXED: a window cannot hold a later window's requests "
        "(WAIT works with RL.GCRA, RL.TOKEN_BUCKET and RL.SLIDING_LOG)"
    )


def test_options_that_exclude_each_other(limits: Any) -> None:
    with pytest.raises(ServerError) as raised:
        limits.gcra(rate=1, per=1).take("x", force=True, wait=1)
    assert raised.value.message == (
        "ERR syntax error: FORCE and WAIT cannot be combined (each says how the units are taken: choose one)"
    )


def test_a_key_of_another_algorithm(limits: Any) -> None:
    limits.fixed_window(limit=3, window=60).take("shared")
    with pytest.raises(ServerError) as raised:
        limits.gcra(rate=1, per=1).take("shared")
    assert raised.value.message == (
        "ERR key 'shared' holds an RL.FIXED state, not an RL.GCRA one (use another key, or DEL it to start over)"
    )


def test_a_key_of_another_type(limits: Any, server: Any) -> None:
    server.client().lpush("list", "x")
    with pytest.raises(ServerError) as raised:
        limits.gcra(rate=1, per=1).take("list")
    assert raised.value.message == "WRONGTYPE Operation against a key holding the wrong kind of value"


# -- RL.ALL ----------------------------------------------------------------------


def policies(limits: Any) -> Any:
    burst = limits.gcra(rate=1, per=10, burst=3, name="burst")
    hourly = limits.sliding_log(limit=3, window=3600, name="hourly")
    return limits.all_of(burst, hourly)


KEYS = ["{user:7}:burst", "{user:7}:hourly"]


def test_all_of_binding_limit_and_headers(limits: Any) -> None:
    both = policies(limits)
    first = both.take(KEYS)
    assert first.raw == (0, 3, 2, -1, 10_000, 1)
    assert (first.binding, first.granted) == (1, 1)
    assert both.headers(first) == {
        "RateLimit-Policy": '"burst";q=3;w=30, "hourly";q=3;w=3600',
        "RateLimit": '"burst";r=2;t=10',
    }
    assert [both.take(KEYS).remaining for _ in range(2)] == [1, 0]
    refused = both.take(KEYS)
    # Refused by both; the hourly limit waits longest, so it binds.
    assert (refused.allowed, refused.binding, refused.limit, refused.granted) == (False, 2, 3, 0)
    assert within(refused.retry_after_ms, HOUR)
    assert both.headers(refused) == {
        "RateLimit-Policy": '"burst";q=3;w=30, "hourly";q=3;w=3600',
        "RateLimit": '"hourly";r=0;t=3600',
        "Retry-After": "3600",
    }


def test_all_of_refund_and_at_most(limits: Any) -> None:
    both = policies(limits)
    both.take(KEYS, 2)
    refunded = both.refund(KEYS)
    assert (refunded.allowed, refunded.remaining, refunded.binding) == (True, 2, 1)
    partial = both.take(KEYS, 3, at_most=True)
    assert (partial.allowed, partial.granted, partial.remaining) == (True, 2, 0)
    assert len(partial.raw) == 7 and partial.raw[6] == 2
    assert both.peek(KEYS).allowed is False
    assert both.query(KEYS).remaining == 0


def test_all_of_checks_its_keys(limits: Any) -> None:
    both = policies(limits)
    with pytest.raises(InvalidParameter, match="2 limiters need 2 keys, got 1"):
        both.take(["{user:7}:burst"])
    with pytest.raises(InvalidParameter, match="a sequence of keys"):
        both.take("{user:7}:burst")


# -- leases ------------------------------------------------------------------


def test_concurrency_acquire_release_renew(limits: Any) -> None:
    jobs = limits.concurrency(limit=2, timeout=60)
    first = jobs.acquire("tenant")
    assert (first.allowed, first.limit, first.remaining, first.retry_after, first.granted) == (True, 2, 1, None, 1)
    assert isinstance(first.lease, int) and first.lease > 0
    assert first.reset_ms == 60_000
    second = jobs.acquire("tenant")
    assert second.remaining == 0 and second.lease not in (None, first.lease)
    refused = jobs.acquire("tenant")
    assert (refused.allowed, refused.lease, refused.granted) == (False, None, 0)
    assert within(refused.retry_after_ms, 60_000)
    assert jobs.acquire("tenant", 3).retry_after is None  # more than the limit: never
    assert jobs.release("tenant", first.lease) == 1
    assert jobs.release("tenant", first.lease) == 0  # already released
    assert jobs.renew("tenant", second.lease) is True
    assert jobs.renew("tenant", first.lease) is False
    peek = jobs.acquire("tenant", peek=True)
    assert (peek.allowed, peek.remaining, peek.lease) == (True, 0, None)
    assert jobs.acquire("tenant", timeout=timedelta(minutes=2)).reset_ms == 120_000


def test_lease_as_a_context_manager(limits: Any) -> None:
    jobs = limits.concurrency(limit=1, timeout=60)
    with jobs.lease("job") as lease:
        assert isinstance(lease.id, int) and lease.id > 0
        assert lease.decision.remaining == 0
        assert lease.renew() is True
        with pytest.raises(LimitExceeded) as raised:
            with jobs.lease("job"):
                pass  # pragma: no cover - refused before the block
        assert raised.value.decision.allowed is False
        assert within(raised.value.decision.retry_after_ms, 60_000)
    assert lease.released == 1
    assert jobs.acquire("job", peek=True).remaining == 0  # a peek of one unit: it would be taken
    assert jobs.acquire("job", 0).remaining == 1  # a query: the unit is free again


def test_lease_released_when_the_block_raises(limits: Any) -> None:
    jobs = limits.concurrency(limit=1, timeout=60)
    with pytest.raises(RuntimeError, match="work failed"):
        with jobs.lease("job"):
            raise RuntimeError("work failed")
    assert jobs.acquire("job", 0).remaining == 1


def test_decision_value(limits: Any) -> None:
    api = limits.gcra(rate=1, per=3600, burst=3)
    decision = api.take("v")
    assert decision == Decision((0, 3, 2, -1, HOUR), 1)
    assert repr(decision) == (
        "Decision(allowed=True, limit=3, remaining=2, retry_after_ms=None, reset_ms=3600000, granted=1)"
    )


# -- check() -------------------------------------------------------------------

WHERE_THE_CAP_IS = {
    "module": "CONFIG SET ratelimit.{setting} raises the cap, up to 1000000",
    "functions": "the {setting} setting at the top of the library raises the cap, up to 1000000",
    "scripts": "the {setting} setting at the top of the library raises the cap, up to 1000000",
}


def test_check_finds_what_the_server_refuses(limits: Any, server: Any, backend: str) -> None:
    """Limits within the client's ranges but past the server's caps (10,000
    by default): check() raises them in the server's words, and takes
    nothing."""

    def cap(setting: str) -> str:
        return WHERE_THE_CAP_IS[backend].format(setting=setting)

    cases = [
        (
            limits.sliding_log(limit=20_000, window=60),
            f"ERR limit must be an integer from 1 to 10000 ({cap('sliding_log_max_limit')})",
        ),
        (
            limits.concurrency(limit=20_000, timeout=60),
            f"ERR limit must be an integer from 1 to 10000 ({cap('concurrency_max_limit')})",
        ),
        (
            limits.all_of(limits.gcra(rate=1, per=1, name="a"), limits.sliding_log(limit=20_000, window=60, name="b")),
            f"ERR limit 2 (SLIDING_LOG): limit must be an integer from 1 to 10000 ({cap('sliding_log_max_limit')})",
        ),
    ]
    for limiter, message in cases:
        with pytest.raises(ServerError) as raised:
            limiter.check()
        assert (raised.value.code, str(raised.value)) == ("ERR", message)
    assert limits.sliding_log(limit=10_000, window=60).check() is None
    server.client().lpush("a list", "x")
    with pytest.raises(ServerError) as raised:
        limits.gcra(rate=1, per=1).check("a list")
    assert str(raised.value) == "WRONGTYPE Operation against a key holding the wrong kind of value"
    assert server.client().keys("*") == [b"a list"]  # a check takes nothing
