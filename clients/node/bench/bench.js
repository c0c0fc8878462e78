#!/usr/bin/env node
// The client's cost: calls per second through RateLimits (a GCRA take) against
// the same command sent raw on the same connection, one call in flight at a
// time (pipeline 1), for ioredis (`call`) and node-redis 5 (`sendCommand`).
// Slices of calls alternate raw and client (in turn first), so that each
// pair sees the same load on a shared machine; the figures are the medians
// of the slices' rates and of the pairs' ratios.
//
//   node bench/bench.js [calls per slice, default 2000] [pairs, default 41]
//
// Starts its own Redis with the module (RL_MODULE, REDIS_SERVER as for the
// tests), or the functions backend with BACKEND=functions (no module: the
// client loads the library; raw calls are then FCALL).
"use strict";

const Redis = require("ioredis");
const { createClient } = require("redis");
const { RateLimits } = require("../lib");
const { startServer } = require("../test/servers");

const SLICE = Number(process.argv[2] || 2000);
const PAIRS = Number(process.argv[3] || 41);
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

async function main() {
  const server = await startServer({ module: BACKEND === "module" });
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
    await compare("ioredis 5 (`call`)", () => io.call(raw[0], ...raw.slice(1)), () => ioLimiter.take(key));
    io.disconnect();

    const nr = createClient({ socket: { host: "127.0.0.1", port: server.port } });
    await nr.connect();
    const nrLimiter = new RateLimits(nr).gcra({ rate: 1000000, per: "1s", burst: 1000000 });
    await nrLimiter.take(key);
    await compare("node-redis 5 (`sendCommand`)", () => nr.sendCommand(raw), () => nrLimiter.take(key));
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
  } finally {
    await server.stop();
  }
}

main().catch((err) => {
  console.error(err);
  process.exitCode = 1;
});
