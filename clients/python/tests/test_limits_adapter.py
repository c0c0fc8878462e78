"""The storage for the ``limits`` library (redis_ratelimit_client.limits),
with the real library and real apps: ``limits``' three strategies, sync and
async, on every backend and on a Cluster; a Flask app with Flask-Limiter and
a FastAPI app with slowapi, on a server with the module and on one without
it. Every decision is compared with what this client's own limiters answer
on the same kind of key, and the key's state read back with RL.INSPECT.

Windows are chosen so that no test run crosses one: the fixed window and the
sliding counter count in 30-day windows aligned to the Unix epoch
("3/month"), the moving window's entries last an hour.
"""

from __future__ import annotations

import asyncio
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest
import redis

import redis_ratelimit_client.limits as adapter
from redis_ratelimit_client import RateLimits, Unavailable

from .conftest import BACKEND_SERVER, Servers, reset
from .servers import Server, free_port

limits = pytest.importorskip("limits")
from limits import parse  # noqa: E402
from limits.aio import strategies as aio_strategies  # noqa: E402
from limits.errors import ConfigurationError  # noqa: E402
from limits.storage import storage_from_string  # noqa: E402

fastapi = pytest.importorskip("fastapi")
from fastapi import Request  # noqa: E402  (a route's annotation: FastAPI reads it at module level)

MONTH = 30 * 86_400  # limits' month, in seconds
STRATEGIES = {
    "moving-window": ("3/hour", "sliding_log", 3_600),
    "sliding-window-counter": ("3/month", "sliding_counter", MONTH),
    "fixed-window": ("3/month", "fixed_window", MONTH),
}


class Driver:
    """One strategy of ``limits`` over a storage, sync or async behind the
    same blocking calls."""

    def __init__(self, uri: str, strategy: str, mode: str, loop: asyncio.AbstractEventLoop) -> None:
        self.loop = loop
        self.mode = mode
        if mode == "sync":
            self.storage = storage_from_string(uri)
            self.strategy = limits.strategies.STRATEGIES[strategy](self.storage)
        else:
            self.storage = storage_from_string(f"async+{uri}")
            self.strategy = aio_strategies.STRATEGIES[strategy](self.storage)

    def __getattr__(self, name: str) -> Callable[..., Any]:
        method = getattr(self.strategy, name)

        def call(*args: Any, **kwargs: Any) -> Any:
            result = method(*args, **kwargs)
            return self.loop.run_until_complete(result) if self.mode == "async" else result

        return call

    def storage_call(self, name: str, *args: Any) -> Any:
        result = getattr(self.storage, name)(*args)
        return self.loop.run_until_complete(result) if self.mode == "async" else result

    def backend(self) -> str:
        found = self.storage.limits.backend()
        return str(self.loop.run_until_complete(found) if self.mode == "async" else found)

    def close(self) -> None:
        if self.mode == "sync":
            self.storage.close()
        else:
            self.loop.run_until_complete(self.storage.aclose())


@pytest.fixture
def drive(mode: str) -> Iterator[Callable[[str, str], Driver]]:
    loop = asyncio.new_event_loop()
    made: list[Driver] = []

    def make(uri: str, strategy: str) -> Driver:
        made.append(Driver(uri, strategy, mode, loop))
        return made[-1]

    yield make
    for driver in made:
        driver.close()
    loop.close()


def direct(port: int, cluster: bool = False) -> RateLimits:
    client: Any = redis.cluster.RedisCluster(host="127.0.0.1", port=port) if cluster else redis.Redis(port=port)
    return RateLimits(client)


def key_of(item: Any, identity: str, strategy: str) -> str:
    """The key the storage writes for ``item`` and ``identity``."""
    sliding = "sliding:" if strategy == "sliding-window-counter" else ""
    return f"{adapter.DEFAULT_KEY_PREFIX}:{sliding}{item.key_for(identity)}"


