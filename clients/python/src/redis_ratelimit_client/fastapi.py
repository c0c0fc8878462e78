"""A FastAPI route dependency: rate limit one route or a router.

    from fastapi import Depends, FastAPI
    from redis_ratelimit_client import AsyncRateLimits
    from redis_ratelimit_client.fastapi import RateLimitDependency

    limits = AsyncRateLimits(redis.asyncio.Redis())
    search_limit = RateLimitDependency(limits.sliding_log(limit=30, window=60))

    @app.get("/search", dependencies=[Depends(search_limit)])
    async def search(): ...

A refused request raises ``HTTPException(429)`` with ``Retry-After`` and the
IETF ``RateLimit-Policy`` and ``RateLimit`` headers; an allowed one gets the
two RateLimit headers on its response (FastAPI copies them from the
dependency's ``Response`` when the route returns data; a route that returns
a ``Response`` object itself sends its own headers only). Used as
``decision: Decision | None = Depends(search_limit)``, the route receives
the decision (None when it failed open or the key function said None).

When Redis cannot answer: ``fail_open=False`` (the default) raises
``HTTPException(503)``; ``fail_open=True`` lets the request through without
headers.
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable

from fastapi import HTTPException, Request, Response

from ._async import AsyncAllOf, AsyncLimiter
from ._decision import Decision
from ._errors import InvalidParameter
from ._params import quantity
from .asgi import UNAVAILABLE, check_limiter, decide, log

RequestKey = Callable[[Request], str | Awaitable[str | None] | None]


def request_ip(request: Request) -> str:
    """The client's address as the server saw it, or ``"unknown"``."""
    return request.client.host if request.client else "unknown"


class RateLimitDependency:
    """A dependency that rate limits the routes it is attached to.

    The parameters are those of ``RateLimitMiddleware``, except that
    ``key`` is a function of the FastAPI ``Request``.
    """

    def __init__(
        self,
        limiter: AsyncLimiter | AsyncAllOf,
        *,
        key: RequestKey = request_ip,
        cost: int = 1,
        prefix: str = "ratelimit:",
        fail_open: bool = False,
    ) -> None:
        self.limiter = check_limiter(limiter)
        if not callable(key):
            raise InvalidParameter(f"key must be a function of the request, got {type(key).__name__}")
        self.key = key
        self.cost = quantity(cost)
        if not isinstance(prefix, str):
            raise InvalidParameter(f"prefix must be a string, got {type(prefix).__name__}")
        self.prefix = prefix
        self.fail_open = bool(fail_open)

    async def __call__(self, request: Request, response: Response) -> Decision | None:
        identity = self.key(request)
        if inspect.isawaitable(identity):
            identity = await identity
        if identity is None:
            return None
        try:
            decision = await decide(self.limiter, str(identity), self.cost, self.prefix)
        except UNAVAILABLE as error:
            log.warning("rate limiter unavailable (%s): %s", "failing open" if self.fail_open else "503", error)
            if self.fail_open:
                return None
            raise HTTPException(503, "rate limiter unavailable") from error
        headers = self.limiter.headers(decision)
        if not decision.allowed:
            raise HTTPException(429, "too many requests", headers=headers)
        for name, value in headers.items():
            response.headers[name] = value
        return decision


__all__ = ["RateLimitDependency", "request_ip"]
