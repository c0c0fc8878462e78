"use strict";

// Tags, RL.LOG and RL.INSPECT (rl_log, rl_inspect): offline against the
// fake server (what is sent, what is refused before sending, replies of
// every shape), and live on every backend (who used a sliding log, the
// state of each kind of limiter).

const assert = require("node:assert/strict");
const { describe, it, before, after } = require("node:test");
const Redis = require("ioredis");
const { RateLimits, InvalidParameter, RateLimitError, ServerError, Unavailable } = require("../lib");
const { fakeConnection, NO_ANSWER } = require("./fake-redis");
const { CURRENT } = require("./clients");
const { startServer } = require("./servers");

describe("log and inspect, offline", () => {
  const fake = fakeConnection(CURRENT["ioredis 6"]);

  it("refuses bad arguments before sending", async () => {
    fake.answer(() => []);
    const limits = new RateLimits(fake.client, { backend: "module" });
    for (const [call, words] of /** @type {[() => unknown, string][]} */ ([
      [() => limits.log("", 60000), "key must be a non-empty string"],
      [() => limits.log("k", 0), "window must be from 1 ms to 1000000000000 ms, got 0 ms"],
      [() => limits.log("k", "1m", /** @type {any} */ ({ byTag: "yes" })), 'byTag must be true or false, got "yes"'],
      [() => limits.log("k", "1m", { count: 0 }), "count must be an integer from 1 to 1000000000, got 0"],
      [() => limits.log("k", "1m", /** @type {any} */ ({ bytag: true })), "log: unknown option 'bytag' (expected byTag, count)"],
      [() => limits.inspect(/** @type {any} */ (null)), "key must be a non-empty string"],
      [() => limits.slidingLog({ limit: 5, window: "1s" }).take("k", 1, { tag: /** @type {any} */ (42) }), "tag must be a string, got number"],
    ])) {
      assert.throws(call, (err) => err instanceof InvalidParameter && err.message === words, words);
    }
    assert.deepEqual(fake.record, []);
  });

  it("sends the window in milliseconds, and a tag last", async () => {
    fake.answer((args) => (args[0] === "FCALL" && args[1] === "rl_log" ? [[5, 1, "é"]] : [0, 5, 4, -1, 1000]));
    const limits = new RateLimits(fake.client, { backend: "functions" });
    assert.deepEqual(await limits.log("k", "250ms", { count: 3 }), [{ instantUs: 5, units: 1, tag: "é" }]);
    await limits.slidingLog({ limit: 5, window: "1s" }).take("k", 1, { tag: "é".repeat(512), wait: 0 });
    assert.deepEqual(fake.record, [
      ["FCALL", "rl_log", "1", "k", "250", "MS", "COUNT", "3"],
      ["FCALL", "rl_sliding_log", "1", "k", "5", "1000", "1", "MS", "WAIT", "0", "TAG", "é".repeat(512)],
    ]);
  });

  it("remembers a tagged refusal with its tag", async () => {
    fake.answer(() => [1, 5, 0, 60000, 60000]);
    const limits = new RateLimits(fake.client, { backend: "module", localRefusals: 10 });
    const log = limits.slidingLog({ limit: 5, window: "1m" });
    assert.equal((await log.take("k", 1, { tag: "a" })).allowed, false);
    assert.equal((await log.take("k", 1, { tag: "a" })).allowed, false); // remembered: not sent
    assert.equal((await log.take("k", 1, { tag: "b" })).allowed, false);
    assert.deepEqual(
      fake.record.map((c) => c.at(-1)),
      ["a", "b"],
    );
  });

  it("a reading is never failed open: Unavailable within the deadline", async () => {
    fake.answer(() => NO_ANSWER);
    const limits = new RateLimits(fake.client, { backend: "module", timeout: 50, failOpen: true });
    for (const reading of [() => limits.log("k", "1m"), () => limits.inspect("k")]) {
      await assert.rejects(reading(), (err) => err instanceof Unavailable && err.message === "rate limiter unavailable: no answer within 50 ms");
    }
    // The connection held by the unanswered calls: a new one for the next test.
    for (const socket of fake.sockets) socket.destroy();
  });

  for (const [name, reply, call] of /** @type {[string, any, string][]} */ ([
    ["log: a status", "OK", "log"],
    ["log: an item too short", [[1, 2]], "log"],
    ["log: an instant that is no integer", [["a", 1, null]], "log"],
    ["inspect: an odd array", ["kind", "gcra", "tat_us"], "inspect"],
  ])) {
    it(`a reply of another shape: ${name}`, async () => {
      fake.answer(() => reply);
      const limits = new RateLimits(fake.client, { backend: "module" });
      const answer = call === "log" ? limits.log("k", "1m") : limits.inspect("k");
      await assert.rejects(answer, (err) => err instanceof RateLimitError && err.message.startsWith(`${call}: unexpected reply`));
    });
  }
});

