"use strict";

// The contract's app in Node.js: Express and the rateLimit middleware.
//
// GET / answers 200 "ok", limited per X-Client-Id by one limit named "api"
// (GCRA, 5 per minute in bursts of 5), with the default key prefix.
//
//   PORT=0 REDIS_PORT=6379 node app.js    # prints "listening <port>"
//
// RL_FAIL_OPEN=1 fails open; RL_LIMIT=sliding_log:20000 limits by a sliding
// log of that many a minute instead; RL_REDIS_CLIENT=node-redis uses
// node-redis (with the reconnect strategy its README asks for) instead of
// ioredis. A limit the server refuses stops the process before it listens
// (the middleware's start-up check, awaited and left unhandled).
// Run from anywhere: the client and its dependencies come from clients/node.

const path = require("node:path");
const clientDir = path.join(__dirname, "..", "..", "node");
const clientRequire = require("node:module").createRequire(path.join(clientDir, "package.json"));
const express = clientRequire("express");
const { RateLimits, rateLimit } = require(clientDir);

async function redisClient() {
  const port = Number(process.env.REDIS_PORT);
  if (process.env.RL_REDIS_CLIENT === "node-redis") {
    const client = clientRequire("redis").createClient({ socket: { host: "127.0.0.1", port, reconnectStrategy: () => 50 } });
    client.on("error", () => {}); // told to the middleware's onError instead
    await client.connect();
    return client;
  }
  const Redis = clientRequire("ioredis");
  return new Redis({ host: "127.0.0.1", port });
}

async function main() {
  const limits = new RateLimits(await redisClient(), { failOpen: process.env.RL_FAIL_OPEN === "1" });
  const [kind, count] = (process.env.RL_LIMIT ?? "gcra:5").split(":");
  const limiter =
    kind === "gcra"
      ? limits.gcra({ rate: Number(count), per: "1m", burst: Number(count), name: "api" })
      : limits.slidingLog({ limit: Number(count), window: "1m", name: "api" });
  const app = express();
  const limit = rateLimit({ limiter, key: (req) => req.get("x-client-id") ?? req.ip });
  app.use(limit);
  app.get("/", (req, res) => {
    res.type("text/plain").send("ok");
  });
  // A limit the server refuses rejects this, unhandled: the process ends
  // with the server's words before it listens.
  await limit.ready;
  const server = app.listen(Number(process.env.PORT ?? 0), "127.0.0.1", () => {
    console.log(`listening ${server.address().port}`);
  });
}

main();
