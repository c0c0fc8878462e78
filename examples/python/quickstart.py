# pip install ./clients/python fastapi uvicorn && uvicorn quickstart:app
import os

import redis.asyncio
from fastapi import FastAPI
from redis_ratelimit_client import AsyncRateLimits
from redis_ratelimit_client.asgi import RateLimitMiddleware

limits = AsyncRateLimits(redis.asyncio.Redis.from_url(os.environ.get("REDIS_URL", "redis://localhost:6379")))
app = FastAPI()
# 10 requests per second per client address, 20 at once; checked at start-up.
app.add_middleware(RateLimitMiddleware, limiter=limits.gcra(rate=10, per=1, burst=20, name="api"))


@app.get("/")
async def hello():
    return {"hello": "world"}
