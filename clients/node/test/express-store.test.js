"use strict";

// RateLimitStore under the real express-rate-limit, in a real Express app
// over real HTTP: on the module through ioredis, and on Redis 7 without the
// module (the functions library, loaded by the client) through node-redis.
// Fixed windows are aligned to the Unix epoch: a window of one year puts
// the next boundary weeks away, so no reply depends on when the test runs;
// the seconds until it are checked between their values before and after
// each request.

const assert = require("node:assert/strict");
const { describe, it, before, after } = require("node:test");
const express = require("express");
const { rateLimit } = require("express-rate-limit");
const { RateLimitStore } = require("../lib");
const { startServer } = require("./servers");
const { ADAPTER_SETUPS, unreachable } = require("./clients");
const { serve, getWith } = require("./http");

const YEAR = 365 * 24 * 3600 * 1000;
const HEADERS = ["RateLimit-Policy", "RateLimit", "Retry-After", "X-RateLimit-Limit", "X-RateLimit-Remaining"];

let fresh = 0;
/** A client identity no earlier request used. */
const clientId = () => `ers-${process.pid}-${++fresh}`;

/** Seconds from `at` to the end of the one-year fixed window holding it, rounded up. */
const toWindowEnd = (/** @type {number} */ at) => Math.ceil(((Math.floor(at / YEAR) + 1) * YEAR - at) / 1000);

/** Resolves once `done()` holds, polling for at most 2 s. @param {() => boolean} done */
async function until(done) {
  for (let i = 0; i < 400 && !done(); i++) await new Promise((r) => setTimeout(r, 5));
  assert.ok(done(), "not done within 2 s");
}

/** A logger for express-rate-limit that keeps what it is told. */
function keeper() {
  /** @type {unknown[]} */
  const told = [];
  return { told, logger: { error: (/** @type {unknown} */ e) => told.push(e), warn: (/** @type {unknown} */ e) => told.push(e) } };
}

/**
 * An app limited by express-rate-limit with `options`, keyed by the
 * X-Client header; GET /ok answers 200, GET /fail 500.
 * @param {Record<string, unknown>} options
 */
function appWith(options) {
  const app = express();
  const limiter = rateLimit({ keyGenerator: (req) => String(req.get("X-Client")), ...options });
  app.use(limiter);
  app.get("/ok", (_req, res) => {
    res.send("ok\n");
  });
  app.get("/fail", (_req, res) => {
    res.status(500).send("failed\n");
  });
  /** @type {string[]} */
  const errors = [];
  app.use((/** @type {any} */ err, /** @type {any} */ _req, /** @type {any} */ res, /** @type {any} */ _next) => {
    errors.push(err.message);
    res.status(500).end();
  });
  return { app, limiter, errors };
}

