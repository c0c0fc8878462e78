"use strict";

// The clients' contract, offline: every case of calls.json, errors.json,
// ranges.json and backends.json through this client's real code (argument
// building, the backend search, the Redis client adapters, reply parsing,
// error classification), with each supported Redis client connected to a
// fake RESP server that answers what the case says. The "fresh" cases of
// calls.json run against real servers in contract-live.test.js, and
// middleware.json in middleware.test.js.

const assert = require("node:assert/strict");
const { describe, it, before } = require("node:test");
const { RateLimits, RateLimitError, InvalidParameter, ServerError, Unavailable } = require("../lib");
const { fakeRedis, fakeConnection, NO_ANSWER, CLOSE } = require("./fake-redis");
const { CLIENTS, RESP3_CLIENTS } = require("./clients");
const { load, forNode, makeLimiter, perform, answerOf, expectedOf, substitute } = require("./contract");

const calls = load("calls.json");
const errors = load("errors.json");
const ranges = load("ranges.json");
const backends = load("backends.json");

const CLASSES = { RateLimitError, InvalidParameter, ServerError, Unavailable };

/** The error class errors.json names. @param {string} name */
function errorClass(name) {
  const cls = CLASSES[/** @type {keyof typeof CLASSES} */ (name)];
  if (!cls) throw new Error(`contract: unknown error class ${name}`);
  return cls;
}

/** An answer of the fake server from a step or case: a reply, or an error reply. @param {any} step */
function answerFor(step) {
  if ("error" in step) return { error: step.error };
  return substitute(step.reply);
}

