"""Storages for the ``limits`` library (and so for Flask-Limiter and slowapi)
whose decisions the server makes: importing this module registers the URI
schemes

- ``redis-ratelimit://[[user]:password@]host:port[/db][?options]``,
- ``redis-ratelimit+cluster://[[user]:password@]host:port[,host:port...][?options]``,
- ``async+redis-ratelimit://...`` and ``async+redis-ratelimit+cluster://...``
  for ``limits.aio``,

so that an app moves with the import and its storage URI::

    import redis_ratelimit_client.limits  # noqa: F401  (registers the schemes)
    limiter = Limiter(get_remote_address, app=app, storage_uri="redis-ratelimit://localhost:6379")

Each strategy of ``limits`` is one command of the server, decided there in
one round trip, through this package's client (its backend search, deadline,
failure policy and recovery):

- moving window: ``RL.SLIDING_LOG key limit window amount``;
- sliding window counter: ``RL.SLIDING_COUNTER key limit window amount``;
- fixed window: ``limits`` asks ``incr(key, expiry, amount)`` without the
  limit and compares the count it answers with its limit, so ``incr`` is
  ``RL.FIXED key 1000000000 window amount`` and answers the count the server
  holds after it (``limit - remaining``).

The readings (``get``, ``get_expiry``, ``get_moving_window``,
``get_sliding_window``) are ``RL.INSPECT`` and ``RL.LOG``. The options, in
the URI's query or as keyword arguments (Flask-Limiter's
``storage_options``): ``timeout`` (seconds, default 0.25), ``fail_open``
(default false), ``backend`` (``module``, ``functions``, ``scripts``;
default: found on first use) and ``key_prefix`` (default
``ratelimit:limits``); ``metrics`` (keyword only: a
``redis_ratelimit_client.metrics.PrometheusMetrics``) counts each hit as
``RateLimits(metrics=...)`` does; any other keyword goes to redis-py's client, and any
other query option of ``redis-ratelimit://`` to redis-py's ``from_url``.
See docs/adapters/limits.md.
"""

from __future__ import annotations

import time
import urllib.parse
from typing import Any, TypeVar, cast

import limits.aio.storage as aio_storage
import limits.storage as sync_storage
import redis
import redis.asyncio
import redis.asyncio.cluster
import redis.cluster
from limits.errors import ConfigurationError

from ._async import AsyncLimiter, AsyncRateLimits
from ._decision import Decision
from ._errors import RateLimitError, Unavailable
from ._params import MAX_COUNT
from ._reading import Inspection, LogEntry
from ._sync import Limiter, RateLimits

DEFAULT_KEY_PREFIX = "ratelimit:limits"
"""Not ``limits``' own ``LIMITS``: its keys (strings, lists) are no state
the commands read, so a move starts rested instead of answering errors."""

FIXED_LIMIT = MAX_COUNT
"""The limit ``incr`` sends to ``RL.FIXED``: the largest the server takes,
so that the server counts every hit and ``limits`` compares the count."""

_OPTIONS = ("timeout", "fail_open", "backend", "key_prefix")
_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"0", "false", "no", "off"}


def _flag(name: str, value: object) -> bool:
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.lower() in _TRUE | _FALSE:
        return value.lower() in _TRUE
    raise ConfigurationError(f"{name} must be true or false, got {value!r}")


def _seconds(name: str, value: object) -> float:
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return value
    if isinstance(value, str):
        try:
            return float(value)
        except ValueError:
            pass
    raise ConfigurationError(f"{name} must be a number of seconds, got {value!r}")


