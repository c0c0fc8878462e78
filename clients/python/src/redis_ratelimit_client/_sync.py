"""The synchronous client, over redis-py's ``Redis`` or ``RedisCluster``.

Made from _async.py by clients/python/unasync.py: edit that one, then run it.
"""

from __future__ import annotations

from collections.abc import Sequence
from types import TracebackType
from typing import TYPE_CHECKING, Union

import redis
import redis.cluster

from ._core import DEFAULT_TIMEOUT, AllOfBase, ConcurrencyBase, Key, LimiterBase, make_calls
from ._decision import Decision
from ._errors import InvalidParameter, LimitExceeded
from ._io_sync import SyncDriver
from ._params import Duration
from ._reading import Inspection, LogEntry, TagUnits, inspect_call, log_call
from ._specs import ConcurrencySpec, fixed_window, gcra, sliding_counter, sliding_log, token_bucket

if TYPE_CHECKING:
    from .metrics import PrometheusMetrics

SyncRedis = Union["redis.Redis", "redis.cluster.RedisCluster"]


class RateLimits:
    """Rate limiters over a redis-py client (``Redis`` or
    ``RedisCluster``).

    The user's client is read, never changed: the limiters send through
    connections of their own, made from its settings (see the README), so
    that each call has a deadline of its own and is never sent twice.

    - ``timeout``: the deadline of every call (default 250 ms; 1 ms to 60 s),
      connect, send, reply, backend search and reload included; past it the
      call raises ``Unavailable``.
    - ``fail_open``: a call that answers a decision and meets
      ``Unavailable`` answers an allowed decision marked ``failed_open``
      instead (default False: it raises).
    - ``local_refusals``: how many refused keys to remember (default 0,
      off): a plain take refused until an instant is refused in-process
      until then, without a round trip.
    - ``backend``: ``"module"``, ``"functions"`` or ``"scripts"`` instead of
      the search on first use.
    - ``metrics``: a ``redis_ratelimit_client.metrics.PrometheusMetrics``
      that records every decision (default None: none recorded).
    """

    def __init__(
        self,
        client: SyncRedis,
        *,
        backend: str | None = None,
        timeout: Duration = DEFAULT_TIMEOUT,
        fail_open: bool = False,
        local_refusals: int = 0,
        metrics: PrometheusMetrics | None = None,
    ) -> None:
        self.redis = client
        self._calls = make_calls(client, backend, timeout, fail_open, local_refusals, metrics)
        self._driver = SyncDriver(self._calls, client)
        self._run = self._driver.run

    @property
    def timeout_ms(self) -> int:
        """The deadline of every call, in milliseconds."""
        return self._calls.timeout_ms

    @property
    def fail_open(self) -> bool:
        """The failure policy of the calls that answer a decision."""
        return self._calls.fail_open

    # -- limiters ---------------------------------------------------------

    def gcra(self, rate: int, per: Duration, burst: int | None = None, *, name: str | None = None) -> Limiter:
        """``rate`` requests per ``per`` (seconds or a timedelta), evenly
        spaced, with bursts of up to ``burst`` at once (default ``rate``)."""
        return Limiter(self, gcra(rate, per, burst, name))

    def token_bucket(self, capacity: int, refill: int, per: Duration, *, name: str | None = None) -> Limiter:
        """A bucket of ``capacity`` tokens, ``refill`` tokens added every ``per``."""
        return Limiter(self, token_bucket(capacity, refill, per, name))

    def fixed_window(self, limit: int, window: Duration, *, name: str | None = None) -> Limiter:
        """``limit`` per ``window``, windows aligned to the Unix epoch."""
        return Limiter(self, fixed_window(limit, window, name))

    def sliding_log(self, limit: int, window: Duration, *, name: str | None = None) -> Limiter:
        """``limit`` in any ``window``, exactly."""
        return Limiter(self, sliding_log(limit, window, name))

    def sliding_counter(self, limit: int, window: Duration, *, name: str | None = None) -> Limiter:
        """``limit`` per sliding ``window``, estimated from two fixed windows."""
        return Limiter(self, sliding_counter(limit, window, name))

    def all_of(self, *limiters: Limiter) -> AllOf:
        """The limiters decided at once: a request is allowed only if every
        one allows it, and only then counted by each (``RL.ALL``). Their keys
        must share a Cluster slot: use a hash tag (``{user:42}:burst``,
        ``{user:42}:hourly``)."""
        return AllOf(self, limiters)

    def concurrency(self, limit: int, timeout: Duration, *, name: str | None = None) -> Concurrency:
        """At most ``limit`` units of work in flight per key; a lease ends
        when released or ``timeout`` after it was taken or renewed. ``name``
        labels its decisions in the metrics (default ``"concurrency"``)."""
        return Concurrency(self, ConcurrencySpec(limit, timeout, name))

    # -- reading a key ------------------------------------------------------

    def log(
        self, key: Key, window: Duration, by_tag: bool = False, count: int | None = None
    ) -> list[LogEntry] | list[TagUnits]:
        """Who used the sliding log on ``key`` within the last ``window``
        (reservations, in the future, included), changing nothing
        (``RL.LOG``).

        - By default, its entries, newest first: ``LogEntry(instant_us,
          units, tag)``, one per instant and tag.
        - ``by_tag=True``: the units per tag, most first:
          ``TagUnits(tag, units)``; ``tag`` None for the untagged.
        - ``count``: at most this many items (1 to 1,000,000,000).

        A missing key answers ``[]``; a key of another limiter raises
        ``ServerError``."""
        return self._run(log_call(self._calls, key, window, by_tag, count))

    def inspect(self, key: Key) -> Inspection | None:
        """The state the limiter on ``key`` keeps, changing nothing
        (``RL.INSPECT``): ``kind`` (``"gcra"``, ``"sliding_log"``...; None
        when the key holds only a block), the kind's fields in integers
        (``tat_us``; ``tokens``, ``updated_us``; ``entries``, ``tagged``,
        ``oldest_us``, ``newest_us``...), ``blocked_until_us`` when a block
        was set, and ``pttl`` (-1: no expiry). None for a missing key."""
        return self._run(inspect_call(self._calls, key))

    # -- the backend and the connections ------------------------------------

    def backend(self) -> str:
        """The backend in use: ``"module"``, ``"functions"`` or
        ``"scripts"`` (found now if it was not yet, within the deadline)."""
        self._run(self._calls.find())
        assert self._calls.backend is not None
        return self._calls.backend.kind

    def close(self) -> None:
        """Close the limiters' own connections (the user's client stays
        open: it is the user's)."""
        self._driver.close()

    def __enter__(self) -> RateLimits:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        kind = self._calls.backend.kind if self._calls.backend else "not found yet"
        return f"<RateLimits {self.redis!r} backend={kind} timeout={self._calls.timeout_ms} ms>"


