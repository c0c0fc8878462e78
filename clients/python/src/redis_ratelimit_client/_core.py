"""What the sync and async limiters share: each call's arguments and its
steps (a generator of _calls), the headers of a decision, the options of a
client. Their subclasses, in _async.py and the _sync.py made from it, only
hand the steps to their driver."""

from __future__ import annotations

from collections.abc import Callable, Generator, Sequence
from datetime import timedelta
from typing import TYPE_CHECKING, Any

from . import _params
from ._backend import Backend
from ._calls import Call, Calls, Decided
from ._connections import seeds_of
from ._decision import Decision, all_decision, lease_decision, rate_decision
from ._errors import InvalidParameter
from ._params import Duration, ceil_div, check_key, options, to_count, to_ms
from ._specs import ConcurrencySpec, RateSpec, all_of_specs

if TYPE_CHECKING:
    from .metrics import PrometheusMetrics

Key = str | bytes
"""A Redis key."""

DEFAULT_TIMEOUT = timedelta(milliseconds=_params.DEFAULT_TIMEOUT_MS)
CHECK_PREFIX = "ratelimit:{check}:"


def rate_limit_headers(specs: Sequence[RateSpec], policy: str, decision: Decision) -> dict[str, str]:
    """The IETF headers (draft-ietf-httpapi-ratelimit-headers-10) of a
    decision: ``RateLimit-Policy`` lists the policies, ``RateLimit`` reports
    the binding one (``r`` remaining, ``t`` seconds until fully rested,
    rounded up), and a refusal that can succeed later adds ``Retry-After``
    (seconds, rounded up)."""
    spec = specs[decision.binding - 1]
    headers = {
        "RateLimit-Policy": policy,
        "RateLimit": f'"{spec.name}";r={decision.remaining};t={ceil_div(decision.reset_ms, 1000)}',
    }
    if not decision.allowed and decision.retry_after_ms is not None:
        headers["Retry-After"] = str(ceil_div(decision.retry_after_ms, 1000))
    return headers


def make_calls(
    client: Any,
    backend: str | None,
    timeout: Duration,
    fail_open: bool,
    local_refusals: int,
    metrics: PrometheusMetrics | None = None,
) -> Calls:
    """A client's options, checked, and the state its calls keep."""
    if not isinstance(fail_open, bool):
        raise InvalidParameter(f"fail_open must be True or False, got {type(fail_open).__name__}")
    if metrics is not None and not callable(getattr(metrics, "measure", None)):
        raise InvalidParameter(
            f"metrics must be a redis_ratelimit_client.metrics.PrometheusMetrics, got {type(metrics).__name__}"
        )
    return Calls(
        backend=None if backend is None else Backend(backend),
        seeds=seeds_of(client),
        timeout_ms=to_ms("timeout", timeout, maximum=_params.MAX_TIMEOUT_MS),
        fail_open=fail_open,
        local_refusals=to_count("local_refusals", local_refusals, 0, _params.MAX_LOCAL_REFUSALS),
        metrics=metrics,
    )


def check_keys(keys: Sequence[Key] | None, count: int) -> tuple[Key, ...]:
    """check()'s keys: those given, else ratelimit:{check}:1, :2... by position."""
    if keys is None:
        return tuple(f"{CHECK_PREFIX}{i}" for i in range(1, count + 1))
    keys = (keys,) if isinstance(keys, (str, bytes)) else tuple(keys)
    if len(keys) != count:
        raise InvalidParameter(f"keys: {count} limiters need {count} keys, got {len(keys)}")
    for key in keys:
        check_key(key)
    return keys


