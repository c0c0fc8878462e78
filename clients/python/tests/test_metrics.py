"""The Prometheus metrics (SPEC 20, clients/contract/metrics.json): the
space-saving top-k on the contract's cases, then a fresh registry scraped
after known calls on real servers (the module, the functions library), on
a black-holed port (failed open, failed closed) and through the guard
the ASGI middleware and the FastAPI dependency share (its identity, its
start-up check). The families' names, types
and label names must be the contract's, exactly; run with ``-s`` to see
the names exported."""

from __future__ import annotations

import asyncio
import json
import re
import subprocess
import sys
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
import redis
import redis.asyncio
from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.parser import text_string_to_metric_families

from redis_ratelimit_client import AsyncRateLimits, InvalidParameter, RateLimits, Unavailable
from redis_ratelimit_client.asgi import Guard
from redis_ratelimit_client.metrics import PrometheusMetrics, TopRefused

from .conftest import Servers, reset
from .fake import BlackHole
from .servers import Server

CONTRACT = json.loads((Path(__file__).resolve().parents[2] / "contract" / "metrics.json").read_text())
TIMEOUT = timedelta(milliseconds=50)


# -- the top-k ------------------------------------------------------------------


@pytest.mark.parametrize("case", CONTRACT["top_k"]["cases"], ids=lambda case: f"k={case['k']}")
def test_top_k_cases(case: dict[str, Any]) -> None:
    top = TopRefused(case["k"])
    for limit, identity in case["refusals"]:
        top.refused(limit, identity)
    assert top.top() == [tuple(entry) for entry in case["expect"]]


def test_top_k_keeps_k_under_a_flood() -> None:
    # 3 heavy hitters among 10,000 distinct identities, k = 5: 55,000
    # refusals, each heavy one 15,000 of them, more than 55,000 / k; such
    # a pair stays, counted at least its true count and at most that plus
    # 55,000 / k.
    top = TopRefused(5)
    for i in range(10_000):
        top.refused("api", f"ip{i}")
        if i % 2 == 0:
            for _ in range(3):
                for heavy in ("x", "y", "z"):
                    top.refused("api", heavy)
    kept = {identity: count for _, identity, count in top.top()}
    assert len(kept) == 5
    assert all(15_000 <= kept[heavy] <= 15_000 + 11_000 for heavy in ("x", "y", "z"))


@pytest.mark.parametrize("k", [-1, 10_001, 1.5, True, "10"])
def test_top_k_out_of_range(k: Any) -> None:
    with pytest.raises(InvalidParameter, match="top_k must be an integer from 0 to 10000"):
        PrometheusMetrics(CollectorRegistry(), top_k=k)


def test_not_metrics() -> None:
    with pytest.raises(
        InvalidParameter, match=re.escape("metrics must be a redis_ratelimit_client.metrics.PrometheusMetrics, got")
    ):
        RateLimits(redis.Redis(), metrics=CollectorRegistry())  # type: ignore[arg-type]


def test_without_prometheus_client() -> None:
    # The package imports without it; the metrics module says what to install.
    script = (
        "import sys; sys.modules['prometheus_client'] = None\n"
        "import redis_ratelimit_client\n"
        "try:\n"
        "    import redis_ratelimit_client.metrics\n"
        "except ImportError as error:\n"
        "    print(error)\n"
    )
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True, timeout=30).stdout
    assert out.startswith("redis_ratelimit_client.metrics needs prometheus_client (")
    assert out.endswith('): pip install "redis-ratelimit-client[metrics]"\n')


# -- the exposition ---------------------------------------------------------------


