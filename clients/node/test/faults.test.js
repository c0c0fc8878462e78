"use strict";

// Faults, against real servers that this test starts (and alone freezes and
// kills, by their PIDs): a frozen server (SIGSTOP), a killed one, one
// started again on the same port, a port that accepts and never answers,
// and a connection dropped while a call waits (CLIENT KILL during CLIENT
// PAUSE). Each call answers by its deadline (timeout + 50 ms at most) with
// the failure policy: Unavailable, or a decision marked failedOpen; the
// middleware answers 503 with Retry-After: 1, or lets the request through
// marked. After a restart, the first call once the server answers succeeds.
// The measured times are printed as diagnostics (README: "Faults").

const assert = require("node:assert/strict");
const net = require("node:net");
const { describe, it, before, after } = require("node:test");
const express = require("express");
const { RateLimits, rateLimit, Unavailable } = require("../lib");
const { startServer, cli, ping } = require("./servers");
const { CLIENTS } = require("./clients");

const TIMEOUT = 250;
const LATE = 50;
const FAULT_CLIENTS = ["ioredis 6", "node-redis 6", "ioredis 5"];

/** Milliseconds `work` took, and what it answered or threw. @param {() => Promise<any>} work */
async function timed(work) {
  const start = performance.now();
  try {
    return { ms: performance.now() - start, value: await work(), error: null, end: performance.now() - start };
  } catch (error) {
    return { ms: 0, value: null, error, end: performance.now() - start };
  }
}

/** Polls `check` every 2 ms until it holds, for at most `ms`. @param {() => Promise<boolean>} check @param {number} ms */
async function until(check, ms) {
  const start = performance.now();
  while (!(await check())) {
    if (performance.now() - start > ms) throw new Error(`not within ${ms} ms`);
    await new Promise((r) => setTimeout(r, 2));
  }
}

/** The policy held in time: Unavailable (its words starting as errors.json says), by the deadline. @param {Awaited<ReturnType<typeof timed>>} r */
function assertUnavailable(r, exact = /** @type {string | null} */ (null)) {
  assert.ok(r.error instanceof Unavailable, `expected Unavailable, got ${r.error ?? "a decision"}`);
  if (exact !== null) assert.equal(r.error.message, exact);
  else assert.match(r.error.message, /^rate limiter unavailable: .+/);
  assert.ok(r.end <= TIMEOUT + LATE, `answered after ${r.end.toFixed(1)} ms`);
}

/** @param {Awaited<ReturnType<typeof timed>>} r @param {number} limit */
function assertFailedOpen(r, limit) {
  assert.equal(r.error, null, String(r.error));
  assert.deepEqual(
    [r.value.allowed, r.value.failedOpen, r.value.limit, r.value.remaining, r.value.retryAfter, r.value.reset, r.value.granted],
    [true, true, limit, 0, null, 0, 1],
  );
  assert.ok(r.end <= TIMEOUT + LATE, `answered after ${r.end.toFixed(1)} ms`);
}

/** An app limited by `limits`, fail closed or open; resolves to its URL, what its handler saw, and close(). @param {RateLimits} limits @param {boolean} failOpen */
async function app(limits, failOpen) {
  const served = /** @type {any[]} */ ([]);
  const a = express();
  const mw = rateLimit({ limiter: limits.gcra({ rate: 1000, per: "1s", name: "api" }), key: () => "fault", failOpen, onError: () => {} });
  await mw.ready;
  a.use(mw);
  a.get("/", (req, res) => {
    served.push(req.rateLimit);
    res.send("ok");
  });
  const server = await new Promise((resolve) => {
    const s = a.listen(0, "127.0.0.1", () => resolve(s));
  });
  return {
    url: `http://127.0.0.1:${/** @type {any} */ (server).address().port}/`,
    served,
    close: () => new Promise((r) => /** @type {any} */ (server).close(r)),
  };
}

/** GET url; status, Retry-After and body, and how long it took. @param {string} url */
async function get(url) {
  const start = performance.now();
  const res = await fetch(url);
  const body = await res.text();
  return { status: res.status, retryAfter: res.headers.get("Retry-After"), rateLimit: res.headers.get("RateLimit"), body, ms: performance.now() - start };
}

