"use strict";

// One small adapter per Redis client: how to send one command (routed by its
// first key on a Cluster) and how to reach every master (FUNCTION LOAD is not
// sent across shards). Arguments are strings, the command name first.
//
// Each send takes the call's Deadline (lib/deadline.js), aborted when it
// passes, so that a command given up leaves the Redis client's queues (or,
// where it cannot, runs nothing when it is finally written), and so that
// commands given up on a server that stopped answering do not pile up.

const { Unavailable, InvalidParameter } = require("./errors");

/**
 * @typedef {import("./deadline").Deadline} Deadline
 * @typedef {(args: string[], key?: string, deadline?: Deadline) => Promise<any>} Sender
 * @typedef {object} Adapter
 * @property {string} name which client this is, for messages
 * @property {string} prefix prepended to every key (ioredis's keyPrefix)
 * @property {Sender} send one command, routed by `key` on a Cluster
 * @property {(deadline?: Deadline) => Promise<Sender[]>} masters
 *   one sender per master (the client itself when not a Cluster)
 */

const noop = () => {};

/** What a send still waiting when its call's deadline passed rejects with; the call has already answered. */
const GIVEN_UP = new Unavailable("the call was given up at its deadline");

/** Resolves when the deadline passes (the call has answered by then). @param {Deadline | undefined} deadline */
function aborted(deadline) {
  return new Promise((resolve) => {
    if (!deadline) return;
    if (deadline.aborted) resolve(undefined);
    else deadline.onAbort(() => resolve(undefined));
  });
}

// ---------------------------------------------------------------- ioredis

/** @type {WeakMap<Function, any>} */
const routedClasses = new WeakMap();

/**
 * The Command class of an ioredis client (Redis or Cluster), from the
 * client itself: the application's copy of ioredis, wherever this package
 * is installed. (An instance's `constructor` is EventEmitter there, mixed
 * in; the class is seen as the one `call()` hands to `sendCommand`, caught
 * here on the instance for that one synchronous call, which sends nothing.)
 * @param {any} client
 * @returns {any}
 */
function commandClassOf(client) {
  const had = Object.prototype.hasOwnProperty.call(client, "sendCommand");
  const own = client.sendCommand;
  /** @type {any} */
  let Command;
  client.sendCommand = (/** @type {any} */ command) => {
    Command = command.constructor;
    command.resolve(null);
    return command.promise;
  };
  try {
    client.call("PING").catch(noop);
  } finally {
    if (had) client.sendCommand = own;
    else delete client.sendCommand;
  }
  if (typeof Command !== "function") throw new InvalidParameter("ioredis client: its Command class could not be found (ioredis 5 or 6 expected)");
  return Command;
}

/**
 * ioredis's Command with its key given, so that a Cluster routes module
 * commands (unknown to ioredis's command table) straight to the key's slot.
 * Taken from the client instance (the Redis class's static Command), never
 * from require("ioredis"): the application's copy is the one in use.
 *
 * ioredis writes a command again after a reconnection (the offline queue,
 * autoResendUnfulfilledCommands), whether or not its caller gave up on it.
 * A command given up writes a PING in its place: the replies stay in step
 * and the call, which may already have run, never runs twice.
 * @param {any} Command
 * @returns {any}
 */
function routedCommand(Command) {
  let Routed = routedClasses.get(Command);
  if (!Routed) {
    Routed = class extends Command {
      /** @param {string} name @param {string[]} args @param {string | undefined} key */
      constructor(name, args, key) {
        super(name, args, { replyEncoding: "utf8" });
        this.routingKey = key;
        this.abandoned = false;
        this.written = false;
      }
      getKeys() {
        return this.routingKey === undefined ? [] : [this.routingKey];
      }
      /** @param {any} socket */
      toWritable(socket) {
        if (this.abandoned) return "*1\r\n$4\r\nPING\r\n";
        this.written = true;
        return super.toWritable(socket);
      }
    };
    routedClasses.set(Command, Routed);
  }
  return Routed;
}

