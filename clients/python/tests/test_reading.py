"""Tags, RL.LOG and RL.INSPECT (rl_log, rl_inspect): offline against the
scripted server (what is sent, what is refused before sending, replies of
every shape), and live on every backend (who used a sliding log, the state
of each kind of limiter)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from redis_ratelimit_client import InvalidParameter, LogEntry, RateLimitError, ServerError, TagUnits, Unavailable

from .fake import BlackHole, FakeRedis

# -- offline -------------------------------------------------------------------


def test_log_refuses_before_sending(connect: Callable[..., Any]) -> None:
    with FakeRedis(lambda args: []) as fake:
        limits = connect(fake.port, backend="module")
        for call, words in (
            (lambda: limits.log("", 60), "key must be a non-empty string"),
            (lambda: limits.log("k", 0), "window must be from 1 ms to 1000000000000 ms, got 0 ms"),
            (lambda: limits.log("k", 60, by_tag="yes"), "by_tag must be True or False, got str"),
            (lambda: limits.log("k", 60, count=0), "count must be an integer from 1 to 1000000000, got 0"),
            (lambda: limits.inspect(None), "key must be a non-empty string, got NoneType"),
            (lambda: limits.gcra(rate=1, per=1).take("k", tag=42), "tag must be a str or bytes, got int"),
        ):
            with pytest.raises(InvalidParameter) as raised:
                call()
            assert str(raised.value) == words
        assert fake.commands == []


def test_log_sends_the_window_in_milliseconds(connect: Callable[..., Any]) -> None:
    with FakeRedis(lambda args: [[5, 1, b"\xff\x00"]]) as fake:
        limits = connect(fake.port, backend="functions")
        entries = limits.log(b"k\x00", 0.25, count=3)
        assert entries == [LogEntry(5, 1, b"\xff\x00")]  # a tag is bytes, any bytes
        assert fake.commands[0][:4] == ["FCALL", "rl_log", "1", "k\x00"]
        assert fake.commands[0][4:] == ["250", "MS", "COUNT", "3"]


def test_a_tag_as_bytes_and_in_utf8(connect: Callable[..., Any]) -> None:
    with FakeRedis(lambda args: [0, 5, 4, -1, 1000]) as fake:
        limits = connect(fake.port, backend="module")
        log = limits.sliding_log(limit=5, window=1)
        log.take("k", tag="é" * 512)  # 1,024 bytes
        log.take("k", tag=b"user:42", wait=0)
        with pytest.raises(InvalidParameter, match="got 1026 bytes"):
            log.take("k", tag="é" * 513)
        assert fake.commands[0][-2:] == ["TAG", "é" * 512]
        assert fake.commands[1][-4:] == ["WAIT", "0", "TAG", "user:42"]


def test_a_tagged_refusal_is_remembered_with_its_tag(connect: Callable[..., Any]) -> None:
    with FakeRedis(lambda args: [1, 5, 0, 60000, 60000]) as fake:
        limits = connect(fake.port, backend="module", local_refusals=10)
        log = limits.sliding_log(limit=5, window=60)
        assert not log.take("k", tag="a").allowed
        assert not log.take("k", tag="a").allowed  # remembered: not sent
        assert not log.take("k", tag="b").allowed  # another tag: sent
        assert [command[-1] for command in fake.commands] == ["a", "b"]


@pytest.mark.parametrize(
    "reply",
    [b"OK", 3, [[1, 2]], [["a", 1, None]]],
    ids=["a string", "an integer", "an item too short", "an instant that is no integer"],
)
def test_log_replies_of_another_shape(reply: Any, connect: Callable[..., Any]) -> None:
    with FakeRedis(lambda args: reply) as fake:
        limits = connect(fake.port, backend="module")
        with pytest.raises(RateLimitError, match="log: unexpected reply"):
            limits.log("k", 60)


def test_inspect_reply_of_another_shape(connect: Callable[..., Any]) -> None:
    with FakeRedis(lambda args: ["kind", "gcra", "tat_us"]) as fake:
        limits = connect(fake.port, backend="module")
        with pytest.raises(RateLimitError, match="inspect: unexpected reply"):
            limits.inspect("k")


def test_a_reading_is_never_failed_open(connect: Callable[..., Any]) -> None:
    """No answer within the deadline: Unavailable, whatever the policy (a
    reading answers no decision to fail open with)."""
    with BlackHole() as hole:
        limits = connect(hole.port, backend="module", timeout=0.05, fail_open=True)
        with pytest.raises(Unavailable, match="no answer within 50 ms"):
            limits.log("k", 60)
        with pytest.raises(Unavailable, match="no answer within 50 ms"):
            limits.inspect("k")


# -- live, on every backend -----------------------------------------------------


def test_who_used_a_sliding_log(limits: Any) -> None:
    api = limits.sliding_log(limit=10, window=60)
    api.take("ip", 2, tag="alice")
    api.take("ip")
    api.take("ip", 3, tag=b"bob")
    api.take("ip", tag="alice")
    totals = limits.log("ip", 60, by_tag=True)
    assert totals == [TagUnits(b"alice", 3), TagUnits(b"bob", 3), TagUnits(None, 1)]
    assert limits.log("ip", 60, by_tag=True, count=1) == [TagUnits(b"alice", 3)]
    entries = limits.log("ip", 60)
    assert [(e.units, e.tag) for e in entries] == [(1, b"alice"), (3, b"bob"), (1, None), (2, b"alice")]
    assert all(isinstance(e.instant_us, int) and e.instant_us > 0 for e in entries)
    assert [e.instant_us for e in entries] == sorted((e.instant_us for e in entries), reverse=True)
    assert limits.log("nobody", 60) == [] and limits.log("nobody", 60, by_tag=True) == []
    state = limits.inspect("ip")
    assert state is not None
    assert (state["kind"], state["entries"], state["tagged"]) == ("sliding_log", 7, 6)
    assert state["oldest_us"] == entries[-1].instant_us and state["newest_us"] == entries[0].instant_us
    assert isinstance(state["pttl"], int) and 0 < state["pttl"] <= 61_000  # the window, and a rounding up


def test_all_of_tags_its_sliding_logs(limits: Any) -> None:
    both = limits.all_of(limits.gcra(rate=10, per=1, name="burst"), limits.sliding_log(limit=100, window=3600))
    both.take(["{u}:burst", "{u}:hourly"], 2, tag="alice")
    assert limits.log("{u}:hourly", 3600, by_tag=True) == [TagUnits(b"alice", 2)]
    with pytest.raises(ServerError, match=r"holds an RL\.GCRA state, not an RL\.SLIDING_LOG one"):
        limits.log("{u}:burst", 3600)


def test_inspect_every_kind(limits: Any) -> None:
    assert limits.inspect("missing") is None
    limits.gcra(rate=10, per=1).take("g")
    gcra = limits.inspect("g")
    assert gcra is not None and list(gcra) == ["kind", "tat_us", "pttl"] and gcra["kind"] == "gcra"
    limits.token_bucket(capacity=10, refill=1, per=1).take("t", 3)
    bucket = limits.inspect("t")
    assert bucket is not None and (bucket["kind"], bucket["tokens"]) == ("token_bucket", 7)
    limits.fixed_window(limit=10, window=3600).take("f", 4)
    fixed = limits.inspect("f")
    assert fixed is not None and (fixed["kind"], fixed["count"]) == ("fixed", 4)
    limits.sliding_counter(limit=10, window=3600).take("c", 5)
    counter = limits.inspect("c")
    assert counter is not None and (counter["kind"], counter["current"]) == ("sliding_counter", 5)
    lease = limits.concurrency(limit=3, timeout=60).acquire("q", 2).lease
    leases = limits.inspect("q")
    assert leases is not None and (leases["kind"], leases["leases"], leases["units"]) == ("concurrency", 1, 2)
    assert leases["last_id"] == lease
    refused = limits.gcra(rate=1, per=3600, burst=1)
    refused.take("b")
    refused.take("b", block=60)
    blocked = limits.inspect("b")
    assert blocked is not None and isinstance(blocked["blocked_until_us"], int)


def test_a_tag_on_another_limiter_is_the_servers_error(limits: Any) -> None:
    with pytest.raises(ServerError):
        limits.gcra(rate=10, per=1).take("k", tag="alice")