/** @type {Record<string, Record<string, string>>} */
const figures = {};
/** @param {string} client @param {string} what @param {number} ms */
const note = (client, what, ms) => ((figures[client] ??= {})[what] = `${ms.toFixed(1)} ms`);

for (const clientName of FAULT_CLIENTS) {
  describe(`faults: ${clientName}`, () => {
    it("frozen server (SIGSTOP): the deadline and the policy, then the first call after SIGCONT succeeds", async (t) => {
      const server = await startServer({ module: true });
      const conn = await CLIENTS[clientName](server.port);
      const closed = new RateLimits(conn.client);
      const open = new RateLimits(conn.client, { failOpen: true });
      const g = closed.gcra({ rate: 1000, per: "1s" });
      const web = await app(closed, false);
      const webOpen = await app(closed, true);
      try {
        assert.equal((await g.take("frozen")).allowed, true);
        // Each app answers once first: the measured requests carry no set-up.
        assert.equal((await get(web.url)).status, 200);
        assert.equal((await get(webOpen.url)).status, 200);
        webOpen.served.length = 0;
        process.kill(server.pid, "SIGSTOP");
        const r = await timed(() => g.take("frozen"));
        assertUnavailable(r, `rate limiter unavailable: no answer within ${TIMEOUT} ms`);
        note(clientName, "frozen", r.end);
        assertUnavailable(await timed(() => g.take("frozen")), `rate limiter unavailable: no answer within ${TIMEOUT} ms`);
        assertFailedOpen(await timed(() => open.gcra({ rate: 1000, per: "1s" }).take("frozen")), 1000);
        const refused = await get(web.url);
        assert.deepEqual([refused.status, refused.retryAfter, refused.rateLimit, refused.body], [503, "1", null, "rate limiter unavailable\n"]);
        assert.ok(refused.ms <= TIMEOUT + LATE, `503 after ${refused.ms.toFixed(1)} ms`);
        const through = await get(webOpen.url);
        assert.deepEqual([through.status, through.rateLimit, through.body], [200, null, "ok"]);
        assert.equal(webOpen.served[0].failedOpen, true);
        assert.ok(through.ms <= TIMEOUT + LATE, `let through after ${through.ms.toFixed(1)} ms`);
        process.kill(server.pid, "SIGCONT");
        const back = await timed(() => g.take("frozen"));
        assert.equal(back.error, null, String(back.error));
        assert.equal(back.value.allowed, true);
        t.diagnostic(`frozen: Unavailable after ${r.end.toFixed(1)} ms; after SIGCONT the next call answered in ${back.end.toFixed(1)} ms`);
      } finally {
        process.kill(server.pid, "SIGCONT");
        await web.close();
        await webOpen.close();
        await conn.close();
        await server.stop();
      }
    });

    it("killed server, then started again on its port: the policy by the deadline, then the first call succeeds", async (t) => {
      const first = await startServer({ module: true });
      const conn = await CLIENTS[clientName](first.port);
      const limits = new RateLimits(conn.client);
      const g = limits.gcra({ rate: 1000, per: "1s" });
      const web = await app(limits, false);
      /** @type {Awaited<ReturnType<typeof startServer>> | null} */
      let second = null;
      try {
        assert.equal((await g.take("killed")).allowed, true);
        assert.equal((await get(web.url)).status, 200);
        await first.stop();
        const r = await timed(() => g.take("killed"));
        assertUnavailable(r);
        note(clientName, "killed", r.end);
        assertFailedOpen(await timed(() => new RateLimits(conn.client, { failOpen: true }).gcra({ rate: 1000, per: "1s" }).take("killed")), 1000);
        const refused = await get(web.url);
        assert.deepEqual([refused.status, refused.retryAfter, refused.body], [503, "1", "rate limiter unavailable\n"]);
        assert.ok(refused.ms <= TIMEOUT + LATE, `503 after ${refused.ms.toFixed(1)} ms`);
        // Down long enough for the Redis clients' backoff to grow (ioredis
        // waits up to 2 s, 5 s in ioredis 6, between its own attempts).
        for (let i = 0; i < 8; i++) {
          await new Promise((done) => setTimeout(done, 150));
          assertUnavailable(await timed(() => g.take("killed")));
        }
        second = await startServer({ module: true, port: first.port });
        await until(() => ping(first.port), 5000);
        const back = await timed(() => g.take("killed"));
        assert.equal(back.error, null, `the first call after the restart: ${back.error}`);
        assert.deepEqual(back.value.raw, [0, 1000, 999, -1, 1]);
        note(clientName, "restarted", back.end);
        assert.equal((await get(web.url)).status, 200);
        t.diagnostic(`killed: Unavailable after ${r.end.toFixed(1)} ms; restarted: the first call succeeded in ${back.end.toFixed(1)} ms`);
      } finally {
        await web.close();
        await conn.close();
        await second?.stop();
      }
    });

    it("a port that accepts and never answers: the policy by the deadline", async (t) => {
      /** @type {Set<net.Socket>} */
      const sockets = new Set();
      const hole = net.createServer((s) => {
        sockets.add(s);
        s.on("error", () => {});
      });
      await new Promise((r) => hole.listen(0, "127.0.0.1", () => r(undefined)));
      const port = /** @type {net.AddressInfo} */ (hole.address()).port;
      const client = blackHoled(clientName, port);
      try {
        const limits = new RateLimits(client.client);
        const r = await timed(() => limits.gcra({ rate: 1000, per: "1s" }).take("hole"));
        assertUnavailable(r, `rate limiter unavailable: no answer within ${TIMEOUT} ms`);
        note(clientName, "black-holed", r.end);
        assertFailedOpen(await timed(() => new RateLimits(client.client, { failOpen: true }).gcra({ rate: 1000, per: "1s" }).take("hole")), 1000);
        const web = await app(limits, false);
        try {
          const refused = await get(web.url);
          assert.deepEqual([refused.status, refused.retryAfter], [503, "1"]);
          assert.ok(refused.ms <= TIMEOUT + LATE, `503 after ${refused.ms.toFixed(1)} ms`);
        } finally {
          await web.close();
        }
        t.diagnostic(`black-holed: Unavailable after ${r.end.toFixed(1)} ms`);
      } finally {
        await client.close();
        for (const s of sockets) s.destroy();
        await new Promise((r) => hole.close(r));
      }
    });

    it("a connection dropped while the call waits: Unavailable at once, the call never sent again", async () => {
      const server = await startServer({ module: true });
      const conn = await CLIENTS[clientName](server.port);
      try {
        const g = new RateLimits(conn.client).gcra({ rate: 10, per: "1h" });
        assert.equal((await g.take("dropped")).remaining, 9);
        cli(server.port, "CLIENT", "PAUSE", "10000", "WRITE");
        const waiting = timed(() => g.take("dropped"));
        await until(async () => /cmd=rl\.gcra/.test(cli(server.port, "CLIENT", "LIST")), 200);
        cli(server.port, "CLIENT", "KILL", "TYPE", "normal", "SKIPME", "yes");
        const r = await waiting;
        assertUnavailable(r);
        assert.ok(r.end < TIMEOUT, `told at the drop, not at the deadline: ${r.end.toFixed(1)} ms`);
        cli(server.port, "CLIENT", "UNPAUSE");
        const back = await timed(() => g.take("dropped"));
        assert.equal(back.error, null, String(back.error));
        // The dropped call did not run, nor was it sent again: two units in all.
        assert.equal(back.value.remaining, 8);
        assert.match(cli(server.port, "INFO", "commandstats"), /cmdstat_rl\.gcra:calls=2,/);
      } finally {
        await conn.close();
        await server.stop();
      }
    });
  });
}

/**
 * A client of a port that never answers: ioredis connects by itself and
 * never gets ready; node-redis is left connecting (its connect() would wait).
 * @param {string} clientName @param {number} port
 */
function blackHoled(clientName, port) {
  if (clientName.startsWith("ioredis")) {
    const lib = clientName === "ioredis 6" ? require("ioredis") : require("ioredis5");
    const client = new lib({ host: "127.0.0.1", port });
    client.on("error", () => {});
    return { client, close: async () => client.disconnect() };
  }
  const client = require("redis").createClient({ socket: { host: "127.0.0.1", port, reconnectStrategy: () => 20, connectTimeout: 60000 } });
  client.on("error", () => {});
  client.connect().catch(() => {});
  return { client, close: async () => client.destroy() };
}

describe("faults: the measured times", () => {
  before(() => {});
  after(() => {});
  it("are printed", (t) => {
    for (const [client, row] of Object.entries(figures)) t.diagnostic(`${client}: ${JSON.stringify(row)}`);
  });
});
