"use strict";

// Limiters from words: what each sends, and bad parameters refused at
// construction (before any call), with a message naming the parameter. A
// recording adapter stands in for Redis here: these tests check the words on
// the wire; the answers are checked against real servers elsewhere.

const assert = require("node:assert/strict");
const { describe, it } = require("node:test");
const { RateLimits, InvalidParameter, toMs } = require("../lib");

/** A RateLimits on the module backend whose adapter records each command and answers `reply`. */
function recording(reply = [0, 1, 0, -1, 1000]) {
  /** @type {string[][]} */
  const sent = [];
  const adapter = {
    send: async (/** @type {string[]} */ args) => {
      sent.push(args);
      return reply;
    },
    masters: async () => [],
  };
  return { limits: new RateLimits(adapter, { backend: "module" }), sent };
}

describe("durations", () => {
  it("parses numbers of ms and strings", () => {
    assert.equal(toMs(1500, "per"), 1500);
    assert.equal(toMs("1s", "per"), 1000);
    assert.equal(toMs("500ms", "per"), 500);
    assert.equal(toMs("1.5m", "per"), 90000);
    assert.equal(toMs("0.1s", "per"), 100);
    assert.equal(toMs("2h", "per"), 7200000);
    assert.equal(toMs("1d", "per"), 86400000);
  });
  it("refuses what is not whole milliseconds >= 1, naming the parameter", () => {
    assert.throws(() => toMs(0.5, "window"), { name: "InvalidParameter", message: "window must be a whole number of milliseconds, got 0.5 ms" });
    assert.throws(() => toMs("1.5ms", "window"), { name: "InvalidParameter", message: "window must be a whole number of milliseconds, got 1.5 ms" });
    assert.throws(() => toMs(0, "per"), { message: "per must be from 1 ms to 1000000000000 ms, got 0 ms" });
    assert.throws(() => toMs("1 week", "per"), {
      name: "InvalidParameter",
      message: 'per must be milliseconds (a number) or a duration such as "500ms", "1s", "5m", "1h", "1d", got "1 week"',
    });
    assert.throws(() => toMs(null, "timeout"), {
      name: "InvalidParameter",
      message: 'timeout must be milliseconds (a number) or a duration string such as "1s", got null',
    });
  });
});

describe("limiters send MS and their parameters", () => {
  it("gcra: burst - 1, rate, period in ms; burst defaults to rate", async () => {
    const { limits, sent } = recording();
    await limits.gcra({ rate: 10, per: "1s", burst: 20 }).take("k");
    await limits.gcra({ rate: 10, per: "1s" }).take("k", 3);
    assert.deepEqual(sent, [
      ["RL.GCRA", "k", "19", "10", "1000", "1", "MS"],
      ["RL.GCRA", "k", "9", "10", "1000", "3", "MS"],
    ]);
  });
  it("token bucket, windows, options", async () => {
    const { limits, sent } = recording();
    await limits.tokenBucket({ capacity: 100, refill: 5, per: "1m" }).take("a", 2, { wait: "2s", block: "1h" });
    await limits.fixedWindow({ limit: 100, window: "1m" }).peek("b");
    await limits.slidingLog({ limit: 5, window: "15m" }).take("c", 1, { block: 3600000 });
    await limits.slidingCounter({ limit: 5, window: 60000 }).query("d");
    await limits.slidingCounter({ limit: 5, window: 60000 }).refund("d", 2);
    await limits.gcra({ rate: 1, per: 1000 }).take("e", 4, { atMost: true, force: false });
    await limits.gcra({ rate: 1, per: 1000 }).take("e", 4, { force: true });
    assert.deepEqual(sent, [
      ["RL.TOKEN_BUCKET", "a", "100", "5", "60000", "2", "MS", "WAIT", "2000", "BLOCK", "3600000"],
      ["RL.FIXED", "b", "100", "60000", "1", "MS", "PEEK"],
      ["RL.SLIDING_LOG", "c", "5", "900000", "1", "MS", "BLOCK", "3600000"],
      ["RL.SLIDING_COUNTER", "d", "5", "60000", "0", "MS"],
      ["RL.SLIDING_COUNTER", "d", "5", "60000", "2", "MS", "REFUND"],
      ["RL.GCRA", "e", "0", "1", "1000", "4", "MS", "AT_MOST"],
      ["RL.GCRA", "e", "0", "1", "1000", "4", "MS", "FORCE"],
    ]);
  });
  it("allOf: numkeys, keys, then each algorithm and its parameters", async () => {
    const { limits, sent } = recording([0, 3, 2, -1, 10000, 1]);
    const both = limits.allOf(limits.gcra({ rate: 1, per: "10s", burst: 3 }), limits.slidingLog({ limit: 3, window: "1h" }));
    const r = await both.take(["{u}:a", "{u}:b"], 1, { block: "1h" });
    assert.deepEqual(sent, [["RL.ALL", "2", "{u}:a", "{u}:b", "GCRA", "2", "1", "10000", "SLIDING_LOG", "3", "3600000", "1", "MS", "BLOCK", "3600000"]]);
    assert.equal(r.binding, 1);
  });
  it("leases: RL.CONCURRENCY, RL.RELEASE, RL.RENEW", async () => {
    const { limits, sent } = recording([0, 2, 1, -1, 30000, 123]);
    const jobs = limits.concurrency({ limit: 2, timeout: "30s" });
    const lease = await jobs.acquire("j");
    assert.equal(lease.id, 123);
    await lease.release();
    await lease.renew("1m");
    await jobs.acquire("j", 0, { peek: true });
    assert.deepEqual(sent, [
      ["RL.CONCURRENCY", "j", "2", "30000", "1", "MS"],
      ["RL.RELEASE", "j", "123"],
      ["RL.RENEW", "j", "123", "60000", "MS"],
      ["RL.CONCURRENCY", "j", "2", "30000", "0", "MS", "PEEK"],
    ]);
  });
});

