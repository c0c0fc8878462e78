"use strict";

const { adapterFor } = require("./adapters");
const { RateLimitError, isReplyError, wrap } = require("./errors");
const { librarySource, standaloneScripts } = require("./lua");
const limiters = require("./limiters");

/** The client's version: the functions library it loads answers the same from rl_version. */
const VERSION = require("../package.json").version;

/** @typedef {"module" | "functions" | "scripts"} Backend */

// The module's command for each function of the library.
/** @type {Record<string, string>} */
const MODULE_COMMANDS = {
  gcra: "RL.GCRA",
  token_bucket: "RL.TOKEN_BUCKET",
  fixed: "RL.FIXED",
  sliding_log: "RL.SLIDING_LOG",
  sliding_counter: "RL.SLIDING_COUNTER",
  all: "RL.ALL",
  concurrency: "RL.CONCURRENCY",
  release: "RL.RELEASE",
  renew: "RL.RENEW",
};

/** @param {unknown} err @param {RegExp} pattern */
const replyMatches = (err, pattern) => isReplyError(err) && pattern.test(/** @type {Error} */ (err).message);
const FUNCTION_NOT_FOUND = /Function not found/i;
const NOSCRIPT = /^NOSCRIPT/;

/**
 * The backend found on each Redis client, shared by every RateLimits over
 * it: a RateLimits made per request does not search again.
 * @type {WeakMap<object, Backend>}
 */
const found = new WeakMap();

/** @param {any} reply */
const identity = (reply) => reply;

/** @param {unknown} err @returns {never} */
function rethrow(err) {
  throw wrap(err);
}

/**
 * Wraps one Redis client (ioredis Redis or Cluster, node-redis 4/5 client or
 * cluster) and finds, on first use, how to reach the limiters on it; the
 * backend is then cached per Redis client (shared by every RateLimits over it):
 *
 * 1. the module, when `RL.GCRA` exists (`COMMAND INFO rl.gcra`): `RL.*` commands;
 * 2. else the functions library `ratelimit` when `FCALL rl_version 0` answers
 *    this client's version: `FCALL rl_<name> numkeys key... args...`;
 * 3. else it loads the library (`FUNCTION LOAD REPLACE`, on every master of a
 *    Cluster), then as 2;
 * 4. else (no Functions: Redis 6, or FUNCTION denied) the standalone scripts
 *    through `EVALSHA`, loaded with `SCRIPT LOAD` on `NOSCRIPT`.
 *
 * A library lost in a failover ("Function not found") is loaded again and
 * the call retried once; a call is never retried after the server ran it.
 */
class RateLimits {
  /**
   * @param {any} client a connected Redis client
   * @param {{backend?: "auto" | Backend}} [options] `backend` skips the
   *   search (`"functions"` still loads the library when it is missing)
   */
  constructor(client, options = {}) {
    const backend = options.backend ?? "auto";
    if (!["auto", "module", "functions", "scripts"].includes(backend)) {
      throw new RangeError(`backend must be "auto", "module", "functions" or "scripts"; got ${JSON.stringify(backend)}`);
    }
    /** @readonly */
    this.client = client;
    /** @private @type {import("./adapters").Adapter} */
    this._adapter = adapterFor(client);
    /** @private */
    this._want = backend;
    /** @private @type {Backend | undefined} */
    this._kind = backend === "module" ? "module" : backend === "auto" ? found.get(client) : undefined;
    /** @private @type {Promise<Backend> | undefined} */
    this._finding = undefined;
    /** @private @type {Promise<void> | undefined} */
    this._loading = undefined;
  }

  /**
   * The backend in use, found on the first call (or now) and cached.
   * @returns {Promise<Backend>}
   */
  backend() {
    if (this._kind !== undefined) return Promise.resolve(this._kind);
    if (this._finding === undefined) {
      this._finding = this._find().then(
        (kind) => {
          this._kind = kind;
          if (this._want === "auto") found.set(this.client, kind);
          return kind;
        },
        (err) => {
          // Not cached: a server that was down is asked again next time.
          this._finding = undefined;
          throw wrap(err);
        },
      );
    }
    return this._finding;
  }

  /** @private @returns {Promise<Backend>} */
  async _find() {
    const send = this._adapter.send;
    if (this._want === "scripts") return this._scriptsOrThrow();
    if (this._want === "auto") {
      try {
        const info = await send(["COMMAND", "INFO", "rl.gcra"]);
        if (Array.isArray(info) && info.length > 0 && info[0]) return "module";
      } catch (err) {
        if (!isReplyError(err)) throw err; // COMMAND denied: look further
      }
    }
    let version;
    try {
      version = await send(["FCALL", "rl_version", "0"]);
    } catch (err) {
      if (!isReplyError(err)) throw err; // no such function, no FCALL, or denied
    }
    if (version !== undefined && String(version) === VERSION) return "functions";
    if (librarySource() !== null) {
      try {
        await this._loadLibrary();
        return "functions";
      } catch (err) {
        if (this._want === "functions" || !isReplyError(err)) throw err;
      }
    } else if (this._want === "functions") {
      throw new RateLimitError("the functions library is not packaged with this client (lua/ratelimit.lua is missing)");
    }
    return this._scriptsOrThrow();
  }

  /** @private @returns {Backend} */
  _scriptsOrThrow() {
    if (standaloneScripts().size === 0) {
      throw new RateLimitError(
        "no backend: RL.GCRA is not a command here, the functions library could not be loaded, " +
          "and the standalone scripts are not packaged with this client (lua/scripts/ is missing)",
      );
    }
    return "scripts";
  }

