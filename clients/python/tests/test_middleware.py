"""The ASGI middleware (Starlette and FastAPI) and the FastAPI dependency,
over a real HTTP server (uvicorn on a free port) and real Redis servers:
429 with Retry-After and the draft-10 RateLimit headers, the headers on
allowed responses too, and fail open or closed when Redis is down."""

# No "from __future__ import annotations" here: FastAPI reads the routes'
# annotations at run time, and they name this test's local dependencies.
import asyncio
import threading
import time
from collections.abc import Callable, Iterator
from typing import Annotated, Any

import httpx
import pytest
import redis.asyncio
import uvicorn
from fastapi import Depends, FastAPI
from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import PlainTextResponse
from starlette.routing import Route

from redis_ratelimit_client import AsyncRateLimits, Decision, InvalidParameter, RateLimits, ServerError
from redis_ratelimit_client.asgi import RateLimitMiddleware, header_key, limiter_keys
from redis_ratelimit_client.fastapi import RateLimitDependency

from .servers import Server, free_port

Serve = Callable[..., str]


@pytest.fixture
def serve() -> Iterator[Serve]:
    """serve(app, limits, client) -> base URL: the app under uvicorn on a
    free port, on a loop of its own thread, until the end of the test; the
    limits and the async Redis client are closed on that loop before the
    server stops."""
    running: list[tuple[uvicorn.Server, threading.Thread, asyncio.AbstractEventLoop, Any]] = []

    def start(app: Any, *clients: Any) -> str:
        port = free_port()
        server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning", lifespan="off"))
        loop = asyncio.new_event_loop()
        thread = threading.Thread(target=loop.run_until_complete, args=(server.serve(),), daemon=True)
        thread.start()
        deadline = time.monotonic() + 10
        while not server.started:
            if not thread.is_alive() or time.monotonic() > deadline:
                raise RuntimeError("uvicorn did not start")
            time.sleep(0.01)
        running.append((server, thread, loop, clients))
        return f"http://127.0.0.1:{port}"

    yield start
    for server, thread, loop, clients in running:
        for client in clients:
            asyncio.run_coroutine_threadsafe(client.aclose(), loop).result(5)
        server.should_exit = True
        thread.join(10)
        loop.close()


def hello(request: Request) -> PlainTextResponse:
    return PlainTextResponse("hello\n")


def starlette_app(limiter: Any, **options: Any) -> Starlette:
    return Starlette(
        routes=[Route("/", hello)],
        middleware=[Middleware(RateLimitMiddleware, limiter=limiter, key=header_key("x-client-id"), **options)],
    )


def rate_headers(response: httpx.Response) -> dict[str, str]:
    return {
        name: response.headers[name]
        for name in ("RateLimit-Policy", "RateLimit", "Retry-After")
        if name in response.headers
    }


def app_limits(port: int) -> tuple[AsyncRateLimits, Any]:
    client = redis.asyncio.Redis(port=port)
    return AsyncRateLimits(client), client


def test_middleware_answers_429_with_the_headers(server: Server, serve: Serve) -> None:
    """On every backend: the same requests, the same headers."""
    limits, client = app_limits(server.port)
    api = limits.gcra(rate=1, per=10, burst=2, name="api")
    url = serve(starlette_app(api), limits, client)
    with httpx.Client(base_url=url) as http:
        ok = [http.get("/", headers={"X-Client-Id": "alice"}) for _ in range(2)]
        refused = http.get("/", headers={"X-Client-Id": "alice"})
        other = http.get("/", headers={"X-Client-Id": "bob"})
    assert [r.status_code for r in ok] == [200, 200]
    assert ok[0].text == "hello\n"
    assert rate_headers(ok[0]) == {"RateLimit-Policy": '"api";q=2;w=20', "RateLimit": '"api";r=1;t=10'}
    assert rate_headers(ok[1]) == {"RateLimit-Policy": '"api";q=2;w=20', "RateLimit": '"api";r=0;t=20'}
    assert refused.status_code == 429
    assert refused.text == "too many requests\n"
    assert rate_headers(refused) == {
        "RateLimit-Policy": '"api";q=2;w=20',
        "RateLimit": '"api";r=0;t=20',
        "Retry-After": "10",
    }
    assert (other.status_code, other.headers["RateLimit"]) == (200, '"api";r=1;t=10')
    # The keys: the prefix, the identity as a hash tag, the limiter's name.
    assert sorted(server.client().keys("*")) == [b"ratelimit:{alice}:api", b"ratelimit:{bob}:api"]


