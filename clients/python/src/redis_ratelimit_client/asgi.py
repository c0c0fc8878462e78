"""ASGI middleware: rate limit every HTTP request of an app (Starlette,
FastAPI, or any ASGI framework).

    from starlette.applications import Starlette
    from redis_ratelimit_client import AsyncRateLimits
    from redis_ratelimit_client.asgi import RateLimitMiddleware

    limits = AsyncRateLimits(redis.asyncio.Redis())
    app = Starlette(...)
    app.add_middleware(RateLimitMiddleware, limiter=limits.gcra(rate=10, per=1, burst=20))

Each request is keyed by ``key(scope)`` (the client's address by default;
return None to let a request through unlimited). A refused request is
answered ``429`` with ``Retry-After`` and the IETF ``RateLimit-Policy`` and
``RateLimit`` headers (draft-ietf-httpapi-ratelimit-headers-10); an allowed
one goes to the app, and its response carries the two RateLimit headers
too.

When Redis cannot answer (down, a timeout, an error), ``fail_open=False``
(the default) answers ``503`` with a short body, and ``fail_open=True``
lets the request through without RateLimit headers; either way the error
is logged on the ``redis_ratelimit_client`` logger.
"""

from __future__ import annotations

import asyncio
import inspect
import logging
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

from redis.exceptions import RedisError

from ._async import AsyncAllOf, AsyncLimiter
from ._decision import Decision
from ._errors import InvalidParameter, RateLimitError
from ._params import quantity

log = logging.getLogger("redis_ratelimit_client")

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]
ScopeKey = Callable[[Scope], str | Awaitable[str | None] | None]

# What fails open or closed: the server unreachable or answering an error.
UNAVAILABLE: tuple[type[BaseException], ...] = (RedisError, RateLimitError, OSError, asyncio.TimeoutError)

TOO_MANY = b"too many requests\n"
UNAVAILABLE_BODY = b"rate limiter unavailable\n"


def client_ip(scope: Scope) -> str:
    """The client's address as the server saw it (``scope["client"]``), or
    ``"unknown"``. Behind a proxy, key by the header the proxy sets instead,
    or run the server with its proxy-headers option."""
    client = scope.get("client")
    return str(client[0]) if client else "unknown"


def header_key(name: str, default: Callable[[Scope], str | None] = client_ip) -> Callable[[Scope], str | None]:
    """A key function: the value of the request header ``name`` (an API key,
    a client id, or the address a trusted proxy sets), else ``default(scope)``."""
    wanted = name.lower().encode("latin-1")

    def key(scope: Scope) -> str | None:
        for header, value in scope.get("headers", ()):
            if header == wanted:
                return bytes(value).decode("latin-1")
        return default(scope)

    return key


def limiter_keys(limiter: AsyncLimiter | AsyncAllOf, identity: str, prefix: str) -> list[str]:
    """The Redis keys of a request's identity: ``{prefix}{name}:{identity}``
    per limit, the identity as the hash tag so that an ``all_of``'s keys
    share a Cluster slot."""
    if isinstance(limiter, AsyncAllOf):
        return [f"{prefix}{spec.name}:{{{identity}}}" for spec in limiter.specs]
    return [f"{prefix}{limiter.spec.name}:{{{identity}}}"]


def check_limiter(limiter: object) -> AsyncLimiter | AsyncAllOf:
    if not isinstance(limiter, (AsyncLimiter, AsyncAllOf)):
        raise InvalidParameter(
            "limiter must come from an AsyncRateLimits (a limiter or an all_of), got " + type(limiter).__name__
        )
    return limiter


async def decide(limiter: AsyncLimiter | AsyncAllOf, identity: str, cost: int, prefix: str) -> Decision:
    keys = limiter_keys(limiter, identity, prefix)
    if isinstance(limiter, AsyncAllOf):
        return await limiter.take(keys, cost)
    return await limiter.take(keys[0], cost)


def _encode(headers: dict[str, str]) -> list[tuple[bytes, bytes]]:
    return [(name.lower().encode("latin-1"), value.encode("latin-1")) for name, value in headers.items()]


async def _answer(send: Send, status: int, headers: list[tuple[bytes, bytes]], body: bytes) -> None:
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [
                (b"content-type", b"text/plain; charset=utf-8"),
                (b"content-length", str(len(body)).encode()),
                *headers,
            ],
        }
    )
    await send({"type": "http.response.body", "body": body})


class RateLimitMiddleware:
    """Rate limit the HTTP requests of an ASGI app.

    - ``limiter``: a limiter or an ``all_of`` of an ``AsyncRateLimits``.
    - ``key``: ``key(scope)`` names who is limited (default: the client's
      address); it may be a coroutine function; None lets the request
      through, unlimited and without headers.
    - ``cost``: units each request takes (default 1).
    - ``prefix``: the Redis keys are ``{prefix}{limiter name}:{{key}}``.
    - ``fail_open``: when Redis cannot answer, let requests through (True)
      or answer 503 (False, the default).
    """

    def __init__(
        self,
        app: ASGIApp,
        limiter: AsyncLimiter | AsyncAllOf,
        *,
        key: ScopeKey = client_ip,
        cost: int = 1,
        prefix: str = "ratelimit:",
        fail_open: bool = False,
    ) -> None:
        self.app = app
        self.limiter = check_limiter(limiter)
        if not callable(key):
            raise InvalidParameter(f"key must be a function of the ASGI scope, got {type(key).__name__}")
        self.key = key
        self.cost = quantity(cost)
        if not isinstance(prefix, str):
            raise InvalidParameter(f"prefix must be a string, got {type(prefix).__name__}")
        self.prefix = prefix
        self.fail_open = bool(fail_open)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        identity = self.key(scope)
        if inspect.isawaitable(identity):
            identity = await identity
        if identity is None:
            await self.app(scope, receive, send)
            return
        try:
            decision = await decide(self.limiter, str(identity), self.cost, self.prefix)
        except UNAVAILABLE as error:
            log.warning("rate limiter unavailable (%s): %s", "failing open" if self.fail_open else "503", error)
            if self.fail_open:
                await self.app(scope, receive, send)
            else:
                await _answer(send, 503, [], UNAVAILABLE_BODY)
            return
        headers = _encode(self.limiter.headers(decision))
        if not decision.allowed:
            await _answer(send, 429, headers, TOO_MANY)
            return

        async def send_with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                message = dict(message)
                message["headers"] = [*message.get("headers", ()), *headers]
            await send(message)

        await self.app(scope, receive, send_with_headers)


__all__ = ["RateLimitMiddleware", "client_ip", "header_key", "limiter_keys"]
