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
the decision (None when the key function said None); it is also
``request.state.rate_limit``.

The keys, the failure policy and the start-up check are the middleware's
(``redis_ratelimit_client.asgi``): failing closed raises
``HTTPException(503)`` with ``Retry-After: 1``; failing open, the route gets
a decision marked ``failed_open``; a server error is raised (a 500). Run
``await search_limit.check()`` in the app's lifespan to fail its start on a
limiter the server refuses.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from fastapi import HTTPException, Request, Response

from ._decision import Decision
from ._errors import InvalidParameter, Unavailable
from .asgi import Guard, Limiters, check_tag_function, log, value_of

RequestKey = Callable[[Request], str | Awaitable[str | None] | None]
RequestTag = Callable[[Request], str | bytes | Awaitable[str | bytes | None] | None]


def request_ip(request: Request) -> str:
    """The client's address as the server saw it, or ``"unknown"``."""
    return request.client.host if request.client else "unknown"


class RateLimitDependency:
    """A dependency that rate limits the routes it is attached to.

    The parameters are those of ``RateLimitMiddleware``, except that
    ``key`` and ``tag`` are functions of the FastAPI ``Request``.
    """

    def __init__(
        self,
        limiter: Limiters,
        *,
        key: RequestKey = request_ip,
        cost: int = 1,
        prefix: str = "ratelimit:",
        fail_open: bool | None = None,
        tag: RequestTag | None = None,
    ) -> None:
        self._guard = Guard(limiter, cost, prefix, fail_open)
        self.limiter = self._guard.limiter
        if not callable(key):
            raise InvalidParameter(f"key must be a function of the request, got {type(key).__name__}")
        self.key = key
        check_tag_function(tag, self.limiter, "the request")
        self.tag = tag

    async def check(self) -> None:
        """Try the limiters once without taking anything (a ``PEEK`` on the
        keys of the identity ``check``): raises ``ServerError`` when the
        server refuses one; ``Unavailable`` is logged and raised. Await it
        in the app's lifespan."""
        await self._guard.check()

    async def __call__(self, request: Request, response: Response) -> Decision | None:
        identity = await value_of(self.key, request)
        if identity is None:
            return None
        tag = None if self.tag is None else await value_of(self.tag, request)
        try:
            decision = await self._guard.decide(str(identity), tag)
        except Unavailable as error:
            log.warning("%s: answering 503", error)
            raise HTTPException(503, "rate limiter unavailable", headers={"Retry-After": "1"}) from error
        request.state.rate_limit = decision
        if decision.failed_open:
            return decision
        headers = self.limiter.headers(decision)
        if not decision.allowed:
            raise HTTPException(429, "too many requests", headers=headers)
        for name, value in headers.items():
            response.headers[name] = value
        return decision


__all__ = ["RateLimitDependency", "request_ip"]