def test_middleware_over_all_of(servers: Any, serve: Serve) -> None:
    server = servers.get("module")
    server.client().flushall()
    limits, client = app_limits(server.port)
    both = limits.all_of(
        limits.gcra(rate=1, per=10, burst=3, name="burst"), limits.sliding_log(limit=3, window=3600, name="hourly")
    )
    url = serve(starlette_app(both, prefix="rl:"), limits, client)
    with httpx.Client(base_url=url) as http:
        responses = [http.get("/", headers={"X-Client-Id": "carol"}) for _ in range(4)]
    assert [r.status_code for r in responses] == [200, 200, 200, 429]
    assert rate_headers(responses[0]) == {
        "RateLimit-Policy": '"burst";q=3;w=30, "hourly";q=3;w=3600',
        "RateLimit": '"burst";r=2;t=10',
    }
    assert rate_headers(responses[3]) == {
        "RateLimit-Policy": '"burst";q=3;w=30, "hourly";q=3;w=3600',
        "RateLimit": '"hourly";r=0;t=3600',
        "Retry-After": "3600",
    }
    assert sorted(server.client().keys("*")) == [b"rl:{carol}:burst", b"rl:{carol}:hourly"]


def down_limits() -> tuple[AsyncRateLimits, Any]:
    """A client of a port where nothing listens."""
    client = redis.asyncio.Redis(port=free_port())
    return AsyncRateLimits(client), client


def test_fail_closed_by_default(serve: Serve) -> None:
    limits, client = down_limits()
    url = serve(starlette_app(limits.gcra(rate=1, per=1)), limits, client)
    response = httpx.get(url + "/")
    assert (response.status_code, response.text) == (503, "rate limiter unavailable\n")
    assert rate_headers(response) == {"Retry-After": "1"}


def test_fail_open(serve: Serve) -> None:
    limits, client = down_limits()
    url = serve(starlette_app(limits.gcra(rate=1, per=1), fail_open=True), limits, client)
    response = httpx.get(url + "/")
    assert (response.status_code, response.text) == (200, "hello\n")
    assert rate_headers(response) == {}


def test_a_server_error_is_raised_not_failed_open(servers: Any, serve: Serve) -> None:
    """A key of another type is a misconfiguration, not an outage: a 500,
    whatever the policy."""
    server = servers.get("module")
    server.client().flushall()
    server.client().lpush("ratelimit:{dave}:api", "not a limiter")
    limits, client = app_limits(server.port)
    url = serve(starlette_app(limits.gcra(rate=1, per=1, name="api"), fail_open=True), limits, client)
    response = httpx.get(url + "/", headers={"X-Client-Id": "dave"})
    assert response.status_code == 500


def test_key_none_is_not_limited(servers: Any, serve: Serve) -> None:
    server = servers.get("module")
    server.client().flushall()
    limits, client = app_limits(server.port)

    async def only_api(scope: Any) -> str | None:
        return "everyone" if scope["path"].startswith("/api") else None

    app = Starlette(
        routes=[Route("/", hello), Route("/api", hello)],
        middleware=[Middleware(RateLimitMiddleware, limiter=limits.gcra(rate=1, per=60, burst=1), key=only_api)],
    )
    url = serve(app, limits, client)
    with httpx.Client(base_url=url) as http:
        assert [http.get("/").status_code for _ in range(3)] == [200, 200, 200]
        assert "RateLimit" not in http.get("/").headers
        assert [http.get("/api").status_code for _ in range(2)] == [200, 429]


