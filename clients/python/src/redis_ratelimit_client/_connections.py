"""Connections of the client's own, made from the user's redis-py client.

The user's client is read, never changed: its connection class and keyword
arguments (host or path, TLS, credentials, database, client name, protocol,
encoding) make the limiter's connections, with these overridden so that the
call's deadline alone bounds it and nothing is sent twice:

- no retries (``retry`` with 0 retries, ``retry_on_timeout`` off,
  ``retry_on_error`` empty): a command whose answer was lost may have run;
- the socket timeouts: the sync driver sets them from the time left before
  the deadline on every connect, send and read; the async driver bounds the
  whole exchange with an asyncio timeout;
- ``health_check_interval`` 0: an idle connection is checked for a closed
  socket before use instead, without a round trip;
- ``decode_responses`` off, and a parser that keeps each error reply as the
  server sent it (redis-py strips the codes it knows: ``ERR``,
  ``NOSCRIPT``...);
- redis-py 7+'s maintenance notifications off: they relax the socket
  timeouts during a server's maintenance, past the deadline.
"""

from __future__ import annotations

import functools
from collections import deque
from collections.abc import Callable, Sequence
from typing import Any

import redis.connection

from ._errors import InvalidParameter
from ._steps import Address


@functools.cache
def keeping_replies(parser: type) -> type:
    """``parser`` that also keeps each error reply's text, code first, on
    the exception it makes (``rl_reply``)."""

    class Keeping(parser):  # type: ignore[misc]
        @classmethod
        def parse_error(cls, response: str) -> Exception:
            error: Exception = super().parse_error(response)
            error.rl_reply = response  # type: ignore[attr-defined]
            return error

    Keeping.__name__ = Keeping.__qualname__ = f"Keeping{parser.__name__}"
    return Keeping


def reply_text(error: Exception) -> str:
    """An error reply as the server sent it."""
    return getattr(error, "rl_reply", None) or str(error)


def parser_for(kwargs: dict[str, Any], default: type, resp2: type, resp3: type, hiredis: type) -> type:
    """The parser of the user's settings (one of redis-py's three, found in
    the class given: a Cluster client names a subclass), RESP3's where the
    protocol is 3 (redis-py 8's default: it switches a RESP2 parser to
    RESP3 on connect, which would drop ours), keeping replies."""
    given = kwargs.get("parser_class") or default
    base = next((known for known in (hiredis, resp3, resp2) if issubclass(given, known)), default)
    protocol = kwargs.get("protocol") or getattr(redis.connection, "DEFAULT_RESP_VERSION", 2)
    if base is resp2 and str(protocol) == "3":
        base = resp3
    return keeping_replies(base)


def is_cluster(client: Any) -> bool:
    return hasattr(client, "nodes_manager")


def seeds_of(client: Any) -> list[Address] | None:
    """A Cluster client's nodes to ask for the slot map first (its startup
    nodes, then the nodes it knows), or None for one server."""
    if not is_cluster(client):
        return None
    manager = client.nodes_manager
    nodes = [*manager.startup_nodes.values(), *getattr(manager, "nodes_cache", {}).values()]
    return [(str(node.host), int(node.port)) for node in nodes]


def settings_of(client: Any) -> tuple[type, dict[str, Any]]:
    """The connection class and keyword arguments of the user's client (one
    server: its pool's; a Cluster: a node's, whose host and port each of the
    limiter's connections replaces)."""
    if not is_cluster(client):
        pool = client.connection_pool
        if "Sentinel" in type(pool).__name__:
            # Its connections ask the sentinels for the primary, with their
            # own timeouts and retries: no deadline would bound them.
            raise InvalidParameter(
                "a Sentinel client is not supported (finding the primary through the sentinels is not bounded "
                "by the deadline): pass a client of the primary's address, or a RedisCluster"
            )
        return pool.connection_class, dict(pool.connection_kwargs)
    nodes = [*client.nodes_manager.startup_nodes.values(), *getattr(client.nodes_manager, "nodes_cache", {}).values()]
    for node in nodes:
        if getattr(node, "connection_class", None) is not None:  # redis.asyncio's ClusterNode
            return node.connection_class, dict(node.connection_kwargs)
        redis_client = getattr(node, "redis_connection", None)  # redis-py's ClusterNode
        if redis_client is not None:
            pool = redis_client.connection_pool
            return pool.connection_class, dict(pool.connection_kwargs)
    raise TypeError(f"{type(client).__name__}: no node to take the connection settings from")


class Driver:
    """What the sync and async drivers share: the client's calls, the
    deadline, the factory of connections and the idle ones per node (None:
    the one server; a connection is idle only between calls, its reply
    read)."""

    __slots__ = ("_calls", "_factory", "_idle", "_timeout")

    def __init__(self, calls: Any, factory: Factory) -> None:
        self._calls = calls
        self._timeout = calls.timeout_ms / 1000
        self._factory = factory
        self._idle: dict[Address | None, deque[Any]] = {}

    def _idle_of(self, node: Address | None) -> deque[Any]:
        idle = self._idle.get(node)
        if idle is None:
            idle = self._idle.setdefault(node, deque())
        return idle


class Factory:
    """Makes the limiter's connections to one server or to a Cluster node."""

    __slots__ = ("_class", "_kwargs")

    def __init__(
        self, client: Any, connection_class: Callable[[type], type], overrides: dict[str, Any], parsers: Sequence[type]
    ) -> None:
        cls, kwargs = settings_of(client)
        kwargs.update(overrides)
        for name in ("maint_notifications_pool_handler", "oss_cluster_maint_notifications_handler"):
            kwargs.pop(name, None)
        if "maint_notifications_config" in kwargs:
            kwargs["maint_notifications_config"] = None
        if is_cluster(client) and kwargs.get("redis_connect_func") is not None:
            # redis-py's Cluster connect sets its own parser, and READONLY
            # for replicas: the limiter's connections go to primaries only.
            kwargs["redis_connect_func"] = None
        kwargs["parser_class"] = parser_for(kwargs, *parsers)
        self._class = connection_class(cls)
        self._kwargs = kwargs

    def make(self, node: Address | None) -> Any:
        if node is None:
            return self._class(**self._kwargs)
        return self._class(**{**self._kwargs, "host": node[0], "port": node[1]})
