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
from redis.backoff import NoBackoff
from redis.retry import Retry
from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import PlainTextResponse
from starlette.routing import Route

from redis_ratelimit_client import AsyncRateLimits, Decision, InvalidParameter, RateLimits
from redis_ratelimit_client.asgi import RateLimitMiddleware, header_key
from redis_ratelimit_client.fastapi import RateLimitDependency

from .servers import Server, free_port

Serve = Callable[..., str]


@pytest.fixture
def serve() -> Iterator[Serve]:
    """serve(app, client) -> base URL: the app under uvicorn on a free port,
    on a loop of its own thread, until the end of the test; the async Redis
    client is closed on that loop before the server stops."""
    running: list[tuple[uvicorn.Server, threading.Thread, asyncio.AbstractEventLoop, Any]] = []

    def start(app: Any, client: Any) -> str:
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
        running.append((server, thread, loop, client))
        return f"http://127.0.0.1:{port}"

    yield start
    for server, thread, loop, client in running:
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
    url = serve(starlette_app(api), client)
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
    # The keys: the prefix, the limiter's name, the identity as a hash tag.
    assert sorted(server.client().keys("*")) == [b"ratelimit:api:{alice}", b"ratelimit:api:{bob}"]


def test_middleware_over_all_of(servers: Any, serve: Serve) -> None:
    server = servers.get("module")
    server.client().flushall()
    limits, client = app_limits(server.port)
    both = limits.all_of(
        limits.gcra(rate=1, per=10, burst=3, name="burst"), limits.sliding_log(limit=3, window=3600, name="hourly")
    )
    url = serve(starlette_app(both, prefix="rl:"), client)
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
    assert sorted(server.client().keys("*")) == [b"rl:burst:{carol}", b"rl:hourly:{carol}"]


def down_limits() -> tuple[AsyncRateLimits, Any]:
    """A client of a port where nothing listens, without retries."""
    client = redis.asyncio.Redis(port=free_port(), retry=Retry(NoBackoff(), 0))
    return AsyncRateLimits(client), client


def test_fail_closed_by_default(serve: Serve) -> None:
    limits, client = down_limits()
    url = serve(starlette_app(limits.gcra(rate=1, per=1)), client)
    response = httpx.get(url + "/")
    assert (response.status_code, response.text) == (503, "rate limiter unavailable\n")
    assert rate_headers(response) == {}


def test_fail_open(serve: Serve) -> None:
    limits, client = down_limits()
    url = serve(starlette_app(limits.gcra(rate=1, per=1), fail_open=True), client)
    response = httpx.get(url + "/")
    assert (response.status_code, response.text) == (200, "hello\n")
    assert rate_headers(response) == {}


def test_a_server_error_fails_closed_too(servers: Any, serve: Serve) -> None:
    server = servers.get("module")
    server.client().flushall()
    server.client().lpush("ratelimit:api:{dave}", "not a limiter")
    limits, client = app_limits(server.port)
    url = serve(starlette_app(limits.gcra(rate=1, per=1, name="api")), client)
    response = httpx.get(url + "/", headers={"X-Client-Id": "dave"})
    assert response.status_code == 503


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
    url = serve(app, client)
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

    url = serve(app, client)
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
    async def open_route(decision: Annotated[Decision | None, Depends(opened)]) -> str:
        return "served without a decision" if decision is None else "decided"

    url = serve(app, client)
    with httpx.Client(base_url=url) as http:
        refused, served = http.get("/closed"), http.get("/open")
    assert (refused.status_code, refused.json()) == (503, {"detail": "rate limiter unavailable"})
    assert (served.status_code, served.json()) == (200, "served without a decision")
    assert "RateLimit" not in served.headers


def test_middleware_needs_an_async_limiter() -> None:
    import redis as sync_redis

    sync_limits = RateLimits(sync_redis.Redis(port=free_port()))
    with pytest.raises(InvalidParameter, match="limiter must come from an AsyncRateLimits"):
        RateLimitMiddleware(hello, sync_limits.gcra(rate=1, per=1))  # type: ignore[arg-type]
    with pytest.raises(InvalidParameter, match="limiter must come from an AsyncRateLimits"):
        RateLimitDependency(sync_limits.gcra(rate=1, per=1))  # type: ignore[arg-type]
