"use strict";

// The Prometheus metrics (SPEC 20, clients/contract/metrics.json): the
// space-saving top-k on the contract's cases, then a fresh prom-client
// Registry scraped after known calls on real servers (the module, Redis 7
// without it: the functions library), on a black-holed port (failed open,
// failed closed) and through the Express middleware (its identity, its
// failure policy). The families' names, types and label names must be the
// contract's, exactly; the names exported are printed as a diagnostic.

const assert = require("node:assert/strict");
const { execFileSync } = require("node:child_process");
const fs = require("node:fs");
const net = require("node:net");
const path = require("node:path");
const { describe, it, before, after } = require("node:test");
const express = require("express");
const Redis = require("ioredis");
const { Registry } = require("prom-client");
const { RateLimits, PrometheusMetrics, TopRefused, InvalidParameter, Unavailable, rateLimit, RateLimitStore, FlexibleLimiter } = require("../lib");
const { RateLimiterRes } = require("rate-limiter-flexible");
const { startServer } = require("./servers");

const CONTRACT = JSON.parse(fs.readFileSync(path.join(__dirname, "..", "..", "contract", "metrics.json"), "utf8"));

describe("metrics: the top-k", () => {
  for (const c of CONTRACT.top_k.cases) {
    it(`k=${c.k}: ${c.refusals.map((/** @type {string[]} */ r) => r.join("/")).join(", ")}`, () => {
      const top = new TopRefused(c.k);
      for (const [limit, identity] of c.refusals) top.refused(limit, identity);
      assert.deepEqual(top.top(), c.expect);
    });
  }

  it("keeps k under a flood, the heavy hitters counted within their bound", () => {
    // 55,000 refusals, 15,000 for each of 3 heavy pairs among 10,000
    // others, k = 5: above 55,000 / k, each heavy pair stays, counted at
    // least its true count and at most that plus 55,000 / k.
    const top = new TopRefused(5);
    for (let i = 0; i < 10_000; i++) {
      top.refused("api", `ip${i}`);
      if (i % 2 === 0) for (let j = 0; j < 3; j++) for (const heavy of ["x", "y", "z"]) top.refused("api", heavy);
    }
    const kept = new Map(top.top().map(([, identity, count]) => [identity, count]));
    assert.equal(kept.size, 5);
    for (const heavy of ["x", "y", "z"]) {
      const count = /** @type {number} */ (kept.get(heavy));
      assert.ok(count >= 15_000 && count <= 26_000, `${heavy}: ${count}`);
    }
  });

  it("refuses a bad topK, register or metrics", () => {
    for (const k of [-1, 10_001, 1.5, true, "10"]) {
      assert.throws(() => new PrometheusMetrics({ register: new Registry(), topK: /** @type {any} */ (k) }), {
        name: "InvalidParameter",
        message: `topK must be an integer from 0 to 10000, got ${JSON.stringify(k)}`,
      });
    }
    assert.throws(() => new PrometheusMetrics({ register: /** @type {any} */ ({}) }), InvalidParameter);
    assert.throws(() => new PrometheusMetrics(/** @type {any} */ ({ registry: new Registry() })), /unknown option 'registry'/);
    assert.throws(() => new RateLimits(new Redis({ lazyConnect: true }), { metrics: /** @type {any} */ (new Registry()) }), /metrics must be a PrometheusMetrics/);
  });
});

describe("metrics: without prom-client", () => {
  it("the package loads and works; PrometheusMetrics says what to install", () => {
    const script = `
      const Module = require("node:module");
      const resolve = Module._resolveFilename;
      Module._resolveFilename = function (request, ...rest) {
        if (request === "prom-client") throw Object.assign(new Error("Cannot find module 'prom-client'"), { code: "MODULE_NOT_FOUND" });
        return resolve.call(this, request, ...rest);
      };
      const { RateLimits, PrometheusMetrics } = require(${JSON.stringify(path.join(__dirname, "..", "lib"))});
      new RateLimits({ send: async () => null, masters: async () => [] }, { backend: "module" });
      try { new PrometheusMetrics(); } catch (err) { console.log(err.name + ": " + err.message); }
    `;
    const out = execFileSync(process.execPath, ["-e", script], { timeout: 10_000 }).toString();
    assert.equal(out, "RateLimitError: PrometheusMetrics needs prom-client, an optional peer dependency: npm install prom-client\n");
  });
});

/**
 * The registry's text as Prometheus reads it: the families (name: type and
 * label names) and the samples ("name{a="x",b="y"}": value, labels sorted),
 * the durations' sums (times) left out.
 * @param {Registry} register
 */
