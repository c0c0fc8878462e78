"use strict";

// FlexibleLimiter with the real rate-limiter-flexible: its RateLimiterRes
// and rejection conventions, its RateLimiterUnion, its insuranceLimiter both
// ways, and an Express app over real HTTP; on the module through ioredis,
// and on Redis 7 without the module (the functions library, loaded by the
// client) through node-redis. Fixed windows are aligned to the Unix epoch:
// windows of one year put the next boundary weeks away, so no reply depends
// on when the test runs.

const assert = require("node:assert/strict");
const { describe, it, before, after } = require("node:test");
const express = require("express");
const { RateLimiterRes, RateLimiterUnion, RateLimiterMemory, RateLimiterRedis } = require("rate-limiter-flexible");
const { FlexibleLimiter, RateLimits } = require("../lib");
const { startServer } = require("./servers");
const { ADAPTER_SETUPS, unreachable } = require("./clients");
const { serve, getWith } = require("./http");
const { within } = require("./suite");

const YEAR_S = 365 * 24 * 3600;
const YEAR_MS = YEAR_S * 1000;

let fresh = 0;
/** A key no earlier call used. */
const freshKey = () => `flx-${process.pid}-${++fresh}`;

/** ms from `at` to the end of the one-year fixed window holding it. */
const toWindowEnd = (/** @type {number} */ at) => (Math.floor(at / YEAR_MS) + 1) * YEAR_MS - at;

/**
 * The fields of a RateLimiterRes, `msBeforeNext` checked to lie between
 * the ms to the window's end after and before the call, then left out.
 * @param {unknown} res @param {number} before @param {number} after
 */
function fields(res, before, after) {
  assert.ok(res instanceof RateLimiterRes, `not a RateLimiterRes: ${String(res)}`);
  const { remainingPoints, msBeforeNext, consumedPoints, isFirstInDuration } = res;
  assert.ok(msBeforeNext >= toWindowEnd(after) && msBeforeNext <= toWindowEnd(before) + 1, `msBeforeNext ${msBeforeNext}`);
  return { remainingPoints, consumedPoints, isFirstInDuration };
}

