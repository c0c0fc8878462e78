"use strict";

// What the client does when the server forgets the library or the scripts:
// the library lost (FUNCTION FLUSH, as after a failover to a replica the
// load never reached) is loaded again and the call retried once; a script
// missing from the cache (SCRIPT FLUSH, a restart) is loaded on NOSCRIPT and
// the call retried once; a library of another version is replaced. No call
// is ever counted twice.

const assert = require("node:assert/strict");
const { describe, it, before, after } = require("node:test");
const { RateLimits, ServerError, VERSION } = require("../lib");
const { adapterFor } = require("../lib/adapters");
const { librarySource, standaloneScripts } = require("../lib/lua");
const { startServer, cli } = require("./servers");
const { CLIENTS } = require("./clients");

const NO_LIBRARY = librarySource() === null && "no functions library (ratelimit.lua in the package, or functions/ratelimit.lua)";
const NO_SCRIPTS = standaloneScripts().size === 0 && "no scripts (derived from the functions library)";

/** calls of `command` (as INFO commandstats names it) so far. */
function calls(port, command) {
  const m = new RegExp(`cmdstat_${command.replace("|", "\\|")}:calls=(\\d+)`).exec(cli(port, "INFO", "commandstats"));
  return m ? Number(m[1]) : 0;
}

describe("functions: the library lost, or of another version", { skip: NO_LIBRARY }, () => {
  /** @type {Awaited<ReturnType<typeof startServer>>} */
  let server;
  before(async () => {
    server = await startServer();
  });
  after(() => server?.stop());

  for (const [clientName, connect] of Object.entries(CLIENTS)) {
    it(`${clientName}: FUNCTION FLUSH, then one reload and one retry`, async () => {
      const { client, close } = await connect(server.port);
      try {
        const limits = new RateLimits(client);
        const g = limits.gcra({ rate: 1, per: "1h", burst: 5 });
        const k = `lost:${clientName}`;
        assert.equal((await g.take(k)).remaining, 4);
        assert.equal(await limits.backend(), "functions");
        cli(server.port, "FUNCTION", "FLUSH");
        const loads = calls(server.port, "function|load");
        const fcalls = calls(server.port, "fcall");
        assert.equal((await g.take(k)).remaining, 3); // one unit, not two
        assert.equal(calls(server.port, "function|load") - loads, 1);
        assert.equal(calls(server.port, "fcall") - fcalls, 2); // the lost call, the retry
        assert.equal((await g.take(k)).remaining, 2);
      } finally {
        await close();
      }
    });
  }

  it("calls that find the library lost together share one load", async () => {
    const { client, close } = await CLIENTS["ioredis 6"](server.port);
    try {
      const limits = new RateLimits(client);
      const g = limits.gcra({ rate: 1, per: "1h", burst: 5 });
      await g.take("together:warm");
      cli(server.port, "FUNCTION", "FLUSH");
      const loads = calls(server.port, "function|load");
      const results = await Promise.all(Array.from({ length: 10 }, (_, i) => g.take(`together:${i}`)));
      assert.deepEqual(
        results.map((r) => r.remaining),
        Array(10).fill(4),
      );
      assert.equal(calls(server.port, "function|load") - loads, 1);
    } finally {
      await close();
    }
  });

  it("retries once only: a library still missing after the reload is an error", async () => {
    const { client, close } = await CLIENTS["ioredis 6"](server.port);
    try {
      const real = adapterFor(client);
      // A client whose FUNCTION LOAD is lost on the way (it answers OK and
      // loads nothing): the retry finds no library either.
      const adapter = {
        send: (/** @type {string[]} */ args, /** @type {string | undefined} */ key) => real.send(args, key),
        masters: async () => [async (/** @type {string[]} */ args) => (args[0] === "FUNCTION" ? "OK" : real.send(args))],
      };
      const limits = new RateLimits(adapter, { backend: "functions" });
      await real.send(["FUNCTION", "LOAD", "REPLACE", /** @type {string} */ (librarySource())]);
      assert.equal(await limits.backend(), "functions");
      cli(server.port, "FUNCTION", "FLUSH");
      const fcalls = calls(server.port, "fcall");
      await assert.rejects(limits.gcra({ rate: 1, per: "1s" }).take("still-lost"), (err) => {
        assert.ok(err instanceof ServerError);
        assert.match(err.message, /Function not found/i);
        return true;
      });
      assert.equal(calls(server.port, "fcall") - fcalls, 2);
    } finally {
      await close();
    }
  });

  it("a library of another version is replaced by the client's", async () => {
    const { client, close } = await CLIENTS["node-redis 6"](server.port);
    try {
      const old = "#!lua name=ratelimit\nredis.register_function('rl_version', function() return '0.0.0-old' end)\n";
      await client.sendCommand(["FUNCTION", "LOAD", "REPLACE", old]);
      const limits = new RateLimits(client);
      assert.equal(await limits.backend(), "functions");
      assert.equal(await client.sendCommand(["FCALL", "rl_version", "0"]), VERSION);
      assert.deepEqual((await limits.gcra({ rate: 1, per: "10s", burst: 3 }).take("after-upgrade")).raw, [0, 3, 2, -1, 10000]);
    } finally {
      await close();
    }
  });
});

describe("scripts: NOSCRIPT after SCRIPT FLUSH", { skip: NO_SCRIPTS }, () => {
  /** @type {Awaited<ReturnType<typeof startServer>>} */
  let server;
  before(async () => {
    server = await startServer({ args: ["--rename-command", "FUNCTION", ""] });
  });
  after(() => server?.stop());

  for (const [clientName, connect] of Object.entries(CLIENTS)) {
    it(`${clientName}: loaded on NOSCRIPT, the call retried once`, async () => {
      const { client, close } = await connect(server.port);
      try {
        const limits = new RateLimits(client);
        const log = limits.slidingLog({ limit: 5, window: "1h" });
        const k = `noscript:${clientName}`;
        assert.equal((await log.take(k)).remaining, 4);
        assert.equal(await limits.backend(), "scripts");
        cli(server.port, "SCRIPT", "FLUSH");
        const loads = calls(server.port, "script|load");
        const evalshas = calls(server.port, "evalsha");
        assert.deepEqual((await log.take(k)).raw.slice(0, 3), [0, 5, 3]); // one unit, not two
        assert.equal(calls(server.port, "script|load") - loads, 1);
        assert.equal(calls(server.port, "evalsha") - evalshas, 2);
        assert.equal((await log.take(k)).remaining, 2);
      } finally {
        await close();
      }
    });
  }
});
