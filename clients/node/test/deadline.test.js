"use strict";

// The deadline's timer (lib/deadline.js): one per RateLimits for all its
// calls, so it must answer each call by its own deadline however the calls
// overlap, and must not keep a process alive once no call waits.

const assert = require("node:assert/strict");
const { execFile } = require("node:child_process");
const { promisify } = require("node:util");
const path = require("node:path");
const { describe, it } = require("node:test");
const { RateLimits, Unavailable } = require("../lib");
const { fakeConnection, NO_ANSWER } = require("./fake-redis");
const { CURRENT } = require("./clients");

const TIMEOUT = 100;

describe("deadlines", () => {
  const fake = fakeConnection(CURRENT["node-redis 6"]);

  it("calls started together and apart each end by their own deadline", async () => {
    fake.answer(() => NO_ANSWER);
    const limits = new RateLimits(fake.client, { backend: "module", timeout: TIMEOUT });
    const g = limits.gcra({ rate: 10, per: 1000 });
    /** @type {Promise<number>[]} */
    const ends = [];
    const call = () => {
      const start = performance.now();
      return g.take("k").then(
        () => assert.fail("answered"),
        (err) => {
          assert.ok(err instanceof Unavailable);
          assert.equal(err.message, `rate limiter unavailable: no answer within ${TIMEOUT} ms`);
          return performance.now() - start;
        },
      );
    };
    for (let i = 0; i < 50; i++) ends.push(call());
    for (let i = 0; i < 5; i++) {
      await new Promise((r) => setTimeout(r, 30));
      ends.push(call());
    }
    for (const ms of await Promise.all(ends)) {
      assert.ok(ms >= TIMEOUT - 1 && ms <= TIMEOUT + 50, `ended after ${ms.toFixed(1)} ms`);
    }
  });

  it("a process whose calls have answered exits at once, whatever the timeout", async () => {
    fake.answer(() => [0, 10, 9, -1, 100]);
    const script = `
      const Redis = require("ioredis");
      const { RateLimits } = require(${JSON.stringify(path.join(__dirname, "..", "lib"))});
      const redis = new Redis({ host: "127.0.0.1", port: ${fake.port} });
      const limits = new RateLimits(redis, { backend: "module", timeout: 60000 });
      limits.gcra({ rate: 10, per: 1000 }).take("k").then((r) => {
        redis.disconnect();
        const answered = performance.now();
        process.on("exit", () => console.log(JSON.stringify({ allowed: r.allowed, lingered: performance.now() - answered })));
      });
    `;
    // Not execFileSync: the fake server answers from this process.
    const run = await promisify(execFile)(process.execPath, ["-e", script], { cwd: path.join(__dirname, ".."), encoding: "utf8", timeout: 30000 });
    const out = JSON.parse(run.stdout);
    assert.equal(out.allowed, true);
    assert.ok(out.lingered < 1000, `the process stayed ${out.lingered.toFixed(0)} ms after the answer`);
  });
});