for (const clientName of Object.keys(CLIENTS)) {
  describe(`contract, calls.json: ${clientName}`, () => {
    const fake = fakeConnection(CLIENTS[clientName]);
    const resp3 = RESP3_CLIENTS[clientName] ? fakeConnection(RESP3_CLIENTS[clientName]) : null;
    for (const backend of ["module", "functions", "scripts"]) {
      for (const c of forNode(calls.cases)) {
        // A RESP3 reply needs a client that speaks RESP3 (ioredis and
        // node-redis 4 speak RESP2 only).
        const skip = c.resp === 3 && !resp3 ? `${clientName} speaks RESP2 only` : false;
        it(`${backend}: ${c.name}`, { skip }, async () => {
          const on = c.resp === 3 ? /** @type {typeof fake} */ (resp3) : fake;
          const expected = substitute(c[backend]);
          on.answer((args) => (JSON.stringify(args) === JSON.stringify(expected) ? c.reply : { error: "ERR not the case's command" }));
          const limits = new RateLimits(on.client, { backend: /** @type {any} */ (backend) });
          const answer = await perform(makeLimiter(limits, c.limiter), c.call);
          assert.deepEqual(on.record, [expected]);
          assert.deepEqual(answerOf(c, answer), expectedOf(c));
        });
      }
    }
  });

  describe(`contract, errors.json: ${clientName}`, () => {
    const fake = fakeConnection(CLIENTS[clientName]);
    const gcra = { kind: "gcra", rate: 10, per_ms: 1000, burst: 20 };

    for (const e of errors.server_errors) {
      it(`${e.raises}: ${e.reply_error}`, async () => {
        fake.answer(() => ({ error: e.reply_error }));
        const limits = new RateLimits(fake.client, { backend: "module" });
        await assert.rejects(perform(makeLimiter(limits, gcra), { op: "take", keys: ["k"], n: 1 }), (err) => {
          assert.ok(err instanceof errorClass(e.raises), String(err));
          assert.ok(err instanceof RateLimitError);
          assert.equal(err.code, e.code);
          assert.equal(err.message, e.raises === "Unavailable" ? errors.unavailable_prefix + e.reply_error : e.reply_error);
          return true;
        });
      });
    }

    for (const t of errors.transport) {
      it(`transport: ${t.fault}`, async () => {
        let port = fake.port;
        if (t.kind === "no_answer") fake.answer(() => NO_ANSWER);
        else if (t.kind === "closed") fake.answer(() => CLOSE);
        else {
          assert.equal(t.kind, "refused", "a fault this test knows");
          // A port nobody listens on: connection refused.
          const gone = await fakeRedis(() => null);
          port = gone.port;
          await gone.close();
        }
        const timeout = 100;
        const conn = port === fake.port ? null : await connectRefused(clientName, port);
        const limits = new RateLimits(conn ? conn.client : fake.client, { backend: "module", timeout });
        const start = performance.now();
        await assert.rejects(perform(makeLimiter(limits, gcra), { op: "take", keys: ["k"], n: 1 }), (err) => {
          assert.ok(err instanceof Unavailable, String(err));
          if (t.message) assert.equal(err.message, t.message.replace("{timeout}", String(timeout)));
          else assert.ok(err.message.startsWith(t.message_prefix) && err.message.length > t.message_prefix.length, err.message);
          return true;
        });
        const elapsed = performance.now() - start;
        assert.ok(elapsed <= timeout + 50, `answered after ${elapsed.toFixed(1)} ms`);
        await conn?.close();
      });
    }

    for (const inv of forNode(errors.invalid)) {
      it(`InvalidParameter: ${inv.name}`, async () => {
        fake.answer(() => ({ error: "ERR nothing may be sent" }));
        const limits = new RateLimits(fake.client, { backend: "module" });
        assert.throws(
          () => perform(makeLimiter(limits, inv.limiter), inv.call),
          (err) => {
            assert.ok(err instanceof errorClass(inv.raises), String(err));
            assert.equal(/** @type {Error} */ (err).message, inv.message);
            return true;
          },
        );
        assert.deepEqual(fake.record, []);
      });
    }
  });

  describe(`contract, backends.json: ${clientName}`, () => {
    for (const t of backends.transcripts) {
      it(t.name, async () => {
        let step = 0;
        const server = await fakeRedis((args) => {
          const at = t.steps[step];
          if (!at || JSON.stringify(args) !== JSON.stringify(substitute(at.send))) return { error: "ERR not the transcript's command" };
          step += 1;
          if (at.fault) return CLOSE;
          return answerFor(at);
        });
        const conn = await CLIENTS[clientName](server.port);
        try {
          const limits = new RateLimits(conn.client);
          const limiter = limits.gcra({ rate: 10, per: 1000, burst: 20 });
          if (t.calls === 2) {
            await assert.rejects(limiter.take("k"), errorClass(t.outcome.first));
          }
          if (t.outcome.decision_reply) {
            assert.deepEqual((await limiter.take("k")).raw, t.outcome.decision_reply);
          } else {
            await assert.rejects(limiter.take("k"), (err) => {
              assert.ok(err instanceof errorClass(t.outcome.raises), String(err));
              if (t.outcome.message) assert.equal(err.message, t.outcome.message);
              return true;
            });
          }
          assert.equal(await limits.backend(), t.backend);
          assert.deepEqual(server.record, t.steps.map((/** @type {any} */ s) => substitute(s.send)));
        } finally {
          await conn.close();
          await server.close();
        }
      });
    }
  });
}

/**
 * A client on a port where nothing listens: it connects lazily (ioredis)
 * or is left reconnecting (node-redis connects once it is ready, so a
 * client is first made on a live fake server, then that server closes).
 * @param {string} clientName @param {number} port
 */
async function connectRefused(clientName, port) {
  if (clientName.startsWith("ioredis")) {
    const lib = clientName === "ioredis 6" ? require("ioredis") : require("ioredis5");
    const client = new lib({ host: "127.0.0.1", port, lazyConnect: true });
    client.on("error", () => {});
    return { client, close: async () => client.disconnect() };
  }
  const server = await fakeRedis(() => null);
  const conn = await CLIENTS[clientName](server.port);
  await server.close();
  void port;
  return conn;
}

