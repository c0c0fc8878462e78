"""What a limiter is, apart from any connection: its algorithm and parameters
in the units the server takes (milliseconds), and its IETF policy.

The limiters of the sync and async clients hold one of these; the RateLimit
headers are computed from it.
"""

from __future__ import annotations

from ._errors import InvalidParameter
from ._params import (
    MAX_BURST,
    MAX_COUNT,
    MAX_LIMITERS,
    MAX_SETTING_LIMIT,
    Duration,
    ceil_div,
    check_name,
    to_count,
    to_ms,
)


class RateSpec:
    """One rate limit: an algorithm, its parameters and its policy name.

    ``params`` are the arguments of ``RL.<ALGORITHM>`` after the key, in
    milliseconds (every call sends ``MS``); ``quota`` (the reply's
    ``limit``) and ``window`` (whole seconds, rounded up) describe it in the
    ``RateLimit-Policy`` header.
    """

    __slots__ = ("algorithm", "command", "function", "name", "params", "quota", "window", "words")

    def __init__(
        self, algorithm: str, params: tuple[int, ...], name: str, quota: int, window_ms: int, words: str
    ) -> None:
        self.algorithm = algorithm
        self.command = f"RL.{algorithm}"
        self.function = f"rl_{algorithm.lower()}"
        self.params = params
        self.name = name
        self.quota = quota
        self.window = ceil_div(window_ms, 1000)
        self.words = words

    def policy(self) -> str:
        """This limit as one item of the ``RateLimit-Policy`` header."""
        return f'"{self.name}";q={self.quota};w={self.window}'

    def __repr__(self) -> str:
        return self.words


def _name(name: str | None, default: str) -> str:
    return check_name(default if name is None else name)


def gcra(rate: int, per: Duration, burst: int | None = None, name: str | None = None) -> RateSpec:
    """``rate`` requests per ``per``, evenly spaced, with up to ``burst`` at
    once from rest (default ``rate``): ``RL.GCRA key burst-1 rate per MS``."""
    rate = to_count("rate", rate, 1, MAX_COUNT)
    per_ms = to_ms("per", per)
    burst = rate if burst is None else to_count("burst", burst, 1, MAX_BURST)
    return RateSpec(
        "GCRA",
        (burst - 1, rate, per_ms),
        _name(name, "gcra"),
        burst,
        ceil_div(burst * per_ms, rate),
        f"gcra(rate={rate}, per={per_ms} ms, burst={burst})",
    )


def token_bucket(capacity: int, refill: int, per: Duration, name: str | None = None) -> RateSpec:
    """A bucket of ``capacity`` tokens, refilled by ``refill`` tokens every
    ``per``: ``RL.TOKEN_BUCKET key capacity refill per MS``."""
    capacity = to_count("capacity", capacity, 1, MAX_COUNT)
    refill = to_count("refill", refill, 1, MAX_COUNT)
    per_ms = to_ms("per", per)
    return RateSpec(
        "TOKEN_BUCKET",
        (capacity, refill, per_ms),
        _name(name, "token_bucket"),
        capacity,
        ceil_div(capacity * per_ms, refill),
        f"token_bucket(capacity={capacity}, refill={refill}, per={per_ms} ms)",
    )


def _window(algorithm: str, limit: int, window: Duration, name: str | None, high: int) -> RateSpec:
    limit = to_count("limit", limit, 1, high)
    window_ms = to_ms("window", window)
    lower = algorithm.lower()
    words = {"FIXED": "fixed_window"}.get(algorithm, lower)
    return RateSpec(
        algorithm,
        (limit, window_ms),
        _name(name, words),
        limit,
        window_ms,
        f"{words}(limit={limit}, window={window_ms} ms)",
    )


def fixed_window(limit: int, window: Duration, name: str | None = None) -> RateSpec:
    """``limit`` per window, windows aligned to the Unix epoch: ``RL.FIXED``."""
    return _window("FIXED", limit, window, name, MAX_COUNT)


def sliding_log(limit: int, window: Duration, name: str | None = None) -> RateSpec:
    """``limit`` in any ``window``, exactly (a log of instants):
    ``RL.SLIDING_LOG``; ``limit`` is also capped by the server's
    ``sliding_log_max_limit`` (default 10,000)."""
    return _window("SLIDING_LOG", limit, window, name, MAX_SETTING_LIMIT)


def sliding_counter(limit: int, window: Duration, name: str | None = None) -> RateSpec:
    """``limit`` per sliding window, the two-window estimate:
    ``RL.SLIDING_COUNTER``."""
    return _window("SLIDING_COUNTER", limit, window, name, MAX_COUNT)


class ConcurrencySpec:
    """At most ``limit`` units in flight, each lease ending at the latest
    ``timeout`` after it was taken or renewed: ``RL.CONCURRENCY``. ``name``
    labels its decisions in the metrics (default ``concurrency``)."""

    __slots__ = ("limit", "name", "timeout_ms")

    def __init__(self, limit: int, timeout: Duration, name: str | None = None) -> None:
        self.limit = to_count("limit", limit, 1, MAX_SETTING_LIMIT)
        self.timeout_ms = to_ms("timeout", timeout)
        self.name = _name(name, "concurrency")

    def __repr__(self) -> str:
        return f"concurrency(limit={self.limit}, timeout={self.timeout_ms} ms)"


def all_of_specs(specs: tuple[RateSpec, ...]) -> tuple[object, ...]:
    """The limit specifications of ``RL.ALL`` after its keys."""
    if not 1 <= len(specs) <= MAX_LIMITERS:
        raise InvalidParameter(f"all_of needs 1 to {MAX_LIMITERS} limiters, got {len(specs)}")
    names = [s.name for s in specs]
    for i, name in enumerate(names):
        if name in names[:i]:
            raise InvalidParameter(f"two limiters are named {name!r}: give each its own name")
    return tuple(arg for s in specs for arg in (s.algorithm, *s.params))