class Limiter(LimiterBase):
    """One rate limit, applied to any key: ``take(key)``."""

    __slots__ = ()
    _client: RateLimits

    def take(
        self,
        key: Key,
        n: int = 1,
        *,
        peek: bool = False,
        force: bool = False,
        wait: Duration | None = None,
        at_most: bool = False,
        block: Duration | None = None,
        tag: str | bytes | None = None,
    ) -> Decision:
        """Take ``n`` units (0: a query) from the limit on ``key``.

        - ``peek``: answer what this call would do, and change nothing.
        - ``force``: record the request even past the limit (a debt).
        - ``wait``: when the request would be allowed within this duration,
          reserve it: allowed, with ``retry_after`` the wait before the work
          (GCRA, token bucket and sliding log only).
        - ``at_most``: take as many units as are free, up to ``n``
          (``granted`` says how many).
        - ``block``: when refused, block the key for this duration.
        - ``tag``: who takes them (1 to 1,024 bytes; a str is sent in
          UTF-8; the server's cap, ``tag_max_bytes``, is 64 by default):
          each entry a sliding log records carries it, for ``log``. Sliding
          logs only (the server refuses it elsewhere).
        """
        call = self._take(key, n, peek=peek, force=force, wait=wait, at_most=at_most, block=block, tag=tag)
        return self._client._run(call)

    def peek(self, key: Key, n: int = 1) -> Decision:
        """What ``take(key, n)`` would answer, changing nothing."""
        return self._client._run(self._take(key, n, peek=True))

    def query(self, key: Key) -> Decision:
        """The state of the limit on ``key`` (a request of 0 units)."""
        return self._client._run(self._take(key, 0))

    def refund(self, key: Key, n: int = 1, *, peek: bool = False) -> Decision:
        """Give ``n`` units back to the limit on ``key`` (work admitted and
        then not done); never refused, never past fully rested."""
        return self._client._run(self._take(key, n, peek=peek, refund=True))

    def check(self, key: Key | None = None) -> None:
        """Try this limiter once without taking anything (a ``PEEK`` of one
        unit on ``key``, default ``ratelimit:{check}:1``): raises
        ``ServerError`` when the server refuses it (a limit past its cap,
        the functions edition's narrower ranges, a key of another type) and
        ``Unavailable`` when it cannot answer. Run it at start-up."""
        self._client._run(self._check(key))


