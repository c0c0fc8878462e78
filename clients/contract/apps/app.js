"use strict";

// The shared-limit app in Node.js: Express and the rateLimit middleware.
//
// GET / answers 200 "ok", limited per X-Client-Id by one limit named "api"
// (GCRA, 5 per minute in bursts of 5), with the default key prefix.
//
//   PORT=0 REDIS_PORT=6379 node app.js    # prints "listening <port>"
// Run from anywhere: the client and its dependencies come from clients/node.

const path = require("node:path");
const clientDir = path.join(__dirname, "..", "..", "node");
const clientRequire = require("node:module").createRequire(path.join(clientDir, "package.json"));
const express = clientRequire("express");
const Redis = clientRequire("ioredis");
const { RateLimits, rateLimit } = require(clientDir);

const redis = new Redis({ host: "127.0.0.1", port: Number(process.env.REDIS_PORT) });
const limits = new RateLimits(redis);
const app = express();
app.use(
  rateLimit({
    limiter: limits.gcra({ rate: 5, per: "1m", burst: 5, name: "api" }),
    key: (req) => req.get("x-client-id") ?? req.ip,
  }),
);
app.get("/", (req, res) => {
  res.type("text/plain").send("ok");
});
const server = app.listen(Number(process.env.PORT ?? 0), "127.0.0.1", () => {
  console.log(`listening ${server.address().port}`);
});
