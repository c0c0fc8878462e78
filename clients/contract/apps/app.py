"""The contract's app in Python: FastAPI and the ASGI middleware.

GET / answers 200 "ok", limited per X-Client-Id by one limit named "api"
(GCRA, 5 per minute in bursts of 5), with the default key prefix.

    PORT=0 REDIS_PORT=6379 python app.py    # prints "listening <port>"

RL_FAIL_OPEN=1 fails open; RL_LIMIT=sliding_log:20000 limits by a sliding
log of that many a minute instead. A limit the server refuses stops the
start (the middleware's check, at the lifespan's start).
"""

import asyncio
import os
import socket

import redis.asyncio
import uvicorn
from fastapi import FastAPI
from fastapi.responses import PlainTextResponse

from redis_ratelimit_client import AsyncRateLimits
from redis_ratelimit_client.asgi import RateLimitMiddleware, header_key


async def main() -> None:
    r = redis.asyncio.Redis(host="127.0.0.1", port=int(os.environ["REDIS_PORT"]))
    limits = AsyncRateLimits(r, fail_open=os.environ.get("RL_FAIL_OPEN") == "1")
    kind, _, count = os.environ.get("RL_LIMIT", "gcra:5").partition(":")
    if kind == "gcra":
        limiter = limits.gcra(rate=int(count), per=60, burst=int(count), name="api")
    else:
        limiter = limits.sliding_log(limit=int(count), window=60, name="api")
    app = FastAPI()
    app.add_middleware(RateLimitMiddleware, limiter=limiter, key=header_key("x-client-id"))

    @app.get("/", response_class=PlainTextResponse)
    async def home() -> str:
        return "ok"

    sock = socket.socket()
    sock.bind(("127.0.0.1", int(os.environ.get("PORT", "0"))))
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="on"))

    async def announce() -> None:
        while not server.started:
            await asyncio.sleep(0.01)
        print(f"listening {sock.getsockname()[1]}", flush=True)

    announcing = asyncio.create_task(announce())
    # A failed start (the check's ServerError) ends serve() with SystemExit.
    await server.serve(sockets=[sock])
    announcing.cancel()


if __name__ == "__main__":
    asyncio.run(main())