class AllOf(AllOfBase):
    """Several limits decided at once: ``take([key1, key2, ...])``, one key
    per limiter in order."""

    __slots__ = ()
    _client: RateLimits

    def take(
        self,
        keys: Sequence[Key],
        n: int = 1,
        *,
        peek: bool = False,
        force: bool = False,
        wait: Duration | None = None,
        at_most: bool = False,
        block: Duration | None = None,
        tag: str | bytes | None = None,
    ) -> Decision:
        """Take ``n`` units from every limit, or from none; the options are
        those of ``Limiter.take``, applied to every limit (``tag`` to its
        sliding logs). ``binding`` is the position (1-based) of the limit
        the decision reports."""
        call = self._take(keys, n, peek=peek, force=force, wait=wait, at_most=at_most, block=block, tag=tag)
        return self._client._run(call)

    def peek(self, keys: Sequence[Key], n: int = 1) -> Decision:
        """What ``take(keys, n)`` would answer, changing nothing."""
        return self._client._run(self._take(keys, n, peek=True))

    def query(self, keys: Sequence[Key]) -> Decision:
        """The state of the limits (a request of 0 units)."""
        return self._client._run(self._take(keys, 0))

    def refund(self, keys: Sequence[Key], n: int = 1, *, peek: bool = False) -> Decision:
        """Give ``n`` units back to every limit."""
        return self._client._run(self._take(keys, n, peek=peek, refund=True))

    def check(self, keys: Sequence[Key] | None = None) -> None:
        """Try these limits once without taking anything (a ``PEEK`` of one
        unit on ``keys``, default ``ratelimit:{check}:1``, ``:2``...):
        raises what the server refuses, as ``Limiter.check``."""
        self._client._run(self._check(keys))


class Concurrency(ConcurrencyBase):
    """At most ``limit`` units in flight per key, held as leases."""

    __slots__ = ()
    _client: RateLimits

    def acquire(self, key: Key, n: int = 1, *, timeout: Duration | None = None, peek: bool = False) -> Decision:
        """Take a lease of ``n`` units on ``key`` for at most ``timeout``
        (default: the limiter's). Allowed: ``decision.lease`` is the lease
        id, to release or renew. Refused: ``retry_after`` says when enough
        leases reach their deadlines."""
        return self._client._run(self._acquire(key, n, timeout, peek))

    def release(self, key: Key, lease: int | Lease) -> int:
        """End a lease; answers the units released (0 for a lease unknown,
        already released or past its deadline)."""
        return self._client._run(self._release(key, lease))

    def renew(self, key: Key, lease: int | Lease, timeout: Duration | None = None) -> bool:
        """Move a live lease's deadline to ``timeout`` from now (default:
        the limiter's); False when the lease had already ended."""
        return self._client._run(self._renew(key, lease, timeout))

    def check(self, key: Key | None = None) -> None:
        """Try this limiter once without taking a lease (a ``PEEK`` of one
        unit on ``key``, default ``ratelimit:{check}:1``): raises what the
        server refuses, as ``Limiter.check``."""
        self._client._run(self._check(key))

    def lease(self, key: Key, n: int = 1, *, timeout: Duration | None = None) -> Lease:
        """A lease as a context manager: ``with jobs.lease(key) as lease:``
        acquires on entry (``LimitExceeded`` when refused) and releases on
        exit, errors included."""
        if isinstance(n, int) and not isinstance(n, bool) and n < 1:
            raise InvalidParameter(f"n must be at least 1 for a lease, got {n}")
        return Lease(self, key, n, timeout)


class Lease:
    """A lease held in an ``with`` block; ``id`` is set on entry."""

    __slots__ = ("concurrency", "decision", "id", "key", "n", "released", "timeout")

    def __init__(self, concurrency: Concurrency, key: Key, n: int, timeout: Duration | None) -> None:
        self.concurrency = concurrency
        self.key = key
        self.n = n
        self.timeout = timeout
        self.id: int | None = None
        self.decision: Decision | None = None
        self.released: int | None = None
        """Units released on exit (0 when the lease had already ended)."""

    def __enter__(self) -> Lease:
        decision = self.concurrency.acquire(self.key, self.n, timeout=self.timeout)
        self.decision = decision
        if decision.lease is None:
            raise LimitExceeded(self.key, decision)
        self.id = decision.lease
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if self.id is not None and self.released is None:
            self.release()

    def renew(self, timeout: Duration | None = None) -> bool:
        """Extend this lease to ``timeout`` from now (default: the timeout it
        was taken with)."""
        if self.id is None:
            raise RuntimeError("renew: the lease was not acquired")
        return self.concurrency.renew(self.key, self.id, self.timeout if timeout is None else timeout)

    def release(self) -> int:
        """Release this lease now; the ``with`` block then releases nothing."""
        if self.id is None:
            raise RuntimeError("release: the lease was not acquired")
        self.released = self.concurrency.release(self.key, self.id)
        return self.released

    def __repr__(self) -> str:
        return f"<Lease key={self.key!r} n={self.n} id={self.id}>"
