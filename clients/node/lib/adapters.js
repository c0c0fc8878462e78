"use strict";

// One small adapter per Redis client: how to send one command (routed by its
// first key on a Cluster) and how to reach every master (FUNCTION LOAD is not
// sent across shards). Arguments are strings, the command name first.

/**
 * @typedef {object} Adapter
 * @property {string} name which client this is, for messages
 * @property {string} prefix prepended to every key (ioredis's keyPrefix)
 * @property {(args: string[], key?: string) => Promise<any>} send
 *   one command, routed by `key` on a Cluster
 * @property {() => Promise<Array<(args: string[]) => Promise<any>>>} masters
 *   one sender per master (the client itself when not a Cluster)
 */

/** @param {any} client @returns {Adapter} */
function nodeRedisClient(client) {
  return {
    name: "node-redis",
    prefix: "",
    send: (args) => client.sendCommand(args),
    masters: async () => [(args) => client.sendCommand(args)],
  };
}

/** @param {any} cluster @returns {Adapter} */
function nodeRedisCluster(cluster) {
  return {
    name: "node-redis cluster",
    prefix: "",
    send: (args, key) => cluster.sendCommand(key, false, args),
    masters: async () => {
      const clients = await Promise.all(cluster.masters.map((/** @type {any} */ m) => cluster.nodeClient(m)));
      return clients.map((/** @type {any} */ c) => (/** @type {string[]} */ args) => c.sendCommand(args));
    },
  };
}

/** @type {any} */
let RoutedCommand;

/**
 * The ioredis package (a peer dependency): from here, as an installed
 * package finds it; else from the application's main module or the working
 * directory (this package linked from elsewhere, `npm install ../path`).
 * @returns {any}
 */
function loadIoredis() {
  const { createRequire } = require("node:module");
  const path = require("node:path");
  const places = [require.main?.filename, path.join(process.cwd(), "index.js")];
  try {
    return require("ioredis");
  } catch (first) {
    for (const place of places) {
      if (!place) continue;
      try {
        return createRequire(place)("ioredis");
      } catch {
        // next place
      }
    }
    throw new Error("redis-ratelimit: an ioredis client was given but the ioredis package cannot be loaded", { cause: first });
  }
}

/**
 * ioredis's Command with its key given, so that a Cluster routes module
 * commands (unknown to ioredis's command table) straight to the key's slot,
 * and follows MOVED/ASK as for any command. Built without keyPrefix: the
 * adapter prefixes keys itself, the same way on every backend.
 * @returns {any}
 */
function routedCommand() {
  if (!RoutedCommand) {
    const Command = loadIoredis().Command;
    RoutedCommand = class extends Command {
      /** @param {string} name @param {string[]} args @param {string | undefined} key */
      constructor(name, args, key) {
        super(name, args, { replyEncoding: "utf8" });
        this.routingKey = key;
      }
      getKeys() {
        return this.routingKey === undefined ? [] : [this.routingKey];
      }
    };
  }
  return RoutedCommand;
}

/** @param {any} client @returns {Adapter} */
function ioredis(client) {
  const Command = routedCommand();
  /** @param {any} conn @returns {(args: string[], key?: string) => Promise<any>} */
  const sender = (conn) => (args, key) => conn.sendCommand(new Command(args[0], args.slice(1), key));
  const prefix = (client.isCluster ? client.options.keyPrefix || client.options.redisOptions?.keyPrefix : client.options.keyPrefix) || "";
  return {
    name: client.isCluster ? "ioredis cluster" : "ioredis",
    prefix: typeof prefix === "string" ? prefix : "",
    send: sender(client),
    masters: async () => (client.isCluster ? client.nodes("master").map(sender) : [sender(client)]),
  };
}

/**
 * The adapter for a client: ioredis (Redis or Cluster), node-redis 4/5
 * (createClient or createCluster), or an object that already is an Adapter.
 * @param {any} client
 * @returns {Adapter}
 */
function adapterFor(client) {
  if (!client || typeof client !== "object") {
    throw new TypeError("RateLimits needs a Redis client: ioredis (Redis or Cluster) or node-redis 4/5 (createClient or createCluster)");
  }
  if (typeof client.isCluster === "boolean" && typeof client.sendCommand === "function" && client.options) {
    return ioredis(client);
  }
  if (typeof client.nodeClient === "function" && typeof client.sendCommand === "function") {
    return nodeRedisCluster(client);
  }
  if (typeof client.sendCommand === "function") {
    return nodeRedisClient(client);
  }
  if (typeof client.send === "function" && typeof client.masters === "function") {
    return /** @type {Adapter} */ ({ name: "custom", prefix: "", ...client });
  }
  throw new TypeError("RateLimits: unknown Redis client (expected ioredis, node-redis 4/5, or an object with send() and masters())");
}

module.exports = { adapterFor };