def rate_call(
    calls: Calls,
    command: str,
    function: str,
    keys: tuple[Key, ...],
    params: tuple[Any, ...],
    n: int,
    opts: dict[str, Any],
    decision: Callable[[Any, int, bool], Decision],
    limit: int,
    fail_open: bool | None,
    name: str,
    identity: Key | None,
) -> Decided:
    """A rate command's steps: its options (``peek``, ``force``, ``wait``,
    ``at_most``, ``block``, ``refund``) after the limits' parameters; a
    plain take is remembered when refused (local refusals); with metrics,
    the decision is recorded under ``name`` (a refusal under ``identity``,
    default the binding limit's key)."""
    args = options(n, **opts)
    at_most = bool(opts.get("at_most"))
    # Plain: n units, with or without BLOCK (a block's refusal lasts until
    # the block's end, which its retry_after says).
    # A tag changes nothing in a refusal (a refused take logs nothing):
    # it is remembered with the tag, in the take's arguments.
    bare = args[:-2] if len(args) > 2 and args[-2] == "TAG" else args
    plain = n > 0 and calls.refusals is not None and (len(bare) == 2 or (len(bare) == 4 and bare[2] == "BLOCK"))
    decided = calls.decide(
        command,
        function,
        keys,
        (*params, *args),
        lambda reply: decision(reply, n, at_most),
        limit,
        n,
        fail_open,
        (command, *params, *keys, *args) if plain else None,
    )
    # A decision takes units: a query (n 0), a peek or a refund is not one.
    if calls.metrics is None or n == 0 or opts.get("peek") or opts.get("refund"):
        return decided
    return calls.metrics.measure(decided, calls, name, keys, n, identity)


def _result(call: Call, result: Any) -> Generator[Any, Any, Any]:
    yield from call
    return result


def _int(call: Call) -> Generator[Any, Any, int]:
    return int((yield from call))


def _bool(call: Call) -> Generator[Any, Any, bool]:
    return bool((yield from call))


class LimiterBase:
    """One rate limit on keys of the caller's choosing."""

    __slots__ = ("_calls", "_client", "_params", "policy", "spec")

    def __init__(self, client: Any, spec: RateSpec) -> None:
        self._client = client
        self._calls: Calls = client._calls
        self.spec = spec
        self.policy = spec.policy()
        """The value of the ``RateLimit-Policy`` header for this limiter."""
        self._params = spec.params

    @property
    def name(self) -> str:
        """The policy name in the RateLimit headers."""
        return self.spec.name

    def headers(self, decision: Decision) -> dict[str, str]:
        """The ``RateLimit-Policy``, ``RateLimit`` and (when refused)
        ``Retry-After`` headers of a decision of this limiter."""
        return rate_limit_headers((self.spec,), self.policy, decision)

    def _take(
        self, key: Key, n: int, fail_open: bool | None = None, identity: Key | None = None, **opts: Any
    ) -> Decided:
        check_key(key)
        spec = self.spec
        return rate_call(
            self._calls,
            spec.command,
            spec.function,
            (key,),
            self._params,
            n,
            opts,
            rate_decision,
            spec.quota,
            fail_open,
            spec.name,
            identity,
        )

    def _check(self, key: Key | None) -> Call:
        keys = check_keys(None if key is None else (key,), 1)
        spec = self.spec
        return _result(self._calls.call(spec.command, spec.function, keys, (*self._params, 1, "MS", "PEEK")), None)

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.spec!r} name={self.spec.name!r}>"


