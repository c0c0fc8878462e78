"use strict";

// middleware.json through the real Express middleware and a real HTTP
// server, with ioredis connected to a fake RESP server that answers each
// case's outcome: the keys for a limit name, an identity and a prefix; the
// status, headers and body of every outcome; what reaches the app.

const assert = require("node:assert/strict");
const { describe, it, before } = require("node:test");
const express = require("express");
const { RateLimits, rateLimit, InvalidParameter, ServerError } = require("../lib");
const { fakeConnection, NO_ANSWER } = require("./fake-redis");
const { CURRENT } = require("./clients");
const { load, makeLimiter } = require("./contract");

const contract = load("middleware.json");
const TIMEOUT = 100;

/** Serves `app` on a free port; resolves to its base URL and a close(). @param {any} app */
function serve(app) {
  return new Promise((resolve) => {
    const server = app.listen(0, "127.0.0.1", () => {
      resolve({ url: `http://127.0.0.1:${server.address().port}`, close: () => new Promise((r) => server.close(r)) });
    });
  });
}

/** The limiter of a case: one, or an allOf of several. @param {RateLimits} limits @param {any[]} specs */
function limiterOf(limits, specs) {
  return specs.length === 1 ? makeLimiter(limits, specs[0]) : limits.allOf(...specs.map((s) => makeLimiter(limits, s)));
}

