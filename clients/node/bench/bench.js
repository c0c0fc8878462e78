#!/usr/bin/env node
// The client's cost: calls per second through RateLimits (a GCRA take) against
// the same command sent raw on the same connection, one call in flight at a
// time (pipeline 1), for ioredis (`call`) and node-redis 6 (`sendCommand`).
// Slices of calls alternate raw and client (in turn first), so that each
// pair sees the same load on a shared machine; the figures are the medians
// of the slices' rates and of the pairs' ratios.
//
//   node bench/bench.js [calls per slice, default 2000] [pairs, default 41]
//   node bench/bench.js --flood      only the flood below
//   node bench/bench.js --adapters [calls per round, default 2000] [rounds, default 31]
//                                     only the adapters' overhead (below)
//
// Then a flood from one identity: 10,000 requests through the Express
// middleware's limiter (GCRA, 100 per minute), 50 at a time, with and
// without the local memory of refusals (localRefusals), and the server's
// calls counted by INFO commandstats.
//
// --adapters: the adapters' overhead over a direct call, one server, one
// ioredis connection, the same command (RL.FIXED, a limit never reached):
// `limiter.take(key)`, express-rate-limit's `store.increment(key)` and
// rate-limiter-flexible's `flexible.consume(key)`, in rounds of N calls
// each, the order rotated every round. Per call: the process's CPU time
// (process.cpuUsage, user + system) and the wall time; the medians of the
// rounds, and the median of each round's ratio to the direct call.
//
// Starts its own Redis with the module (RL_MODULE, REDIS_SERVER as for the
// tests), or the functions backend with BACKEND=functions (no module: the
// client loads the library; raw calls are then FCALL).
"use strict";

const Redis = require("ioredis");
const { createClient } = require("redis");
const { RateLimits, RateLimitStore, FlexibleLimiter } = require("../lib");
const { startServer } = require("../test/servers");

const FLOOD_ONLY = process.argv.includes("--flood");
const ADAPTERS_ONLY = process.argv.includes("--adapters");
const numbers = process.argv.slice(2).filter((a) => !a.startsWith("--"));
const SLICE = Number(numbers[0] || 2000);
const PAIRS = Number(numbers[1] || 41);
const FLOOD = 10000;
const BACKEND = process.env.BACKEND || "module";

/** Calls per second of SLICE calls of `call`, one after the other. */
async function rate(call) {
  const start = performance.now();
  for (let i = 0; i < SLICE; i++) await call();
  return SLICE / ((performance.now() - start) / 1000);
}

const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const fmt = (x) => Math.round(x).toLocaleString("en-US");

async function compare(name, raw, client) {
  for (let i = 0; i < 2000; i++) {
    await raw();
    await client();
  }
  const raws = [];
  const clients = [];
  const ratios = [];
  for (let p = 0; p < PAIRS; p++) {
    let a, b;
    if (p % 2 === 0) {
      a = await rate(raw);
      b = await rate(client);
    } else {
      b = await rate(client);
      a = await rate(raw);
    }
    raws.push(a);
    clients.push(b);
    ratios.push(b / a);
  }
  console.log(`| ${name} | ${fmt(median(raws))} | ${fmt(median(clients))} | ${(median(ratios) * 100).toFixed(1)}% |`);
}

/** The server's calls of `command` so far (INFO commandstats). */
async function serverCalls(io, command) {
  const m = new RegExp(`cmdstat_${command.replace(".", "\\.")}:calls=(\\d+)`).exec(await io.info("commandstats"));
  return m ? Number(m[1]) : 0;
}

/**
 * FLOOD requests from one identity, 50 in flight, through a limiter that
 * allows 100 per minute; resolves to the server's calls, the requests
 * allowed, and the time taken.
 */
async function flood(io, localRefusals, key) {
  const limits = new RateLimits(io, { localRefusals });
  const perMinute = limits.gcra({ rate: 100, per: "1m", name: "api" });
  const command = (await limits.backend()) === "module" ? "rl.gcra" : "fcall";
  const before = await serverCalls(io, command);
  let allowed = 0;
  const start = performance.now();
  for (let sent = 0; sent < FLOOD; sent += 50) {
    const batch = await Promise.all(Array.from({ length: 50 }, () => perMinute.take(key)));
    allowed += batch.filter((r) => r.allowed).length;
  }
  const ms = performance.now() - start;
  return { calls: (await serverCalls(io, command)) - before, allowed, ms };
}

async function floods(port) {
  const io = new Redis({ host: "127.0.0.1", port });
  try {
    const off = await flood(io, 0, "bench:flood:off");
    const on = await flood(io, 10000, "bench:flood:on");
    console.log("");
    console.log(`A flood from one identity: ${FLOOD.toLocaleString("en-US")} requests, 50 in flight, GCRA 100 per minute (backend: ${BACKEND})`);
    console.log("");
    console.log("| localRefusals | server calls | allowed | time |");
    console.log("|---|---:|---:|---:|");
    console.log(`| 0 (off) | ${fmt(off.calls)} | ${off.allowed} | ${Math.round(off.ms)} ms |`);
    console.log(`| 10000 | ${fmt(on.calls)} | ${on.allowed} | ${Math.round(on.ms)} ms |`);
    console.log("");
    console.log(`${(100 * (1 - on.calls / off.calls)).toFixed(1)}% fewer server calls with the memory on`);
  } finally {
    io.disconnect();
  }
}