class AllOfBase:
    """Several rate limits decided at once (``RL.ALL``): allowed only if
    every limit allows, and only then counted by each."""

    __slots__ = ("_calls", "_client", "_specs_args", "limiters", "metric_name", "policy", "specs")

    def __init__(self, client: Any, limiters: Sequence[Any]) -> None:
        for limiter in limiters:
            if not isinstance(limiter, LimiterBase):
                raise InvalidParameter(f"all_of takes limiters, got {type(limiter).__name__}")
            if limiter._client is not client:
                raise InvalidParameter("all_of: every limiter must come from this client")
        self._client = client
        self._calls: Calls = client._calls
        self.limiters = tuple(limiters)
        self.specs = tuple(limiter.spec for limiter in limiters)
        self._specs_args = all_of_specs(self.specs)
        self.policy = ", ".join(spec.policy() for spec in self.specs)
        """The value of the ``RateLimit-Policy`` header: every limit."""
        self.metric_name = "+".join(spec.name for spec in self.specs)
        """The ``limit`` label of its decisions in the metrics: the names of
        its limiters joined by ``+``."""

    def _keys(self, keys: Sequence[Key]) -> tuple[Key, ...]:
        if isinstance(keys, (str, bytes)):
            raise InvalidParameter("keys must be a sequence of keys, one per limiter, not one key")
        keys = tuple(keys)
        if len(keys) != len(self.specs):
            raise InvalidParameter(f"keys: {len(self.specs)} limiters need {len(self.specs)} keys, got {len(keys)}")
        for key in keys:
            check_key(key)
        return keys

    def headers(self, decision: Decision) -> dict[str, str]:
        """The RateLimit headers of a decision: every policy, the binding
        limit's state, and ``Retry-After`` when refused."""
        return rate_limit_headers(self.specs, self.policy, decision)

    def _take(
        self, keys: Sequence[Key], n: int, fail_open: bool | None = None, identity: Key | None = None, **opts: Any
    ) -> Decided:
        return rate_call(
            self._calls,
            "RL.ALL",
            "rl_all",
            self._keys(keys),
            self._specs_args,
            n,
            opts,
            all_decision,
            self.specs[0].quota,
            fail_open,
            self.metric_name,
            identity,
        )

    def _check(self, keys: Sequence[Key] | None) -> Call:
        keys = check_keys(keys, len(self.specs))
        return _result(self._calls.call("RL.ALL", "rl_all", keys, (*self._specs_args, 1, "MS", "PEEK")), None)

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {', '.join(map(repr, self.specs))}>"


class ConcurrencyBase:
    """Leases on work in flight (``RL.CONCURRENCY``)."""

    __slots__ = ("_acquire_args", "_calls", "_client", "spec")

    def __init__(self, client: Any, spec: ConcurrencySpec) -> None:
        self._client = client
        self._calls: Calls = client._calls
        self.spec = spec
        self._acquire_args = (spec.limit, spec.timeout_ms)

    @property
    def limit(self) -> int:
        return self.spec.limit

    def _acquire(self, key: Key, n: int, timeout: Duration | None, peek: bool) -> Decided:
        check_key(key)
        _params.quantity(n)
        head: tuple[Any, ...] = self._acquire_args
        if timeout is not None:
            head = (self.spec.limit, to_ms("timeout", timeout))
        args = (*head, n, "MS", "PEEK") if peek else (*head, n, "MS")
        decided = self._calls.decide(
            "RL.CONCURRENCY",
            "rl_concurrency",
            (key,),
            args,
            lambda reply: lease_decision(reply, n),
            self.spec.limit,
            n,
        )
        if self._calls.metrics is None or peek:
            return decided
        return self._calls.metrics.measure(decided, self._calls, self.spec.name, (key,), n, None)

    def _release(self, key: Key, lease: Any) -> Generator[Any, Any, int]:
        check_key(key)
        return _int(self._calls.call("RL.RELEASE", "rl_release", (key,), (lease_id(lease),)))

    def _renew(self, key: Key, lease: Any, timeout: Duration | None) -> Generator[Any, Any, bool]:
        check_key(key)
        ms = self.spec.timeout_ms if timeout is None else to_ms("timeout", timeout)
        return _bool(self._calls.call("RL.RENEW", "rl_renew", (key,), (lease_id(lease), ms, "MS")))

    def _check(self, key: Key | None) -> Call:
        keys = check_keys(None if key is None else (key,), 1)
        return _result(
            self._calls.call("RL.CONCURRENCY", "rl_concurrency", keys, (*self._acquire_args, 1, "MS", "PEEK")), None
        )

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.spec!r}>"


def lease_id(lease: Any) -> int:
    """A lease id from an int or a Lease."""
    value = getattr(lease, "id", lease)
    return to_count("lease", value, 1, _params.MAX_LEASE)


__all__ = [
    "AllOfBase",
    "ConcurrencyBase",
    "Key",
    "LimiterBase",
    "lease_id",
    "rate_limit_headers",
]