class _Setup:
    """A storage URI and its options, read once: how to make the redis-py
    client, and the options of the RateLimits over it."""

    def __init__(self, uri: str, scheme: str, options: dict[str, Any]) -> None:
        parts = urllib.parse.urlsplit(uri)
        if parts.scheme != scheme:
            raise ConfigurationError(f"{uri!r}: expected a {scheme}:// URI")
        ours: dict[str, Any] = {}
        rest: list[tuple[str, str]] = []
        for name, value in urllib.parse.parse_qsl(parts.query, keep_blank_values=True):
            if name in _OPTIONS:
                ours[name] = value
            else:
                rest.append((name, value))
        for name in _OPTIONS:  # keyword arguments win over the URI
            if name in options:
                ours[name] = options.pop(name)
        self.key_prefix = str(ours.get("key_prefix", DEFAULT_KEY_PREFIX))
        self.limits_options: dict[str, Any] = {
            "timeout": _seconds("timeout", ours.get("timeout", 0.25)),
            "fail_open": _flag("fail_open", ours.get("fail_open", False)),
            "backend": ours.get("backend"),
            # An object, so a keyword argument only (Flask-Limiter's storage_options).
            "metrics": options.pop("metrics", None),
        }
        self.redis_options = options
        self.cluster = scheme.endswith("+cluster")
        if self.cluster:
            if rest:
                raise ConfigurationError(
                    f"{uri!r}: unknown option {rest[0][0]!r} (options of a cluster URI: {', '.join(_OPTIONS)})"
                )
            userinfo, _, hosts = parts.netloc.rpartition("@")
            self.nodes: list[tuple[str, int]] = []
            for location in hosts.split(","):
                node = urllib.parse.urlsplit(f"//{location.strip()}")
                try:
                    port = node.port
                except ValueError:
                    port = None
                if not node.hostname or port is None:
                    raise ConfigurationError(f"{uri!r}: expected host:port, got {location!r}")
                self.nodes.append((node.hostname, port))
            if userinfo:
                user, _, password = userinfo.partition(":")
                self.redis_options.setdefault("username", urllib.parse.unquote(user) or None)
                self.redis_options.setdefault("password", urllib.parse.unquote(password) or None)
        else:
            if not parts.netloc:
                raise ConfigurationError(f"{uri!r}: expected {scheme}://host:port")
            self.url = urllib.parse.urlunsplit(
                ("redis", parts.netloc, parts.path, urllib.parse.urlencode(rest), parts.fragment)
            )

    def key(self, key: str) -> str:
        """The key of the fixed and the moving window (one key, as in
        ``limits``' own redis storage)."""
        return f"{self.key_prefix}:{key}"

    def sliding_key(self, key: str) -> str:
        """The sliding window counter's key: its own, as in ``limits``' own
        redis storage, whose sliding window keys differ from the others."""
        return f"{self.key_prefix}:sliding:{key}"


# -- what each answer means to limits, for both storages ------------------------


def _count(decision: Decision, amount: int) -> int:
    """The fixed window's count after ``incr``, as ``limits`` compares it
    with its limit: the server's count (every hit counted), past any limit
    when the server refused (it never does below 10^9), and 0 when the
    request failed open."""
    if decision.failed_open:
        return 0
    held = decision.limit - decision.remaining
    return held if decision.allowed else held + amount


def _kind(inspection: Inspection | None, kind: str, key: str) -> Inspection | None:
    if inspection is None or inspection.get("kind") is None:
        return None  # missing, or only a block over a rested limiter
    if inspection["kind"] != kind:
        raise RateLimitError(f"key {key!r} holds a {inspection['kind']} limiter, not {kind}")
    return inspection


def _int(inspection: Inspection, name: str) -> int:
    value = inspection.get(name)
    return value if isinstance(value, int) else 0


def _fixed_count(inspection: Inspection | None, key: str) -> int:
    found = _kind(inspection, "fixed", key)
    return 0 if found is None else _int(found, "count")


def _expiry(inspection: Inspection | None) -> float:
    """When the key expires, in seconds since the epoch (now when it is
    missing or has no expiry), as ``limits``' own storages answer it."""
    pttl = 0 if inspection is None else max(_int(inspection, "pttl"), 0)
    return time.time() + pttl / 1000