/**
 * One ioredis connection as the limiters use it, shared by every RateLimits
 * over the client. It writes only on a ready connection, so nothing of ours
 * waits in ioredis's offline queue; when a call finds the client waiting out
 * its reconnect backoff, it reconnects now (the first call once the server
 * answers again succeeds); a command given up after it was written holds
 * back further calls until its answer comes or the connection closes (a
 * frozen server gets one command per connection, not one per call).
 */
class IoredisLink {
  /** @param {any} client */
  constructor(client) {
    this.client = client;
    this.Command = routedCommand(commandClassOf(client));
    /** @type {Set<any>} our commands sent and not yet answered */
    this.inFlight = new Set();
    /** commands given up after being written, still unanswered */
    this.stalled = 0;
    /** @type {Set<() => void>} calls waiting for a change of state */
    this.waiters = new Set();
    /** @type {Promise<void> | null} a reconnection this link started */
    this.attempt = null;
    /** @type {unknown} why that reconnection failed */
    this.failure = undefined;
    client.on("ready", () => this.notify());
    client.on("end", () => this.notify());
    client.on("close", () => this.closed());
  }

  notify() {
    const waiters = [...this.waiters];
    this.waiters.clear();
    for (const wake of waiters) wake();
  }

  /** The connection closed: what we sent on it will never be answered; it is never sent again. */
  closed() {
    for (const command of [...this.inFlight]) {
      command.abandoned = true;
      command.reject(new Error("the connection closed before the answer came"));
    }
    this.stalled = 0;
    this.notify();
  }

  /** A reconnection now, in place of the rest of ioredis's backoff. */
  reconnect() {
    const client = this.client;
    if (client.reconnectTimeout) {
      clearTimeout(client.reconnectTimeout);
      client.reconnectTimeout = null;
    }
    this.failure = undefined;
    this.attempt = client
      .connect()
      .then(noop, (/** @type {unknown} */ err) => {
        this.failure = err;
      })
      .finally(() => {
        this.attempt = null;
        this.notify();
      });
  }

  /**
   * Until the connection is ready and not stalled. A reconnection that this
   * call started and that failed, or a client ended, is Unavailable now.
   * @param {Deadline | undefined} deadline
   */
  async usable(deadline) {
    let started = false;
    for (;;) {
      const { status } = this.client;
      if (status === "ready" && this.stalled === 0) return;
      if (deadline?.aborted) throw GIVEN_UP;
      if (status === "end") throw new Unavailable("the Redis client's connection is closed (ioredis status 'end')");
      if (this.attempt === null && (status === "reconnecting" || status === "wait" || status === "close")) {
        if (started) throw new Unavailable(`could not connect: ${reason(this.failure)}`);
        started = true;
        this.reconnect();
      }
      await Promise.race([new Promise((wake) => this.waiters.add(() => wake(undefined))), aborted(deadline)]);
    }
  }

  /** @type {Sender} */
  send(args, key, deadline) {
    if (this.client.status === "ready" && this.stalled === 0) return this.write(args, key, deadline);
    return this.usable(deadline).then(() => this.write(args, key, deadline));
  }

  /** @param {string[]} args @param {string | undefined} key @param {Deadline | undefined} deadline */
  write(args, key, deadline) {
    if (deadline?.aborted) return Promise.reject(GIVEN_UP);
    const command = new this.Command(args[0], args.slice(1), key);
    this.track(command, deadline);
    this.client.sendCommand(command);
    return command.promise;
  }

  /** Answers of `command` end its tracking; the deadline marks it given up. @param {any} command @param {Deadline | undefined} deadline */
  track(command, deadline) {
    this.inFlight.add(command);
    let stalled = false;
    const answered = () => {
      if (!this.inFlight.delete(command)) return;
      if (stalled) {
        stalled = false;
        this.stalled -= 1;
        this.notify();
      }
    };
    const { resolve, reject } = command;
    command.resolve = (/** @type {unknown} */ value) => {
      answered();
      resolve(value);
    };
    command.reject = (/** @type {unknown} */ err) => {
      answered();
      reject(err);
    };
    deadline?.onAbort(() => {
      command.abandoned = true;
      if (command.written && this.inFlight.has(command)) {
        stalled = true;
        this.stalled += 1;
      }
    });
  }
}

