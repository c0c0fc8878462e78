"use strict";

// The Express middleware over a real HTTP server and a real Redis: the
// draft-10 RateLimit-Policy and RateLimit headers on every answer, 429 with
// Retry-After, and what happens when Redis is down or answers an error
// (fail closed by default, fail open on request).

const assert = require("node:assert/strict");
const { describe, it, before, after } = require("node:test");
const express = require("express");
const Redis = require("ioredis");
const { RateLimits, rateLimit, rateLimitHeaders } = require("../lib");
const { startServer } = require("./servers");

/** Serves `app` on a free port; resolves to its base URL and a close(). */
function serve(app) {
  return new Promise((resolve) => {
    const server = app.listen(0, "127.0.0.1", () => {
      resolve({ url: `http://127.0.0.1:${server.address().port}`, close: () => new Promise((r) => server.close(r)) });
    });
  });
}

/** status, the rate-limit headers (those present) and the body of GET url. */
async function get(url, headers = {}) {
  const res = await fetch(url, { headers });
  /** @type {Record<string, string>} */
  const shown = {};
  for (const name of ["RateLimit-Policy", "RateLimit", "Retry-After"]) {
    const value = res.headers.get(name);
    if (value !== null) shown[name] = value;
  }
  return { status: res.status, headers: shown, body: await res.text() };
}

/** An ioredis client that fails at once when its server is gone (no queue, no reconnect). */
function failFast(port) {
  const client = new Redis({ host: "127.0.0.1", port, enableOfflineQueue: false, maxRetriesPerRequest: 0, retryStrategy: () => null });
  client.on("error", () => {});
  return client;
}