def exposition(registry: CollectorRegistry) -> tuple[dict[str, tuple[str, list[str]]], dict[tuple[Any, ...], float]]:
    """The families (name: type and label names) and the samples (name
    and labels: value) of the registry's text, as Prometheus reads it; the
    durations' sums (times) left out, and the creation times
    prometheus_client adds to each counter and histogram (in the text
    format, a gauge ``<name>_created`` beside each: part of the family in
    OpenMetrics; ``PROMETHEUS_DISABLE_CREATED_SERIES=True`` removes them)."""
    families: dict[str, tuple[str, list[str]]] = {}
    samples: dict[tuple[Any, ...], float] = {}
    for family in text_string_to_metric_families(generate_latest(registry).decode()):
        if family.type == "gauge" and family.name.endswith("_created"):
            continue
        name = family.name + "_total" if family.type == "counter" else family.name
        labels: set[str] = set()
        for sample in family.samples:
            labels |= set(sample.labels) - {"le"}
            if sample.name.endswith(("_created", "_sum")):
                continue
            samples[(sample.name, *sorted(sample.labels.items()))] = sample.value
        families[name] = (family.type, sorted(labels))
    return families, samples


def assert_contract(families: dict[str, tuple[str, list[str]]]) -> None:
    assert families == {m["name"]: (m["type"], sorted(m["labels"])) for m in CONTRACT["metrics"]}
    print("\nexported:", ", ".join(f"{name} ({kind})" for name, (kind, _) in sorted(families.items())))


def test_help_is_the_contracts() -> None:
    registry = CollectorRegistry()
    PrometheusMetrics(registry).record("api", "refused", 1, 0.001, "alice")
    helps = {
        family.name + ("_total" if family.type == "counter" else ""): family.documentation
        for family in text_string_to_metric_families(generate_latest(registry).decode())
        if not family.name.endswith("_created")
    }
    assert helps == {m["name"]: m["help"] for m in CONTRACT["metrics"]}


def counts(samples: dict[tuple[Any, ...], float], limit: str) -> dict[str, float]:
    """The decisions, units and calls of ``limit``, by outcome."""
    found: dict[str, float] = {}
    for key, value in samples.items():
        labels = dict(key[1:])
        if labels.get("limit") != limit:
            continue
        if key[0] == "ratelimit_client_decisions_total":
            found[labels["outcome"]] = value
        elif key[0] == "ratelimit_client_units_total":
            found[f"units {labels['outcome']}"] = value
        elif key[0] == "ratelimit_client_call_duration_seconds_count":
            found["calls"] = value
    return found


def backends(samples: dict[tuple[Any, ...], float]) -> dict[str, float]:
    return {dict(key[1:])["backend"]: value for key, value in samples.items() if key[0] == "ratelimit_client_backend"}


def top_refused(samples: dict[tuple[Any, ...], float]) -> dict[tuple[str, str], float]:
    return {
        (dict(key[1:])["limit"], dict(key[1:])["identity"]): value
        for key, value in samples.items()
        if key[0] == "ratelimit_client_top_refused"
    }


@pytest.fixture
def module_server(servers: Servers) -> Server:
    found: Server = servers.get("module")
    reset(found)
    return found


@pytest.fixture
def functions_server(servers: Servers) -> Server:
    found: Server = servers.get("functions")
    reset(found)
    return found


@pytest.fixture
def registry() -> Iterator[CollectorRegistry]:
    yield CollectorRegistry()