for (const setup of ADAPTER_SETUPS) {
  describe(`rate-limiter-flexible: ${setup.name}`, () => {
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

    it("consume resolves, then rejects with a RateLimiterRes; get, reward, penalty, delete", async () => {
      const limiter = new FlexibleLimiter({ storeClient: conn.client, points: 3, duration: YEAR_S });
      const key = freshKey();
      const t0 = Date.now();
      assert.equal(await limiter.get(key), null);
      const answers = [];
      for (let i = 0; i < 4; i++) answers.push(await limiter.consume(key).then((res) => ["resolved", res], (res) => ["rejected", res]));
      const t1 = Date.now();
      assert.deepEqual(
        answers.map(([how, res]) => [how, fields(res, t0, t1)]),
        [
          ["resolved", { remainingPoints: 2, consumedPoints: 1, isFirstInDuration: true }],
          ["resolved", { remainingPoints: 1, consumedPoints: 2, isFirstInDuration: false }],
          ["resolved", { remainingPoints: 0, consumedPoints: 3, isFirstInDuration: false }],
          ["rejected", { remainingPoints: 0, consumedPoints: 4, isFirstInDuration: false }],
        ],
      );
      assert.equal(await limiter.limits.backend(), setup.backend);
      const t2 = Date.now();
      assert.deepEqual(fields(await limiter.get(key), t2, t2 + 1000), { remainingPoints: 0, consumedPoints: 3, isFirstInDuration: false });
      assert.deepEqual(fields(await limiter.reward(key, 2), t2, Date.now()), { remainingPoints: 2, consumedPoints: 1, isFirstInDuration: false });
      assert.deepEqual(fields(await limiter.penalty(key, 1), t2, Date.now()), { remainingPoints: 1, consumedPoints: 2, isFirstInDuration: false });
      assert.equal((await limiter.consume(key)).remainingPoints, 0);
      await assert.rejects(limiter.consume(key), (res) => res instanceof RateLimiterRes && res.consumedPoints === 4);
      // Its key in Redis: `rl:${keyPrefix}:${key}`.
      assert.equal(await new RateLimits(conn.client).delete(`rl:rlflx:${key}`), true);
      assert.equal(await limiter.get(key), null);
      assert.equal((await limiter.consume(key)).consumedPoints, 1);
      assert.equal(await limiter.delete(key), true);
      assert.equal(await limiter.delete(key), false);
    });

    it("blockDuration blocks on a refusal; block() blocks a key; set() sets its points", async () => {
      const limiter = new FlexibleLimiter({ storeClient: conn.client, points: 1, duration: YEAR_S, blockDuration: 2 * YEAR_S, keyPrefix: "flx-b" });
      const key = freshKey();
      assert.equal((await limiter.consume(key)).remainingPoints, 0);
      const refused = await limiter.consume(key).then(
        () => assert.fail("allowed"),
        (res) => res,
      );
      assert.ok(refused instanceof RateLimiterRes);
      // The block (two years) ends after the window (one year at most).
      assert.deepEqual(refused.toJSON(), { remainingPoints: 0, msBeforeNext: 2 * YEAR_MS, consumedPoints: 2, isFirstInDuration: false });
      within((await limiter.get(key))?.msBeforeNext, 2 * YEAR_MS, "a blocked key's msBeforeNext");

      const other = freshKey();
      const blocked = await limiter.block(other, 10);
      within(blocked.msBeforeNext, 10_000, "block's msBeforeNext");
      assert.deepEqual([blocked.remainingPoints, blocked.consumedPoints], [0, 2]);
      await assert.rejects(limiter.consume(other), (res) => res instanceof RateLimiterRes && res.remainingPoints === 0);
      assert.equal(await limiter.delete(other), true);
      assert.equal(await limiter.get(other), null);

      const three = new FlexibleLimiter({ storeClient: conn.client, points: 3, duration: YEAR_S });
      const set = freshKey();
      const t0 = Date.now();
      assert.deepEqual(fields(await three.set(set, 2), t0, Date.now() + 1), { remainingPoints: 0, consumedPoints: 2, isFirstInDuration: false });
      assert.deepEqual([(await three.get(set))?.consumedPoints, (await three.consume(set)).remainingPoints], [2, 0]);
      await assert.rejects(three.set(set, 1, 5), {
        name: "InvalidParameter",
        message: `FlexibleLimiter.set: secDuration must be the limiter's duration (${YEAR_S}), got 5: the window is the limiter's`,
      });
    });

    it("in an Express app over HTTP: 200, 200, then 429 with Retry-After from msBeforeNext", async () => {
      const limiter = new FlexibleLimiter({ storeClient: conn.client, points: 2, duration: YEAR_S, keyPrefix: "flx-http" });
      const app = express();
      app.use((req, res, next) => {
        limiter.consume(String(req.get("X-Client"))).then(
          (r) => {
            res.set("X-RateLimit-Remaining", String(r.remainingPoints));
            next();
          },
          (r) => {
            if (!(r instanceof RateLimiterRes)) return next(r);
            res.set("Retry-After", String(Math.ceil(r.msBeforeNext / 1000)));
            res.status(429).send("Too Many Requests");
          },
        );
      });
      app.get("/", (_req, res) => {
        res.send("ok\n");
      });
      const { url, close } = await serve(app);
      const client = { "X-Client": freshKey() };
      try {
        const t0 = Date.now();
        const got = [];
        for (let i = 0; i < 3; i++) got.push(await getWith(url, ["X-RateLimit-Remaining", "Retry-After"], client));
        const t1 = Date.now();
        assert.deepEqual(got.slice(0, 2), [
          { status: 200, headers: { "X-RateLimit-Remaining": "1" }, body: "ok\n" },
          { status: 200, headers: { "X-RateLimit-Remaining": "0" }, body: "ok\n" },
        ]);
        assert.equal(got[2].status, 429);
        const retry = Number(got[2].headers["Retry-After"]);
        assert.ok(retry >= Math.ceil(toWindowEnd(t1) / 1000) && retry <= Math.ceil(toWindowEnd(t0) / 1000), `Retry-After ${retry}`);
      } finally {
        await close();
      }
    });

    if (!setup.full) return;

    it("RateLimiterUnion takes it beside its own RateLimiterMemory", async () => {
      const flexible = new FlexibleLimiter({ storeClient: conn.client, points: 3, duration: YEAR_S, keyPrefix: "flx-u" });
      const memory = new RateLimiterMemory({ points: 1, duration: 3600, keyPrefix: "mem" });
      const union = new RateLimiterUnion(flexible, memory);
      const key = freshKey();
      const first = await union.consume(key);
      assert.deepEqual(Object.keys(first), ["flx-u", "mem"]);
      assert.deepEqual([first["flx-u"].consumedPoints, first.mem.consumedPoints], [1, 1]);
      const refused = await union.consume(key).then(
        () => assert.fail("allowed"),
        (r) => r,
      );
      // Refused by the memory limiter alone; the server allowed (and counted) its share.
      assert.deepEqual(Object.keys(refused), ["mem"]);
      assert.equal((await flexible.get(key))?.consumedPoints, 2);
      assert.throws(() => new RateLimiterUnion(flexible, /** @type {any} */ ({ consume() {} })), /all limiters have to be instance of/);
    });

    it("as the insuranceLimiter of a RateLimiterRedis whose Redis is down", async () => {
      const flexible = new FlexibleLimiter({ storeClient: conn.client, points: 3, duration: YEAR_S, keyPrefix: "flx-ins" });
      const down = unreachable();
      const redisLimiter = new RateLimiterRedis({
        storeClient: down,
        points: 100,
        duration: 60,
        blockDuration: 30,
        keyPrefix: "flx-ins",
        rejectIfRedisNotReady: true,
        insuranceLimiter: flexible,
      });
      // Its own setter hands its blockDuration to the insurance.
      assert.equal(flexible.blockDuration, 30);
      const key = freshKey();
      try {
        const res = await redisLimiter.consume(key);
        assert.deepEqual([res.remainingPoints, res.consumedPoints], [2, 1]);
        assert.equal((await flexible.get(key))?.consumedPoints, 1);
      } finally {
        down.disconnect();
      }
    });

    it("with its own insuranceLimiter: Unavailable goes to it, a server error does not", async () => {
      const down = unreachable();
      const memory = new RateLimiterMemory({ points: 5, duration: 60 });
      const insured = new FlexibleLimiter({ storeClient: down, points: 3, duration: YEAR_S, timeout: 100, insuranceLimiter: memory });
      const bare = new FlexibleLimiter({ storeClient: down, points: 3, duration: YEAR_S, timeout: 100 });
      try {
        const key = freshKey();
        const res = await insured.consume(key);
        assert.deepEqual([res.remainingPoints, res.consumedPoints], [4, 1]);
        await assert.rejects(bare.consume(key), (err) => err instanceof Error && err.name === "Unavailable" && !(err instanceof RateLimiterRes));
      } finally {
        down.disconnect();
      }
      const list = freshKey();
      await conn.client.rpush(`rl:rlflx:${list}`, "x");
      const memory2 = new RateLimiterMemory({ points: 5, duration: 60 });
      const misconfigured = new FlexibleLimiter({ storeClient: conn.client, points: 3, duration: YEAR_S, insuranceLimiter: memory2 });
      await assert.rejects(misconfigured.consume(list), { name: "ServerError", message: "WRONGTYPE Operation against a key holding the wrong kind of value" });
      assert.equal(await memory2.get(list), null);
    });

    it("refuses what it cannot do, naming it", async () => {
      const base = { storeClient: conn.client, points: 3, duration: 60 };
      assert.throws(() => new FlexibleLimiter({ ...base, execEvenly: true }), {
        message: "FlexibleLimiter: execEvenly is not supported (the server answers at once; for pacing use RateLimits' wait option)",
      });
      assert.throws(() => new FlexibleLimiter({ ...base, duration: 0 }), {
        message: "duration must be a number of seconds in whole milliseconds, from 0.001 to 1000000000, got 0",
      });
      assert.throws(() => new FlexibleLimiter(/** @type {any} */ ({ ...base, inMemoryBlockOnConsumed: 10 })), /unknown option 'inMemoryBlockOnConsumed'/);
      assert.throws(() => new FlexibleLimiter({ ...base, insuranceLimiter: /** @type {any} */ ({}) }), {
        message: "insuranceLimiter must be instance of RateLimiterAbstract or RateLimiterCompatibleAbstract",
      });
      const limiter = new FlexibleLimiter(base);
      await assert.rejects(limiter.consume("k", 1, { customDuration: 5 }), /options \(customDuration, ...\) are not supported/);
      assert.equal(new FlexibleLimiter({ ...base, duration: 1.1 }).msDuration, 1100);
    });
  });
}