def test_fastapi_middleware_and_dependency(servers: Any, serve: Serve) -> None:
    server = servers.get("module")
    server.client().flushall()
    limits, client = app_limits(server.port)
    app = FastAPI()
    # The whole app: 100 per minute per client address.
    app.add_middleware(RateLimitMiddleware, limiter=limits.fixed_window(limit=100, window=60, name="app"))
    # One route: 2 per hour per API key, and the route sees the decision.
    search_limit = RateLimitDependency(
        limits.sliding_log(limit=2, window=3600, name="search"),
        key=lambda request: request.headers.get("x-api-key"),
    )

    @app.get("/search")
    async def search(decision: Annotated[Decision | None, Depends(search_limit)]) -> dict[str, Any]:
        return {"remaining": None if decision is None else decision.remaining}

    url = serve(app, limits, client)
    with httpx.Client(base_url=url) as http:
        first = http.get("/search", headers={"X-Api-Key": "k1"})
        second = http.get("/search", headers={"X-Api-Key": "k1"})
        refused = http.get("/search", headers={"X-Api-Key": "k1"})
        anonymous = http.get("/search")  # the key function says None: not limited by the route
    assert (first.status_code, first.json()) == (200, {"remaining": 1})
    # Both limits report: the route's, then the app's (draft 10's fields
    # are lists, so the two header lines read as one list).
    assert first.headers.get_list("RateLimit-Policy") == ['"search";q=2;w=3600', '"app";q=100;w=60']
    search_state, app_state = first.headers.get_list("RateLimit")
    assert search_state == '"search";r=1;t=3600'
    assert app_state.startswith('"app";r=99;t=')
    assert second.json() == {"remaining": 0}
    assert refused.status_code == 429
    assert refused.json() == {"detail": "too many requests"}
    assert refused.headers["Retry-After"] == "3600"
    assert refused.headers.get_list("RateLimit")[0] == '"search";r=0;t=3600'
    assert (anonymous.status_code, anonymous.json()) == (200, {"remaining": None})
    assert anonymous.headers["RateLimit-Policy"] == '"app";q=100;w=60'
    assert anonymous.headers["RateLimit"].startswith('"app";r=96;t=')


def test_fastapi_dependency_fails_open_or_closed(serve: Serve) -> None:
    limits, client = down_limits()
    app = FastAPI()
    closed = RateLimitDependency(limits.gcra(rate=1, per=1))
    opened = RateLimitDependency(limits.gcra(rate=1, per=1), fail_open=True)

    @app.get("/closed", dependencies=[Depends(closed)])
    async def closed_route() -> str:
        return "served"

    @app.get("/open")
    async def open_route(decision: Annotated[Decision | None, Depends(opened)], request: Request) -> str:
        assert request.state.rate_limit is decision
        return "served, failed open" if decision is not None and decision.failed_open else "decided"

    url = serve(app, limits, client)
    with httpx.Client(base_url=url) as http:
        refused, served = http.get("/closed"), http.get("/open")
    assert (refused.status_code, refused.json()) == (503, {"detail": "rate limiter unavailable"})
    assert refused.headers["Retry-After"] == "1"
    assert (served.status_code, served.json()) == (200, "served, failed open")
    assert "RateLimit" not in served.headers


def test_middleware_needs_an_async_limiter() -> None:
    import redis as sync_redis

    sync_limits = RateLimits(sync_redis.Redis(port=free_port()))
    with pytest.raises(InvalidParameter, match="limiter must come from an AsyncRateLimits"):
        RateLimitMiddleware(hello, sync_limits.gcra(rate=1, per=1))  # type: ignore[arg-type]
    with pytest.raises(InvalidParameter, match="fail_open must be True, False or None"):
        RateLimitMiddleware(hello, AsyncRateLimits(redis.asyncio.Redis()).gcra(1, 1), fail_open="yes")  # type: ignore[arg-type]
    with pytest.raises(InvalidParameter, match="limiter must come from an AsyncRateLimits"):
        RateLimitDependency(sync_limits.gcra(rate=1, per=1))  # type: ignore[arg-type]


# -- the start-up check ------------------------------------------------------------

OVER_THE_CAP = {
    "module": "ERR limit must be an integer from 1 to 10000 "
    "(CONFIG SET ratelimit.sliding_log_max_limit raises the cap, up to 1000000)",
    "functions": "ERR limit must be an integer from 1 to 10000 "
    "(the sliding_log_max_limit setting at the top of the library raises the cap, up to 1000000)",
}


async def lifespan_start(app: Any) -> list[Any]:
    """The lifespan's start as an ASGI server runs it (then its shutdown):
    the message the app answers the start with."""
    sent: list[Any] = []
    incoming = [{"type": "lifespan.startup"}]
    stopped = asyncio.Event()

    async def receive() -> Any:
        if incoming:
            return incoming.pop()
        await stopped.wait()
        return {"type": "lifespan.shutdown"}

    async def send(message: Any) -> None:
        sent.append(message)
        if message["type"].startswith("lifespan.startup."):
            stopped.set()

    await app({"type": "lifespan", "asgi": {"version": "3.0"}, "state": {}}, receive, send)
    return sent[:1]


