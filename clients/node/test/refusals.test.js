"use strict";

// The local memory of refusals (localRefusals): which calls it answers, with
// what, until when, which entry goes first past its capacity; through the
// real client over a fake server (the clock set by the test), then against a
// real server, counting the server's calls.

const assert = require("node:assert/strict");
const { describe, it } = require("node:test");
const { RateLimits } = require("../lib");
const { fakeConnection } = require("./fake-redis");
const { CURRENT } = require("./clients");
const { startServer, cli } = require("./servers");

describe("local refusals, exact values", () => {
  /** @type {(args: string[]) => any} */
  let respond = () => [1, 20, 0, 1500, 2000];
  const fake = fakeConnection(CURRENT["ioredis 6"]);
  const server = fake;
  const conn = fake;

  /** A RateLimits remembering `capacity` keys, its clock at `clock.t`. @param {number} capacity */
  function limitsWith(capacity) {
    const limits = new RateLimits(conn.client, { backend: "module", localRefusals: capacity });
    const clock = { t: 1000 };
    /** @type {import("../lib/refusals").RefusalMemory} */ (limits.refusals).now = () => clock.t;
    fake.answer((args) => respond(args));
    return { limits, clock };
  }

  /** @param {any} r */
  const decision = (r) => [r.allowed, r.limit, r.remaining, r.retryAfter, r.reset, r.granted, r.binding, r.failedOpen];

  it("off by default", () => {
    assert.equal(new RateLimits(conn.client).refusals, null);
  });

  it("a refused take is answered in-process until its retry_after, shortened by the time gone by", async () => {
    respond = () => [1, 20, 0, 1500, 2000];
    const { limits, clock } = limitsWith(10);
    const g = limits.gcra({ rate: 10, per: 1000, burst: 20 });
    assert.deepEqual(decision(await g.take("k")), [false, 20, 0, 1500, 2000, 0, 1, false]);
    clock.t += 400;
    assert.deepEqual(decision(await g.take("k")), [false, 20, 0, 1100, 1600, 0, 1, false]);
    clock.t += 1099.5;
    assert.deepEqual(decision(await g.take("k")), [false, 20, 0, 1, 501, 0, 1, false]);
    assert.equal(server.record.length, 1);
    clock.t += 0.5; // the refusal's instant: asked again
    respond = () => [0, 20, 19, -1, 100];
    assert.deepEqual(decision(await g.take("k")), [true, 20, 19, null, 100, 1, 1, false]);
    assert.equal(server.record.length, 2);
    // An allowed answer is not remembered.
    await g.take("k");
    assert.equal(server.record.length, 3);
  });

  it("only plain takes of the same limiter, keys and units", async () => {
    respond = () => [1, 20, 0, 1500, 2000];
    const { limits } = limitsWith(10);
    const g = limits.gcra({ rate: 10, per: 1000, burst: 20 });
    await g.take("k");
    assert.equal(server.record.length, 1);
    const asked = [
      () => g.take("k", 2),
      () => g.take("other"),
      () => limits.gcra({ rate: 10, per: 1000, burst: 21 }).take("k"),
      () => g.peek("k"),
      () => g.take("k", 1, { force: true }),
      () => g.take("k", 1, { wait: 0 }),
      () => g.take("k", 1, { atMost: true }),
      () => g.refund("k"),
      () => g.take("k", 1, { block: 1000 }),
    ];
    for (const [i, call] of asked.entries()) {
      await call();
      assert.equal(server.record.length, i + 2, `call ${i} was answered locally`);
    }
    // The query (0 units) is always asked.
    respond = () => [1, 20, 0, 1500, 2000];
    await g.query("k");
    await g.query("k");
    assert.equal(server.record.length, asked.length + 3);
    // A take with block is remembered with its block: the same take is local.
    await g.take("k", 1, { block: 1000 });
    assert.equal(server.record.length, asked.length + 3);
  });

  it("a refusal that can never pass (retry_after -1) is not remembered", async () => {
    respond = () => [1, 20, 20, -1, 0];
    const { limits } = limitsWith(10);
    const g = limits.gcra({ rate: 10, per: 1000, burst: 20 });
    await g.take("k", 25);
    await g.take("k", 25);
    assert.equal(server.record.length, 2);
  });

  it("an allOf's refusal, binding limit included", async () => {
    respond = () => [1, 3, 0, 3599001, 3600000, 2];
    const { limits, clock } = limitsWith(10);
    const both = limits.allOf(limits.gcra({ rate: 1, per: 10000, burst: 3, name: "b" }), limits.slidingLog({ limit: 3, window: 3600000, name: "h" }));
    await both.take(["{u}:b", "{u}:h"]);
    clock.t += 1;
    assert.deepEqual(decision(await both.take(["{u}:b", "{u}:h"])), [false, 3, 0, 3599000, 3599999, 0, 2, false]);
    assert.equal(server.record.length, 1);
  });

  it("past its capacity, the entry nearest its end goes first", async () => {
    const { limits } = limitsWith(2);
    const g = limits.gcra({ rate: 10, per: 1000, burst: 20 });
    for (const [key, retry] of [["a", 100], ["b", 300], ["c", 200]]) {
      respond = () => [1, 20, 0, retry, retry];
      await g.take(/** @type {string} */ (key));
    }
    assert.equal(server.record.length, 3);
    respond = () => [1, 20, 0, 50, 50];
    await g.take("b");
    await g.take("c");
    assert.equal(server.record.length, 3); // both remembered
    await g.take("a");
    assert.equal(server.record.length, 4); // dropped: asked again
    assert.equal(/** @type {any} */ (limits.refusals).entries.size, 2);
  });
});

describe("local refusals against a real server", () => {
  it("a flood on one refused key costs the server one call", async () => {
    const server = await startServer({ module: true });
    const conn = await CURRENT["node-redis 6"](server.port);
    try {
      const limits = new RateLimits(conn.client, { localRefusals: 100 });
      const hourly = limits.fixedWindow({ limit: 1, window: "1h" });
      assert.equal((await hourly.take("flood")).allowed, true);
      const answers = [];
      for (let i = 0; i < 100; i++) answers.push(await hourly.take("flood"));
      assert.deepEqual(
        answers.map((r) => r.allowed),
        Array(100).fill(false),
      );
      assert.match(cli(server.port, "INFO", "commandstats"), /cmdstat_rl\.fixed:calls=2,/);
    } finally {
      await conn.close();
      await server.stop();
    }
  });
});
