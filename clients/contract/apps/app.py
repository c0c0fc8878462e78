"""The shared-limit app in Python: Starlette and the ASGI middleware.

GET / answers 200 "ok", limited per X-Client-Id by one limit named "api"
(GCRA, 5 per minute in bursts of 5), with the default key prefix.

    PORT=0 REDIS_PORT=6379 python app.py    # prints "listening <port>"
"""

import asyncio
import os
import socket

import redis.asyncio
import uvicorn
from starlette.applications import Starlette
from starlette.responses import PlainTextResponse
from starlette.routing import Route

from redis_ratelimit_client import AsyncRateLimits
from redis_ratelimit_client.asgi import RateLimitMiddleware, header_key


async def home(request):
    return PlainTextResponse("ok")


async def main() -> None:
    r = redis.asyncio.Redis(host="127.0.0.1", port=int(os.environ["REDIS_PORT"]))
    limits = AsyncRateLimits(r)
    app = Starlette(routes=[Route("/", home)])
    app.add_middleware(
        RateLimitMiddleware,
        limiter=limits.gcra(rate=5, per=60, burst=5, name="api"),
        key=header_key("x-client-id"),
    )
    sock = socket.socket()
    sock.bind(("127.0.0.1", int(os.environ.get("PORT", "0"))))
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="on"))
    serving = asyncio.create_task(server.serve(sockets=[sock]))
    while not server.started and not serving.done():
        await asyncio.sleep(0.01)
    if serving.done():
        await serving  # the start failed: its error
        return
    print(f"listening {sock.getsockname()[1]}", flush=True)
    await serving


if __name__ == "__main__":
    asyncio.run(main())
