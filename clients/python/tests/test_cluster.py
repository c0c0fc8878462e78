"""Redis Cluster through redis-py's RedisCluster (sync and async): three
primaries with the module; three without it, where the client loads the
library on every primary and reloads it on the one that lost it; three that
deny FUNCTION, where the scripts are loaded on every primary."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest
import redis

from redis_ratelimit_client import InvalidParameter

from .conftest import Servers
from .servers import Cluster

HOUR = 3_600_000
# Keys spread over the three primaries (checked below).
KEYS = [f"user:{i}" for i in range(12)]


def reset(cluster: Cluster) -> None:
    for node in cluster.nodes:
        admin = node.client()
        admin.flushall()
        try:
            admin.execute_command("FUNCTION", "FLUSH")
        except redis.ResponseError:
            pass  # FUNCTION renamed away
        admin.script_flush()


def owner(cluster: Cluster, key: str) -> int:
    """The index of the node that serves key."""
    slot = redis.Redis(port=cluster.port).execute_command("CLUSTER", "KEYSLOT", key)
    return 0 if slot <= 5460 else 1 if slot <= 10922 else 2


@pytest.fixture
def cluster_of(servers: Servers) -> Callable[[str], Cluster]:
    def get(kind: str) -> Cluster:
        cluster: Cluster = servers.get(f"cluster-{kind}")
        reset(cluster)
        assert {owner(cluster, key) for key in KEYS} == {0, 1, 2}
        return cluster

    return get


def exercise(limits: Any) -> None:
    """The same answers as on one server, on keys of every primary."""
    api = limits.gcra(rate=1, per=3600, burst=3)
    for key in KEYS:
        assert api.take(key).raw == (0, 3, 2, -1, HOUR)
    assert [api.take(KEYS[0]).remaining for _ in range(3)] == [1, 0, 0]
    both = limits.all_of(
        limits.gcra(rate=1, per=10, burst=3, name="burst"), limits.sliding_log(limit=3, window=3600, name="hourly")
    )
    # A hash tag puts both keys in one slot.
    assert both.take(["{user:9}:burst", "{user:9}:hourly"]).raw == (0, 3, 2, -1, 10_000, 1)
    jobs = limits.concurrency(limit=1, timeout=60)
    with jobs.lease("{tenant}:jobs") as lease:
        assert lease.renew() is True
    assert lease.released == 1
    # Tags, and the readings, go to the primary of their key.
    log = limits.sliding_log(limit=10, window=60)
    for key in KEYS:
        log.take(f"log:{key}", 2, tag=key)
        assert [(t.tag, t.units) for t in limits.log(f"log:{key}", 60, by_tag=True)] == [(key.encode(), 2)]
        state = limits.inspect(f"log:{key}")
        assert state is not None and (state["kind"], state["entries"], state["tagged"]) == ("sliding_log", 2, 2)
    assert limits.inspect("log:missing") is None


def test_cluster_with_the_module(cluster_of: Callable[[str], Cluster], connect: Callable[..., Any]) -> None:
    cluster = cluster_of("module")
    limits = connect(cluster.port, cluster=True)
    assert limits.backend() == "module"
    exercise(limits)


def test_keys_of_several_slots_are_refused_before_sending(
    cluster_of: Callable[[str], Cluster], connect: Callable[..., Any]
) -> None:
    cluster = cluster_of("module")
    limits = connect(cluster.port, cluster=True)
    both = limits.all_of(limits.gcra(rate=1, per=1, name="a"), limits.gcra(rate=1, per=1, name="b"))
    with pytest.raises(InvalidParameter) as raised:
        both.take(["user:1", "user:2"])
    assert str(raised.value) == (
        "keys must share one Cluster slot: give them one hash tag ({user:42}:burst, {user:42}:hourly)"
    )


def test_cluster_library_loaded_on_every_primary(
    cluster_of: Callable[[str], Cluster], connect: Callable[..., Any]
) -> None:
    cluster = cluster_of("functions")
    limits = connect(cluster.port, cluster=True)
    assert limits.backend() == "functions"
    for node in cluster.nodes:
        libraries = node.client().execute_command("FUNCTION", "LIST", "LIBRARYNAME", "ratelimit")
        assert len(libraries) == 1, f"no library on the node at port {node.port}"
    exercise(limits)
    # A primary loses the library (a failover to a replica the load never
    # reached): the call on its key reloads it and is counted once.
    lost = cluster.nodes[owner(cluster, KEYS[1])]
    lost.client().execute_command("FUNCTION", "FLUSH")
    api = limits.gcra(rate=1, per=3600, burst=3)
    assert api.take(KEYS[1]).remaining == 1
    assert len(lost.client().execute_command("FUNCTION", "LIST", "LIBRARYNAME", "ratelimit")) == 1


def test_cluster_without_functions_uses_the_scripts(
    cluster_of: Callable[[str], Cluster], connect: Callable[..., Any]
) -> None:
    cluster = cluster_of("evalonly")
    limits = connect(cluster.port, cluster=True)
    assert limits.backend() == "scripts"
    exercise(limits)
    for node in cluster.nodes:
        node.client().script_flush()
    api = limits.gcra(rate=1, per=3600, burst=3)
    assert api.take(KEYS[2]).remaining == 1  # NOSCRIPT, loaded, sent once more: counted once


@pytest.fixture(scope="module")
def reshardable() -> Iterator[Cluster]:
    """A cluster of this module's own, whose slots the tests move."""
    from .servers import module, redis7

    cluster = Cluster(redis7(), "--loadmodule", module())
    yield cluster
    cluster.stop()


def test_a_slot_moved_to_another_primary_is_followed(
    reshardable: Cluster, connect: Callable[..., Any], mode: str
) -> None:
    """A reshard: the slot of a key moves to another primary after the
    client learnt the map; the call goes where MOVED says (it did not run
    where it went first), and the map keeps the new owner."""
    cluster = reshardable
    key = f"resharded:{mode}"
    slot = cluster.nodes[0].client().execute_command("CLUSTER", "KEYSLOT", key)
    owner = 0 if slot <= 5460 else 1 if slot <= 10922 else 2
    target = (owner + 1) % 3
    limits = connect(cluster.port, cluster=True)
    api = limits.gcra(rate=1, per=3600, burst=5)
    assert api.take(f"elsewhere:{mode}").remaining == 4  # the map is learnt
    new_owner = cluster.nodes[target].client().execute_command("CLUSTER", "MYID").decode()
    for node in (target, owner, 3 - owner - target):
        cluster.nodes[node].client().execute_command("CLUSTER", "SETSLOT", slot, "NODE", new_owner)
    assert [api.take(key).remaining for _ in range(2)] == [4, 3]
    # The state is on the new owner: a query there (0 units) sees it.
    assert cluster.nodes[target].client().execute_command("RL.GCRA", key, 4, 1, 3600, 0)[2] == 3