def test_decisions_on_the_module_then_the_functions(
    module_server: Server, functions_server: Server, registry: CollectorRegistry
) -> None:
    metrics = PrometheusMetrics(registry, top_k=2)
    limits = RateLimits(redis.Redis(port=module_server.port), metrics=metrics)
    api = limits.sliding_log(limit=2, window=60, name="api")
    assert [api.take("alice").allowed for _ in range(2)] == [True, True]
    assert api.take("alice", 2).allowed is False
    assert api.take("bob", 3).allowed is False  # more than the limit: refused, 3 units asked
    assert api.take("bob").allowed is True
    both = limits.all_of(limits.gcra(rate=1, per=60, name="burst"), limits.fixed_window(limit=5, window=60, name="day"))
    assert both.take(["{carol}:burst", "{carol}:day"]).allowed is True
    assert both.take(["{carol}:burst", "{carol}:day"]).allowed is False
    jobs = limits.concurrency(limit=1, timeout=10, name="jobs")
    assert jobs.acquire("jobs:1", 1).allowed is True
    assert jobs.acquire("jobs:1", 1).allowed is False
    limits.close()

    families, samples = exposition(registry)
    assert_contract(families)
    assert counts(samples, "api") == {
        "allowed": 3,
        "refused": 2,
        "units allowed": 3,
        "units refused": 5,
        "calls": 5,
    }
    assert counts(samples, "burst+day") == {
        "allowed": 1,
        "refused": 1,
        "units allowed": 1,
        "units refused": 1,
        "calls": 2,
    }
    assert counts(samples, "jobs") == {
        "allowed": 1,
        "refused": 1,
        "units allowed": 1,
        "units refused": 1,
        "calls": 2,
    }
    # Four refusals of four pairs, k = 2: (burst+day, the binding limit's
    # key) replaced (api, alice), the least recently counted of count 1,
    # then (jobs, jobs:1) replaced (api, bob); each got 1 + 1.
    assert top_refused(samples) == {("burst+day", "{carol}:burst"): 2, ("jobs", "jobs:1"): 2}
    assert backends(samples) == {"module": 1}
    buckets = sorted(
        float(dict(key[1:])["le"])
        for key in samples
        if key[0] == "ratelimit_client_call_duration_seconds_bucket" and dict(key[1:])["limit"] == "api"
    )
    assert buckets == [*CONTRACT["duration_buckets_seconds"], float("inf")]
    assert samples[("ratelimit_client_call_duration_seconds_bucket", ("le", "+Inf"), ("limit", "api"))] == 5

    # The same metrics on a client over Redis 7 without the module: the
    # functions library (loaded by the client); the module used before, 0.
    other = RateLimits(redis.Redis(port=functions_server.port), metrics=metrics)
    assert other.sliding_log(limit=2, window=60, name="api").take("dave").allowed is True
    other.close()
    _, samples = exposition(registry)
    assert backends(samples) == {"module": 0, "functions": 1}
    assert counts(samples, "api")["allowed"] == 4


async def test_async_client(module_server: Server, registry: CollectorRegistry) -> None:
    client = redis.asyncio.Redis(port=module_server.port)
    limits = AsyncRateLimits(client, metrics=PrometheusMetrics(registry))
    api = limits.fixed_window(limit=1, window=60)
    assert [(await api.take("erin")).allowed for _ in range(3)] == [True, False, False]
    await limits.aclose()
    await client.aclose()
    _, samples = exposition(registry)
    assert counts(samples, "fixed_window") == {
        "allowed": 1,
        "refused": 2,
        "units allowed": 1,
        "units refused": 2,
        "calls": 3,
    }
    assert top_refused(samples) == {("fixed_window", "erin"): 2}
    assert backends(samples) == {"module": 1}


def test_failed_open_and_failed_closed(registry: CollectorRegistry) -> None:
    metrics = PrometheusMetrics(registry)
    with BlackHole() as hole:
        closed = RateLimits(redis.Redis(port=hole.port), timeout=TIMEOUT, backend="module", metrics=metrics)
        with pytest.raises(Unavailable):
            closed.gcra(rate=10, per=1, name="api").take("k")
        opened = RateLimits(
            redis.Redis(port=hole.port), timeout=TIMEOUT, backend="module", fail_open=True, metrics=metrics
        )
        decision = opened.gcra(rate=10, per=1, name="api").take("k", 2)
        assert decision.failed_open is True
    families, samples = exposition(registry)
    # No refusal: the top-k family is there, with no series.
    assert {name: kind for name, (kind, _) in families.items()} == {m["name"]: m["type"] for m in CONTRACT["metrics"]}
    assert counts(samples, "api") == {
        "failed_closed": 1,
        "failed_open": 1,
        "units failed_closed": 1,
        "units failed_open": 2,
        "calls": 2,
    }
    assert top_refused(samples) == {}
    assert backends(samples) == {"module": 1}
    # Each call ended by its deadline (50 ms), not later than the bucket of 0.25 s.
    assert samples[("ratelimit_client_call_duration_seconds_bucket", ("le", "0.25"), ("limit", "api"))] == 2


