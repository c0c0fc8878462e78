"""ASGI middleware: rate limit every HTTP request of an app (Starlette,
FastAPI, or any ASGI framework).

    from starlette.applications import Starlette
    from redis_ratelimit_client import AsyncRateLimits
    from redis_ratelimit_client.asgi import RateLimitMiddleware

    limits = AsyncRateLimits(redis.asyncio.Redis())
    app = Starlette(...)
    app.add_middleware(RateLimitMiddleware, limiter=limits.gcra(rate=10, per=1, burst=20))

Each request is keyed by ``key(scope)`` (the client's address by default;
return None to let a request through unlimited), and may be tagged by
``tag(scope)`` (who, within that key, made it: a user id), which sliding
logs record for ``log(key, window, by_tag=True)``. A refused request is
answered ``429`` with ``Retry-After`` and the IETF ``RateLimit-Policy`` and
``RateLimit`` headers (draft-ietf-httpapi-ratelimit-headers-10); an allowed
one goes to the app, and its response carries the two RateLimit headers
too.

Redis keys are ``{prefix}{<identity>}:<name>`` (default prefix
``ratelimit:``): the same keys as the Node.js and Rust middlewares, so that
services in any of them that name a limit alike share it. The decision
reaches the app as ``scope["state"]["rate_limit"]`` (Starlette's
``request.state.rate_limit``).

At start-up (the lifespan's ``startup``, else the first request) the
middleware checks its limiters once (a ``PEEK`` on the keys of the identity
``check``): a limiter the server refuses fails the start with the server's
words. When Redis cannot answer within the client's ``timeout``, the failure
policy applies: ``fail_open`` (default: the client's) lets the request
through, marked ``failed_open`` and without RateLimit headers; else ``503``
with ``Retry-After: 1``. A server error is never an outage: it is raised
(a 500). Either way the error is logged on the ``redis_ratelimit_client``
logger.
"""

from __future__ import annotations

import inspect
import logging
import time
from collections.abc import Awaitable, Callable, MutableMapping, Sequence
from typing import Any

from ._async import AsyncAllOf, AsyncLimiter
from ._decision import Decision, failed_open
from ._errors import InvalidParameter, RateLimitError, Unavailable
from ._params import check_tag, quantity

log = logging.getLogger("redis_ratelimit_client")

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]
ScopeKey = Callable[[Scope], str | Awaitable[str | None] | None]
ScopeTag = Callable[[Scope], str | bytes | Awaitable[str | bytes | None] | None]
Limiters = AsyncLimiter | AsyncAllOf | Sequence[AsyncLimiter]

TOO_MANY = b"too many requests\n"
UNAVAILABLE_BODY = b"rate limiter unavailable\n"
CHECK_IDENTITY = "check"


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


def limiter_keys(limiter: AsyncLimiter | AsyncAllOf, identity: str, prefix: str = "ratelimit:") -> list[str]:
    """The Redis keys of a request's identity, one per limit:
    ``{prefix}{<identity>}:<name>``, the identity between braces (one
    Cluster hash tag for all of a client's limits)."""
    specs = limiter.specs if isinstance(limiter, AsyncAllOf) else (limiter.spec,)
    return [f"{prefix}{{{identity}}}:{spec.name}" for spec in specs]


def check_limiter(limiter: object) -> AsyncLimiter | AsyncAllOf:
    """A limiter, an all_of, or a sequence of limiters (made an all_of), of
    an AsyncRateLimits."""
    if isinstance(limiter, (list, tuple)) and limiter and isinstance(limiter[0], AsyncLimiter):
        limiter = limiter[0]._client.all_of(*limiter) if len(limiter) > 1 else limiter[0]
    if not isinstance(limiter, (AsyncLimiter, AsyncAllOf)):
        raise InvalidParameter(
            "limiter must come from an AsyncRateLimits (a limiter, an all_of, or a list of limiters), got "
            + type(limiter).__name__
        )
    return limiter


def check_options(prefix: object, fail_open: object) -> None:
    if not isinstance(prefix, str):
        raise InvalidParameter(f"prefix must be a string, got {type(prefix).__name__}")
    if fail_open is not None and not isinstance(fail_open, bool):
        raise InvalidParameter(f"fail_open must be True, False or None (the client's), got {type(fail_open).__name__}")


TAG_WITHOUT_LOG = "tag: none of the limits is a sliding_log, the one kind that records a tag"


def check_tag_function(tag: object, limiter: AsyncLimiter | AsyncAllOf, of: str) -> None:
    """A tag function: callable, and a sliding log among the limits (no
    other limit records a tag: it would be sent for nothing)."""
    if tag is None:
        return
    if not callable(tag):
        raise InvalidParameter(f"tag must be a function of {of}, or None, got {type(tag).__name__}")
    specs = limiter.specs if isinstance(limiter, AsyncAllOf) else (limiter.spec,)
    if not any(spec.algorithm == "SLIDING_LOG" for spec in specs):
        raise InvalidParameter(TAG_WITHOUT_LOG)


async def value_of(function: Callable[[Any], Any], arg: Any) -> Any:
    """A key or tag function's answer, awaited when it is a coroutine's."""
    value = function(arg)
    if inspect.isawaitable(value):
        value = await value
    return value


