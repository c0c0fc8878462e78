"use strict";

// The same calls on every backend and every client, with the same expected
// answers. Values that a later call sees only after some time has passed
// (a retry_after or reset of a limiter touched by an earlier call) are
// checked within the second before their exact value at the first call's
// instant; everything else is exact.

const assert = require("node:assert/strict");
const { it } = require("node:test");
const { ServerError, LeaseRefusedError } = require("../lib");

let run = 0;

/** `value` is within (exact - 1000, exact]: `exact` less the time since the state was written. */
function within(value, exact, what) {
  assert.ok(value !== null && value > exact - 1000 && value <= exact, `${what}: ${value} not within (${exact - 1000}, ${exact}]`);
}

/**
 * @param {() => import("../lib").RateLimits} limits the RateLimits under test
 * @param {() => (args: string[], key?: string) => Promise<any>} raw a raw sender on the same client
 */
function rateLimitSuite(limits, raw) {
  // Fresh keys on every run of the suite; `{...}` keeps an allOf's keys in one slot.
  const key = (name) => `rl-test:${process.pid}:${run}:${name}`;
  const tagged = (tag, name) => `rl-test:{${process.pid}:${run}:${tag}}:${name}`;
  it("starts on fresh keys", () => {
    run += 1;
  });

  it("gcra: take, a request that can never pass, a refusal", async () => {
    const g = limits().gcra({ rate: 1, per: "10s", burst: 3 });
    const k = key("gcra");
    const first = await g.take(k);
    assert.deepEqual(first.raw, [0, 3, 2, -1, 10000]);
    assert.equal(first.allowed, true);
    assert.equal(first.retryAfter, null);
    assert.equal(first.reset, 10000);
    assert.equal(first.granted, 1);
    assert.equal(first.binding, 1);
    const never = await g.take(k, 5);
    assert.equal(never.allowed, false);
    assert.equal(never.retryAfter, null);
    assert.equal(never.granted, 0);
    assert.equal(never.remaining, 2);
    const two = await g.take(k, 2);
    assert.equal(two.allowed, true);
    assert.equal(two.remaining, 0);
    assert.equal(two.granted, 2);
    within(two.reset, 30000, "reset");
    const refused = await g.take(k);
    assert.equal(refused.allowed, false);
    assert.equal(refused.remaining, 0);
    within(refused.retryAfter, 10000, "retryAfter");
  });

  it("peek and query change nothing", async () => {
    const g = limits().gcra({ rate: 1, per: "10s", burst: 3 });
    const k = key("peek");
    assert.deepEqual((await g.peek(k, 2)).raw, [0, 3, 1, -1, 20000]);
    assert.deepEqual((await g.query(k)).raw, [0, 3, 3, -1, 0]);
    assert.deepEqual((await g.peek(k, 4)).raw, [1, 3, 3, -1, 0]);
    assert.equal((await raw()(["EXISTS", k], k)), 0);
  });

  it("refund gives units back", async () => {
    const g = limits().gcra({ rate: 1, per: "10s", burst: 3 });
    const k = key("refund");
    assert.deepEqual((await g.take(k, 3)).raw, [0, 3, 0, -1, 30000]);
    const back = await g.refund(k);
    assert.equal(back.allowed, true);
    assert.equal(back.remaining, 1);
    assert.equal(back.retryAfter, null);
    within(back.reset, 20000, "reset");
  });

  it("token bucket: force goes into debt", async () => {
    const tb = limits().tokenBucket({ capacity: 5, refill: 1, per: "1s" });
    const k = key("force");
    const forced = await tb.take(k, 8, { force: true });
    assert.deepEqual(forced.raw, [0, 5, 0, -1, 8000]);
    assert.equal(forced.granted, 8);
    const refused = await tb.take(k);
    assert.equal(refused.allowed, false);
    within(refused.retryAfter, 4000, "retryAfter");
  });

  it("wait: a reservation, then a refusal past max_wait", async () => {
    const g = limits().gcra({ rate: 1, per: "1s", burst: 1 });
    const k = key("wait");
    assert.deepEqual((await g.take(k)).raw, [0, 1, 0, -1, 1000]);
    const reserved = await g.take(k, 1, { wait: "5s" });
    assert.equal(reserved.allowed, true);
    assert.equal(reserved.remaining, 0);
    within(reserved.retryAfter, 1000, "retryAfter");
    within(reserved.reset, 2000, "reset");
    const refused = await g.take(k, 1, { wait: 500 });
    assert.equal(refused.allowed, false);
    within(refused.retryAfter, 1500, "retryAfter");
  });

  it("atMost grants what is left", async () => {
    const log = limits().slidingLog({ limit: 5, window: "1h" });
    const k = key("atmost");
    assert.deepEqual((await log.take(k, 3)).raw, [0, 5, 2, -1, 3600000]);
    const some = await log.take(k, 4, { atMost: true });
    assert.deepEqual(some.raw, [0, 5, 0, -1, 3600000, 2]);
    assert.equal(some.granted, 2);
    const none = await log.take(k, 1, { atMost: true });
    assert.equal(none.allowed, false);
    assert.equal(none.granted, 0);
    assert.equal(none.raw.length, 6);
    within(none.retryAfter, 3600000, "retryAfter");
  });

  it("block: a refusal blocks the key", async () => {
    const log = limits().slidingLog({ limit: 2, window: "1m" });
    const k = key("block");
    assert.deepEqual((await log.take(k, 2)).raw, [0, 2, 0, -1, 60000]);
    assert.deepEqual((await log.take(k, 1, { block: "1h" })).raw, [1, 2, 0, 3600000, 3600000]);
    const blocked = await log.query(k);
    assert.equal(blocked.allowed, false);
    within(blocked.retryAfter, 3600000, "retryAfter");
  });

  it("fixed window and sliding counter", async () => {
    const L = limits();
    const fixed = L.fixedWindow({ limit: 2, window: "1h" });
    const k = key("fixed");
    const full = await fixed.take(k, 2);
    assert.deepEqual([full.allowed, full.limit, full.remaining], [true, 2, 0]);
    const refused = await fixed.take(k);
    assert.deepEqual([refused.allowed, refused.remaining], [false, 0]);
    // Both until the window's end, where the count starts over.
    assert.ok(refused.retryAfter !== null && refused.retryAfter > 0 && refused.retryAfter <= 3600000);
    assert.equal(refused.retryAfter, refused.reset);

    const counter = L.slidingCounter({ limit: 2, window: "1h" });
    const c = key("counter");
    const two = await counter.take(c, 2);
    assert.deepEqual([two.allowed, two.limit, two.remaining], [true, 2, 0]);
    const no = await counter.take(c);
    assert.equal(no.allowed, false);
    // Two units in this window weigh 1 or more until half of the next one has passed.
    assert.ok(no.retryAfter !== null && no.retryAfter > 1800000 && no.retryAfter <= 5400000, String(no.retryAfter));
  });

  it("allOf: one decision over several limits", async () => {
    const L = limits();
    const both = L.allOf(
      L.gcra({ rate: 1, per: "10s", burst: 3, name: "burst" }),
      L.slidingLog({ limit: 3, window: "1h", name: "hourly" }),
    );
    const keys = [tagged("all", "burst"), tagged("all", "hourly")];
    assert.deepEqual((await both.take(keys)).raw, [0, 3, 2, -1, 10000, 1]);
    const two = await both.take(keys, 2);
    assert.equal(two.allowed, true);
    assert.equal(two.remaining, 0);
    assert.equal(two.binding, 1);
    const refused = await both.take(keys);
    assert.equal(refused.allowed, false);
    assert.equal(refused.binding, 2);
    within(refused.retryAfter, 3600000, "retryAfter");
    const back = await both.refund(keys);
    assert.equal(back.allowed, true);
    assert.equal(back.remaining, 1);
    const fresh = [tagged("all2", "burst"), tagged("all2", "hourly")];
    const grant = await both.take(fresh, 5, { atMost: true });
    assert.deepEqual(grant.raw, [0, 3, 0, -1, 30000, 1, 3]);
    assert.equal(grant.granted, 3);
    assert.throws(() => both.take([keys[0]]), { name: "InvalidParameter", message: "keys: 2 limiters need 2 keys, got 1" });
  });

  it("leases: acquire, refuse, renew, release, withLease", async () => {
    const jobs = limits().concurrency({ limit: 2, timeout: "1m" });
    const k = key("jobs");
    const lease = await jobs.acquire(k);
    assert.equal(lease.allowed, true);
    assert.ok(Number.isSafeInteger(lease.id) && /** @type {number} */ (lease.id) > 0);
    assert.deepEqual(lease.raw.slice(0, 5), [0, 2, 1, -1, 60000]);
    const refused = await jobs.acquire(k, 2);
    assert.equal(refused.allowed, false);
    assert.equal(refused.id, null);
    within(refused.retryAfter, 60000, "retryAfter");
    assert.equal(await lease.renew("2m"), true);
    assert.equal(await lease.release(), 1);
    assert.equal(await lease.release(), 0);
    assert.equal(await lease.renew(), false);
    assert.equal(await refused.release(), 0);
    const value = await jobs.withLease(k, async (l) => {
      assert.equal(l.remaining, 1);
      return "done";
    });
    assert.equal(value, "done");
    assert.equal((await jobs.acquire(k, 0)).remaining, 2);
    const held = await jobs.acquire(k, 2);
    await assert.rejects(
      jobs.withLease(k, async () => assert.fail("ran without a lease")),
      (err) => err instanceof LeaseRefusedError && err.lease.allowed === false,
    );
    await held[Symbol.asyncDispose]();
    assert.equal((await jobs.acquire(k, 0)).remaining, 2);
  });

  it("server errors surface as ServerError with the server's text, code first", async () => {
    const L = limits();
    const k = key("errors");
    await L.fixedWindow({ limit: 5, window: "1m" }).take(k);
    await assert.rejects(L.gcra({ rate: 1, per: "1s" }).take(k), (err) => {
      assert.ok(err instanceof ServerError);
      assert.equal(err.code, "ERR");
      assert.equal(err.message, `ERR key '${k}' holds an RL.FIXED state, not an RL.GCRA one (use another key, or DEL it to start over)`);
      return true;
    });
    await assert.rejects(L.fixedWindow({ limit: 5, window: "1m" }).take(k, 1, { wait: 10 }), {
      name: "ServerError",
      message:
        "ERR WAIT does not work with RL.FIXED: a window cannot hold a later window's requests (WAIT works with RL.GCRA, RL.TOKEN_BUCKET and RL.SLIDING_LOG)",
    });
    await assert.rejects(L.gcra({ rate: 1, per: "1s" }).take(key("combo"), 1, { refund: true, force: true }), {
      name: "ServerError",
      message: "ERR syntax error: REFUND and FORCE cannot be combined (each says how the units are taken: choose one)",
    });
    const list = key("list");
    await raw()(["RPUSH", list, "a"], list);
    await assert.rejects(L.gcra({ rate: 1, per: "1s" }).take(list), {
      name: "ServerError",
      message: "WRONGTYPE Operation against a key holding the wrong kind of value",
    });
  });
}

module.exports = { rateLimitSuite, within };