def _moving_window(entries: list[LogEntry]) -> tuple[float, int]:
    """(the oldest entry's instant in seconds, the units in the window)."""
    if not entries:
        return time.time(), 0
    return min(e.instant_us for e in entries) / 1_000_000, sum(e.units for e in entries)


def _sliding_window(inspection: Inspection | None, key: str, expiry: int) -> tuple[int, float, int, float]:
    """(previous count, seconds until the previous window's weight is 0,
    current count, seconds until the current one's is), at the server's
    instant: a sliding counter's key expires two windows after its window's
    start, so its ``pttl`` says where in the window the server is."""
    found = _kind(inspection, "sliding_counter", key)
    if found is None:
        return 0, 0.0, 0, 0.0
    window = expiry * 1000
    start = _int(found, "window_start_us") // 1000
    pttl = _int(found, "pttl")
    now = start + 2 * window - pttl if pttl >= 0 else int(time.time() * 1000)
    previous, current = _int(found, "previous"), _int(found, "current")
    elapsed = now - start
    if elapsed >= window:  # the window written last is the previous one now
        previous, current, elapsed = current, 0, elapsed - window
    if elapsed >= window:
        return 0, 0.0, 0, 0.0
    return previous, (window - elapsed) / 1000, current, (2 * window - elapsed) / 1000


T = TypeVar("T")


class _Limiters(dict[tuple[str, int, int], T]):
    """One limiter per (algorithm, limit, window), made on first use:
    ``limiters[algorithm, limit, expiry]``."""

    def __init__(self, client: Any) -> None:
        super().__init__()
        self._client = client

    def __missing__(self, key: tuple[str, int, int]) -> T:
        algorithm, limit, expiry = key
        limiter: T = getattr(self._client, algorithm)(limit=limit, window=expiry)
        self[key] = limiter
        return limiter


_BASE_EXCEPTIONS: tuple[type[Exception], ...] = (RateLimitError, redis.exceptions.RedisError)


# -- the synchronous storage --------------------------------------------------------