@pytest.mark.parametrize("edition", ["module", "functions"])
def test_a_limiter_past_the_server_cap_fails_the_start(servers: Any, edition: str) -> None:
    """sliding_log(limit=20000) is within the client's range but past the
    server's default cap of 10,000: the app does not start, and says why in
    the server's words; a limiter within it starts."""
    server = servers.get(edition)

    async def start(limit: int) -> list[Any]:
        client = redis.asyncio.Redis(host="127.0.0.1", port=server.port)
        limits = AsyncRateLimits(client)
        app = Starlette(routes=[Route("/", hello)])
        app.add_middleware(RateLimitMiddleware, limiter=limits.sliding_log(limit=limit, window=60, name="api"))
        try:
            return await lifespan_start(app)
        finally:
            await limits.aclose()
            await client.aclose()

    assert asyncio.run(start(20_000)) == [{"type": "lifespan.startup.failed", "message": OVER_THE_CAP[edition]}]
    assert asyncio.run(start(10_000)) == [{"type": "lifespan.startup.complete"}]
    # The check peeked on the middleware's own key for the identity "check":
    # nothing was taken.
    assert server.client().exists("ratelimit:{check}:api") == 0


def test_the_start_goes_on_when_redis_is_down(caplog: pytest.LogCaptureFixture) -> None:
    async def start() -> list[Any]:
        limits, client = down_limits()
        app = Starlette(routes=[Route("/", hello)])
        app.add_middleware(RateLimitMiddleware, limiter=limits.gcra(rate=1, per=1, name="api"))
        try:
            return await lifespan_start(app)
        finally:
            await limits.aclose()
            await client.aclose()

    assert asyncio.run(start()) == [{"type": "lifespan.startup.complete"}]
    assert "rate limiter unavailable: Error 111 connecting to localhost:" in caplog.text
    assert "at start-up; the failure policy applies to each request" in caplog.text


@pytest.mark.parametrize("edition", ["module", "functions"])
def test_fastapi_dependency_check(servers: Any, edition: str) -> None:
    server = servers.get(edition)

    async def check(limit: int) -> None:
        client = redis.asyncio.Redis(host="127.0.0.1", port=server.port)
        limits = AsyncRateLimits(client)
        try:
            await RateLimitDependency(limits.sliding_log(limit=limit, window=60, name="search")).check()
        finally:
            await limits.aclose()
            await client.aclose()

    with pytest.raises(ServerError) as raised:
        asyncio.run(check(20_000))
    assert str(raised.value) == OVER_THE_CAP[edition]
    asyncio.run(check(100))


@pytest.mark.parametrize("edition", ["module", "functions"])
def test_who_caused_it(servers: Any, serve: Serve, edition: str) -> None:
    """Limit per address, tag by user (the middleware) or by API key (the
    dependency), then ask who filled the limit."""
    server = servers.get(edition)
    server.client().flushall()
    limits, client = app_limits(server.port)
    app = FastAPI()
    api = limits.sliding_log(limit=3, window=60, name="api")
    app.add_middleware(
        RateLimitMiddleware,
        limiter=api,
        tag=header_key("x-user", default=lambda scope: None),
    )
    search = limits.sliding_log(limit=10, window=60, name="search")

    async def api_key(request: Request) -> str | None:  # a coroutine function too
        return request.headers.get("x-api-key")

    search_limit = RateLimitDependency(search, key=lambda request: "everyone", tag=api_key)

    @app.get("/search", dependencies=[Depends(search_limit)])
    async def route() -> str:
        return "found"

    url = serve(app, limits, client)
    with httpx.Client(base_url=url) as http:
        statuses = [
            http.get("/search", headers=headers).status_code
            for headers in ({"X-User": "alice", "X-Api-Key": "k1"}, {"X-User": "alice"}, {}, {"X-User": "bob"})
        ]
    assert statuses == [200, 200, 200, 429]

    reader = RateLimits(server.client())
    by_user = reader.log(limiter_keys(api, "127.0.0.1")[0], 60, by_tag=True)
    by_api_key = reader.log(limiter_keys(search, "everyone")[0], 60, by_tag=True)
    reader.close()
    assert [(t.tag, t.units) for t in by_user] == [(b"alice", 2), (None, 1)]  # a refused request logs nothing
    assert [(t.tag, t.units) for t in by_api_key] == [(None, 2), (b"k1", 1)]
