"""What the sync and async limiters share: the arguments of each call and the
headers of a decision. Their subclasses only send and await."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from . import _params
from ._decision import Decision
from ._errors import InvalidParameter
from ._params import Duration, ceil_div, options, quantity, to_count, to_ms
from ._specs import ConcurrencySpec, RateSpec, all_of_specs

Key = str | bytes
"""A Redis key."""


def rate_limit_headers(specs: Sequence[RateSpec], policy: str, decision: Decision) -> dict[str, str]:
    """The IETF headers (draft-ietf-httpapi-ratelimit-headers-10) of a
    decision: ``RateLimit-Policy`` lists the policies, ``RateLimit`` reports
    the binding one (``r`` remaining, ``t`` seconds until fully rested,
    rounded up), and a refusal that can succeed later adds ``Retry-After``
    (seconds, rounded up)."""
    spec = specs[decision.binding - 1] if decision.binding else specs[0]
    headers = {
        "RateLimit-Policy": policy,
        "RateLimit": f'"{spec.name}";r={decision.remaining};t={ceil_div(decision.reset_ms, 1000)}',
    }
    if not decision.allowed and decision.retry_after_ms is not None:
        headers["Retry-After"] = str(ceil_div(decision.retry_after_ms, 1000))
    return headers


class LimiterBase:
    """One rate limit on keys of the caller's choosing."""

    __slots__ = ("_client", "_params", "policy", "spec")

    def __init__(self, client: Any, spec: RateSpec) -> None:
        self._client = client
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

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.spec!r} name={self.spec.name!r}>"


class AllOfBase:
    """Several rate limits decided at once (``RL.ALL``): allowed only if
    every limit allows, and only then counted by each."""

    __slots__ = ("_client", "_specs_args", "limiters", "policy", "specs")

    def __init__(self, client: Any, limiters: Sequence[Any]) -> None:
        for limiter in limiters:
            if not isinstance(limiter, LimiterBase):
                raise InvalidParameter(f"all_of takes limiters, got {type(limiter).__name__}")
            if limiter._client is not client:
                raise InvalidParameter("all_of: every limiter must come from this client")
        self._client = client
        self.limiters = tuple(limiters)
        self.specs = tuple(limiter.spec for limiter in limiters)
        self._specs_args = all_of_specs(self.specs)
        self.policy = ", ".join(spec.policy() for spec in self.specs)
        """The value of the ``RateLimit-Policy`` header: every limit."""

    def _keys(self, keys: Sequence[Key]) -> tuple[Key, ...]:
        if isinstance(keys, (str, bytes)):
            raise InvalidParameter("keys must be a sequence of keys, one per limiter, not one key")
        keys = tuple(keys)
        if len(keys) != len(self.specs):
            raise InvalidParameter(f"keys: {len(self.specs)} limiters need {len(self.specs)} keys, got {len(keys)}")
        return keys

    def headers(self, decision: Decision) -> dict[str, str]:
        """The RateLimit headers of a decision: every policy, the binding
        limit's state, and ``Retry-After`` when refused."""
        return rate_limit_headers(self.specs, self.policy, decision)

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {', '.join(map(repr, self.specs))}>"


class ConcurrencyBase:
    """Leases on work in flight (``RL.CONCURRENCY``)."""

    __slots__ = ("_acquire_args", "_client", "spec")

    def __init__(self, client: Any, spec: ConcurrencySpec) -> None:
        self._client = client
        self.spec = spec
        self._acquire_args = (spec.limit, spec.timeout_ms)

    @property
    def limit(self) -> int:
        return self.spec.limit

    def _acquire(self, n: int, timeout: Duration | None, peek: bool) -> tuple[Any, ...]:
        quantity(n)
        args: tuple[Any, ...] = self._acquire_args
        if timeout is not None:
            args = (self.spec.limit, to_ms("timeout", timeout))
        return (*args, n, "MS", "PEEK") if peek else (*args, n, "MS")

    def _renew(self, lease: Any, timeout: Duration | None) -> tuple[Any, ...]:
        ms = self.spec.timeout_ms if timeout is None else to_ms("timeout", timeout)
        return (lease_id(lease), ms, "MS")

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
    "options",
    "rate_limit_headers",
]