describe("contract, ranges.json", () => {
  const fake = fakeConnection(CLIENTS["ioredis 6"]);
  before(() => {
    // A valid answer to whatever is sent: the accepted values go through.
    fake.answer((args) => (args[0] === "RL.RELEASE" || args[0] === "RL.RENEW" ? 1 : args[0] === "RL.LOG" ? [] : [0, 20, 19, -1, 100, 1]));
  });
  /** @param {string} name */
  const nodeName = (name) => ranges.names[name]?.node ?? name;

  /**
   * Applies `value` to the parameter; resolves when accepted.
   * @param {any} p @param {unknown} value
   */
  async function apply(p, value) {
    const limits = new RateLimits(fake.client, { backend: "module" });
    /** @type {Record<string, any>} */
    const bases = {
      gcra: { kind: "gcra", rate: 10, per_ms: 1000, burst: 20 },
      token_bucket: { kind: "token_bucket", capacity: 100, refill: 10, per_ms: 60000 },
      fixed_window: { kind: "fixed_window", limit: 100, window_ms: 60000 },
      sliding_log: { kind: "sliding_log", limit: 100, window_ms: 60000 },
      sliding_counter: { kind: "sliding_counter", limit: 100, window_ms: 60000 },
      concurrency: { kind: "concurrency", limit: 2, timeout_ms: 60000 },
    };
    if (bases[p.where]) {
      const field = p.kind === "ms" ? `${p.name}_ms` : p.name;
      makeLimiter(limits, { ...bases[p.where], [field]: value });
      return;
    }
    const gcra = makeLimiter(limits, bases.gcra);
    const jobs = makeLimiter(limits, bases.concurrency);
    switch (`${p.where}.${p.name}`) {
      case "take.n":
        return gcra.take("k", value);
      case "take.wait":
        return gcra.take("k", 1, { wait: value });
      case "take.block":
        return gcra.take("k", 1, { block: value });
      case "take.tag":
        // A tag of that many bytes, in UTF-8: "é" is two.
        return gcra.take("k", 1, { tag: "é".repeat(Math.floor(Number(value) / 2)) + "x".repeat(Number(value) % 2) });
      case "log.window":
        return limits.log("k", value);
      case "log.count":
        return limits.log("k", 60000, { count: /** @type {number} */ (value) });
      case "acquire.n":
        return jobs.acquire("k", value);
      case "release.lease":
        return jobs.release("k", value);
      case "renew.timeout":
        return jobs.renew("k", 1, value);
      case "client.timeout":
        if ("default" in p) assert.equal(new RateLimits(fake.client).timeout, p.default);
        return new RateLimits(fake.client, { timeout: value });
      case "client.local_refusals":
        if ("default" in p) assert.equal(new RateLimits(fake.client).localRefusals, p.default);
        return new RateLimits(fake.client, { localRefusals: value });
      default:
        throw new Error(`contract: no way to apply ${p.where}.${p.name}`);
    }
  }

  /** @param {any} p @param {number} value */
  function words(p, value) {
    const template = ranges.messages[p.kind];
    const max = p.max_node ?? p.max;
    return template
      .replace("{name}", nodeName(p.name))
      .replace("{min}", String(p.min))
      .replace("{max}", String(max))
      .replace("{value}", String(value));
  }

  for (const p of ranges.params) {
    const max = p.max_node ?? p.max;
    it(`${p.where}: ${p.name} takes ${p.min} and ${max}`, async () => {
      await apply(p, p.min);
      await apply(p, max);
    });
    for (const value of [p.min - 1, max + 1]) {
      it(`${p.where}: ${p.name} refuses ${value}`, async () => {
        fake.record.length = 0;
        await assert.rejects(
          async () => apply(p, value),
          (err) => {
            assert.ok(err instanceof InvalidParameter, String(err));
            assert.equal(/** @type {Error} */ (err).message, words(p, value));
            return true;
          },
        );
        assert.deepEqual(fake.record, []);
      });
    }
  }
  for (const w of ranges.whole_ms) {
    it(`${w.where}: ${w.name} of ${w.value_ms} ms`, async () => {
      await assert.rejects(async () => apply(w, w.value_ms), { name: "InvalidParameter", message: w.message });
    });
  }
});