describe("bad parameters fail at construction, before any call", () => {
  const { limits, sent } = recording();
  /** @type {Array<[() => unknown, string]>} */
  const cases = [
    [() => limits.gcra({ rate: 1.5, per: "1s" }), "rate must be an integer from 1 to 1000000000, got 1.5"],
    [() => limits.gcra(/** @type {any} */ ({ rate: "10", per: "1s" })), 'rate must be an integer from 1 to 1000000000, got "10"'],
    [() => limits.gcra(/** @type {any} */ ({ rate: 10 })), 'per must be milliseconds (a number) or a duration string such as "1s", got undefined'],
    [() => limits.tokenBucket(/** @type {any} */ ({ refill: 1, per: "1s" })), "capacity must be an integer from 1 to 1000000000, got undefined"],
    [() => limits.fixedWindow({ limit: 10, window: "soon" }), 'window must be milliseconds (a number) or a duration such as "500ms", "1s", "5m", "1h", "1d", got "soon"'],
    [() => limits.gcra(/** @type {any} */ (undefined)), "gcra: options must be an object with rate, per, burst, name"],
    [() => limits.slidingLog(/** @type {any} */ ({ limit: 5, window: "1s", windows: 2 })), "sliding_log: unknown option 'windows' (expected limit, window, name)"],
    [() => limits.concurrency(/** @type {any} */ ({ limit: 5, timeout: "1s", ttl: 2 })), "concurrency: unknown option 'ttl' (expected limit, timeout, name)"],
    [() => limits.gcra({ rate: 1, per: "1s", name: "b{1}" }), 'name must be a non-empty string of printable ASCII without ", \\, { or }'],
    [() => limits.allOf(/** @type {any} */ ("gcra")), "all_of: argument 1 is not a limiter"],
    [() => new RateLimits({}), "RateLimits: unknown Redis client (expected ioredis, node-redis 4/5/6, or an object with send() and masters())"],
    [() => new RateLimits(recording().limits.client, { backend: /** @type {any} */ ("lua") }), 'backend must be "auto", "module", "functions" or "scripts", got "lua"'],
    [() => new RateLimits(recording().limits.client, /** @type {any} */ ({ timeOut: 100 })), "RateLimits: unknown option 'timeOut' (expected backend, timeout, failOpen, localRefusals, metrics)"],
    [() => new RateLimits(recording().limits.client, /** @type {any} */ ({ failOpen: "yes" })), 'failOpen must be true or false, got "yes"'],
  ];
  for (const [make, message] of cases) {
    it(message, () => assert.throws(make, (err) => err instanceof InvalidParameter && err.message === message));
  }
  it("names may be any printable ASCII but the four", () => {
    assert.equal(limits.gcra({ rate: 1, per: "1s", name: "Per-User API 2" }).name, "Per-User API 2");
  });
  it("and bad call arguments fail before sending", () => {
    const g = limits.gcra({ rate: 1, per: "1s" });
    assert.throws(() => g.take("k", 1, /** @type {any} */ ({ atmost: true })), {
      name: "InvalidParameter",
      message: "take: unknown option 'atmost' (expected peek, refund, force, wait, atMost, block, tag)",
    });
    assert.throws(() => g.peek("k", 1, /** @type {any} */ ({ force: true, blok: 1 })), { message: /unknown option 'blok'/ });
    assert.throws(() => limits.concurrency({ limit: 1, timeout: 1000 }).acquire("k", 1, /** @type {any} */ ({ peak: true })), {
      message: "acquire: unknown option 'peak' (expected peek)",
    });
    assert.throws(() => g.take(/** @type {any} */ (undefined)), { message: "key must be a non-empty string" });
    assert.deepEqual(sent, []);
  });
});