for (const [name, options] of /** @type {[string, any][]} */ ([
  ["module", { module: true }],
  ["functions", {}],
  ["scripts", { args: ["--rename-command", "FUNCTION", ""] }],
])) {
  describe(`log and inspect, live: ${name}`, () => {
    /** @type {Awaited<ReturnType<typeof startServer>>} */
    let server;
    /** @type {import("ioredis").Redis} */
    let client;
    /** @type {RateLimits} */
    let limits;
    before(async () => {
      server = await startServer(options);
      client = new Redis({ host: "127.0.0.1", port: server.port });
      limits = new RateLimits(client);
      assert.equal(await limits.backend(), name);
    });
    after(() => {
      client?.disconnect();
      server?.stop();
    });

    it("says who used a sliding log", async () => {
      await client.flushall();
      const api = limits.slidingLog({ limit: 10, window: "1m" });
      await api.take("ip", 2, { tag: "alice" });
      await api.take("ip");
      await api.take("ip", 3, { tag: "bob" });
      await api.take("ip", 1, { tag: "alice" });
      assert.deepEqual(await limits.log("ip", "1m", { byTag: true }), [
        { tag: "alice", units: 3 },
        { tag: "bob", units: 3 },
        { tag: null, units: 1 },
      ]);
      assert.deepEqual(await limits.log("ip", 60000, { byTag: true, count: 1 }), [{ tag: "alice", units: 3 }]);
      const entries = await limits.log("ip", "1m");
      assert.deepEqual(
        entries.map((e) => [e.units, e.tag]),
        [
          [1, "alice"],
          [3, "bob"],
          [1, null],
          [2, "alice"],
        ],
      );
      assert.deepEqual(
        entries.map((e) => e.instantUs),
        entries.map((e) => e.instantUs).sort((a, b) => b - a),
      );
      assert.deepEqual(await limits.log("nobody", "1m"), []);
      const state = await limits.inspect("ip");
      assert.ok(state);
      assert.deepEqual([state.kind, state.entries, state.tagged], ["sliding_log", 7, 6]);
      assert.equal(state.oldest_us, entries.at(-1)?.instantUs);
      assert.equal(state.newest_us, entries[0].instantUs);
      assert.ok(typeof state.pttl === "number" && state.pttl > 0 && state.pttl <= 61000);
    });

    it("tags an allOf's sliding logs", async () => {
      await client.flushall();
      const both = limits.allOf(limits.gcra({ rate: 10, per: "1s", name: "burst" }), limits.slidingLog({ limit: 100, window: "1h", name: "hourly" }));
      await both.take(["{u}:burst", "{u}:hourly"], 2, { tag: "alice" });
      assert.deepEqual(await limits.log("{u}:hourly", "1h", { byTag: true }), [{ tag: "alice", units: 2 }]);
      await assert.rejects(limits.log("{u}:burst", "1h"), (err) => err instanceof ServerError && /holds an RL\.GCRA state, not an RL\.SLIDING_LOG one/.test(err.message));
    });

    it("inspects every kind", async () => {
      await client.flushall();
      assert.equal(await limits.inspect("missing"), null);
      await limits.gcra({ rate: 10, per: "1s" }).take("g");
      const gcra = await limits.inspect("g");
      assert.deepEqual(Object.keys(gcra ?? {}), ["kind", "tat_us", "pttl"]);
      await limits.tokenBucket({ capacity: 10, refill: 1, per: "1s" }).take("t", 3);
      assert.deepEqual([(await limits.inspect("t"))?.kind, (await limits.inspect("t"))?.tokens], ["token_bucket", 7]);
      await limits.fixedWindow({ limit: 10, window: "1h" }).take("f", 4);
      assert.equal((await limits.inspect("f"))?.count, 4);
      await limits.slidingCounter({ limit: 10, window: "1h" }).take("c", 5);
      assert.equal((await limits.inspect("c"))?.current, 5);
      const lease = await limits.concurrency({ limit: 3, timeout: "1m" }).acquire("q", 2);
      const leases = await limits.inspect("q");
      assert.deepEqual([leases?.kind, leases?.leases, leases?.units, leases?.last_id], ["concurrency", 1, 2, lease.id]);
      const once = limits.gcra({ rate: 1, per: "1h", burst: 1 });
      await once.take("b");
      await once.take("b", 1, { block: "1m" });
      assert.equal(typeof (await limits.inspect("b"))?.blocked_until_us, "number");
    });
  });
}
