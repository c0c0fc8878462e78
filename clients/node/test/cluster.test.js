"use strict";

// Redis Cluster clients (ioredis Cluster, node-redis 5 and 4 createCluster)
// on a three-master cluster: with the module, and with the functions library
// that the client loads on every master. Keys of every test land on all
// three masters; allOf's keys share a slot through a hash tag.

const assert = require("node:assert/strict");
const { describe, it, before, after } = require("node:test");
const { RateLimits, ServerError } = require("../lib");
const { adapterFor } = require("../lib/adapters");
const { librarySource, standaloneScripts } = require("../lib/lua");
const { startCluster, cli, cliWithLast } = require("./servers");
const { CLUSTER_CLIENTS } = require("./clients");
const { rateLimitSuite } = require("./suite");

const CLUSTERS = [
  { name: "module", expected: "module", options: { module: true } },
  {
    name: "functions, loaded by the client on every master",
    expected: "functions",
    options: {},
    skip: librarySource() === null && "no functions library (ratelimit.lua in the package, or functions/ratelimit.lua)",
  },
  {
    name: "scripts (FUNCTION renamed away)",
    expected: "scripts",
    options: { args: ["--rename-command", "FUNCTION", ""] },
    skip: standaloneScripts().size === 0 && "no scripts (derived from the functions library)",
  },
];

for (const setup of CLUSTERS) {
  describe(`cluster: ${setup.name}`, { skip: setup.skip }, () => {
    /** @type {Awaited<ReturnType<typeof startCluster>>} */
    let cluster;
    before(async () => {
      cluster = await startCluster(setup.options);
    });
    after(() => cluster?.stop());

    for (const [clientName, connect] of Object.entries(CLUSTER_CLIENTS)) {
      describe(clientName, () => {
        /** @type {{client: any, close: () => Promise<unknown>}} */
        let conn;
        /** @type {RateLimits} */
        let limits;
        before(async () => {
          conn = await connect(cluster.nodes[0].port);
          if (setup.expected === "functions") {
            for (const node of cluster.nodes) cli(node.port, "FUNCTION", "FLUSH");
          }
          limits = new RateLimits(conn.client);
        });
        after(() => conn?.close());

        it(`finds the ${setup.expected} backend`, async () => {
          assert.equal(await limits.backend(), setup.expected);
          if (setup.expected === "functions") {
            for (const node of cluster.nodes) {
              assert.match(cli(node.port, "FUNCTION", "LIST", "LIBRARYNAME", "ratelimit"), /ratelimit/, `master ${node.port}`);
            }
          }
        });

        it("a primary without the library gets it at the search", { skip: setup.expected !== "functions" }, async () => {
          for (const node of cluster.nodes) cli(node.port, "FUNCTION", "FLUSH");
          cliWithLast(cluster.nodes[0].port, /** @type {string} */ (librarySource()), "FUNCTION", "LOAD");
          const fresh = await connect(cluster.nodes[0].port); // the backend is kept per Redis client
          try {
            assert.equal(await new RateLimits(fresh.client).backend(), "functions");
            for (const node of cluster.nodes) {
              assert.match(cli(node.port, "FUNCTION", "LIST", "LIBRARYNAME", "ratelimit"), /ratelimit/, `master ${node.port}`);
            }
          } finally {
            await fresh.close();
          }
        });

        it("routes each key straight to its master", async () => {
          const g = limits.gcra({ rate: 1, per: "1m", burst: 2 });
          await g.take(`rl-cluster:${process.pid}:${clientName}:warm`); // the slot map, the backend
          const keys = Array.from({ length: 12 }, (_, i) => `rl-cluster:${process.pid}:${clientName}:${i}`);
          const moved = movedCount(cluster.nodes);
          for (const k of keys) {
            assert.deepEqual((await g.take(k)).raw, [0, 2, 1, -1, 60000]);
          }
          // No call went to a master that had to redirect it.
          assert.equal(movedCount(cluster.nodes), moved);
          // Each key's state is on the master that owns it, and all three hold some.
          const holders = new Set();
          for (const k of keys) {
            const owners = cluster.nodes.filter((n) => rawExists(n.port, k) === "1");
            assert.equal(owners.length, 1, k);
            holders.add(owners[0].port);
          }
          assert.equal(holders.size, 3);
        });

        it("tags, log and inspect go to each key's master", async () => {
          const log = limits.slidingLog({ limit: 10, window: "1m" });
          const keys = Array.from({ length: 12 }, (_, i) => `rl-cluster-log:${process.pid}:${clientName}:${i}`);
          const moved = movedCount(cluster.nodes);
          for (const [i, k] of keys.entries()) {
            await log.take(k, 2, { tag: `user:${i}` });
            assert.deepEqual(await limits.log(k, "1m", { byTag: true }), [{ tag: `user:${i}`, units: 2 }]);
            const state = await limits.inspect(k);
            assert.deepEqual([state?.kind, state?.entries, state?.tagged], ["sliding_log", 2, 2]);
          }
          assert.equal(movedCount(cluster.nodes), moved);
        });

        it("allOf across slots is the server's CROSSSLOT error", async () => {
          const both = limits.allOf(limits.gcra({ rate: 1, per: "1m" }), limits.fixedWindow({ limit: 1, window: "1m" }));
          // Two keys that hash to different slots.
          await assert.rejects(both.take([`a-${process.pid}`, `b-${process.pid}`]), (err) => {
            assert.ok(err instanceof ServerError);
            assert.match(err.message, /^CROSSSLOT/);
            return true;
          });
        });

        rateLimitSuite(
          () => limits,
          () => adapterFor(conn.client).send,
        );
      });
    }
  });
}

/** MOVED redirections answered by all the nodes so far. */
function movedCount(nodes) {
  let total = 0;
  for (const n of nodes) {
    const m = /errorstat_MOVED:count=(\d+)/.exec(cli(n.port, "INFO", "errorstats"));
    total += m ? Number(m[1]) : 0;
  }
  return total;
}

/** EXISTS key on one node, without following redirections. */
function rawExists(port, key) {
  const out = cli(port, "EXISTS", key).trim();
  return out.startsWith("MOVED") ? "0" : out;
}