/** CPU µs and wall µs per call of SLICE calls of `call`. */
async function cost(call) {
  const cpu = process.cpuUsage();
  const start = performance.now();
  for (let i = 0; i < SLICE; i++) await call();
  const wall = ((performance.now() - start) * 1000) / SLICE;
  const used = process.cpuUsage(cpu);
  return { cpu: (used.user + used.system) / SLICE, wall };
}

async function adapters(port) {
  const io = new Redis({ host: "127.0.0.1", port });
  try {
    const limits = new RateLimits(io);
    const year = 365 * 24 * 3600;
    const direct = limits.fixedWindow({ limit: 1_000_000_000, window: year * 1000 });
    const store = new RateLimitStore(io);
    store.init({ windowMs: year * 1000, limit: 1_000_000_000 });
    const flexible = new FlexibleLimiter({ storeClient: io, points: 1_000_000_000, duration: year });
    /** @type {[string, () => Promise<unknown>][]} */
    const contenders = [
      ["`limiter.take(key)` (direct)", () => direct.take("bench:adapters:direct")],
      ["express-rate-limit `store.increment(key)`", () => store.increment("bench:adapters:store")],
      ["rate-limiter-flexible `flexible.consume(key)`", () => flexible.consume("bench:adapters:flexible")],
    ];
    for (let i = 0; i < 2000; i++) for (const [, call] of contenders) await call();
    /** @type {{cpu: number, wall: number}[][]} */
    const rounds = contenders.map(() => []);
    for (let r = 0; r < PAIRS; r++) {
      for (let j = 0; j < contenders.length; j++) {
        const c = (r + j) % contenders.length;
        rounds[c].push(await cost(contenders[c][1]));
      }
    }
    const ratio = (/** @type {number} */ c, /** @type {"cpu" | "wall"} */ what) =>
      median(rounds[c].map((x, r) => x[what] / rounds[0][r][what]));
    console.log(`Node ${process.version}, backend: ${await limits.backend()}, ${PAIRS} rounds of ${SLICE} calls each, order rotated, pipeline 1, one ioredis connection`);
    console.log("");
    console.log("| call | CPU µs/call | wall µs/call | CPU / direct | wall / direct |");
    console.log("|---|---:|---:|---:|---:|");
    contenders.forEach(([name], c) => {
      const cpu = median(rounds[c].map((x) => x.cpu));
      const wall = median(rounds[c].map((x) => x.wall));
      console.log(`| ${name} | ${cpu.toFixed(1)} | ${wall.toFixed(1)} | ${(ratio(c, "cpu") * 100).toFixed(1)}% | ${(ratio(c, "wall") * 100).toFixed(1)}% |`);
    });
  } finally {
    io.disconnect();
  }
}

async function main() {
  const server = await startServer({ module: BACKEND === "module" });
  if (ADAPTERS_ONLY) {
    try {
      await adapters(server.port);
    } finally {
      await server.stop();
    }
    return;
  }
  if (FLOOD_ONLY) {
    try {
      await floods(server.port);
    } finally {
      await server.stop();
    }
    return;
  }
  // Always allowed: a million per second, a burst of a million.
  const params = ["999999", "1000000", "1000", "1", "MS"];
  const key = "bench:gcra";
  const raw = BACKEND === "module" ? ["RL.GCRA", key, ...params] : ["FCALL", "rl_gcra", "1", key, ...params];
  try {
    console.log(`Node ${process.version}, backend: ${BACKEND}, ${PAIRS} pairs of ${SLICE}-call slices, pipeline 1, one connection`);
    console.log("");
    console.log("| client | raw calls/s | through RateLimits | client / raw (median of pairs) |");
    console.log("|---|---:|---:|---:|");

    const io = new Redis({ host: "127.0.0.1", port: server.port });
    const ioLimiter = new RateLimits(io).gcra({ rate: 1000000, per: "1s", burst: 1000000 });
    await ioLimiter.take(key); // finds the backend (and loads the library when asked)
    await compare("ioredis 6 (`call`)", () => io.call(raw[0], ...raw.slice(1)), () => ioLimiter.take(key));
    io.disconnect();

    const nr = createClient({ socket: { host: "127.0.0.1", port: server.port, reconnectStrategy: () => 20 } });
    await nr.connect();
    const nrLimiter = new RateLimits(nr).gcra({ rate: 1000000, per: "1s", burst: 1000000 });
    await nrLimiter.take(key);
    await compare("node-redis 6 (`sendCommand`)", () => nr.sendCommand(raw), () => nrLimiter.take(key));
    await nr.quit();

    // The client's own work per call, without the network: an adapter that
    // answers at once, against the same promise answered at once.
    const reply = [0, 1000000, 999999, -1, 1];
    const instant = { send: () => Promise.resolve(reply), masters: async () => [] };
    const local = new RateLimits(instant, { backend: "module" }).gcra({ rate: 1000000, per: "1s", burst: 1000000 });
    const n = 1000000;
    let start = performance.now();
    for (let i = 0; i < n; i++) await Promise.resolve(reply);
    const bare = (performance.now() - start) / n;
    start = performance.now();
    for (let i = 0; i < n; i++) await local.take(key);
    const own = (performance.now() - start) / n;
    console.log("");
    console.log(`The client's own work: ${((own - bare) * 1e6).toFixed(0)} ns per take (${(own * 1e6).toFixed(0)} ns against ${(bare * 1e6).toFixed(0)} ns for an awaited promise alone)`);
    await floods(server.port);
  } finally {
    await server.stop();
  }
}

main().catch((err) => {
  console.error(err);
  process.exitCode = 1;
});