describe("Express middleware", () => {
  /** @type {Awaited<ReturnType<typeof startServer>>} */
  let server;
  /** @type {Redis} */
  let redis;
  /** @type {RateLimits} */
  let limits;
  before(async () => {
    server = await startServer({ module: true });
    redis = new Redis({ host: "127.0.0.1", port: server.port });
    limits = new RateLimits(redis);
  });
  after(async () => {
    redis?.disconnect();
    await server?.stop();
  });

  it("answers the headers, then 429 with Retry-After (two policies, one decision)", async () => {
    const api = limits.allOf(
      limits.gcra({ rate: 1, per: "10s", burst: 3, name: "burst" }),
      limits.slidingLog({ limit: 3, window: "1h", name: "hourly" }),
    );
    const app = express();
    app.use(rateLimit({ limiter: api, key: (req) => String(req.get("X-Client-Id")) }));
    app.get("/", (req, res) => {
      res.send(`ok, ${req.rateLimit?.remaining} left\n`);
    });
    const { url, close } = await serve(app);
    const client = { "X-Client-Id": `mw-${process.pid}` };
    const policy = '"burst";q=3;w=30, "hourly";q=3;w=3600';
    try {
      assert.deepEqual(await get(url, client), {
        status: 200,
        headers: { "RateLimit-Policy": policy, RateLimit: '"burst";r=2;t=10' },
        body: "ok, 2 left\n",
      });
      assert.deepEqual((await get(url, client)).headers, { "RateLimit-Policy": policy, RateLimit: '"burst";r=1;t=20' });
      assert.deepEqual((await get(url, client)).headers, { "RateLimit-Policy": policy, RateLimit: '"burst";r=0;t=30' });
      assert.deepEqual(await get(url, client), {
        status: 429,
        headers: { "RateLimit-Policy": policy, RateLimit: '"hourly";r=0;t=3600', "Retry-After": "3600" },
        body: "too many requests\n",
      });
      // Another client has its own keys.
      assert.equal((await get(url, { "X-Client-Id": `other-${process.pid}` })).status, 200);
      // One hash tag per client: both keys in one Cluster slot.
      assert.equal(await redis.exists(`ratelimit:{mw-${process.pid}}:burst`, `ratelimit:{mw-${process.pid}}:hourly`), 2);
    } finally {
      await close();
    }
  });

  it("keys by the client's address by default; cost per request", async () => {
    const prefix = `rl-mw-${process.pid}:`;
    const app = express();
    app.use(
      rateLimit({
        limiter: limits.tokenBucket({ capacity: 10, refill: 1, per: "1m" }),
        cost: (req) => Number(req.query.cost ?? 1),
        prefix,
      }),
    );
    app.get("/", (_req, res) => {
      res.send("ok\n");
    });
    const { url, close } = await serve(app);
    try {
      assert.deepEqual((await get(`${url}/?cost=4`)).headers.RateLimit, '"token_bucket";r=6;t=240');
      assert.equal((await get(`${url}/?cost=4`)).headers.RateLimit, '"token_bucket";r=2;t=480');
      const refused = await get(`${url}/?cost=4`);
      assert.equal(refused.status, 429);
      assert.equal(refused.headers["Retry-After"], "120");
      assert.equal(refused.headers["RateLimit-Policy"], '"token_bucket";q=10;w=600');
      assert.equal(await redis.exists(`${prefix}{127.0.0.1}:token_bucket`), 1);
    } finally {
      await close();
    }
  });

  it("rateLimitHeaders gives the same fields to a hand-written handler", async () => {
    const g = limits.gcra({ rate: 1, per: "1m", burst: 1, name: "minute" });
    const k = `rl-mw-headers-${process.pid}`;
    assert.deepEqual(rateLimitHeaders(g, await g.take(k)), { "RateLimit-Policy": '"minute";q=1;w=60', RateLimit: '"minute";r=0;t=60' });
    const refused = rateLimitHeaders(g, await g.take(k, 1, { block: "5m" }));
    assert.deepEqual(refused, { "RateLimit-Policy": '"minute";q=1;w=60', RateLimit: '"minute";r=0;t=300', "Retry-After": "300" });
  });

  /** An app limited by `limits` (fail closed unless asked), counting the requests its handler served. */
  function appWith(rl, options = {}) {
    const app = express();
    const served = { count: 0, errors: /** @type {unknown[]} */ ([]) };
    app.use(
      rateLimit({
        limiter: rl.gcra({ rate: 10, per: "1s" }),
        key: () => `fail-${process.pid}`,
        onError: (err) => served.errors.push(err),
        ...options,
      }),
    );
    app.get("/", (_req, res) => {
      served.count += 1;
      res.send("ok\n");
    });
    return { app, served };
  }

  it("Redis down: 503 by default (fail closed), or through without headers (fail open)", async () => {
    const gone = await startServer({ module: true });
    const client = failFast(gone.port);
    await new Promise((resolve) => client.once("ready", resolve));
    const rl = new RateLimits(client);
    const closed = appWith(rl);
    const open = appWith(rl, { failOpen: true });
    const a = await serve(closed.app);
    const b = await serve(open.app);
    try {
      assert.equal((await get(a.url)).status, 200);
      await gone.stop();
      assert.deepEqual(await get(a.url), { status: 503, headers: { "Retry-After": "1" }, body: "rate limiter unavailable\n" });
      assert.equal(closed.served.count, 1);
      assert.equal(closed.served.errors.length, 1);
      assert.deepEqual(await get(b.url), { status: 200, headers: {}, body: "ok\n" });
      assert.equal(open.served.count, 1);
      assert.equal(open.served.errors.length, 1);
    } finally {
      client.disconnect();
      await gone.stop();
      await a.close();
      await b.close();
    }
  });

  it("Redis never reached (no backend found): fail closed or open", async () => {
    const nobody = await startServer();
    const port = nobody.port;
    await nobody.stop();
    const client = failFast(port);
    const rl = new RateLimits(client);
    const closed = appWith(rl);
    const open = appWith(rl, { failOpen: true });
    const a = await serve(closed.app);
    const b = await serve(open.app);
    try {
      assert.equal((await get(a.url)).status, 503);
      assert.equal((await get(b.url)).status, 200);
      assert.deepEqual([closed.served.count, open.served.count], [0, 1]);
    } finally {
      client.disconnect();
      await a.close();
      await b.close();
    }
  });

  it("a server error (the key holds a list) is the app's error, failing open or not", async () => {
    await redis.rpush(`ratelimit:{fail-${process.pid}}:gcra`, "x");
    const closed = appWith(limits);
    const open = appWith(limits, { failOpen: true });
    /** @type {unknown[]} */
    const raised = [];
    for (const { app } of [closed, open]) {
      app.use((/** @type {any} */ err, /** @type {any} */ _req, /** @type {any} */ res, /** @type {any} */ _next) => {
        raised.push(err);
        res.status(500).end();
      });
    }
    const a = await serve(closed.app);
    const b = await serve(open.app);
    try {
      assert.equal((await get(a.url)).status, 500);
      assert.equal((await get(b.url)).status, 500);
      assert.deepEqual(
        raised.map((e) => [/** @type {any} */ (e).name, /** @type {any} */ (e).message]),
        Array(2).fill(["ServerError", "WRONGTYPE Operation against a key holding the wrong kind of value"]),
      );
      assert.deepEqual([closed.served.count, open.served.count, closed.served.errors.length], [0, 0, 0]);
    } finally {
      await a.close();
      await b.close();
    }
  });

  it("rejects bad options at construction", () => {
    const g = limits.gcra({ rate: 1, per: 1000 });
    assert.throws(() => rateLimit({ limiter: /** @type {any} */ ({}) }), /limiter must be/);
    assert.throws(() => rateLimit({ limiter: g, cost: -1 }), /cost must be/);
    assert.throws(() => rateLimit({ limiter: limits.allOf(g, limits.gcra({ rate: 2, per: 1000 })) }), /two limiters are named 'gcra'/);
  });

  it("works on plain node:http too", async () => {
    const http = require("node:http");
    const mw = rateLimit({ limiter: limits.fixedWindow({ limit: 1, window: "1h", name: "hour" }), key: () => `http-${process.pid}` });
    const srv = http.createServer((req, res) => mw(req, res, () => res.end("ok\n")));
    await new Promise((r) => srv.listen(0, "127.0.0.1", () => r(undefined)));
    const url = `http://127.0.0.1:${/** @type {any} */ (srv.address()).port}`;
    try {
      const ok = await get(url);
      assert.equal(ok.status, 200);
      assert.equal(ok.headers["RateLimit-Policy"], '"hour";q=1;w=3600');
      const no = await get(url);
      assert.equal(no.status, 429);
      assert.equal(no.headers["Retry-After"], no.headers.RateLimit.split("t=")[1]);
    } finally {
      await new Promise((r) => srv.close(r));
    }
  });
});
