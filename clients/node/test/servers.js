"use strict";

// Real servers on free loopback ports for the tests, stopped at the end.
//   RL_MODULE      the module (default: target/release/libredis_ratelimit.so)
//   REDIS_SERVER   a Redis 7+ server (default: redis-server on PATH)
//   REDIS6_SERVER  a Redis 6.x server (optional: the scripts backend on a
//                  server without Functions; skipped when unset)

const { spawn, execFileSync } = require("node:child_process");
const fs = require("node:fs");
const net = require("node:net");
const os = require("node:os");
const path = require("node:path");

const ROOT = path.resolve(__dirname, "..", "..", "..");
const MODULE = process.env.RL_MODULE || path.join(ROOT, "target", "release", "libredis_ratelimit.so");
const REDIS = process.env.REDIS_SERVER || "redis-server";
const REDIS6 = process.env.REDIS6_SERVER || "";

/** @returns {Promise<number>} */
function freePort() {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.unref();
    server.on("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const { port } = /** @type {net.AddressInfo} */ (server.address());
      server.close(() => resolve(port));
    });
  });
}

/** Sends PING; resolves to whether the server answered PONG within 500 ms. @param {number} port @returns {Promise<boolean>} */
function ping(port) {
  return new Promise((resolve) => {
    const socket = net.connect(port, "127.0.0.1");
    socket.setTimeout(500);
    socket.on("connect", () => socket.write("PING\r\n"));
    socket.on("data", (data) => {
      socket.destroy();
      resolve(data.toString().startsWith("+PONG"));
    });
    socket.on("error", () => resolve(false));
    socket.on("timeout", () => {
      socket.destroy();
      resolve(false);
    });
  });
}

/**
 * Starts a server. `module`: load the module; `args`: more arguments;
 * `bin`: which server; `port`: this port (a restart), else a free one.
 * @param {{module?: boolean, args?: string[], bin?: string, port?: number}} [options]
 */
async function startServer(options = {}) {
  const port = options.port ?? (await freePort());
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "rl-node-"));
  const args = ["--port", String(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--dir", dir];
  if (options.module) {
    if (!fs.existsSync(MODULE)) throw new Error(`the module is not built: ${MODULE} (cargo build --release -p redis-ratelimit)`);
    args.push("--loadmodule", MODULE);
  }
  args.push(...(options.args ?? []));
  const child = spawn(options.bin ?? REDIS, args, { stdio: ["ignore", "ignore", "inherit"] });
  let exited = false;
  child.on("exit", () => (exited = true));
  // A failed test that never reaches stop() neither keeps the test process
  // alive nor leaves the server behind it.
  child.unref();
  const kill = () => child.kill("SIGKILL");
  process.once("exit", kill);
  for (let i = 0; i < 100 && !(await ping(port)); i++) {
    if (exited) throw new Error(`${options.bin ?? REDIS} exited at start (${args.join(" ")})`);
    await new Promise((r) => setTimeout(r, 50));
  }
  return {
    port,
    host: "127.0.0.1",
    /** the server's process (the fault tests freeze and kill it) */
    pid: /** @type {number} */ (child.pid),
    /** Stops the server and removes its directory. */
    async stop() {
      process.removeListener("exit", kill);
      if (!exited) {
        const done = new Promise((r) => child.once("exit", r));
        child.ref(); // until it has exited
        child.kill("SIGKILL");
        await done;
      }
      fs.rmSync(dir, { recursive: true, force: true });
    },
  };
}

/**
 * A Redis Cluster of three masters (no replicas).
 * @param {{module?: boolean, args?: string[]}} [options]
 */
async function startCluster(options = {}) {
  const nodes = [];
  for (let i = 0; i < 3; i++) {
    nodes.push(
      await startServer({
        ...options,
        args: ["--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf", "--cluster-node-timeout", "5000", ...(options.args ?? [])],
      }),
    );
  }
  execFileSync(
    "redis-cli",
    ["--cluster", "create", ...nodes.map((n) => `127.0.0.1:${n.port}`), "--cluster-replicas", "0", "--cluster-yes"],
    { stdio: "ignore" },
  );
  // Until every node sees every slot assigned.
  for (const node of nodes) {
    for (let i = 0; ; i++) {
      const info = execFileSync("redis-cli", ["-p", String(node.port), "CLUSTER", "INFO"]).toString();
      if (info.includes("cluster_state:ok")) break;
      if (i > 100) throw new Error("the cluster did not come up");
      await new Promise((r) => setTimeout(r, 50));
    }
  }
  return {
    nodes,
    async stop() {
      await Promise.all(nodes.map((n) => n.stop()));
    },
  };
}

/** redis-cli against a port; resolves to its output. */
function cli(port, ...args) {
  return execFileSync("redis-cli", ["-p", String(port), ...args]).toString();
}

/**
 * redis-cli against a port with its last argument read from standard input
 * (`-x`): the library is past the 128 KiB one command-line argument may hold.
 * @param {number} port
 * @param {string} last
 * @param {...string} args
 */
function cliWithLast(port, last, ...args) {
  return execFileSync("redis-cli", ["-p", String(port), "-x", ...args], { input: last }).toString();
}

module.exports = { startServer, startCluster, cli, cliWithLast, ping, freePort, MODULE, REDIS, REDIS6, ROOT };
