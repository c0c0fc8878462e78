"use strict";

// ioredis's keyPrefix applies to the limiters' keys on every backend, as to
// any key of that client.

const assert = require("node:assert/strict");
const { describe, it, before, after } = require("node:test");
const Redis = require("ioredis");
const { RateLimits } = require("../lib");
const { startServer } = require("./servers");

for (const [name, options, expected] of [
  ["module", { module: true }, "module"],
  ["functions", {}, "functions"],
  ["scripts", { args: ["--rename-command", "FUNCTION", ""] }, "scripts"],
]) {
  describe(`ioredis keyPrefix on the ${name} backend`, () => {
    /** @type {Awaited<ReturnType<typeof startServer>>} */
    let server;
    before(async () => {
      server = await startServer(options);
    });
    after(() => server?.stop());

    it("prefixes every key, allOf's and leases' included", async () => {
      const prefixed = new Redis({ host: "127.0.0.1", port: server.port, keyPrefix: "app1:" });
      const plain = new Redis({ host: "127.0.0.1", port: server.port });
      try {
        const limits = new RateLimits(prefixed);
        assert.equal(await limits.backend(), expected);
        const g = limits.gcra({ rate: 1, per: "1m", burst: 2 });
        assert.deepEqual((await g.take("k")).raw, [0, 2, 1, -1, 60000]);
        const both = limits.allOf(g, limits.fixedWindow({ limit: 5, window: "1h" }));
        await both.take(["{t}:a", "{t}:b"]);
        const lease = await limits.concurrency({ limit: 1, timeout: "1m" }).acquire("jobs");
        assert.equal(lease.allowed, true);
        assert.equal(await plain.exists("app1:k", "app1:{t}:a", "app1:{t}:b", "app1:jobs"), 4);
        assert.equal(await plain.exists("k", "{t}:a", "{t}:b", "jobs"), 0);
        assert.equal(await lease.release(), 1);
      } finally {
        prefixed.disconnect();
        plain.disconnect();
      }
    });
  });
}