  /**
   * `FUNCTION LOAD REPLACE` of the packaged library on every master; calls
   * that find the library lost at the same time share one load.
   * @private
   * @returns {Promise<void>}
   */
  _loadLibrary() {
    if (this._loading === undefined) {
      this._loading = this._loadOnMasters().finally(() => {
        this._loading = undefined;
      });
    }
    return this._loading;
  }

  /** @private */
  async _loadOnMasters() {
    const source = librarySource();
    if (source === null) throw new RateLimitError("the functions library is not packaged with this client");
    const masters = await this._adapter.masters();
    await Promise.all(masters.map((send) => send(["FUNCTION", "LOAD", "REPLACE", source])));
  }

  /**
   * Sends function `fn` (`gcra`, `all`, `release`, ...) with its keys and
   * the arguments after them, on the backend in use; resolves to the raw reply.
   * @param {string} fn
   * @param {string[]} keys
   * @param {string[]} args
   * @returns {Promise<any>}
   */
  call(fn, keys, args) {
    return this.run(fn, keys, args, identity);
  }

  /**
   * As `call`, the reply turned into a value by `map` (one promise step on
   * the hot path, not two).
   * @template T
   * @param {string} fn
   * @param {string[]} keys
   * @param {string[]} args
   * @param {(reply: any) => T} map
   * @returns {Promise<T>}
   */
  run(fn, keys, args, map) {
    const kind = this._kind;
    if (kind === undefined) return this.backend().then(() => this.run(fn, keys, args, map));
    const prefix = this._adapter.prefix;
    if (prefix) keys = keys.map((k) => prefix + k);
    if (kind === "module") return this._adapter.send(moduleArgs(fn, keys, args), keys[0]).then(map, rethrow);
    return kind === "functions" ? this._fcall(fn, keys, args, map) : this._evalsha(fn, keys, args, map);
  }

  /**
   * @private @template T
   * @param {string} fn @param {string[]} keys @param {string[]} args @param {(reply: any) => T} map
   * @returns {Promise<T>}
   */
  _fcall(fn, keys, args, map) {
    const command = ["FCALL", `rl_${fn}`, String(keys.length), ...keys, ...args];
    return this._adapter.send(command, keys[0]).then(map, (err) => {
      // The library was lost (a replica promoted before the load reached
      // it, FUNCTION FLUSH): the call did not run. Load it, retry once.
      if (!replyMatches(err, FUNCTION_NOT_FOUND)) rethrow(err);
      return this._loadLibrary()
        .then(() => this._adapter.send(command, keys[0]))
        .then(map, rethrow);
    });
  }

  /**
   * @private @template T
   * @param {string} fn @param {string[]} keys @param {string[]} args @param {(reply: any) => T} map
   * @returns {Promise<T>}
   */
  _evalsha(fn, keys, args, map) {
    const script = standaloneScripts().get(`rl_${fn}`);
    if (!script) return Promise.reject(new RateLimitError(`no standalone script for rl_${fn} is packaged with this client`));
    const command = ["EVALSHA", script.sha, String(keys.length), ...keys, ...args];
    return this._adapter.send(command, keys[0]).then(map, (err) => {
      // Not in this server's script cache (a restart, SCRIPT FLUSH, a new
      // node): the call did not run. Load it where the key lives, retry once.
      if (!replyMatches(err, NOSCRIPT)) rethrow(err);
      return this._adapter
        .send(["SCRIPT", "LOAD", script.source], keys[0])
        .then(() => this._adapter.send(command, keys[0]))
        .then(map, rethrow);
    });
  }

  /**
   * A GCRA limiter: `rate` requests per `per`, evenly spaced, with bursts of
   * up to `burst` at once from rest (default `rate`).
   * @param {import("./limiters").GcraOptions} options
   */
  gcra(options) {
    return limiters.gcra(this, options);
  }

  /**
   * A token bucket of `capacity` tokens, refilled by `refill` tokens every `per`.
   * @param {import("./limiters").TokenBucketOptions} options
   */
  tokenBucket(options) {
    return limiters.tokenBucket(this, options);
  }

  /**
   * `limit` per `window`, windows aligned to the Unix epoch.
   * @param {import("./limiters").WindowOptions} options
   */
  fixedWindow(options) {
    return limiters.window(this, "fixed", options);
  }

  /**
   * At most `limit` in any span of `window`, exactly (a log of instants).
   * @param {import("./limiters").WindowOptions} options
   */
  slidingLog(options) {
    return limiters.window(this, "sliding_log", options);
  }

  /**
   * About `limit` per sliding `window`, from two fixed windows.
   * @param {import("./limiters").WindowOptions} options
   */
  slidingCounter(options) {
    return limiters.window(this, "sliding_counter", options);
  }

  /**
   * Several limiters decided at once (`RL.ALL`): allowed only if every one
   * allows, and only then counted by each.
   * @param {...import("./limiters").Limiter} parts
   */
  allOf(...parts) {
    return new limiters.AllOf(this, parts);
  }

  /**
   * Work in flight: at most `limit` units leased at once, each lease for at
   * most `timeout` unless renewed.
   * @param {import("./limiters").ConcurrencyOptions} options
   */
  concurrency(options) {
    return new limiters.Concurrency(this, options);
  }
}

/** @param {string} fn @param {string[]} keys @param {string[]} args @returns {string[]} */
function moduleArgs(fn, keys, args) {
  const name = MODULE_COMMANDS[fn];
  return fn === "all" ? [name, String(keys.length), ...keys, ...args] : [name, ...keys, ...args];
}

module.exports = { RateLimits, VERSION };
