"""Prometheus metrics of a client's decisions (SPEC 20), with
``prometheus_client`` (``pip install "redis-ratelimit-client[metrics]"``).

    from prometheus_client import start_http_server
    from redis_ratelimit_client import RateLimits
    from redis_ratelimit_client.metrics import PrometheusMetrics

    limits = RateLimits(redis.Redis(), metrics=PrometheusMetrics(top_k=10))

The names, types, labels and buckets are clients/contract/metrics.json's,
the same in every client:

- ``ratelimit_client_decisions_total{limit, outcome}`` (counter): the
  decisions the client returned, ``outcome`` one of ``allowed``,
  ``refused``, ``failed_open``, ``failed_closed`` (Unavailable raised);
- ``ratelimit_client_units_total{limit, outcome}`` (counter): their units,
  granted when allowed, asked for otherwise;
- ``ratelimit_client_call_duration_seconds{limit}`` (histogram): each call's
  time, its deadline and any reload included;
- ``ratelimit_client_backend{backend}`` (gauge): 1 for the backend in use, 0
  for one used before;
- ``ratelimit_client_top_refused{limit, identity}`` (gauge): the most
  refused identities, at most ``top_k`` series (space-saving).

This module alone imports ``prometheus_client``: a client made without
``metrics`` never does, and pays one ``None`` check per call.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Generator, Iterable, Sequence
from typing import TYPE_CHECKING, Any

from ._errors import InvalidParameter, Unavailable

try:
    from prometheus_client import REGISTRY, CollectorRegistry, Counter, Gauge, Histogram
    from prometheus_client.core import GaugeMetricFamily, Metric
    from prometheus_client.registry import Collector
except ImportError as error:  # pragma: no cover - the extra not installed
    raise ImportError(
        f"redis_ratelimit_client.metrics needs prometheus_client ({error}): "
        'pip install "redis-ratelimit-client[metrics]"'
    ) from error

if TYPE_CHECKING:
    from ._calls import Calls
    from ._decision import Decision
    from ._steps import Step

ALLOWED = "allowed"
REFUSED = "refused"
FAILED_OPEN = "failed_open"
FAILED_CLOSED = "failed_closed"
OUTCOMES = (ALLOWED, REFUSED, FAILED_OPEN, FAILED_CLOSED)

DURATION_BUCKETS = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5)
TOP_K_DEFAULT = 10
MAX_TOP_K = 10_000

DECISIONS = "ratelimit_client_decisions"
UNITS = "ratelimit_client_units"
DURATION = "ratelimit_client_call_duration_seconds"
BACKEND = "ratelimit_client_backend"
TOP_REFUSED = "ratelimit_client_top_refused"


class TopRefused:
    """Space-saving over (limit, identity) pairs, ``k`` entries at most
    (clients/contract/metrics.json, ``top_k``): a refusal of a kept pair adds
    1 to its count; a new pair takes a free entry with count 1, else
    replaces the entry of least count (ties: the least recently counted)
    and gets that count plus 1.

    Each count's entries are kept in the order they reached it, so the
    entry to replace is the first of the least count: every refusal costs
    O(1), whatever ``k``."""

    __slots__ = ("_buckets", "_counts", "_least", "_lock", "k")

    def __init__(self, k: int) -> None:
        if not isinstance(k, int) or isinstance(k, bool) or not 0 <= k <= MAX_TOP_K:
            raise InvalidParameter(f"top_k must be an integer from 0 to {MAX_TOP_K}, got {k!r}")
        self.k = k
        self._counts: dict[tuple[str, str], int] = {}
        # count -> its pairs, the least recently counted first.
        self._buckets: dict[int, dict[tuple[str, str], None]] = {}
        self._least = 0
        self._lock = threading.Lock()

    def refused(self, limit: str, identity: str) -> None:
        """Count one refusal of ``identity`` by ``limit``."""
        if self.k == 0:
            return
        pair = (limit, identity)
        with self._lock:
            counts = self._counts
            count = counts.get(pair)
            if count is not None:
                self._leave(pair, count)
                self._enter(pair, count + 1)
            elif len(counts) < self.k:
                self._enter(pair, 1)
                self._least = 1
            else:
                least = self._least
                victim = next(iter(self._buckets[least]))
                self._leave(victim, least)
                del counts[victim]
                self._enter(pair, least + 1)

    def _enter(self, pair: tuple[str, str], count: int) -> None:
        self._counts[pair] = count
        bucket = self._buckets.get(count)
        if bucket is None:
            bucket = self._buckets[count] = {}
        bucket[pair] = None

    def _leave(self, pair: tuple[str, str], count: int) -> None:
        bucket = self._buckets[count]
        del bucket[pair]
        if not bucket:
            del self._buckets[count]
            if count == self._least:
                # The pair leaves for count + 1 (or, replaced, its successor
                # takes least + 1): no count is lower than that now.
                self._least = count + 1

    def top(self) -> list[tuple[str, str, int]]:
        """The kept pairs and their counts, by limit and identity."""
        with self._lock:
            return sorted((limit, identity, count) for (limit, identity), count in self._counts.items())


class PrometheusMetrics:
    """The metrics of the decisions of the clients given it
    (``RateLimits(redis, metrics=...)``, ``AsyncRateLimits`` alike), in
    ``registry`` (default: ``prometheus_client``'s ``REGISTRY``, which
    ``start_http_server`` and ``make_asgi_app`` serve). Make one per
    registry (a second would register the same names again) and give it to
    every client: their decisions add up, and ``ratelimit_client_backend``
    says the backend of the last call.

    ``top_k`` (0 to 10,000, default 10; 0 keeps none): how many refused
    (limit, identity) pairs ``ratelimit_client_top_refused`` exports.
    """

    def __init__(self, registry: CollectorRegistry | None = None, top_k: int = TOP_K_DEFAULT) -> None:
        self.top_refused = TopRefused(top_k)
        self.registry = REGISTRY if registry is None else registry
        if not isinstance(self.registry, CollectorRegistry):
            kind = type(registry).__name__
            raise InvalidParameter(f"registry must be a prometheus_client CollectorRegistry, got {kind}")
        self._decisions = Counter(
            DECISIONS,
            "Decisions the client returned, by limit name and outcome (allowed, refused, failed_open, failed_closed).",
            ("limit", "outcome"),
            registry=None,
        )
        self._units = Counter(
            UNITS,
            "Units of those decisions: granted when allowed, asked for otherwise.",
            ("limit", "outcome"),
            registry=None,
        )
        self._duration = Histogram(
            DURATION,
            "Time of a call from the client's side, its deadline and any retry included.",
            ("limit",),
            buckets=DURATION_BUCKETS,
            registry=None,
        )
        self._backend = Gauge(
            BACKEND,
            "1 for the backend the client found (module, functions, scripts), 0 for the others it has used before.",
            ("backend",),
            registry=None,
        )
        self._backend_kind: str | None = None
        # (limit, outcome) -> its two counters; limit -> its histogram.
        self._counted: dict[tuple[str, str], tuple[Any, Any]] = {}
        self._timed: dict[str, Any] = {}
        for collector in (self._decisions, self._units, self._duration, self._backend, _TopRefusedCollector(self)):
            self.registry.register(collector)

    def record(self, limit: str, outcome: str, units: int, seconds: float, identity: str | bytes | None = None) -> None:
        """One decision of ``limit``; a refusal counts ``identity`` among
        the top refused."""
        counted = self._counted.get((limit, outcome))
        if counted is None:
            counted = (self._decisions.labels(limit, outcome), self._units.labels(limit, outcome))
            self._counted[(limit, outcome)] = counted
        counted[0].inc()
        counted[1].inc(units)
        timed = self._timed.get(limit)
        if timed is None:
            timed = self._timed[limit] = self._duration.labels(limit)
        timed.observe(seconds)
        if outcome == REFUSED and identity is not None:
            if isinstance(identity, bytes):
                identity = identity.decode("utf-8", "backslashreplace")
            self.top_refused.refused(limit, identity)

    def backend(self, kind: str | None) -> None:
        """The backend of the last call: 1 for it, 0 for the one before."""
        if kind is None or kind == self._backend_kind:
            return
        if self._backend_kind is not None:
            self._backend.labels(self._backend_kind).set(0)
        self._backend.labels(kind).set(1)
        self._backend_kind = kind

    def measure(
        self,
        call: Generator[Step, Any, Decision],
        calls: Calls,
        limit: str,
        keys: Sequence[str | bytes],
        n: int,
        identity: str | bytes | None,
    ) -> Generator[Step, Any, Decision]:
        """``call``'s steps, its decision recorded: the time from its first
        step to its end (the driver's I/O included), the outcome, and
        ``identity`` (default: the key of the limit the decision reports)
        when refused. Unavailable raised is recorded as failed_closed."""
        start = time.perf_counter()
        try:
            decision = yield from call
        except Unavailable:
            self.record(limit, FAILED_CLOSED, n, time.perf_counter() - start)
            self.backend(None if calls.backend is None else calls.backend.kind)
            raise
        seconds = time.perf_counter() - start
        if decision.failed_open:
            self.record(limit, FAILED_OPEN, n, seconds)
        elif decision.allowed:
            self.record(limit, ALLOWED, decision.granted, seconds)
        else:
            if identity is None:
                identity = keys[decision.binding - 1] if len(keys) >= decision.binding else keys[0]
            self.record(limit, REFUSED, n, seconds, identity)
        self.backend(None if calls.backend is None else calls.backend.kind)
        return decision


class _TopRefusedCollector(Collector):
    """``ratelimit_client_top_refused``: one series per kept pair."""

    def __init__(self, metrics: PrometheusMetrics) -> None:
        self._top = metrics.top_refused

    def describe(self) -> Iterable[Metric]:
        return [self._family()]

    def collect(self) -> Iterable[Metric]:
        family = self._family()
        for limit, identity, count in self._top.top():
            family.add_metric((limit, identity), count)
        return [family]

    @staticmethod
    def _family() -> GaugeMetricFamily:
        return GaugeMetricFamily(
            TOP_REFUSED,
            "The most refused identities (space-saving top-k over limit and identity, at most k series): "
            "the estimated refusals of each, an upper bound.",
            labels=("limit", "identity"),
        )


__all__ = ["OUTCOMES", "PrometheusMetrics", "TopRefused"]
