"use strict";

// The contract against real servers, on every backend: each "fresh" case of
// calls.json sent to a new key answers the case's reply (and decision); a
// limiter the server refuses (sliding_log past the default cap of 10,000)
// fails check() and the middleware's start with the server's words.

const assert = require("node:assert/strict");
const { spawnSync } = require("node:child_process");
const path = require("node:path");
const { describe, it, before, after } = require("node:test");
const { RateLimits, rateLimit, ServerError } = require("../lib");
const { adapterFor } = require("../lib/adapters");
const { startServer, REDIS6 } = require("./servers");
const { CURRENT } = require("./clients");
const { load, forNode, makeLimiter, perform, answerOf, expectedOf } = require("./contract");

const calls = load("calls.json");

const BACKENDS = [
  { name: "module", server: { module: true }, cap: "CONFIG SET ratelimit.sliding_log_max_limit raises the cap, up to 1000000" },
  { name: "functions", server: {}, cap: "the sliding_log_max_limit setting at the top of the library raises the cap, up to 1000000" },
  {
    name: "scripts",
    server: { args: ["--rename-command", "FUNCTION", ""] },
    cap: "the sliding_log_max_limit setting at the top of the library raises the cap, up to 1000000",
  },
  {
    name: "scripts",
    label: "scripts (Redis 6)",
    server: { bin: REDIS6 },
    cap: "the sliding_log_max_limit setting at the top of the library raises the cap, up to 1000000",
    skip: !REDIS6 && "REDIS6_SERVER is not set",
  },
];

/** The case's answer with the positions in `fresh_ignore` taken out. @param {any} c @param {any} value */
function withoutIgnored(c, value) {
  if (!Array.isArray(value)) return value;
  return value.filter((_, i) => !(c.fresh_ignore ?? []).includes(i));
}

for (const backend of BACKENDS) {
  describe(`contract, live: ${backend.label ?? backend.name}`, { skip: backend.skip }, () => {
    /** @type {Awaited<ReturnType<typeof startServer>>} */
    let server;
    before(async () => {
      server = await startServer(backend.server);
    });
    after(() => server?.stop());

    for (const [clientName, connect] of Object.entries(CURRENT)) {
      describe(clientName, () => {
        /** @type {{client: any, close: () => Promise<unknown>}} */
        let conn;
        before(async () => {
          conn = await connect(server.port);
        });
        after(() => conn?.close());

        it(`finds the ${backend.name} backend`, async () => {
          assert.equal(await new RateLimits(conn.client).backend(), backend.name);
        });

        for (const c of forNode(calls.cases).filter((x) => x.fresh)) {
          it(`fresh: ${c.name}`, async () => {
            await adapterFor(conn.client).send(["FLUSHALL"]);
            const limits = new RateLimits(conn.client);
            const answer = await perform(makeLimiter(limits, c.limiter), c.call);
            if ("decision" in c) {
              assert.deepEqual(withoutIgnored(c, answer.raw), withoutIgnored(c, c.reply));
              const decision = answerOf(c, answer);
              if ((c.fresh_ignore ?? []).includes(5)) decision.lease = c.decision.lease; // a lease id is the clock
              assert.deepEqual(decision, expectedOf(c));
            } else {
              assert.deepEqual(answerOf(c, answer), expectedOf(c));
            }
          });
        }

        it("check(): a sliding log past the server's cap is its ServerError, whatever the policy", async () => {
          const limits = new RateLimits(conn.client, { failOpen: true });
          const words = `ERR limit must be an integer from 1 to 10000 (${backend.cap})`;
          await assert.rejects(limits.slidingLog({ limit: 20000, window: "1m" }).check(), (err) => {
            assert.ok(err instanceof ServerError);
            assert.equal(err.code, "ERR");
            assert.equal(err.message, words);
            return true;
          });
          await assert.rejects(limits.slidingLog({ limit: 20000, window: "1m" }).take("k"), { name: "ServerError", message: words });
          await assert.rejects(
            rateLimit({ limiter: limits.allOf(limits.gcra({ rate: 1, per: "1s", name: "a" }), limits.slidingLog({ limit: 20000, window: "1m", name: "b" })) })
              .ready,
            { name: "ServerError", message: `ERR limit 2 (SLIDING_LOG): limit must be an integer from 1 to 10000 (${backend.cap})` },
          );
          assert.equal(await limits.slidingLog({ limit: 10000, window: "1m" }).check(), undefined);
          assert.equal(await limits.concurrency({ limit: 10, timeout: "1m" }).check(), undefined);
        });
      });
    }

    it("an Express app whose limiter the server refuses does not start, with the server's words", () => {
      const app = `
        const express = require("express");
        const Redis = require("ioredis");
        const { RateLimits, rateLimit } = require(${JSON.stringify(path.join(__dirname, "..", "lib"))});
        const limits = new RateLimits(new Redis({ host: "127.0.0.1", port: ${server.port} }));
        const app = express();
        app.use(rateLimit({ limiter: limits.slidingLog({ limit: 20000, window: "1m", name: "api" }) }));
        const http = app.listen(0, "127.0.0.1", () => console.log("listening"));
        setTimeout(() => { console.log("still up"); http.close(); process.exit(0); }, 3000);
      `;
      const run = spawnSync(process.execPath, ["-e", app], { cwd: path.join(__dirname, ".."), encoding: "utf8", timeout: 10000 });
      assert.equal(run.status, 1);
      assert.match(run.stderr, new RegExp(`ServerError: ERR limit must be an integer from 1 to 10000 \\(${backend.cap.replace(/[()]/g, "\\$&")}\\)`));
      assert.doesNotMatch(run.stdout, /still up/);
    });
  });
}