async function exposition(register) {
  const text = await register.metrics();
  /** @type {Record<string, [string, string[]]>} */
  const families = {};
  /** @type {Map<string, number>} */
  const samples = new Map();
  /** @type {Record<string, Set<string>>} */
  const labels = {};
  for (const line of text.split("\n")) {
    const type = /^# TYPE (\S+) (\S+)$/.exec(line);
    if (type) {
      families[type[1]] = [type[2], []];
      labels[type[1]] = new Set();
      continue;
    }
    if (line === "" || line.startsWith("#")) continue;
    const m = /^([a-z_]+)(?:\{(.*)\})? (\S+)$/.exec(line);
    assert.ok(m, `not a sample: ${line}`);
    const family = Object.keys(families).find((f) => m[1] === f || (m[1].startsWith(f + "_") && families[f][0] === "histogram"));
    assert.ok(family, `a sample of no family: ${line}`);
    const pairs = [...(m[2] ?? "").matchAll(/([a-z_]+)="((?:[^"\\]|\\.)*)"/g)].map((p) => [p[1], p[2]]);
    for (const [name] of pairs) if (name !== "le") labels[family].add(name);
    if (m[1].endsWith("_sum")) continue;
    pairs.sort((a, b) => (a[0] < b[0] ? -1 : 1));
    samples.set(`${m[1]}{${pairs.map(([k, v]) => `${k}="${v}"`).join(",")}}`, Number(m[3]));
  }
  for (const f of Object.keys(families)) families[f][1] = [...labels[f]].sort();
  return { families, samples };
}

/** @param {Record<string, [string, string[]]>} families */
function assertContract(families) {
  /** @type {Record<string, [string, string[]]>} */
  const want = {};
  for (const m of CONTRACT.metrics) want[m.name] = [m.type, [...m.labels].sort()];
  assert.deepEqual(families, want);
}

