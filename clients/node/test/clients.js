"use strict";

// The Redis clients under test, each connected to a port: ioredis 6 and 5,
// node-redis 6, 5 and 4 (the older majors installed under aliases),
// standalone and Cluster. node-redis clients name a short reconnect delay,
// as RateLimits requires of them (README: "Redis clients").

const Redis = require("ioredis");
const Redis5 = require("ioredis5");
const redis6 = require("redis");
const redis5 = require("redis5");
const redis4 = require("redis4");

const HOST = "127.0.0.1";
const RECONNECT = () => 20;

/** @typedef {{client: any, close: () => Promise<unknown>}} Connection */

/** @param {any} lib @returns {(port: number) => Promise<Connection>} */
const ioredis = (lib) => async (port) => {
  const client = new lib({ host: HOST, port });
  client.on("error", () => {}); // each failure reaches the call that met it
  await client.ping();
  return { client, close: async () => client.disconnect() };
};

/** @param {any} lib @param {object} [options] more of createClient's options @returns {(port: number) => Promise<Connection>} */
const nodeRedis = (lib, options = {}) => async (port) => {
  const client = lib.createClient({ ...options, socket: { host: HOST, port, reconnectStrategy: RECONNECT } });
  client.on("error", () => {});
  await client.connect();
  return { client, close: async () => (client.destroy ? client.destroy() : client.disconnect()) };
};

/** The current majors: every test runs with them. @type {Record<string, (port: number) => Promise<Connection>>} */
const CURRENT = {
  "ioredis 6": ioredis(Redis),
  "node-redis 6": nodeRedis(redis6),
};

/** Every major the package supports. @type {Record<string, (port: number) => Promise<Connection>>} */
const CLIENTS = {
  ...CURRENT,
  "ioredis 5": ioredis(Redis5),
  "node-redis 5": nodeRedis(redis5),
  "node-redis 4": nodeRedis(redis4),
};

/** @param {any} lib @returns {(port: number) => Promise<Connection>} */
const nodeRedisResp3 = (lib) => nodeRedis(lib, { RESP: 3 });

/** The clients that speak RESP3 (node-redis 5 and later), by the name of the same client speaking RESP2. @type {Record<string, (port: number) => Promise<Connection>>} */
const RESP3_CLIENTS = {
  "node-redis 6": nodeRedisResp3(redis6),
  "node-redis 5": nodeRedisResp3(redis5),
};

/** @param {any} lib @returns {(port: number) => Promise<Connection>} */
const nodeRedisCluster = (lib) => async (port) => {
  const client = lib.createCluster({ rootNodes: [{ url: `redis://${HOST}:${port}` }] });
  client.on("error", () => {});
  await client.connect();
  return { client, close: async () => (client.destroy ? client.destroy() : client.disconnect()) };
};

/** @type {Record<string, (port: number) => Promise<Connection>>} */
const CLUSTER_CLIENTS = {
  "ioredis 6 Cluster": async (port) => {
    const client = new Redis.Cluster([{ host: HOST, port }]);
    await client.ping();
    return { client, close: () => client.quit() };
  },
  "node-redis 6 cluster": nodeRedisCluster(redis6),
  "node-redis 5 cluster": nodeRedisCluster(redis5),
  "node-redis 4 cluster": nodeRedisCluster(redis4),
};

/**
 * An ioredis client to a port where nothing listens (port 1), failing each
 * call at once: no queue, no reconnect.
 */
function unreachable() {
  const client = new Redis({ host: HOST, port: 1, lazyConnect: true, enableOfflineQueue: false, maxRetriesPerRequest: 0, retryStrategy: () => null });
  client.on("error", () => {});
  return client;
}

/**
 * Where the adapters' tests run: the module through ioredis (every test),
 * and a server without it, the functions library, through node-redis.
 */
const ADAPTER_SETUPS = [
  { name: "module, ioredis", server: { module: true }, connect: CURRENT["ioredis 6"], backend: "module", full: true },
  { name: "no module (functions), node-redis", server: {}, connect: CURRENT["node-redis 6"], backend: "functions", full: false },
];

module.exports = { ADAPTER_SETUPS, CLIENTS, CURRENT, CLUSTER_CLIENTS, RESP3_CLIENTS, RECONNECT, unreachable };
