"use strict";

// The Redis clients under test, each connected to a port: ioredis, node-redis
// 5 and node-redis 4 (installed as the alias redis4), standalone and Cluster.

const Redis = require("ioredis");
const redis5 = require("redis");
const redis4 = require("redis4");

const HOST = "127.0.0.1";

/** @type {Record<string, (port: number) => Promise<{client: any, close: () => Promise<unknown>}>>} */
const CLIENTS = {
  ioredis: async (port) => {
    const client = new Redis({ host: HOST, port });
    await client.ping();
    return { client, close: () => client.quit() };
  },
  "node-redis 5": async (port) => {
    const client = redis5.createClient({ socket: { host: HOST, port } });
    await client.connect();
    return { client, close: () => client.quit() };
  },
  "node-redis 4": async (port) => {
    const client = redis4.createClient({ socket: { host: HOST, port } });
    await client.connect();
    return { client, close: () => client.quit() };
  },
};

/** @type {Record<string, (port: number) => Promise<{client: any, close: () => Promise<unknown>}>>} */
const CLUSTER_CLIENTS = {
  "ioredis Cluster": async (port) => {
    const client = new Redis.Cluster([{ host: HOST, port }]);
    await client.ping();
    return { client, close: () => client.quit() };
  },
  "node-redis 5 cluster": async (port) => {
    const client = redis5.createCluster({ rootNodes: [{ url: `redis://${HOST}:${port}` }] });
    await client.connect();
    return { client, close: () => client.quit() };
  },
  "node-redis 4 cluster": async (port) => {
    const client = redis4.createCluster({ rootNodes: [{ url: `redis://${HOST}:${port}` }] });
    await client.connect();
    return { client, close: () => client.quit() };
  },
};

module.exports = { CLIENTS, CLUSTER_CLIENTS };
