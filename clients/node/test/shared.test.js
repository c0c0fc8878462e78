"use strict";

// One limit shared by services in two languages: the contract's Node.js app
// (clients/contract/apps/app.js, this middleware) and its Python app
// (app.py, the Python client's ASGI middleware) on one server, each GCRA 5
// per minute in bursts of 5 named "api", keyed by X-Client-Id. Five requests
// in all pass, whichever service gets them; the sixth is refused by either;
// Redis holds exactly the contract's key. The Python app runs in the venv
// named by PYTHON (default target/client-python-venv, which .ci/client-node
// makes); without it the test is skipped, saying so.

const assert = require("node:assert/strict");
const { spawn } = require("node:child_process");
const fs = require("node:fs");
const path = require("node:path");
const { describe, it, before, after } = require("node:test");
const { startServer, cli, ROOT } = require("./servers");

const PYTHON = process.env.PYTHON || path.join(ROOT, "target", "client-python-venv", "bin", "python");
const APPS = path.join(ROOT, "clients", "contract", "apps");
const NO_PYTHON = !fs.existsSync(PYTHON) && `no Python venv with the Python client at ${PYTHON} (.ci/client-node makes it)`;

/**
 * Starts an app; resolves once it prints "listening <port>" (at most 30 s).
 * @param {string} command @param {string[]} args @param {number} redisPort
 * @returns {Promise<{url: string, stop: () => Promise<void>}>}
 */
function startApp(command, args, redisPort) {
  const child = spawn(command, args, { env: { ...process.env, PORT: "0", REDIS_PORT: String(redisPort) }, stdio: ["ignore", "pipe", "pipe"] });
  let output = "";
  const stop = async () => {
    if (child.exitCode !== null || child.signalCode !== null) return;
    const exited = new Promise((r) => child.once("exit", r));
    child.kill("SIGKILL");
    await exited;
  };
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      stop();
      reject(new Error(`${args.join(" ")} did not listen within 30 s:\n${output}`));
    }, 30000);
    child.stderr.on("data", (d) => (output += d));
    child.stdout.on("data", (d) => {
      output += d;
      const m = /listening (\d+)/.exec(output);
      if (m) {
        clearTimeout(timer);
        resolve({ url: `http://127.0.0.1:${m[1]}/`, stop });
      }
    });
    child.once("exit", (code) => {
      clearTimeout(timer);
      reject(new Error(`${args.join(" ")} exited (${code}) before listening:\n${output}`));
    });
  });
}

describe("one limit shared by a Node.js and a Python service", { skip: NO_PYTHON }, () => {
  /** @type {Awaited<ReturnType<typeof startServer>>} */
  let server;
  /** @type {{url: string, stop: () => Promise<void>}} */
  let node;
  /** @type {{url: string, stop: () => Promise<void>}} */
  let python;
  before(async () => {
    server = await startServer({ module: true });
    [node, python] = await Promise.all([
      startApp(process.execPath, [path.join(APPS, "app.js")], server.port),
      startApp(PYTHON, [path.join(APPS, "app.py")], server.port),
    ]);
  });
  after(async () => {
    await node?.stop();
    await python?.stop();
    await server?.stop();
  });

  /** @param {string} url @param {string} id */
  const status = async (url, id) => (await fetch(url, { headers: { "X-Client-Id": id } })).status;

  for (const [first, order] of [
    ["python", ["python", "node", "python", "node", "python", "node", "python"]],
    ["node", ["node", "node", "python", "node", "python", "python", "node"]],
  ]) {
    it(`five pass in all, then each refuses (${first} first)`, async () => {
      cli(server.port, "FLUSHALL");
      const id = `client-${first}`;
      const statuses = [];
      for (const service of order) statuses.push(await status(service === "node" ? node.url : python.url, id));
      assert.deepEqual(statuses, [200, 200, 200, 200, 200, 429, 429]);
      assert.deepEqual(cli(server.port, "KEYS", "*").trim().split("\n"), [`ratelimit:{${id}}:api`]);
    });
  }
});