describe("metrics: the help", () => {
  it("is the contract's", async () => {
    const register = new Registry();
    new PrometheusMetrics({ register }).record("api", "refused", 1, 0.001, "alice");
    const helps = Object.fromEntries([...(await register.metrics()).matchAll(/^# HELP (\S+) (.*)$/gm)].map((m) => [m[1], m[2]]));
    assert.deepEqual(helps, Object.fromEntries(CONTRACT.metrics.map((/** @type {any} */ m) => [m.name, m.help])));
  });
});

/** The decisions, units and calls of `limit`, by outcome. @param {Map<string, number>} samples @param {string} limit */
function counts(samples, limit) {
  /** @type {Record<string, number>} */
  const found = {};
  for (const [key, value] of samples) {
    const m = /^(ratelimit_client_[a-z_]+)\{(.*)\}$/.exec(key);
    if (!m || !m[2].includes(`limit="${limit}"`)) continue;
    const outcome = /outcome="([a-z_]+)"/.exec(m[2])?.[1];
    if (m[1] === "ratelimit_client_decisions_total") found[/** @type {string} */ (outcome)] = value;
    else if (m[1] === "ratelimit_client_units_total") found[`units ${outcome}`] = value;
    else if (m[1] === "ratelimit_client_call_duration_seconds_count") found.calls = value;
  }
  return found;
}

/** @param {Map<string, number>} samples @param {string} prefix */
function series(samples, prefix) {
  /** @type {Record<string, number>} */
  const found = {};
  for (const [key, value] of samples) if (key.startsWith(prefix + "{")) found[key.slice(prefix.length)] = value;
  return found;
}

describe("metrics: decisions on real servers", () => {
  /** @type {Awaited<ReturnType<typeof startServer>>} */
  let withModule;
  /** @type {Awaited<ReturnType<typeof startServer>>} */
  let without;
  /** @type {Redis[]} */
  const clients = [];
  /** @param {number} port */
  const connect = (port) => {
    const client = new Redis({ host: "127.0.0.1", port });
    clients.push(client);
    return client;
  };
  before(async () => {
    [withModule, without] = await Promise.all([startServer({ module: true }), startServer()]);
  });
  after(async () => {
    for (const c of clients) c.disconnect();
    await Promise.all([withModule?.stop(), without?.stop()]);
  });

  it("counts each outcome, units, calls, the backend and the top refused, as the contract names them", async (t) => {
    const register = new Registry();
    const metrics = new PrometheusMetrics({ register, topK: 2 });
    const limits = new RateLimits(connect(withModule.port), { metrics });
    const api = limits.slidingLog({ limit: 2, window: "1m", name: "api" });
    assert.deepEqual([(await api.take("alice")).allowed, (await api.take("alice")).allowed], [true, true]);
    assert.equal((await api.take("alice", 2)).allowed, false);
    assert.equal((await api.take("bob", 3)).allowed, false); // more than the limit: 3 units asked
    assert.equal((await api.take("bob")).allowed, true);
    const both = limits.allOf(limits.gcra({ rate: 1, per: "1m", name: "burst" }), limits.fixedWindow({ limit: 5, window: "1m", name: "day" }));
    assert.equal((await both.take(["{carol}:burst", "{carol}:day"])).allowed, true);
    assert.equal((await both.take(["{carol}:burst", "{carol}:day"])).allowed, false);
    const jobs = limits.concurrency({ limit: 1, timeout: "10s" });
    assert.equal((await jobs.acquire("jobs:1")).allowed, true);
    assert.equal((await jobs.acquire("jobs:1")).allowed, false);

    const { families, samples } = await exposition(register);
    assertContract(families);
    t.diagnostic(`exported: ${Object.entries(families).map(([name, [type]]) => `${name} (${type})`).sort().join(", ")}`);
    assert.deepEqual(counts(samples, "api"), { allowed: 3, refused: 2, "units allowed": 3, "units refused": 5, calls: 5 });
    assert.deepEqual(counts(samples, "burst+day"), { allowed: 1, refused: 1, "units allowed": 1, "units refused": 1, calls: 2 });
    assert.deepEqual(counts(samples, "concurrency"), { allowed: 1, refused: 1, "units allowed": 1, "units refused": 1, calls: 2 });
    // Four refusals of four pairs, k = 2: (burst+day, the binding limit's
    // key) replaced (api, alice), the least recently counted of count 1,
    // then (concurrency, jobs:1) replaced (api, bob); each got 1 + 1.
    assert.deepEqual(series(samples, "ratelimit_client_top_refused"), {
      '{identity="{carol}:burst",limit="burst+day"}': 2,
      '{identity="jobs:1",limit="concurrency"}': 2,
    });
    assert.deepEqual(series(samples, "ratelimit_client_backend"), { '{backend="module"}': 1 });
    const buckets = Object.keys(series(samples, "ratelimit_client_call_duration_seconds_bucket"))
      .filter((k) => k.includes('limit="api"'))
      .map((k) => /le="([^"]+)"/.exec(k)?.[1])
      .map((le) => (le === "+Inf" ? Infinity : Number(le)))
      .sort((a, b) => a - b);
    assert.deepEqual(buckets, [...CONTRACT.duration_buckets_seconds, Infinity]);
    assert.equal(samples.get('ratelimit_client_call_duration_seconds_bucket{le="+Inf",limit="api"}'), 5);

    // The same metrics on a client over Redis 7 without the module: the
    // functions library (loaded by the client); the module used before, 0.
    const other = new RateLimits(connect(without.port), { metrics });
    assert.equal((await other.slidingLog({ limit: 2, window: "1m", name: "api" }).take("dave")).allowed, true);
    const after = (await exposition(register)).samples;
    assert.deepEqual(series(after, "ratelimit_client_backend"), { '{backend="functions"}': 1, '{backend="module"}': 0 });
    assert.equal(counts(after, "api").allowed, 4);
  });

  it("counts the adapters' decisions: RateLimitStore's increments, FlexibleLimiter's consumes", async () => {
    const register = new Registry();
    const metrics = new PrometheusMetrics({ register, topK: 1 });
    const store = new RateLimitStore(connect(withModule.port), { metrics });
    store.init({ windowMs: 60_000, limit: 1 });
    assert.deepEqual([(await store.increment("gina")).totalHits, (await store.increment("gina")).totalHits], [1, 2]);
    const flexible = new FlexibleLimiter({ storeClient: connect(withModule.port), points: 2, duration: 60, metrics });
    await flexible.consume("hal");
    await flexible.consume("hal");
    await assert.rejects(flexible.consume("hal"), (res) => res instanceof RateLimiterRes);
    const { families, samples } = await exposition(register);
    assertContract(families);
    // Both are fixed windows (the default algorithm): one label, fixed_window.
    assert.deepEqual(counts(samples, "fixed_window"), { allowed: 3, refused: 2, "units allowed": 3, "units refused": 2, calls: 5 });
    assert.deepEqual(series(samples, "ratelimit_client_top_refused"), { '{identity="rl:rlflx:hal",limit="fixed_window"}': 2 });
  });

  it("counts only the calls that take units: no peek, query, refund or lease peek", async () => {
    const register = new Registry();
    const limits = new RateLimits(connect(withModule.port), { metrics: new PrometheusMetrics({ register }) });
    const api = limits.slidingLog({ limit: 1, window: "1m", name: "api" });
    assert.equal((await api.take("ivy")).allowed, true);
    assert.equal((await api.peek("ivy")).allowed, false);
    assert.equal((await api.query("ivy")).remaining, 0);
    assert.equal((await api.refund("ivy")).remaining, 1);
    assert.equal((await limits.concurrency({ limit: 1, timeout: "10s", name: "jobs" }).acquire("jobs:ivy", 1, { peek: true })).allowed, true);
    const { samples } = await exposition(register);
    assert.deepEqual(counts(samples, "api"), { allowed: 1, "units allowed": 1, calls: 1 });
    assert.deepEqual(counts(samples, "jobs"), {});
    assert.deepEqual(series(samples, "ratelimit_client_top_refused"), {});
  });

  it("records the middleware's identity, not its Redis key", async () => {
    const register = new Registry();
    const limits = new RateLimits(connect(withModule.port), { metrics: new PrometheusMetrics({ register }) });
    const statuses = await requests(rateLimit({ limiter: limits.slidingLog({ limit: 1, window: "1m", name: "web" }), key: () => "frank" }), 2);
    assert.deepEqual(statuses, [200, 429]);
    const { samples } = await exposition(register);
    assert.deepEqual(counts(samples, "web"), { allowed: 1, refused: 1, "units allowed": 1, "units refused": 1, calls: 2 });
    assert.deepEqual(series(samples, "ratelimit_client_top_refused"), { '{identity="frank",limit="web"}': 1 });
  });
});

/**
 * The statuses of `count` requests in turn through an Express app limited by `middleware`.
 * @param {any} middleware @param {number} count
 */
async function requests(middleware, count) {
  await middleware.ready;
  const app = express();
  app.use(middleware);
  app.get("/", (_req, res) => {
    res.send("ok");
  });
  const server = await new Promise((resolve) => {
    const s = app.listen(0, "127.0.0.1", () => resolve(s));
  });
  try {
    const statuses = [];
    for (let i = 0; i < count; i++) statuses.push((await fetch(`http://127.0.0.1:${/** @type {any} */ (server).address().port}/`)).status);
    return statuses;
  } finally {
    await new Promise((r) => /** @type {any} */ (server).close(r));
  }
}

describe("metrics: a black-holed port", () => {
  /** @type {net.Server} */
  let hole;
  /** @type {Set<net.Socket>} */
  const sockets = new Set();
  /** @type {Redis[]} */
  const clients = [];
  /** A client of the port that accepts and never answers. */
  const blackHoled = () => {
    const client = new Redis({ host: "127.0.0.1", port: /** @type {net.AddressInfo} */ (hole.address()).port });
    client.on("error", () => {});
    clients.push(client);
    return client;
  };
  before(async () => {
    hole = net.createServer((s) => {
      sockets.add(s);
      s.on("error", () => {});
    });
    await new Promise((r) => hole.listen(0, "127.0.0.1", () => r(undefined)));
  });
  after(async () => {
    for (const c of clients) c.disconnect();
    for (const s of sockets) s.destroy();
    await new Promise((r) => hole.close(r));
  });

  it("counts failed_closed (Unavailable, passed on) and failed_open", async () => {
    const register = new Registry();
    const metrics = new PrometheusMetrics({ register });
    const closed = new RateLimits(blackHoled(), { timeout: 50, backend: "module", metrics });
    await assert.rejects(closed.gcra({ rate: 10, per: "1s", name: "api" }).take("k"), Unavailable);
    const open = new RateLimits(blackHoled(), { timeout: 50, backend: "module", failOpen: true, metrics });
    assert.equal((await open.gcra({ rate: 10, per: "1s", name: "api" }).take("k", 2)).failedOpen, true);
    const { families, samples } = await exposition(register);
    // No refusal: the top-k family is there, with no series.
    assert.deepEqual(
      Object.fromEntries(Object.entries(families).map(([name, [type]]) => [name, type])),
      Object.fromEntries(CONTRACT.metrics.map((/** @type {any} */ m) => [m.name, m.type])),
    );
    assert.deepEqual(counts(samples, "api"), { failed_closed: 1, failed_open: 1, "units failed_closed": 1, "units failed_open": 2, calls: 2 });
    assert.deepEqual(series(samples, "ratelimit_client_top_refused"), {});
    assert.deepEqual(series(samples, "ratelimit_client_backend"), { '{backend="module"}': 1 });
    // Each call ended by its deadline (50 ms), within the bucket of 0.25 s.
    assert.equal(samples.get('ratelimit_client_call_duration_seconds_bucket{le="0.25",limit="api"}'), 2);
  });

  for (const failOpen of [false, true]) {
    it(`the middleware failing ${failOpen ? "open" : "closed"} counts it so`, async () => {
      const register = new Registry();
      const limits = new RateLimits(blackHoled(), { timeout: 50, backend: "module", metrics: new PrometheusMetrics({ register }) });
      const middleware = rateLimit({ limiter: limits.slidingLog({ limit: 1, window: "1m", name: "web" }), key: () => "frank", failOpen, onError: () => {} });
      assert.deepEqual(await requests(middleware, 1), [failOpen ? 200 : 503]);
      const outcome = failOpen ? "failed_open" : "failed_closed";
      assert.deepEqual(counts((await exposition(register)).samples, "web"), { [outcome]: 1, [`units ${outcome}`]: 1, calls: 1 });
    });
  }
});
