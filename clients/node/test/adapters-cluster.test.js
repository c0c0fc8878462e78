"use strict";

// The adapters on a three-master Redis Cluster with the module, through
// ioredis's Cluster: express-rate-limit's store in an Express app over
// HTTP, and FlexibleLimiter, with one identity on each master (chosen by
// CLUSTER KEYSLOT), each key's state on the master that owns it.

const assert = require("node:assert/strict");
const { describe, it, before, after } = require("node:test");
const express = require("express");
const { rateLimit } = require("express-rate-limit");
const { RateLimitStore, FlexibleLimiter } = require("../lib");
const { startCluster, cli } = require("./servers");
const { CLUSTER_CLIENTS } = require("./clients");
const { serve, getWith } = require("./http");

const YEAR = 365 * 24 * 3600 * 1000;

/** The master that owns `key`'s slot: `redis-cli --cluster create` gives three masters 0-5460, 5461-10922, 10923-16383. */
const masterOf = (/** @type {number} */ port, /** @type {string} */ key) => {
  const slot = Number(cli(port, "CLUSTER", "KEYSLOT", key).trim());
  return slot <= 5460 ? 0 : slot <= 10922 ? 1 : 2;
};

/** `prefix` + an identity for each of the three masters, in their order. */
function oneIdentityPerMaster(/** @type {number} */ port, /** @type {string} */ prefix, /** @type {string} */ stem) {
  /** @type {(string | undefined)[]} */
  const found = [undefined, undefined, undefined];
  for (let i = 0; found.includes(undefined); i++) {
    const id = `${stem}-${i}`;
    found[masterOf(port, prefix + id)] ??= id;
  }
  return /** @type {string[]} */ (found);
}

/** Which of the nodes hold `key` (EXISTS on each, no redirection followed). */
function holders(/** @type {{port: number}[]} */ nodes, /** @type {string} */ key) {
  return nodes.flatMap((n, i) => (cli(n.port, "EXISTS", key).trim() === "1" ? [i] : []));
}

describe("the adapters on a Cluster (module, ioredis Cluster)", () => {
  /** @type {Awaited<ReturnType<typeof startCluster>>} */
  let cluster;
  /** @type {{client: any, close: () => Promise<unknown>}} */
  let conn;
  before(async () => {
    cluster = await startCluster({ module: true });
    conn = await CLUSTER_CLIENTS["ioredis 6 Cluster"](cluster.nodes[0].port);
  });
  after(async () => {
    await conn?.close();
    await cluster?.stop();
  });

  it("express-rate-limit: each client's limit on its own master", async () => {
    const store = new RateLimitStore(conn.client);
    const app = express();
    app.use(rateLimit({ windowMs: YEAR, limit: 2, store, keyGenerator: (req) => String(req.get("X-Client")) }));
    app.get("/", (_req, res) => {
      res.send("ok\n");
    });
    const { url, close } = await serve(app);
    const ids = oneIdentityPerMaster(cluster.nodes[0].port, "erl:", `ers-cluster-${process.pid}`);
    try {
      for (const [master, id] of ids.entries()) {
        const statuses = [];
        for (let i = 0; i < 3; i++) statuses.push((await getWith(url, [], { "X-Client": id })).status);
        assert.deepEqual(statuses, [200, 200, 429], id);
        assert.deepEqual(holders(cluster.nodes, `erl:${id}`), [master], id);
      }
    } finally {
      await close();
    }
  });

  it("FlexibleLimiter: consume, then refused, then delete, on each master", async () => {
    const limiter = new FlexibleLimiter({ storeClient: conn.client, points: 1, duration: YEAR / 1000, keyPrefix: "flx-cluster" });
    const ids = oneIdentityPerMaster(cluster.nodes[0].port, "rl:flx-cluster:", `flx-cluster-${process.pid}`);
    for (const [master, id] of ids.entries()) {
      assert.equal((await limiter.consume(id)).consumedPoints, 1);
      await assert.rejects(limiter.consume(id), (res) => /** @type {any} */ (res).consumedPoints === 2);
      assert.deepEqual(holders(cluster.nodes, `rl:flx-cluster:${id}`), [master], id);
      assert.equal(await limiter.delete(id), true);
      assert.deepEqual(holders(cluster.nodes, `rl:flx-cluster:${id}`), [], id);
    }
  });
});