async def guarded(port: int, registry: CollectorRegistry, fail_open: bool, checked: bool) -> list[Any]:
    """Two requests of identity ``frank`` through what the middleware and
    the FastAPI dependency share (their Guard): a decision each, or the
    Unavailable raised."""
    client = redis.asyncio.Redis(port=port)
    limits = AsyncRateLimits(client, timeout=TIMEOUT, metrics=PrometheusMetrics(registry))
    guard = Guard(limits.sliding_log(limit=1, window=60, name="web"), 1, "ratelimit:", fail_open)
    guard.checked = checked
    answers: list[Any] = []
    try:
        for _ in range(2):
            try:
                answers.append(await guard.decide("frank"))
            except Unavailable as error:
                answers.append(error)
        return answers
    finally:
        await limits.aclose()
        await client.aclose()


def test_middleware_counts_its_identity(module_server: Server) -> None:
    registry = CollectorRegistry()
    answers = asyncio.run(guarded(module_server.port, registry, False, True))
    assert [answer.allowed for answer in answers] == [True, False]
    _, samples = exposition(registry)
    assert counts(samples, "web") == {"allowed": 1, "refused": 1, "units allowed": 1, "units refused": 1, "calls": 2}
    # The identity, not the Redis key (ratelimit:{frank}:web).
    assert top_refused(samples) == {("web", "frank"): 1}


@pytest.mark.parametrize("fail_open", [False, True], ids=["fail closed", "fail open"])
def test_middleware_start_up_check_on_a_black_hole(fail_open: bool) -> None:
    registry = CollectorRegistry()
    with BlackHole() as hole:
        answers = asyncio.run(guarded(hole.port, registry, fail_open, False))
    if fail_open:
        assert [answer.failed_open for answer in answers] == [True, True]
    else:
        assert [type(answer) for answer in answers] == [Unavailable, Unavailable]
    _, samples = exposition(registry)
    # The first request met the outage in the start-up check, the second in its take.
    outcome = "failed_open" if fail_open else "failed_closed"
    assert counts(samples, "web") == {outcome: 2, f"units {outcome}": 2, "calls": 2}


def test_the_limits_storage_counts_its_hits(module_server: Server, registry: CollectorRegistry) -> None:
    """``metrics`` as a storage option (Flask-Limiter's ``storage_options``):
    each hit of ``limits``' moving window is a decision of the sliding log."""
    pytest.importorskip("limits")
    from limits import parse
    from limits.storage import storage_from_string
    from limits.strategies import MovingWindowRateLimiter

    import redis_ratelimit_client.limits  # noqa: F401  (registers the scheme)

    storage = storage_from_string(
        f"redis-ratelimit://127.0.0.1:{module_server.port}", metrics=PrometheusMetrics(registry, top_k=1)
    )
    try:
        limiter = MovingWindowRateLimiter(storage)
        two = parse("2/minute")
        assert [limiter.hit(two, "alice") for _ in range(3)] == [True, True, False]
    finally:
        storage.close()
    families, samples = exposition(registry)
    assert_contract(families)
    assert counts(samples, "sliding_log") == {
        "allowed": 2,
        "refused": 1,
        "units allowed": 2,
        "units refused": 1,
        "calls": 3,
    }
    assert backends(samples) == {"module": 1}
    assert top_refused(samples) == {("sliding_log", "ratelimit:limits:LIMITER/alice/2/1/minute"): 1}


def test_only_calls_that_take_units_are_decisions(module_server: Server, registry: CollectorRegistry) -> None:
    """A peek, a query and a refund answer a decision but take nothing: not
    counted (the contract's ``counted``), as a lease's peek."""
    limits = RateLimits(redis.Redis(port=module_server.port), metrics=PrometheusMetrics(registry))
    api = limits.sliding_log(limit=1, window=60, name="api")
    assert api.take("ivy").allowed is True
    assert api.peek("ivy").allowed is False
    assert api.query("ivy").remaining == 0
    assert api.refund("ivy").remaining == 1
    assert limits.concurrency(limit=1, timeout=10, name="jobs").acquire("jobs:ivy", 1, peek=True).allowed is True
    _, samples = exposition(registry)
    assert counts(samples, "api") == {"allowed": 1, "units allowed": 1, "calls": 1}
    assert counts(samples, "jobs") == {}
    assert top_refused(samples) == {}
