"""The asynchronous client, over ``redis.asyncio``'s ``Redis`` or ``RedisCluster``.

_sync.py is made from this file by clients/python/unasync.py: edit this one.
"""

from __future__ import annotations

from collections.abc import Sequence
from types import TracebackType
from typing import TYPE_CHECKING, Union

import redis.asyncio
import redis.asyncio.cluster

from ._core import DEFAULT_TIMEOUT, AllOfBase, ConcurrencyBase, Key, LimiterBase, make_calls
from ._decision import Decision
from ._errors import InvalidParameter, LimitExceeded
from ._io_async import AsyncDriver
from ._params import Duration
from ._reading import Inspection, LogEntry, TagUnits, inspect_call, log_call
from ._specs import ConcurrencySpec, fixed_window, gcra, sliding_counter, sliding_log, token_bucket

if TYPE_CHECKING:
    from .metrics import PrometheusMetrics

AsyncRedis = Union["redis.asyncio.Redis", "redis.asyncio.cluster.RedisCluster"]


class AsyncRateLimits:
    """Rate limiters over a ``redis.asyncio`` client (``Redis`` or
    ``RedisCluster``); every call is awaited.

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
        client: AsyncRedis,
        *,
        backend: str | None = None,
        timeout: Duration = DEFAULT_TIMEOUT,
        fail_open: bool = False,
        local_refusals: int = 0,
        metrics: PrometheusMetrics | None = None,
    ) -> None:
        self.redis = client
        self._calls = make_calls(client, backend, timeout, fail_open, local_refusals, metrics)
        self._driver = AsyncDriver(self._calls, client)
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

    def gcra(self, rate: int, per: Duration, burst: int | None = None, *, name: str | None = None) -> AsyncLimiter:
        """``rate`` requests per ``per`` (seconds or a timedelta), evenly
        spaced, with bursts of up to ``burst`` at once (default ``rate``)."""
        return AsyncLimiter(self, gcra(rate, per, burst, name))

    def token_bucket(self, capacity: int, refill: int, per: Duration, *, name: str | None = None) -> AsyncLimiter:
        """A bucket of ``capacity`` tokens, ``refill`` tokens added every ``per``."""
        return AsyncLimiter(self, token_bucket(capacity, refill, per, name))

    def fixed_window(self, limit: int, window: Duration, *, name: str | None = None) -> AsyncLimiter:
        """``limit`` per ``window``, windows aligned to the Unix epoch."""
        return AsyncLimiter(self, fixed_window(limit, window, name))

    def sliding_log(self, limit: int, window: Duration, *, name: str | None = None) -> AsyncLimiter:
        """``limit`` in any ``window``, exactly."""
        return AsyncLimiter(self, sliding_log(limit, window, name))

    def sliding_counter(self, limit: int, window: Duration, *, name: str | None = None) -> AsyncLimiter:
        """``limit`` per sliding ``window``, estimated from two fixed windows."""
        return AsyncLimiter(self, sliding_counter(limit, window, name))

    def all_of(self, *limiters: AsyncLimiter) -> AsyncAllOf:
        """The limiters decided at once: a request is allowed only if every
        one allows it, and only then counted by each (``RL.ALL``). Their keys
        must share a Cluster slot: use a hash tag (``{user:42}:burst``,
        ``{user:42}:hourly``)."""
        return AsyncAllOf(self, limiters)

    def concurrency(self, limit: int, timeout: Duration, *, name: str | None = None) -> AsyncConcurrency:
        """At most ``limit`` units of work in flight per key; a lease ends
        when released or ``timeout`` after it was taken or renewed. ``name``
        labels its decisions in the metrics (default ``"concurrency"``)."""
        return AsyncConcurrency(self, ConcurrencySpec(limit, timeout, name))

    # -- reading a key ------------------------------------------------------

    async def log(
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
        return await self._run(log_call(self._calls, key, window, by_tag, count))

    async def inspect(self, key: Key) -> Inspection | None:
        """The state the limiter on ``key`` keeps, changing nothing
        (``RL.INSPECT``): ``kind`` (``"gcra"``, ``"sliding_log"``...; None
        when the key holds only a block), the kind's fields in integers
        (``tat_us``; ``tokens``, ``updated_us``; ``entries``, ``tagged``,
        ``oldest_us``, ``newest_us``...), ``blocked_until_us`` when a block
        was set, and ``pttl`` (-1: no expiry). None for a missing key."""
        return await self._run(inspect_call(self._calls, key))

    # -- the backend and the connections ------------------------------------

    async def backend(self) -> str:
        """The backend in use: ``"module"``, ``"functions"`` or
        ``"scripts"`` (found now if it was not yet, within the deadline)."""
        await self._run(self._calls.find())
        assert self._calls.backend is not None
        return self._calls.backend.kind

    async def aclose(self) -> None:
        """Close the limiters' own connections (the user's client stays
        open: it is the user's)."""
        await self._driver.aclose()

    async def __aenter__(self) -> AsyncRateLimits:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    def __repr__(self) -> str:
        kind = self._calls.backend.kind if self._calls.backend else "not found yet"
        return f"<AsyncRateLimits {self.redis!r} backend={kind} timeout={self._calls.timeout_ms} ms>"