/** @param {unknown} err */
function reason(err) {
  return err instanceof Error && err.message ? err.message : "the connection failed";
}

/** @type {WeakMap<object, IoredisLink>} */
const links = new WeakMap();

/** @param {any} client @returns {Adapter} */
function ioredis(client) {
  let link = links.get(client);
  if (!link) {
    link = new IoredisLink(client);
    links.set(client, link);
  }
  const l = link;
  return {
    name: "ioredis",
    prefix: keyPrefix(client.options.keyPrefix),
    send: (args, key, deadline) => l.send(args, key, deadline),
    masters: async () => [(args, key, deadline) => l.send(args, key, deadline)],
  };
}

/** @param {any} cluster @returns {Adapter} */
function ioredisCluster(cluster) {
  const Command = routedCommand(commandClassOf(cluster));
  /** @param {any} conn @returns {Sender} */
  const sender = (conn) => async (args, key, deadline) => {
    if (deadline?.aborted) throw GIVEN_UP;
    const command = new Command(args[0], args.slice(1), key);
    deadline?.onAbort(() => (command.abandoned = true));
    conn.sendCommand(command);
    return command.promise;
  };
  return {
    name: "ioredis cluster",
    prefix: keyPrefix(cluster.options.keyPrefix || cluster.options.redisOptions?.keyPrefix),
    send: sender(cluster),
    masters: async () => cluster.nodes("master").map(sender),
  };
}

/** @param {unknown} prefix */
const keyPrefix = (prefix) => (typeof prefix === "string" ? prefix : "");

// ------------------------------------------------------------- node-redis

/**
 * A node-redis client or cluster: a command sent while the client is not
 * ready carries the call's AbortSignal (node-redis drops it from its queue
 * if it was not written when the deadline passes);
 * a command given up after it was written holds back further calls until
 * its answer comes or the socket closes (node-redis then rejects it, and
 * never sends it again).
 */
class NodeRedisLink {
  /**
   * @param {(args: string[], key: string | undefined, options: object) => Promise<any>} sendCommand
   * @param {boolean} abortable node-redis 5 and 6 (`abortSignal`); node-redis 4 takes a
   *   `signal` too but, aborted after the write, it unlinks the command from the wrong
   *   list and breaks the queue: there a given-up command waits in its queue.
   * @param {() => boolean | undefined} ready whether the client is connected and ready
   */
  constructor(sendCommand, abortable, ready) {
    this.sendCommand = sendCommand;
    this.abortable = abortable;
    this.ready = ready;
    this.stalled = 0;
    /** @type {Set<() => void>} */
    this.waiters = new Set();
  }

  /** @type {Sender} */
  send(args, key, deadline) {
    if (this.stalled > 0) return this.unstalled(deadline).then(() => this.send(args, key, deadline));
    if (deadline?.aborted) return Promise.reject(GIVEN_UP);
    // A ready client writes the command at once; one that is not keeps it
    // queued, and there the signal takes it out when the deadline passes.
    const queued = deadline !== undefined && this.abortable && this.ready() !== true;
    const sent = this.sendCommand(args, key, queued ? { abortSignal: /** @type {Deadline} */ (deadline).signal } : {});
    if (deadline) {
      let settled = false;
      const done = () => {
        settled = true;
      };
      sent.then(done, done);
      deadline.onAbort(() => {
        // node-redis has rejected at once a command it had not written;
        // one still pending was written and is waiting for its answer.
        setImmediate(() => {
          if (settled) return;
          this.stalled += 1;
          const clear = () => {
            this.stalled -= 1;
            const waiters = [...this.waiters];
            this.waiters.clear();
            for (const wake of waiters) wake();
          };
          sent.then(clear, clear);
        });
      });
    }
    return sent;
  }

  /** Until no command given up after its write is still unanswered. @param {Deadline | undefined} deadline */
  async unstalled(deadline) {
    while (this.stalled > 0) {
      if (deadline?.aborted) throw GIVEN_UP;
      await Promise.race([new Promise((wake) => this.waiters.add(() => wake(undefined))), aborted(deadline)]);
    }
  }
}