class RateLimitStorage(
    sync_storage.Storage, sync_storage.MovingWindowSupport, sync_storage.SlidingWindowCounterSupport
):
    """A ``limits`` storage whose decisions the server makes:
    ``redis-ratelimit://host:port``."""

    STORAGE_SCHEME = ["redis-ratelimit"]  # noqa: RUF012 (limits reads it from the class)

    def __init__(self, uri: str, wrap_exceptions: bool = False, **options: Any) -> None:
        super().__init__(uri, wrap_exceptions=wrap_exceptions)
        self._setup = _Setup(uri, self.STORAGE_SCHEME[0], options)
        self.redis: Any = self._connect(self._setup)
        self.limits = RateLimits(self.redis, **self._setup.limits_options)
        """The client's ``RateLimits``: its limiters share these keys."""
        self._limiters = _Limiters[Limiter](self.limits)
        # A plain take, as the middleware sends it (Limiter.take's options
        # are never needed here): limits' hit costs its own work and no more.
        self._run = self.limits._run
        self._prefix = self._setup.key("")
        self._sliding = self._setup.sliding_key("")

    def _connect(self, setup: _Setup) -> Any:
        return redis.Redis.from_url(setup.url, **setup.redis_options)

    @property
    def base_exceptions(self) -> type[Exception] | tuple[type[Exception], ...]:
        return _BASE_EXCEPTIONS

    def _inspect(self, key: str) -> Inspection | None:
        try:
            return self.limits.inspect(key)
        except Unavailable:
            if self.limits.fail_open:
                return None  # a reading of a limiter that fails open: rested
            raise

    # fixed window
    def incr(self, key: str, expiry: int, amount: int = 1) -> int:
        decision = self._run(self._limiters["fixed_window", FIXED_LIMIT, expiry]._take(self._prefix + key, amount))
        return _count(decision, amount)

    def get(self, key: str) -> int:
        return _fixed_count(self._inspect(self._prefix + key), key)

    def get_expiry(self, key: str) -> float:
        return _expiry(self._inspect(self._prefix + key))

    # moving window
    def acquire_entry(self, key: str, limit: int, expiry: int, amount: int = 1) -> bool:
        return self._run(self._limiters["sliding_log", limit, expiry]._take(self._prefix + key, amount)).allowed

    def get_moving_window(self, key: str, limit: int, expiry: int) -> tuple[float, int]:
        try:
            entries = self.limits.log(self._prefix + key, expiry)
        except Unavailable:
            if not self.limits.fail_open:
                raise
            entries = []
        return _moving_window(cast(list[LogEntry], entries))

    # sliding window counter
    def acquire_sliding_window_entry(self, key: str, limit: int, expiry: int, amount: int = 1) -> bool:
        return self._run(self._limiters["sliding_counter", limit, expiry]._take(self._sliding + key, amount)).allowed

    def get_sliding_window(self, key: str, expiry: int) -> tuple[int, float, int, float]:
        return _sliding_window(self._inspect(self._sliding + key), key, expiry)

    def clear_sliding_window(self, key: str, expiry: int) -> None:
        self.redis.delete(self._sliding + key)

    # the keys
    def clear(self, key: str) -> None:
        self.redis.delete(self._prefix + key)

    def check(self) -> bool:
        try:
            return bool(self.redis.ping())
        except Exception:
            return False

    def reset(self) -> int | None:
        """Delete every key under the prefix (SCAN, on every primary of a
        Cluster); answers how many."""
        keys = list(self.redis.scan_iter(match=_pattern(self._setup.key_prefix), count=1000))
        # redis-py splits a DEL of several slots across a Cluster's primaries.
        return sum(int(self.redis.delete(*keys[i : i + 500])) for i in range(0, len(keys), 500))

    def close(self) -> None:
        """Close the limiters' connections and the redis-py client."""
        self.limits.close()
        self.redis.close()


class RateLimitClusterStorage(RateLimitStorage):
    """The same on a Redis Cluster: ``redis-ratelimit+cluster://host:port[,host:port...]``."""

    STORAGE_SCHEME = ["redis-ratelimit+cluster"]  # noqa: RUF012 (limits reads it from the class)

    def _connect(self, setup: _Setup) -> Any:
        nodes = [redis.cluster.ClusterNode(host, port) for host, port in setup.nodes]  # type: ignore[no-untyped-call]
        return redis.cluster.RedisCluster(startup_nodes=nodes, **setup.redis_options)


def _pattern(prefix: str) -> str:
    """A SCAN pattern for the keys under ``prefix``, its glob characters escaped."""
    escaped = "".join(f"\\{c}" if c in "*?[]\\" else c for c in prefix)
    return f"{escaped}:*"


# -- the asynchronous storage ------------------------------------------------------