class AsyncLimiter(LimiterBase):
    """One rate limit, applied to any key: ``take(key)``."""

    __slots__ = ()
    _client: AsyncRateLimits

    async def take(
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
        return await self._client._run(call)

    async def peek(self, key: Key, n: int = 1) -> Decision:
        """What ``take(key, n)`` would answer, changing nothing."""
        return await self._client._run(self._take(key, n, peek=True))

    async def query(self, key: Key) -> Decision:
        """The state of the limit on ``key`` (a request of 0 units)."""
        return await self._client._run(self._take(key, 0))

    async def refund(self, key: Key, n: int = 1, *, peek: bool = False) -> Decision:
        """Give ``n`` units back to the limit on ``key`` (work admitted and
        then not done); never refused, never past fully rested."""
        return await self._client._run(self._take(key, n, peek=peek, refund=True))

    async def check(self, key: Key | None = None) -> None:
        """Try this limiter once without taking anything (a ``PEEK`` of one
        unit on ``key``, default ``ratelimit:{check}:1``): raises
        ``ServerError`` when the server refuses it (a limit past its cap,
        the functions edition's narrower ranges, a key of another type) and
        ``Unavailable`` when it cannot answer. Run it at start-up."""
        await self._client._run(self._check(key))


class AsyncAllOf(AllOfBase):
    """Several limits decided at once: ``take([key1, key2, ...])``, one key
    per limiter in order."""

    __slots__ = ()
    _client: AsyncRateLimits

    async def take(
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
        return await self._client._run(call)

    async def peek(self, keys: Sequence[Key], n: int = 1) -> Decision:
        """What ``take(keys, n)`` would answer, changing nothing."""
        return await self._client._run(self._take(keys, n, peek=True))

    async def query(self, keys: Sequence[Key]) -> Decision:
        """The state of the limits (a request of 0 units)."""
        return await self._client._run(self._take(keys, 0))

    async def refund(self, keys: Sequence[Key], n: int = 1, *, peek: bool = False) -> Decision:
        """Give ``n`` units back to every limit."""
        return await self._client._run(self._take(keys, n, peek=peek, refund=True))

    async def check(self, keys: Sequence[Key] | None = None) -> None:
        """Try these limits once without taking anything (a ``PEEK`` of one
        unit on ``keys``, default ``ratelimit:{check}:1``, ``:2``...):
        raises what the server refuses, as ``Limiter.check``."""
        await self._client._run(self._check(keys))


class AsyncConcurrency(ConcurrencyBase):
    """At most ``limit`` units in flight per key, held as leases."""

    __slots__ = ()
    _client: AsyncRateLimits

    async def acquire(self, key: Key, n: int = 1, *, timeout: Duration | None = None, peek: bool = False) -> Decision:
        """Take a lease of ``n`` units on ``key`` for at most ``timeout``
        (default: the limiter's). Allowed: ``decision.lease`` is the lease
        id, to release or renew. Refused: ``retry_after`` says when enough
        leases reach their deadlines."""
        return await self._client._run(self._acquire(key, n, timeout, peek))

    async def release(self, key: Key, lease: int | AsyncLease) -> int:
        """End a lease; answers the units released (0 for a lease unknown,
        already released or past its deadline)."""
        return await self._client._run(self._release(key, lease))

    async def renew(self, key: Key, lease: int | AsyncLease, timeout: Duration | None = None) -> bool:
        """Move a live lease's deadline to ``timeout`` from now (default:
        the limiter's); False when the lease had already ended."""
        return await self._client._run(self._renew(key, lease, timeout))

    async def check(self, key: Key | None = None) -> None:
        """Try this limiter once without taking a lease (a ``PEEK`` of one
        unit on ``key``, default ``ratelimit:{check}:1``): raises what the
        server refuses, as ``Limiter.check``."""
        await self._client._run(self._check(key))

    def lease(self, key: Key, n: int = 1, *, timeout: Duration | None = None) -> AsyncLease:
        """A lease as an async context manager: ``async with jobs.lease(key) as lease:``
        acquires on entry (``LimitExceeded`` when refused) and releases on
        exit, errors included."""
        if isinstance(n, int) and not isinstance(n, bool) and n < 1:
            raise InvalidParameter(f"n must be at least 1 for a lease, got {n}")
        return AsyncLease(self, key, n, timeout)


class AsyncLease:
    """A lease held in an ``async with`` block; ``id`` is set on entry."""

    __slots__ = ("concurrency", "decision", "id", "key", "n", "released", "timeout")

    def __init__(self, concurrency: AsyncConcurrency, key: Key, n: int, timeout: Duration | None) -> None:
        self.concurrency = concurrency
        self.key = key
        self.n = n
        self.timeout = timeout
        self.id: int | None = None
        self.decision: Decision | None = None
        self.released: int | None = None
        """Units released on exit (0 when the lease had already ended)."""

    async def __aenter__(self) -> AsyncLease:
        decision = await self.concurrency.acquire(self.key, self.n, timeout=self.timeout)
        self.decision = decision
        if decision.lease is None:
            raise LimitExceeded(self.key, decision)
        self.id = decision.lease
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if self.id is not None and self.released is None:
            await self.release()

    async def renew(self, timeout: Duration | None = None) -> bool:
        """Extend this lease to ``timeout`` from now (default: the timeout it
        was taken with)."""
        if self.id is None:
            raise RuntimeError("renew: the lease was not acquired")
        return await self.concurrency.renew(self.key, self.id, self.timeout if timeout is None else timeout)

    async def release(self) -> int:
        """Release this lease now; the ``async with`` block then releases nothing."""
        if self.id is None:
            raise RuntimeError("release: the lease was not acquired")
        self.released = await self.concurrency.release(self.key, self.id)
        return self.released

    def __repr__(self) -> str:
        return f"<AsyncLease key={self.key!r} n={self.n} id={self.id}>"
