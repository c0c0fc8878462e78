"use strict";

// Every backend with every client: the module; the functions library,
// preloaded and loaded by the client; the standalone scripts through EVALSHA
// (Redis 7 with FUNCTION renamed away, and Redis 6 when REDIS6_SERVER is set).

const assert = require("node:assert/strict");
const { describe, it, before, after } = require("node:test");
const { RateLimits } = require("../lib");
const { adapterFor } = require("../lib/adapters");
const { librarySource, standaloneScripts } = require("../lib/lua");
const { startServer, cli, REDIS6 } = require("./servers");
const { CLIENTS } = require("./clients");
const { rateLimitSuite } = require("./suite");

const NO_LIBRARY = librarySource() === null && "no functions library (ratelimit.lua in the package, or functions/ratelimit.lua)";
const NO_SCRIPTS = standaloneScripts().size === 0 && "no scripts (derived from the functions library)";

/** `function|load` calls the server has counted. */
function functionLoads(port) {
  const m = /cmdstat_function\|load:calls=(\d+)/.exec(cli(port, "INFO", "commandstats"));
  return m ? Number(m[1]) : 0;
}

const BACKENDS = [
  { name: "module", expected: "module", server: { module: true } },
  { name: "functions, preloaded", expected: "functions", server: {}, preload: true, skip: NO_LIBRARY },
  { name: "functions, loaded by the client", expected: "functions", server: {}, skip: NO_LIBRARY },
  {
    name: "scripts (Redis 7, FUNCTION renamed away)",
    expected: "scripts",
    server: { args: ["--rename-command", "FUNCTION", ""] },
    skip: NO_SCRIPTS,
  },
  {
    name: "scripts (Redis 6)",
    expected: "scripts",
    server: { bin: REDIS6 },
    skip: NO_SCRIPTS || (!REDIS6 && "REDIS6_SERVER is not set"),
  },
];

for (const backend of BACKENDS) {
  describe(`backend: ${backend.name}`, { skip: backend.skip }, () => {
    /** @type {Awaited<ReturnType<typeof startServer>>} */
    let server;
    before(async () => {
      server = await startServer(backend.server);
    });
    after(() => server?.stop());

    for (const [clientName, connect] of Object.entries(CLIENTS)) {
      describe(clientName, () => {
        /** @type {{client: any, close: () => Promise<unknown>}} */
        let conn;
        /** @type {RateLimits} */
        let limits;
        before(async () => {
          conn = await connect(server.port);
          if (backend.expected === "functions") {
            await adapterFor(conn.client).send(["FUNCTION", "FLUSH"]);
            if (backend.preload) {
              await adapterFor(conn.client).send(["FUNCTION", "LOAD", /** @type {string} */ (librarySource())]);
            }
          }
          limits = new RateLimits(conn.client);
        });
        after(() => conn?.close());

        it(`finds the ${backend.expected} backend`, async () => {
          const loadsBefore = backend.expected === "functions" ? functionLoads(server.port) : 0;
          assert.equal(await limits.backend(), backend.expected);
          assert.equal(await limits.backend(), backend.expected);
          if (backend.expected === "functions") {
            // Preloaded: found at the client's version, not loaded again.
            // Otherwise: loaded once, by the client.
            assert.equal(functionLoads(server.port) - loadsBefore, backend.preload ? 0 : 1);
            assert.match(cli(server.port, "FUNCTION", "LIST", "LIBRARYNAME", "ratelimit"), /ratelimit/);
          }
          // Found once per client: another RateLimits over it asks nothing.
          const asked = cli(server.port, "INFO", "commandstats").match(/cmdstat_(rl\.gcra|fcall|function\|load):calls=\d+/g);
          assert.equal(await new RateLimits(conn.client).backend(), backend.expected);
          assert.deepEqual(cli(server.port, "INFO", "commandstats").match(/cmdstat_(rl\.gcra|fcall|function\|load):calls=\d+/g), asked);
        });

        rateLimitSuite(
          () => limits,
          () => adapterFor(conn.client).send,
        );
      });
    }
  });
}