for (const setup of ADAPTER_SETUPS) {
  describe(`express-rate-limit store: ${setup.name}`, () => {
    /** @type {Awaited<ReturnType<typeof startServer>>} */
    let server;
    /** @type {{client: any, close: () => Promise<unknown>}} */
    let conn;
    before(async () => {
      server = await startServer(setup.server);
      conn = await setup.connect(server.port);
    });
    after(async () => {
      await conn?.close();
      await server?.stop();
    });

    it("fixed window by default: 200, 200, 200, then 429, with express-rate-limit's headers", async () => {
      const store = new RateLimitStore(conn.client);
      const { told, logger } = keeper();
      const { app } = appWith({ windowMs: YEAR, limit: 3, standardHeaders: "draft-7", store, logger });
      const { url, close } = await serve(app);
      const id = clientId();
      try {
        for (const [remaining, status] of [[2, 200], [1, 200], [0, 200], [0, 429]]) {
          const before = Date.now();
          const got = await getWith(`${url}/ok`, HEADERS, { "X-Client": id });
          const after = Date.now();
          const reset = Number(/reset=(\d+)$/.exec(got.headers.RateLimit)?.[1]);
          assert.ok(reset >= toWindowEnd(after) && reset <= toWindowEnd(before), `reset=${reset}`);
          /** @type {Record<string, string>} */
          const expected = {
            "RateLimit-Policy": `3;w=${YEAR / 1000}`,
            RateLimit: `limit=3, remaining=${remaining}, reset=${reset}`,
            "X-RateLimit-Limit": "3",
            "X-RateLimit-Remaining": String(remaining),
          };
          if (status === 429) expected["Retry-After"] = String(reset);
          assert.deepEqual(got, {
            status,
            headers: expected,
            body: status === 200 ? "ok\n" : "Too many requests, please try again later.",
          });
        }
        assert.equal(await store.limits.backend(), setup.backend);
        // One key per client, holding the three allowed requests (the refused one is not counted).
        assert.equal((await store.get(id))?.totalHits, 3);
        assert.equal(await conn.client.exists(`erl:${id}`), 1);
        assert.deepEqual(told, []);
      } finally {
        await close();
      }
    });

    it("decrement is a refund (skipFailedRequests); a refused request is not refunded", async () => {
      const store = new RateLimitStore(conn.client, { prefix: "ers:" });
      const decrements = { done: 0 };
      const decrement = store.decrement.bind(store);
      store.decrement = async (key) => {
        try {
          await decrement(key);
        } finally {
          decrements.done += 1;
        }
      };
      const { app } = appWith({ windowMs: YEAR, limit: 2, store, skipFailedRequests: true });
      const { url, close } = await serve(app);
      const id = clientId();
      const counted = async () => (await store.get(id))?.totalHits;
      const get = async (/** @type {string} */ path) => (await getWith(`${url}${path}`, [], { "X-Client": id })).status;
      try {
        assert.equal(await get("/ok"), 200);
        assert.equal(await get("/fail"), 500);
        await until(() => decrements.done === 1);
        assert.equal(await counted(), 1);
        assert.equal(await get("/fail"), 500);
        await until(() => decrements.done === 2);
        assert.equal(await get("/ok"), 200);
        assert.equal(await counted(), 2);
        // Refused (429 is a failed request): decremented by express-rate-limit, never counted by the server.
        assert.equal(await get("/ok"), 429);
        await until(() => decrements.done === 3);
        assert.equal(await counted(), 2);
        assert.equal(await get("/ok"), 429);
        await until(() => decrements.done === 4);
        assert.equal(await counted(), 2);
      } finally {
        await close();
      }
    });

    it("getKey and resetKey: the hits counted, then a fresh start", async () => {
      const store = new RateLimitStore(conn.client);
      const { app, limiter } = appWith({ windowMs: YEAR, limit: 2, store });
      const { url, close } = await serve(app);
      const id = clientId();
      const get = async () => (await getWith(`${url}/ok`, [], { "X-Client": id })).status;
      try {
        assert.equal(await limiter.getKey(id), undefined);
        assert.deepEqual([await get(), await get(), await get()], [200, 200, 429]);
        const before = Date.now();
        const info = await limiter.getKey(id);
        assert.equal(info?.totalHits, 2);
        const end = (Math.floor(before / YEAR) + 1) * YEAR;
        assert.ok(info?.resetTime instanceof Date && Math.abs(info.resetTime.getTime() - end) < 1000, String(info?.resetTime));
        await limiter.resetKey(id);
        assert.equal(await limiter.getKey(id), undefined);
        assert.equal(await get(), 200);
      } finally {
        await close();
      }
    });

    if (!setup.full) return;

    it("the algorithm the user picks decides, its refusals are 429 with its Retry-After", async () => {
      /** @type {[import("../lib").RateLimitStoreOptions["algorithm"], string | undefined][]} */
      const cases = [
        ["sliding_log", "60"],
        ["gcra", "20"],
        ["token_bucket", "20"],
        ["sliding_counter", undefined],
      ];
      for (const [algorithm, retryAfter] of cases) {
        const store = new RateLimitStore(conn.client, { algorithm });
        const { app } = appWith({ windowMs: 60_000, limit: 3, store });
        const { url, close } = await serve(app);
        const id = clientId();
        try {
          const got = [];
          for (let i = 0; i < 4; i++) got.push(await getWith(`${url}/ok`, ["X-RateLimit-Remaining", "Retry-After"], { "X-Client": id }));
          assert.deepEqual(
            got.map((g) => [g.status, g.headers["X-RateLimit-Remaining"]]),
            [[200, "2"], [200, "1"], [200, "0"], [429, "0"]],
            algorithm,
          );
          if (retryAfter !== undefined) assert.equal(got[3].headers["Retry-After"], retryAfter, algorithm);
          assert.equal((await store.get(id))?.totalHits, 3, algorithm);
        } finally {
          await close();
        }
      }
    });

    it("the server unreachable: express-rate-limit's error, its passOnStoreError, or the store's failOpen", async () => {
      const down = unreachable();
      const { told, logger } = keeper();
      const common = { windowMs: 60_000, limit: 3, logger };
      const apps = [
        appWith({ ...common, store: new RateLimitStore(down, { timeout: 100 }) }),
        appWith({ ...common, store: new RateLimitStore(down, { timeout: 100 }), passOnStoreError: true }),
        appWith({ ...common, store: new RateLimitStore(down, { timeout: 100, failOpen: true }) }),
      ];
      const served = await Promise.all(apps.map(({ app }) => serve(app)));
      try {
        const got = [];
        for (const { url } of served) got.push(await getWith(`${url}/ok`, ["X-RateLimit-Remaining"], { "X-Client": clientId() }));
        assert.deepEqual(
          got.map((g) => [g.status, g.headers["X-RateLimit-Remaining"]]),
          [[500, undefined], [200, undefined], [200, "0"]],
        );
        // Fail closed: the app's error handler got the store's Unavailable.
        assert.equal(apps[0].errors.length, 1);
        assert.match(apps[0].errors[0], /^rate limiter unavailable: /);
        // passOnStoreError: express-rate-limit logged it and let the request through.
        assert.equal(told.length, 1);
        assert.equal(/** @type {Error} */ (told[0]).name, "Unavailable");
      } finally {
        down.disconnect();
        await Promise.all(served.map((s) => s.close()));
      }
    });

    it("a limit given as a function: init says why, each request answers the error", async () => {
      const store = new RateLimitStore(conn.client);
      const { told, logger } = keeper();
      const { app, errors } = appWith({ windowMs: 60_000, limit: () => 3, store, logger });
      const why =
        "RateLimitStore: limit is a function of the request, and the server keeps one limit per key: give rateLimit a number (one rateLimit per limit, routed by path or by skip)";
      assert.deepEqual(
        told.map((e) => /** @type {Error} */ (e).message),
        [why],
      );
      const { url, close } = await serve(app);
      try {
        assert.equal((await getWith(`${url}/ok`, [], { "X-Client": clientId() })).status, 500);
        assert.deepEqual(errors, [why]);
      } finally {
        await close();
      }
    });

    it("bad options are refused at construction; an uninitialized store says so", async () => {
      assert.throws(() => new RateLimitStore(conn.client, /** @type {any} */ ({ algorithm: "leaky_bucket" })), {
        name: "InvalidParameter",
        message: 'RateLimitStore: algorithm must be one of "fixed", "sliding_log", "sliding_counter", "gcra", "token_bucket", got "leaky_bucket"',
      });
      assert.throws(() => new RateLimitStore(conn.client, /** @type {any} */ ({ limit: 5 })), {
        message: "RateLimitStore: unknown option 'limit' (expected algorithm, prefix, backend, timeout, failOpen, metrics)",
      });
      const store = new RateLimitStore(conn.client);
      await assert.rejects(store.increment("k"), {
        message: "RateLimitStore: init() was not called: give the store to express-rate-limit's rateLimit({ store })",
      });
      assert.throws(() => store.init({ windowMs: 60_000, limit: 0 }), { message: "limit must be an integer from 1 to 1000000000, got 0" });
      assert.equal(/** @type {any} */ (store).resetAll, undefined);
    });
  });
}