describe("contract, middleware.json", () => {
  /** @type {(args: string[]) => any} */
  let respond = () => [0, 1, 1, -1, 0];
  const fake = fakeConnection(CURRENT["ioredis 6"]);
  const server = fake;
  const conn = fake;
  before(() => fake.answer((args) => respond(args)));

  /**
   * A middleware over the fake server whose start-up check has been
   * answered, with the record cleared after it.
   * @param {any[]} specs @param {Record<string, unknown>} options
   */
  async function middleware(specs, options) {
    respond = () => [0, 1, 1, -1, 0, 1];
    const limits = new RateLimits(conn.client, { backend: "module", timeout: TIMEOUT });
    const mw = rateLimit({ limiter: limiterOf(limits, specs), ...options });
    await mw.ready;
    server.record.length = 0;
    return mw;
  }

  for (const k of contract.keys) {
    it(`keys: prefix ${JSON.stringify(k.prefix)}, identity ${k.identity}, ${k.names.join(" and ")}`, async () => {
      const specs = k.names.map((/** @type {string} */ name) => ({ kind: "gcra", rate: 10, per_ms: 1000, name }));
      const mw = await middleware(specs, { prefix: k.prefix, key: () => k.identity });
      respond = () => (specs.length === 1 ? [0, 10, 9, -1, 100] : [0, 10, 9, -1, 100, 1]);
      await new Promise((resolve, reject) => {
        const res = { setHeader() {}, end: reject };
        mw(/** @type {any} */ ({}), res, (/** @type {unknown} */ err) => (err ? reject(err) : resolve(undefined)));
      });
      const [command] = server.record;
      assert.deepEqual(specs.length === 1 ? [command[1]] : command.slice(2, 2 + specs.length), k.keys);
    });
  }

  it("the start-up check peeks one unit on the keys of the identity 'check'", async () => {
    respond = () => [0, 3, 2, -1, 10000, 1];
    const limits = new RateLimits(conn.client, { backend: "module" });
    server.record.length = 0;
    const specs = [
      { kind: "gcra", rate: 1, per_ms: 10000, burst: 3, name: "burst" },
      { kind: "sliding_log", limit: 3, window_ms: 3600000, name: "hourly" },
    ];
    await rateLimit({ limiter: limiterOf(limits, specs), prefix: "app:" }).ready;
    assert.equal(contract.check_identity, "check");
    assert.deepEqual(server.record, [
      ["RL.ALL", "2", "app:{check}:burst", "app:{check}:hourly", "GCRA", "2", "1", "10000", "SLIDING_LOG", "3", "3600000", "1", "MS", "PEEK"],
    ]);
  });

  for (const c of contract.responses) {
    it(`responses: ${c.name}`, async () => {
      /** @type {unknown[]} */
      const raised = [];
      const mw = await middleware(c.limiters, {
        key: () => ("identity" in c ? c.identity : "203.0.113.7"),
        failOpen: c.fail_open,
        onError: () => {},
      });
      const o = c.outcome;
      respond = () => (o === null ? { error: "ERR nothing may be sent" } : "reply" in o ? o.reply : "reply_error" in o ? { error: o.reply_error } : NO_ANSWER);
      const app = express();
      /** @type {any} */
      let seen;
      app.use(mw);
      app.get("/", (req, res) => {
        seen = req.rateLimit ?? null;
        res.type("text/plain").send("ok");
      });
      app.use((/** @type {any} */ err, /** @type {any} */ _req, /** @type {any} */ res, /** @type {any} */ _next) => {
        raised.push(err);
        res.status(500).end();
      });
      const { url, close } = await serve(app);
      try {
        const res = await fetch(url);
        const body = await res.text();
        assert.equal(res.status, c.status === "app" ? 200 : c.status);
        for (const [name, value] of Object.entries(c.headers)) assert.equal(res.headers.get(name), value, name);
        for (const name of c.absent) assert.equal(res.headers.get(name), null, name);
        if (c.status === "app") assert.equal(body, "ok");
        if ("body" in c) assert.equal(body, c.body);
        if (c.raised) {
          assert.equal(raised.length, 1);
          assert.ok(raised[0] instanceof ServerError);
          assert.equal(/** @type {Error} */ (raised[0]).message, o.reply_error);
        } else {
          assert.deepEqual(raised, []);
        }
        if (c.marked === "decision") {
          assert.equal(seen.allowed, true);
          assert.equal(seen.failedOpen, false);
          assert.deepEqual(seen.raw, o.reply);
        } else if (c.marked === "failed_open") {
          assert.equal(seen.allowed, true);
          assert.equal(seen.failedOpen, true);
        } else if (c.status === "app") {
          assert.equal(seen, null); // not limited: no decision
        }
        if (o === null) assert.deepEqual(server.record, []);
      } finally {
        await close();
        // A command never answered holds the connection back (a frozen
        // server answers at last; this one never will): a new connection.
        if (o !== null && "unavailable" in o) for (const socket of server.sockets) socket.destroy();
      }
    });
  }

  /** A case's tag: a string, null, or {repeat, times}. @param {any} tag */
  const tagOf = (tag) => (tag !== null && typeof tag === "object" ? tag.repeat.repeat(tag.times) : tag);

  for (const c of contract.tags) {
    it(`tags: ${c.name}`, async () => {
      const mw = await middleware(c.limiters, { key: () => c.identity, tag: () => tagOf(c.tag) });
      respond = (args) => ("reply_error" in c && args.includes("TAG") ? { error: c.reply_error } : c.reply ?? { error: "ERR nothing may be sent" });
      /** @type {unknown} */
      const outcome = await new Promise((resolve) => {
        const res = { setHeader() {}, end: () => resolve("answered") };
        mw(/** @type {any} */ ({}), res, (/** @type {unknown} */ err) => resolve(err ?? "next"));
      });
      if (c.status === "app") {
        assert.equal(outcome, "next");
        assert.deepEqual(server.record, [c.sent]);
        return;
      }
      assert.equal(c.status, 500);
      assert.ok(outcome instanceof (c.raised === "ServerError" ? ServerError : InvalidParameter), String(outcome));
      if (c.message) assert.equal(/** @type {Error} */ (outcome).message, c.message);
      if (c.sent === null) assert.deepEqual(server.record, []);
    });
  }

  for (const inv of contract.tag_invalid) {
    it(`tag_invalid: ${inv.name}`, () => {
      const limits = new RateLimits(conn.client, { backend: "module" });
      assert.throws(
        () => rateLimit({ limiter: limiterOf(limits, inv.limiters), tag: () => "user:42" }),
        (err) => err instanceof InvalidParameter && err.message === inv.message,
      );
    });
  }

  for (const inv of contract.invalid) {
    it(`invalid: ${inv.name}`, () => {
      const limits = new RateLimits(conn.client, { backend: "module" });
      assert.throws(
        () => rateLimit({ limiter: limiterOf(limits, inv.limiters) }),
        (err) => err instanceof InvalidParameter && err.message === inv.message,
      );
    });
  }
});
