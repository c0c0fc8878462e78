"use strict";

// The package installed the README's ways into an app outside the
// repository (npm install /path/to/clients/node, and npm pack's tarball),
// with the app's own ioredis: an ioredis Cluster client works (the client
// takes ioredis's Command class from the app's client, and loads nothing of
// ioredis itself).

const assert = require("node:assert/strict");
const { execFileSync } = require("node:child_process");
const fs = require("node:fs");
const os = require("node:os");
const path = require("node:path");
const { describe, it, before, after } = require("node:test");
const { startCluster } = require("./servers");

const PACKAGE = path.join(__dirname, "..");
const IOREDIS = require("ioredis/package.json").version;

/** npm, quietly, in `cwd`; the registry only when its cache lacks a package. @param {string[]} args @param {string} cwd */
function npm(args, cwd) {
  return execFileSync("npm", [...args, "--prefer-offline", "--no-audit", "--no-fund", "--loglevel=error"], { cwd, encoding: "utf8", timeout: 180000 });
}

const APP = `
const Redis = require("ioredis");
const { RateLimits } = require("redis-ratelimit");
(async () => {
  const cluster = new Redis.Cluster([{ host: "127.0.0.1", port: Number(process.argv[2]) }]);
  const limits = new RateLimits(cluster);
  const g = limits.gcra({ rate: 1, per: "1m", burst: 3 });
  const replies = [];
  for (const key of ["a", "b", "c", "d", "e", "f"]) replies.push((await g.take(process.argv[3] + ":" + key)).raw);
  const loaded = Object.keys(require.cache).filter((f) => f.includes(${JSON.stringify(path.join(PACKAGE, "node_modules"))}));
  console.log(JSON.stringify({ backend: await limits.backend(), replies, loaded }));
  cluster.disconnect();
})().catch((err) => { console.error(err); process.exit(1); });
`;

describe("installed into an app outside the repository", () => {
  /** @type {Awaited<ReturnType<typeof startCluster>>} */
  let cluster;
  /** @type {string} */
  let dir;
  /** @type {string} */
  let tarball;
  before(async () => {
    cluster = await startCluster({ module: true });
    dir = fs.mkdtempSync(path.join(os.tmpdir(), "rl-node-install-"));
    const name = JSON.parse(npm(["pack", "--json", "--pack-destination", dir], PACKAGE))[0].filename;
    tarball = path.join(dir, name);
  });
  after(async () => {
    await cluster?.stop();
    if (dir) fs.rmSync(dir, { recursive: true, force: true });
  });

  for (const [how, source] of [
    ["the folder (npm install /path/to/clients/node)", () => PACKAGE],
    ["npm pack's tarball", () => tarball],
  ]) {
    it(`${how}, with an ioredis Cluster`, () => {
      const app = fs.mkdtempSync(path.join(dir, "app-"));
      fs.writeFileSync(path.join(app, "package.json"), JSON.stringify({ name: "app", version: "1.0.0", private: true }));
      npm(["install", source(), `ioredis@${IOREDIS}`], app);
      fs.writeFileSync(path.join(app, "app.js"), APP);
      const out = JSON.parse(execFileSync(process.execPath, ["app.js", String(cluster.nodes[0].port), path.basename(app)], { cwd: app, encoding: "utf8", timeout: 30000 }));
      assert.deepEqual(out, { backend: "module", replies: Array(6).fill([0, 3, 2, -1, 60000]), loaded: [] });
    });
  }
});