/** @type {WeakMap<object, NodeRedisLink>} */
const nodeLinks = new WeakMap();

/** @param {any} owner @param {(args: string[], key: string | undefined, options: object) => Promise<any>} sendCommand */
function nodeLink(owner, sendCommand) {
  let link = nodeLinks.get(owner);
  if (!link) {
    link = new NodeRedisLink(sendCommand, typeof owner.withCommandOptions === "function", () => owner.isReady);
    nodeLinks.set(owner, link);
  }
  return link;
}

/** The longest reconnect delay that still lets the first call after a restart succeed. */
const MAX_RECONNECT_MS = 100;

/**
 * node-redis waits out its reconnect delay in a private loop that nothing
 * outside can cut short, and its default backs off to 2 s (500 ms in
 * node-redis 4): the first calls after a restart would fail. A client must
 * name a short delay.
 * @param {any} client
 */
function checkReconnect(client) {
  const socket = client.options?.socket ?? {};
  const strategy = socket.reconnectStrategy;
  const advice = `create it with socket: { reconnectStrategy: () => 50 } (a delay of at most ${MAX_RECONNECT_MS} ms)`;
  if (strategy === undefined) {
    throw new InvalidParameter(
      `node-redis client: its default reconnectStrategy backs off for up to 2 s after a restart, and the limiter's calls would fail meanwhile; ${advice}`,
    );
  }
  if (strategy === false) {
    throw new InvalidParameter(`node-redis client: reconnectStrategy false never reconnects after a restart; ${advice}`);
  }
  if (typeof strategy === "number" && !(strategy >= 0 && strategy <= MAX_RECONNECT_MS)) {
    throw new InvalidParameter(`node-redis client: reconnectStrategy ${strategy} ms is longer than ${MAX_RECONNECT_MS} ms; ${advice}`);
  }
}

/** @param {any} client @returns {Adapter} */
function nodeRedisClient(client) {
  checkReconnect(client);
  const link = nodeLink(client, (args, _key, options) => client.sendCommand(args, options));
  /** @type {Sender} */
  const send = (args, key, deadline) => link.send(args, key, deadline);
  return { name: "node-redis", prefix: "", send, masters: async () => [send] };
}

/** @param {any} cluster @returns {Adapter} */
function nodeRedisCluster(cluster) {
  const link = nodeLink(cluster, (args, key, options) => cluster.sendCommand(key, false, args, options));
  return {
    name: "node-redis cluster",
    prefix: "",
    send: (args, key, deadline) => link.send(args, key, deadline),
    masters: async () => {
      const clients = await Promise.all(cluster.masters.map((/** @type {any} */ m) => cluster.nodeClient(m)));
      return clients.map((/** @type {any} */ c) => {
        const one = nodeLink(c, (args, _key, options) => c.sendCommand(args, options));
        return (/** @type {string[]} */ args, /** @type {string | undefined} */ key, /** @type {Deadline | undefined} */ deadline) =>
          one.send(args, key, deadline);
      });
    },
  };
}

/**
 * The adapter for a client: ioredis 5/6 (Redis or Cluster), node-redis
 * 4/5/6 (createClient or createCluster), or an object that already is an
 * Adapter (`send(args, key, deadline)` and `masters()`).
 * @param {any} client
 * @returns {Adapter}
 */
function adapterFor(client) {
  if (!client || typeof client !== "object") {
    throw new InvalidParameter("RateLimits needs a Redis client: ioredis (Redis or Cluster) or node-redis 4/5/6 (createClient or createCluster)");
  }
  if (typeof client.isCluster === "boolean" && typeof client.sendCommand === "function" && client.options) {
    return client.isCluster ? ioredisCluster(client) : ioredis(client);
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
  throw new InvalidParameter("RateLimits: unknown Redis client (expected ioredis, node-redis 4/5/6, or an object with send() and masters())");
}

module.exports = { adapterFor, MAX_RECONNECT_MS };