def exercise(driver: Driver, ours: RateLimits, strategy: str) -> None:
    """Three hits allowed, the fourth refused, as this client's own limiter
    decides on a key of its own; the storage's readings; then clear."""
    text, algorithm, window = STRATEGIES[strategy]
    item = parse(text)
    own = getattr(ours, algorithm)(limit=3, window=window)
    mine = f"own:{strategy}"
    started = time.time()
    hits, stats = [], []
    for _ in range(4):
        hits.append(driver.hit(item, "alice"))
        stats.append(driver.get_window_stats(item, "alice").remaining)
    assert hits == [True, True, True, False]
    assert [own.take(f"{mine}:alice").allowed for _ in range(4)] == hits
    assert stats == [2, 1, 0, 0]
    assert driver.test(item, "alice") is False
    assert driver.test(item, "bob") is True
    assert driver.get_window_stats(item, "bob").remaining == 3
    # A cost of 2 on a fresh key: allowed once, then refused (1 left).
    assert [driver.hit(item, "carol", cost=2) for _ in range(2)] == [True, False]
    assert [own.take(f"{mine}:carol", 2).allowed for _ in range(2)] == [True, False]

    # The state the server keeps is this client's, read with RL.INSPECT.
    state = ours.inspect(key_of(item, "alice", strategy))
    assert state is not None
    reset_at = driver.get_window_stats(item, "alice").reset_time
    if strategy == "moving-window":
        assert (state["kind"], state["entries"]) == ("sliding_log", 3)
        # limits reads the log's oldest entry: it leaves an hour after it.
        assert started + window - 1 < reset_at <= time.time() + window
        assert own.peek(key_of(item, "alice", strategy)).allowed is False
    elif strategy == "sliding-window-counter":
        assert (state["kind"], state["previous"], state["current"]) == ("sliding_counter", 0, 3)
        assert own.peek(key_of(item, "alice", strategy)).allowed is False
    else:
        # incr counts every hit, the refused one too, as limits' own redis
        # storage does; limits compares the count with its limit.
        assert (state["kind"], state["count"]) == ("fixed", 4)
        assert driver.storage_call("get", item.key_for("alice")) == 4
        window_end = (int(time.time()) // window + 1) * window  # epoch-aligned
        assert window_end - 2 < reset_at <= window_end + 1
        assert ours.inspect(key_of(item, "carol", strategy))["count"] == 4  # type: ignore[index]
        # Where that differs from RL.FIXED with the limit: a refused cost
        # still counts, so one more unit is refused too (2 + 2 + 1 > 3),
        # which RL.FIXED with the limit, having counted 2, allows.
        assert driver.hit(item, "carol") is False
        assert own.take(f"{mine}:carol").allowed is True

    driver.clear(item, "alice")
    assert ours.inspect(key_of(item, "alice", strategy)) is None
    assert driver.hit(item, "alice") is True
    # The storage's keys: alice's and carol's (bob's readings wrote none).
    assert driver.storage_call("reset") == 2
    assert ours.inspect(key_of(item, "carol", strategy)) is None


@pytest.mark.parametrize("strategy", list(STRATEGIES))
def test_strategies(servers: Servers, backend: str, strategy: str, drive: Callable[[str, str], Driver]) -> None:
    server: Server = servers.get(BACKEND_SERVER[backend])
    reset(server)
    ours = direct(server.port)
    driver = drive(f"redis-ratelimit://127.0.0.1:{server.port}/0", strategy)
    try:
        exercise(driver, ours, strategy)
        assert driver.backend() == backend  # found by the client's search
    finally:
        ours.close()
        ours.redis.close()


@pytest.mark.parametrize("kind", ["module", "functions"])
def test_cluster(servers: Servers, kind: str, mode: str, drive: Callable[[str, str], Driver]) -> None:
    cluster = servers.get(f"cluster-{kind}")
    for node in cluster.nodes:
        reset(node)
    ours = direct(cluster.port, cluster=True)
    try:
        for strategy in STRATEGIES:
            nodes = ",".join(f"127.0.0.1:{node.port}" for node in cluster.nodes)
            driver = drive(f"redis-ratelimit+cluster://{nodes}", strategy)
            exercise(driver, ours, strategy)
            assert driver.storage_call("check") is True
            assert driver.backend() == kind
    finally:
        ours.close()
        ours.redis.close()


# -- the URI, its options, the failure policy -----------------------------------


def test_uri_options(servers: Servers) -> None:
    server = servers.get("functions")
    storage = storage_from_string(
        f"redis-ratelimit://127.0.0.1:{server.port}/0?timeout=0.5&fail_open=true&key_prefix=app&backend=functions"
        "&socket_keepalive=true"
    )
    try:
        assert isinstance(storage, adapter.RateLimitStorage)
        assert (storage.limits.timeout_ms, storage.limits.fail_open) == (500, True)
        assert storage.limits.backend() == "functions"
        assert storage.redis.connection_pool.connection_kwargs["socket_keepalive"] is True
        assert storage.acquire_entry("k", 1, 60) is True
        assert storage.redis.exists("app:k") == 1
        assert storage.reset() == 1
    finally:
        storage.close()
    # Keyword arguments (Flask-Limiter's storage_options) win over the URI.
    storage = storage_from_string(f"redis-ratelimit://127.0.0.1:{server.port}?timeout=0.5", timeout=0.1)
    try:
        assert storage.limits.timeout_ms == 100
    finally:
        storage.close()


@pytest.mark.parametrize(
    ("uri", "message"),
    [
        ("redis-ratelimit://127.0.0.1:1?fail_open=maybe", "fail_open must be true or false, got 'maybe'"),
        ("redis-ratelimit://127.0.0.1:1?timeout=soon", "timeout must be a number of seconds, got 'soon'"),
        ("redis-ratelimit+cluster://127.0.0.1", "expected host:port, got '127.0.0.1'"),
        ("redis-ratelimit+cluster://127.0.0.1:1?db=2", "unknown option 'db'"),
    ],
)
def test_bad_uris(uri: str, message: str) -> None:
    with pytest.raises(ConfigurationError, match=message):
        storage_from_string(uri)


def test_the_failure_policy() -> None:
    port = free_port()  # nothing listens there
    closed = storage_from_string(f"redis-ratelimit://127.0.0.1:{port}")
    opened = storage_from_string(f"redis-ratelimit://127.0.0.1:{port}?fail_open=true")
    try:
        item = parse("3/hour")
        with pytest.raises(Unavailable):
            limits.strategies.MovingWindowRateLimiter(closed).hit(item, "x")
        assert closed.check() is False
        for strategy in limits.strategies.STRATEGIES.values():
            limiter = strategy(opened)
            assert [limiter.hit(item, "x") for _ in range(4)] == [True] * 4
            assert limiter.get_window_stats(item, "x").remaining == 3
    finally:
        closed.close()
        opened.close()


def test_the_base_package_imports_no_limits() -> None:
    code = "import sys, redis_ratelimit_client; print(sorted(m for m in sys.modules if m.split('.')[0] == 'limits'))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


# -- real apps -------------------------------------------------------------------------------

APP_SERVERS = list(BACKEND_SERVER)  # the module, the functions library, the scripts (Redis 6.2)


@pytest.mark.parametrize("edition", APP_SERVERS)
@pytest.mark.parametrize("strategy", ["fixed-window", "moving-window"])
def test_flask_limiter(servers: Servers, edition: str, strategy: str) -> None:
    from flask import Flask
    from flask_limiter import Limiter
    from flask_limiter.util import get_remote_address

    server = servers.get(BACKEND_SERVER[edition])
    reset(server)
    app = Flask(__name__)
    limiter = Limiter(
        get_remote_address,
        app=app,
        storage_uri=f"redis-ratelimit://127.0.0.1:{server.port}",
        strategy=strategy,
        headers_enabled=True,
    )
    text = STRATEGIES[strategy][0]

    @app.get("/")
    @limiter.limit(text)
    def index() -> str:
        return "ok"

    http = app.test_client()
    responses = [http.get("/") for _ in range(4)]
    assert [r.status_code for r in responses] == [200, 200, 200, 429]
    assert [r.headers["X-RateLimit-Remaining"] for r in responses] == ["2", "1", "0", "0"]
    assert [r.headers["X-RateLimit-Limit"] for r in responses] == ["3"] * 4
    # The server's state: the app's three requests (the fixed window counts
    # the refused one too).
    storage = limiter.storage
    assert isinstance(storage, adapter.RateLimitStorage)
    (key,) = storage.redis.keys()
    state = storage.limits.inspect(key)
    assert state is not None
    if strategy == "moving-window":
        assert (state["kind"], state["entries"]) == ("sliding_log", 3)
        assert storage.limits.sliding_log(limit=3, window=3600).peek(key).allowed is False
    else:
        assert (state["kind"], state["count"]) == ("fixed", 4)
    assert storage.limits.backend() == edition


@pytest.mark.parametrize("edition", APP_SERVERS)
@pytest.mark.parametrize("strategy", ["sliding-window-counter", "moving-window"])
def test_slowapi(servers: Servers, edition: str, strategy: str) -> None:
    import httpx
    from slowapi import Limiter, _rate_limit_exceeded_handler
    from slowapi.errors import RateLimitExceeded
    from slowapi.util import get_remote_address

    server = servers.get(BACKEND_SERVER[edition])
    reset(server)
    limiter = Limiter(
        key_func=get_remote_address, storage_uri=f"redis-ratelimit://127.0.0.1:{server.port}", strategy=strategy
    )
    app = fastapi.FastAPI()
    app.state.limiter = limiter
    app.add_exception_handler(RateLimitExceeded, _rate_limit_exceeded_handler)  # type: ignore[arg-type]
    text = STRATEGIES[strategy][0]

    @app.get("/")
    @limiter.limit(text)
    async def index(request: Request) -> dict[str, bool]:
        return {"ok": True}

    async def requests() -> list[int]:
        transport = httpx.ASGITransport(app=app, client=("203.0.113.7", 50000))
        async with httpx.AsyncClient(transport=transport, base_url="http://app") as http:
            return [(await http.get("/")).status_code for _ in range(4)]

    statuses = asyncio.run(requests())
    assert statuses == [200, 200, 200, 429]
    storage = limiter._storage
    assert isinstance(storage, adapter.RateLimitStorage)
    (key,) = storage.redis.keys()
    state = storage.limits.inspect(key)
    assert state is not None
    if strategy == "moving-window":
        assert (state["kind"], state["entries"]) == ("sliding_log", 3)
    else:
        assert (state["kind"], state["current"]) == ("sliding_counter", 3)
        assert storage.limits.sliding_counter(limit=3, window=MONTH).peek(key).allowed is False
    assert storage.limits.backend() == edition
    storage.close()
