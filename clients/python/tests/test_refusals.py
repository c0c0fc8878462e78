"""The local memory of refusals (local_refusals): what is remembered, for
how long, with which values, what is dropped first; and what a flood from
one identity then costs the server."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from redis_ratelimit_client import Decision
from redis_ratelimit_client._refusals import Refusals

from .fake import FakeRedis
from .servers import Server

MS = 1_000_000  # nanoseconds


class Clock:
    def __init__(self) -> None:
        self.now = 10_000 * MS

    def __call__(self) -> int:
        return self.now


REFUSED = (1, 20, 0, 1500, 2000)


def test_a_refusal_is_answered_shortened_until_its_instant() -> None:
    clock = Clock()
    memory = Refusals(10, clock)
    memory.remember("k", Decision(REFUSED, 0))
    assert memory.get("k") == Decision(REFUSED, 0)
    clock.now += 400 * MS
    assert memory.get("k") == Decision((1, 20, 0, 1100, 1600), 0)
    clock.now += 1099 * MS + MS // 2  # 1499.5 ms gone: whole milliseconds, and at least 1 ms
    assert memory.get("k") == Decision((1, 20, 0, 1, 501), 0)
    clock.now += MS // 2  # 1500 ms: the instant has come
    assert memory.get("k") is None
    assert memory.get("other") is None


def test_the_binding_limit_is_kept() -> None:
    memory = Refusals(1, Clock())
    memory.remember("both", Decision((1, 3, 0, 3599001, 3600000, 2), 0, 2))
    assert memory.get("both") == Decision((1, 3, 0, 3599001, 3600000, 2), 0, 2)


def test_past_the_count_the_nearest_end_goes_first() -> None:
    clock = Clock()
    memory = Refusals(2, clock)
    memory.remember("a", Decision((1, 5, 0, 1000, 1000), 0))
    memory.remember("b", Decision((1, 5, 0, 3000, 3000), 0))
    memory.remember("c", Decision((1, 5, 0, 2000, 2000), 0))
    assert (memory.get("a"), len(memory)) == (None, 2)
    memory.remember("d", Decision((1, 5, 0, 5000, 5000), 0))
    assert [k for k in "abcd" if memory.get(k) is not None] == ["b", "d"]
    # Remembered again: its new instant counts, the old one is forgotten.
    memory.remember("b", Decision((1, 5, 0, 9000, 9000), 0))
    memory.remember("e", Decision((1, 5, 0, 7000, 7000), 0))
    assert [k for k in "abcde" if memory.get(k) is not None] == ["b", "e"]


def refusing(connect: Callable[..., Any], reply: tuple[int, ...] = REFUSED) -> tuple[FakeRedis, Any, Clock]:
    fake = FakeRedis(lambda args: list(reply))
    limits = connect(fake.port, backend="module", local_refusals=100)
    clock = Clock()
    target = getattr(limits, "_target", limits)  # the async client behind Blocking
    target._calls.refusals._clock = clock
    return fake, limits, clock


def test_a_plain_take_is_refused_locally(connect: Callable[..., Any]) -> None:
    fake, limits, clock = refusing(connect)
    with fake:
        api = limits.gcra(rate=10, per=1, burst=20)
        assert api.take("k") == Decision(REFUSED, 0)
        clock.now += 250 * MS
        # The same limit (another object, the same parameters), key and n:
        # answered here.
        again = limits.gcra(rate=10, per=1, burst=20).take("k")
        assert again == Decision((1, 20, 0, 1250, 1750), 0)
        assert len(fake.commands) == 1
        # Another key, another n, another limit: asked.
        api.take("other")
        api.take("k", 2)
        limits.gcra(rate=10, per=1, burst=21).take("k")
        assert len(fake.commands) == 4
        # Past the instant: asked again.
        clock.now += 1250 * MS
        api.take("k")
        assert len(fake.commands) == 5


@pytest.mark.parametrize(
    "call",
    [
        lambda api: api.take("k", peek=True),
        lambda api: api.peek("k"),
        lambda api: api.take("k", force=True),
        lambda api: api.take("k", wait=1),
        lambda api: api.take("k", 5, at_most=True),
        lambda api: api.refund("k"),
        lambda api: api.query("k"),
    ],
    ids=["peek", "peek()", "force", "wait", "at_most", "refund", "query"],
)
def test_only_plain_takes_are_remembered(call: Callable[[Any], Any], connect: Callable[..., Any]) -> None:
    fake, limits, _ = refusing(connect, (1, 20, 0, 1500, 2000, 0))
    with fake:
        api = limits.gcra(rate=10, per=1, burst=20)
        call(api)
        call(api)
        assert len(fake.commands) == 2
        api.take("k")  # a plain take, refused: remembered from now on
        api.take("k")
        assert len(fake.commands) == 3


def test_a_take_with_block_is_remembered_apart(connect: Callable[..., Any]) -> None:
    """A take with BLOCK is plain too (its refusal lasts until the block's
    end, which its retry_after says), remembered apart from the same take
    without BLOCK and with another duration."""
    fake, limits, _ = refusing(connect, (1, 20, 0, 60000, 60000))
    with fake:
        api = limits.gcra(rate=10, per=1, burst=20)
        blocked = api.take("k", block=60)
        assert api.take("k", block=60) == blocked
        assert len(fake.commands) == 1
        api.take("k")
        api.take("k", block=30)
        assert len(fake.commands) == 3


def test_a_refusal_that_never_passes_is_not_remembered(connect: Callable[..., Any]) -> None:
    fake, limits, _ = refusing(connect, (1, 3, 3, -1, 0))
    with fake:
        api = limits.gcra(rate=3, per=1)
        api.take("k", 5)
        api.take("k", 5)
        assert len(fake.commands) == 2


def test_all_of_is_remembered_by_its_keys(connect: Callable[..., Any]) -> None:
    fake, limits, _ = refusing(connect, (1, 3, 0, 3599001, 3600000, 2))
    with fake:
        both = limits.all_of(
            limits.gcra(rate=1, per=10, burst=3, name="burst"), limits.sliding_log(limit=3, window=3600, name="hourly")
        )
        first = both.take(["{u}:burst", "{u}:hourly"])
        assert both.take(["{u}:burst", "{u}:hourly"]) == first
        assert first.binding == 2 and len(fake.commands) == 1


def calls(server: Server, command: str) -> int:
    stats = server.client().info("commandstats").get(f"cmdstat_{command}", {})
    return int(stats.get("calls", 0)) + int(stats.get("rejected_calls", 0))


def test_a_flood_costs_the_server_two_calls(servers: Any, connect: Callable[..., Any]) -> None:
    """One identity, 200 requests against a limit of 1 an hour: without the
    memory, 200 calls; with it, the allowed one and the first refusal."""
    server = servers.get("module")
    for local_refusals, expected in ((0, 200), (100, 2)):
        server.client().flushall()
        server.client().config_resetstat()
        api = connect(server.port, backend="module", local_refusals=local_refusals).gcra(rate=1, per=3600, burst=1)
        decisions = [api.take("flood") for _ in range(200)]
        assert [d.allowed for d in decisions] == [True] + [False] * 199
        assert calls(server, "rl.gcra") == expected
