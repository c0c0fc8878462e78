"""The synchronous client, over redis-py's ``Redis`` or ``RedisCluster``."""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from types import TracebackType
from typing import Any, Union

import redis
from redis.cluster import RedisCluster
from redis.exceptions import NoScriptError, ResponseError

from . import _backend
from ._backend import FUNCTIONS, SCRIPTS, Backend, Search, is_function_not_found
from ._core import AllOfBase, ConcurrencyBase, Key, LimiterBase, lease_id
from ._decision import Decision, all_decision, lease_decision, rate_decision
from ._errors import InvalidParameter, LimitExceeded, ServerError
from ._params import Duration, options
from ._specs import ConcurrencySpec, fixed_window, gcra, sliding_counter, sliding_log, token_bucket

SyncRedis = Union["redis.Redis", "RedisCluster"]


class RateLimits:
    """Rate limiters over a redis-py client (``redis.Redis`` or
    ``redis.cluster.RedisCluster``), which stays the caller's.

    The backend (the module, the functions library, or the scripts) is found
    on first use and kept for the life of this object; ``backend=`` names it
    instead (``"module"``, ``"functions"`` or ``"scripts"``).
    """

    def __init__(self, client: SyncRedis, *, backend: str | None = None) -> None:
        self.redis = client
        # redis-py's execute_command, bound once: every call goes through it.
        self._execute: Callable[..., Any] = client.execute_command
        self._cluster = isinstance(client, RedisCluster)
        self._backend: Backend | None = None if backend is None else Backend(backend)
        self._finding = threading.Lock()

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

    def concurrency(self, limit: int, timeout: Duration) -> Concurrency:
        """At most ``limit`` units of work in flight per key; a lease ends
        when released or ``timeout`` after it was taken or renewed."""
        return Concurrency(self, ConcurrencySpec(limit, timeout))

    # -- the backend ------------------------------------------------------

    def backend(self) -> str:
        """The backend in use: ``"module"``, ``"functions"`` or
        ``"scripts"`` (found now if it was not yet)."""
        return (self._backend or self._find()).kind

    def _find(self) -> Backend:
        # One search at a time: threads that start together wait for it.
        with self._finding:
            if self._backend is None:
                self._backend = self._run(_backend.search())
            return self._backend

    def _run(self, steps: Search | Any) -> Any:
        """Drive a search generator: send each step, hand back its reply or
        its error."""
        try:
            step = next(steps)
            while True:
                options = {"target_nodes": self._targets(step.target)} if self._cluster and step.target else {}
                try:
                    reply = self._execute(*step.args, **options)
                except ResponseError as error:
                    step = steps.throw(error)
                else:
                    step = steps.send(reply)
        except StopIteration as stop:
            return stop.value

    def _targets(self, target: str) -> Any:
        """The nodes of a Cluster that a step goes to, named (redis-py
        routes a flag such as "primaries" by the command's keys first, and
        the search's commands have none)."""
        cluster: Any = self.redis
        return cluster.get_random_node() if target == _backend.RANDOM else cluster.get_primaries()

    def _call(self, command: str, function: str, keys: Sequence[Key], args: Sequence[Any]) -> Any:
        backend = self._backend or self._find()
        try:
            return self._execute(*backend.head(command, function, len(keys)), *keys, *args)
        except ResponseError as error:
            return self._recover(backend, error, command, function, keys, args)

    def _recover(
        self,
        backend: Backend,
        error: ResponseError,
        command: str,
        function: str,
        keys: Sequence[Key],
        args: Sequence[Any],
    ) -> Any:
        """Reload what the server lost, then send the call once more: a lost
        library (a failover to a replica the load never reached, a FUNCTION
        FLUSH) or a flushed script cache. The first call did not run, so
        one retry cannot count twice."""
        if backend.kind == FUNCTIONS and is_function_not_found(error):
            if not self._run(_backend.load_library()):
                raise ServerError(str(error)) from error
        elif backend.kind == SCRIPTS and isinstance(error, NoScriptError):
            script = _backend.source(_backend.script_name(function))
            options = {"target_nodes": self._targets(_backend.PRIMARIES)} if self._cluster else {}
            self._execute("SCRIPT", "LOAD", script, **options)
        else:
            raise ServerError(str(error)) from error
        try:
            return self._execute(*backend.head(command, function, len(keys)), *keys, *args)
        except ResponseError as again:
            raise ServerError(str(again)) from again

    def __repr__(self) -> str:
        kind = self._backend.kind if self._backend else "not found yet"
        return f"<RateLimits {self.redis!r} backend={kind}>"


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
        """
        spec = self.spec
        args = options(n, peek, force, wait, at_most, block)
        reply = self._client._call(spec.command, spec.function, (key,), (*self._params, *args))
        return rate_decision(reply, n, at_most)

    def peek(self, key: Key, n: int = 1) -> Decision:
        """What ``take(key, n)`` would answer, changing nothing."""
        return self.take(key, n, peek=True)

    def query(self, key: Key) -> Decision:
        """The state of the limit on ``key`` (a request of 0 units)."""
        return self.take(key, 0)

    def refund(self, key: Key, n: int = 1, *, peek: bool = False) -> Decision:
        """Give ``n`` units back to the limit on ``key`` (work admitted and
        then not done); never refused, never past fully rested."""
        spec = self.spec
        args = (*options(n, peek, False, None, False, None), "REFUND")
        return rate_decision(self._client._call(spec.command, spec.function, (key,), (*self._params, *args)), n, False)


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
    ) -> Decision:
        """Take ``n`` units from every limit, or from none; the options are
        those of ``Limiter.take``, applied to every limit. ``binding`` is
        the position (1-based) of the limit the decision reports."""
        keys = self._keys(keys)
        args = options(n, peek, force, wait, at_most, block)
        reply = self._client._call("RL.ALL", "rl_all", keys, (*self._specs_args, *args))
        return all_decision(reply, n, at_most)

    def peek(self, keys: Sequence[Key], n: int = 1) -> Decision:
        """What ``take(keys, n)`` would answer, changing nothing."""
        return self.take(keys, n, peek=True)

    def query(self, keys: Sequence[Key]) -> Decision:
        """The state of the limits (a request of 0 units)."""
        return self.take(keys, 0)

    def refund(self, keys: Sequence[Key], n: int = 1, *, peek: bool = False) -> Decision:
        """Give ``n`` units back to every limit."""
        keys = self._keys(keys)
        args = (*options(n, peek, False, None, False, None), "REFUND")
        return all_decision(self._client._call("RL.ALL", "rl_all", keys, (*self._specs_args, *args)), n, False)


class Concurrency(ConcurrencyBase):
    """At most ``limit`` units in flight per key, held as leases."""

    __slots__ = ()
    _client: RateLimits

    def acquire(self, key: Key, n: int = 1, *, timeout: Duration | None = None, peek: bool = False) -> Decision:
        """Take a lease of ``n`` units on ``key`` for at most ``timeout``
        (default: the limiter's). Allowed: ``decision.lease`` is the lease
        id, to release or renew. Refused: ``retry_after`` says when enough
        leases reach their deadlines."""
        args = self._acquire(n, timeout, peek)
        return lease_decision(self._client._call("RL.CONCURRENCY", "rl_concurrency", (key,), args), n)

    def release(self, key: Key, lease: int | Lease) -> int:
        """End a lease; answers the units released (0 for a lease unknown,
        already released or past its deadline)."""
        return int(self._client._call("RL.RELEASE", "rl_release", (key,), (lease_id(lease),)))

    def renew(self, key: Key, lease: int | Lease, timeout: Duration | None = None) -> bool:
        """Move a live lease's deadline to ``timeout`` from now (default:
        the limiter's); False when the lease had already ended."""
        return bool(self._client._call("RL.RENEW", "rl_renew", (key,), self._renew(lease, timeout)))

    def lease(self, key: Key, n: int = 1, *, timeout: Duration | None = None) -> Lease:
        """A lease as a context manager: ``with jobs.lease(key) as lease:``
        acquires on entry (``LimitExceeded`` when refused) and releases on
        exit, errors included."""
        if isinstance(n, int) and not isinstance(n, bool) and n < 1:
            raise InvalidParameter(f"n must be at least 1 for a lease, got {n}")
        return Lease(self, key, n, timeout)


class Lease:
    """A lease held in a ``with`` block; ``id`` is set on entry."""

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