class AsyncRateLimitStorage(
    aio_storage.Storage, aio_storage.MovingWindowSupport, aio_storage.SlidingWindowCounterSupport
):
    """The ``limits.aio`` storage: ``async+redis-ratelimit://host:port``."""

    STORAGE_SCHEME = ["async+redis-ratelimit"]  # noqa: RUF012 (limits reads it from the class)

    def __init__(self, uri: str, wrap_exceptions: bool = False, **options: Any) -> None:
        super().__init__(uri, wrap_exceptions=wrap_exceptions)
        self._setup = _Setup(uri, self.STORAGE_SCHEME[0], options)
        self.redis: Any = self._connect(self._setup)
        self.limits = AsyncRateLimits(self.redis, **self._setup.limits_options)
        """The client's ``AsyncRateLimits``: its limiters share these keys."""
        self._limiters = _Limiters[AsyncLimiter](self.limits)
        # A plain take, as the middleware sends it (Limiter.take's options
        # are never needed here): limits' hit costs its own work and no more.
        self._run = self.limits._run
        self._prefix = self._setup.key("")
        self._sliding = self._setup.sliding_key("")

    def _connect(self, setup: _Setup) -> Any:
        return redis.asyncio.Redis.from_url(setup.url, **setup.redis_options)

    @property
    def base_exceptions(self) -> type[Exception] | tuple[type[Exception], ...]:
        return _BASE_EXCEPTIONS

    async def _inspect(self, key: str) -> Inspection | None:
        try:
            return await self.limits.inspect(key)
        except Unavailable:
            if self.limits.fail_open:
                return None
            raise

    async def incr(self, key: str, expiry: int, amount: int = 1) -> int:
        decision = await self._run(
            self._limiters["fixed_window", FIXED_LIMIT, expiry]._take(self._prefix + key, amount)
        )
        return _count(decision, amount)

    async def get(self, key: str) -> int:
        return _fixed_count(await self._inspect(self._prefix + key), key)

    async def get_expiry(self, key: str) -> float:
        return _expiry(await self._inspect(self._prefix + key))

    async def acquire_entry(self, key: str, limit: int, expiry: int, amount: int = 1) -> bool:
        decision = await self._run(self._limiters["sliding_log", limit, expiry]._take(self._prefix + key, amount))
        return decision.allowed

    async def get_moving_window(self, key: str, limit: int, expiry: int) -> tuple[float, int]:
        try:
            entries = await self.limits.log(self._prefix + key, expiry)
        except Unavailable:
            if not self.limits.fail_open:
                raise
            entries = []
        return _moving_window(cast(list[LogEntry], entries))

    async def acquire_sliding_window_entry(self, key: str, limit: int, expiry: int, amount: int = 1) -> bool:
        decision = await self._run(self._limiters["sliding_counter", limit, expiry]._take(self._sliding + key, amount))
        return decision.allowed

    async def get_sliding_window(self, key: str, expiry: int) -> tuple[int, float, int, float]:
        return _sliding_window(await self._inspect(self._sliding + key), key, expiry)

    async def clear_sliding_window(self, key: str, expiry: int) -> None:
        await self.redis.delete(self._sliding + key)

    async def clear(self, key: str) -> None:
        await self.redis.delete(self._prefix + key)

    async def check(self) -> bool:
        try:
            return bool(await self.redis.ping())
        except Exception:
            return False

    async def reset(self) -> int | None:
        """Delete every key under the prefix (SCAN, on every primary of a
        Cluster); answers how many."""
        keys = [key async for key in self.redis.scan_iter(match=_pattern(self._setup.key_prefix), count=1000)]
        return sum([int(await self.redis.delete(*keys[i : i + 500])) for i in range(0, len(keys), 500)])

    async def aclose(self) -> None:
        """Close the limiters' connections and the redis-py client."""
        await self.limits.aclose()
        await self.redis.aclose()


class AsyncRateLimitClusterStorage(AsyncRateLimitStorage):
    """The ``limits.aio`` storage on a Redis Cluster:
    ``async+redis-ratelimit+cluster://host:port[,host:port...]``."""

    STORAGE_SCHEME = ["async+redis-ratelimit+cluster"]  # noqa: RUF012 (limits reads it from the class)

    def _connect(self, setup: _Setup) -> Any:
        nodes = [redis.asyncio.cluster.ClusterNode(host, port) for host, port in setup.nodes]
        return redis.asyncio.cluster.RedisCluster(startup_nodes=nodes, **setup.redis_options)


__all__ = [
    "DEFAULT_KEY_PREFIX",
    "FIXED_LIMIT",
    "AsyncRateLimitClusterStorage",
    "AsyncRateLimitStorage",
    "RateLimitClusterStorage",
    "RateLimitStorage",
]
