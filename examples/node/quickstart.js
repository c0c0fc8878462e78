// npm install ./clients/node ioredis express && node quickstart.js
const express = require("express");
const Redis = require("ioredis");
const { RateLimits, rateLimit } = require("redis-ratelimit");

const limits = new RateLimits(new Redis(process.env.REDIS_URL ?? "redis://localhost:6379"));
const app = express();
// 10 requests per second per client address, 20 at once.
const limit = rateLimit({ limiter: limits.gcra({ rate: 10, per: "1s", burst: 20, name: "api" }) });
app.use(limit);
app.get("/", (req, res) => res.json({ hello: "world" }));
limit.ready.then(() => app.listen(Number(process.env.PORT ?? 3000))); // a limit the server refuses stops the start