class Guard:
    """What the middleware and the FastAPI dependency share: the keys, the
    tag, the decision under the failure policy, the start-up check."""

    __slots__ = ("checked", "cost", "fail_open", "limiter", "prefix", "tags")

    def __init__(self, limiter: Limiters, cost: int, prefix: str, fail_open: bool | None) -> None:
        self.limiter = check_limiter(limiter)
        self.cost = quantity(cost)
        check_options(prefix, fail_open)
        self.prefix = prefix
        self.fail_open = fail_open
        self.checked = False
        # Whether a tag goes on the wire: a sliding log alone, or RL.ALL.
        self.tags = isinstance(self.limiter, AsyncAllOf) or self.limiter.spec.algorithm == "SLIDING_LOG"

    def policy_open(self) -> bool:
        return self.limiter._client.fail_open if self.fail_open is None else self.fail_open

    async def decide(self, identity: str, tag: str | bytes | None = None) -> Decision:
        """The decision for ``identity``, tagged ``tag`` (None: untagged):
        Unavailable when failing closed, a failed-open decision when failing
        open, ServerError raised; a tag out of range raises
        InvalidParameter, nothing sent."""
        limiter = self.limiter
        keys = limiter_keys(limiter, identity, self.prefix)
        if tag is not None:
            check_tag(tag)
        if not self.checked:
            start = time.perf_counter()
            try:
                await self.check()
            except Unavailable:
                # The check found the outage: this request gets the policy
                # now, within one deadline, not two.
                metrics = limiter._calls.metrics
                if metrics is not None:
                    name = limiter.metric_name if isinstance(limiter, AsyncAllOf) else limiter.name
                    outcome = "failed_open" if self.policy_open() else "failed_closed"
                    metrics.record(name, outcome, self.cost, time.perf_counter() - start)
                if not self.policy_open():
                    raise
                return failed_open(
                    limiter.specs[0].quota if isinstance(limiter, AsyncAllOf) else limiter.spec.quota, self.cost
                )
        tagged = {"tag": tag} if tag is not None and self.tags else {}
        if isinstance(limiter, AsyncAllOf):
            call = limiter._take(keys, self.cost, fail_open=self.fail_open, identity=identity, **tagged)
        else:
            call = limiter._take(keys[0], self.cost, fail_open=self.fail_open, identity=identity, **tagged)
        decision: Decision = await limiter._client._run(call)
        if decision.failed_open:
            log.warning("rate limiter unavailable: failing open")
        return decision

    async def check(self) -> None:
        """The limiters tried once (a PEEK of one unit on the keys of the
        identity ``check``): ServerError raised; Unavailable logged, then
        raised."""
        self.checked = True
        limiter = self.limiter
        keys = limiter_keys(limiter, CHECK_IDENTITY, self.prefix)
        try:
            if isinstance(limiter, AsyncAllOf):
                await limiter.check(keys)
            else:
                await limiter.check(keys[0])
        except Unavailable as error:
            log.warning("%s: at start-up; the failure policy applies to each request", error)
            raise


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

    - ``limiter``: a limiter, an ``all_of`` or a list of limiters (decided
      as one ``all_of``) of an ``AsyncRateLimits``; each limit's ``name``
      is in its key and its headers.
    - ``key``: ``key(scope)`` names who is limited (default: the client's
      address); it may be a coroutine function; None lets the request
      through, unlimited and without headers.
    - ``tag``: ``tag(scope)`` (may be a coroutine function) names who made
      the request within its key (a user id), sent as ``TAG`` to the
      sliding logs among the limits, which record it: ``log(key, window,
      by_tag=True)`` then says who used the limit. None: untagged. A tag
      is 1 to 1,024 bytes (the server's cap, 64 by default): another is
      raised (a 500), never cut short. A tag function where no limit is a
      sliding log raises InvalidParameter here.
    - ``cost``: units each request takes (default 1).
    - ``prefix``: the Redis keys are ``{prefix}{<identity>}:<name>``
      (default ``"ratelimit:"``).
    - ``fail_open``: when Redis cannot answer, let requests through (True)
      or answer 503 (False); None (the default) follows the client's
      ``fail_open``.
    """

    def __init__(
        self,
        app: ASGIApp,
        limiter: Limiters,
        *,
        key: ScopeKey = client_ip,
        cost: int = 1,
        prefix: str = "ratelimit:",
        fail_open: bool | None = None,
        tag: ScopeTag | None = None,
    ) -> None:
        self.app = app
        self._guard = Guard(limiter, cost, prefix, fail_open)
        self.limiter = self._guard.limiter
        if not callable(key):
            raise InvalidParameter(f"key must be a function of the ASGI scope, got {type(key).__name__}")
        self.key = key
        check_tag_function(tag, self.limiter, "the ASGI scope")
        self.tag = tag

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            await self.app(scope, receive, self._starting(send))
            return
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        identity = await value_of(self.key, scope)
        if identity is None:
            await self.app(scope, receive, send)
            return
        tag = None if self.tag is None else await value_of(self.tag, scope)
        try:
            decision = await self._guard.decide(str(identity), tag)
        except Unavailable as error:
            log.warning("%s: answering 503", error)
            await _answer(send, 503, [(b"retry-after", b"1")], UNAVAILABLE_BODY)
            return
        scope.setdefault("state", {})["rate_limit"] = decision
        if decision.failed_open:
            await self.app(scope, receive, send)
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

    def _starting(self, send: Send) -> Send:
        """``send`` for the lifespan: once the app has started, the limiters
        are checked; a ServerError turns the start into a failure that
        carries the server's words."""

        async def send_checked(message: Message) -> None:
            if message["type"] == "lifespan.startup.complete" and not self._guard.checked:
                try:
                    await self._guard.check()
                except Unavailable:
                    pass  # logged: the app starts, the policy applies to each request
                except RateLimitError as error:
                    log.error("rate limiter refused at start-up: %s", error)
                    message = {"type": "lifespan.startup.failed", "message": str(error)}
            await send(message)

        return send_checked


__all__ = ["RateLimitMiddleware", "client_ip", "header_key", "limiter_keys"]
