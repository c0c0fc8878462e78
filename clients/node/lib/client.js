"use strict";

const { adapterFor } = require("./adapters");
const { RateLimitError, Unavailable, InvalidParameter, isReplyError, classify } = require("./errors");
const { toMs, toInt, checkOptions } = require("./duration");
const { librarySource, standaloneScripts } = require("./lua");
const { RefusalMemory } = require("./refusals");
const { Deadlines } = require("./deadline");

/** @typedef {import("./deadline").Deadline} Deadline */
const limiters = require("./limiters");
const { logArgs, logEntries, tagTotals, inspection } = require("./reading");

/** The client's version: the functions library it loads answers the same from rl_version. */
const VERSION = require("../package.json").version;

/** @typedef {"module" | "functions" | "scripts"} Backend */

/**
 * @typedef {object} RateLimitsOptions
 * @property {"auto" | Backend} [backend] `"auto"` (the default) searches;
 *   another skips the search
 * @property {number | string} [timeout] the deadline of every call (default
 *   250 ms, 1 ms to 60 s): the backend search, a reload and its retry,
 *   connecting, sending, the reply, the Redis client's own waits
 * @property {boolean} [failOpen] when a call meets Unavailable: false (the
 *   default) rejects with it; true answers an allowed decision marked
 *   `failedOpen`
 * @property {number} [localRefusals] how many refused keys are remembered
 *   in-process (0, the default, is off)
 * @property {import("./metrics").PrometheusMetrics} [metrics] records every
 *   decision in Prometheus metrics (default: none recorded)
 */

const OPTIONS = ["backend", "timeout", "failOpen", "localRefusals", "metrics"];

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
  log: "RL.LOG",
  inspect: "RL.INSPECT",
};

/** @param {unknown} err @param {RegExp} pattern */
const replyMatches = (err, pattern) => isReplyError(err) && pattern.test(/** @type {Error} */ (err).message);
const FUNCTION_NOT_FOUND = /Function not found/i;
const NOSCRIPT = /^NOSCRIPT/;
const WRONG_ARITY = /^ERR wrong number of arguments/i;

/**
 * The backend found on each Redis client, shared by every RateLimits over
 * it: a RateLimits made per request does not search again.
 * @type {WeakMap<object, Backend>}
 */
const found = new WeakMap();


/**
 * Wraps one Redis client (ioredis Redis or Cluster, node-redis 4/5/6 client
 * or cluster) and finds, on first use, how to reach the limiters on it; the
 * backend is then cached per Redis client (shared by every RateLimits over it):
 *
 * 1. the module, when `RL.GCRA` is a command (its answer to no arguments is
 *    the wrong-arity error): `RL.*` commands;
 * 2. else the functions library `ratelimit` when `FCALL rl_version 0` answers
 *    this client's version: `FCALL rl_<name> numkeys key... args...`;
 * 3. else, when FCALL answers "Function not found" or another version, it
 *    loads the library (`FUNCTION LOAD REPLACE`, on every master of a
 *    Cluster), then as 2;
 * 4. else (no Functions: Redis 6, or FCALL or FUNCTION denied) the
 *    standalone scripts through `EVALSHA`, loaded with `SCRIPT LOAD` on
 *    `NOSCRIPT`.
 *
 * Every call has a deadline (`timeout`); a call whose answer is lost is
 * never sent again; only an answer that proves it did not run ("Function
 * not found", NOSCRIPT) is followed by a reload and one retry.
 */
class RateLimits {
  /**
   * @param {any} client a Redis client
   * @param {RateLimitsOptions} [options]
   */
  constructor(client, options = {}) {
    checkOptions(options, "RateLimits", OPTIONS);
    const backend = options.backend ?? "auto";
    if (!["auto", "module", "functions", "scripts"].includes(backend)) {
      throw new InvalidParameter(`backend must be "auto", "module", "functions" or "scripts", got ${JSON.stringify(backend)}`);
    }
    const failOpen = options.failOpen ?? false;
    if (typeof failOpen !== "boolean") throw new InvalidParameter(`failOpen must be true or false, got ${JSON.stringify(failOpen)}`);
    /** @readonly the deadline of every call, in ms */
    this.timeout = toMs(options.timeout ?? 250, "timeout", 1, 60_000);
    /** @readonly */
    this.failOpen = failOpen;
    /** @readonly */
    this.localRefusals = toInt(options.localRefusals ?? 0, "localRefusals", 0, 1_000_000);
    /** @readonly */
    this.client = client;
    /** @private @type {import("./adapters").Adapter} */
    this._adapter = adapterFor(client);
    /** @private */
    this._want = backend;
    /** @private @type {Backend | undefined} */
    this._kind = backend === "auto" ? found.get(client) : backend;
    /** @private @type {Promise<Backend> | undefined} */
    this._finding = undefined;
    /** @private @type {Promise<void> | undefined} */
    this._loading = undefined;
    /** @private the deadlines of the calls in flight */
    this._deadlines = new Deadlines(this.timeout);
    /** @type {RefusalMemory | null} the local memory of refusals, when on */
    this.refusals = this.localRefusals > 0 ? new RefusalMemory(this.localRefusals) : null;
    const metrics = options.metrics ?? null;
    if (metrics !== null && typeof (/** @type {any} */ (metrics).measure) !== "function") {
      throw new InvalidParameter("metrics must be a PrometheusMetrics (require(\"redis-ratelimit\").PrometheusMetrics)");
    }
    /** @readonly @type {import("./metrics").PrometheusMetrics | null} records every decision, when given */
    this.metrics = metrics;
  }

  /**
   * @private
   * Runs `work` under the deadline: it gets the call's Deadline, aborted
   * when the deadline passes, and the call then rejects at once with
   * Unavailable. What `work` rejects with is classified (ServerError,
   * Unavailable).
   * @template T
   * @param {(deadline: Deadline) => Promise<T>} work
   * @returns {Promise<T>}
   */
  _within(work) {
    const deadlines = this._deadlines;
    const deadline = deadlines.start();
    return new Promise((resolve, reject) => {
      let answered = false;
      deadline.onAbort(() => {
        if (answered) return;
        answered = true;
        reject(new Unavailable(`no answer within ${deadlines.ms} ms`));
      });
      work(deadline).then(
        (value) => {
          if (answered) return;
          answered = true;
          deadlines.finish(deadline);
          resolve(value);
        },
        (err) => {
          if (answered) return;
          answered = true;
          deadlines.finish(deadline);
          reject(classify(err));
        },
      );
    });
  }

  /**
   * The backend in use, found now (within the deadline) if not yet, and cached.
   * @returns {Promise<Backend>}
   */
  backend() {
    if (this._kind !== undefined) return Promise.resolve(this._kind);
    return this._within((deadline) => this._backend(deadline));
  }

  /** @private @param {Deadline} deadline @returns {Promise<Backend>} */
  _backend(deadline) {
    if (this._kind !== undefined) return Promise.resolve(this._kind);
    if (this._finding === undefined) {
      this._finding = this._find(deadline).then(
        (kind) => {
          this._kind = kind;
          this._finding = undefined;
          found.set(this.client, kind);
          return kind;
        },
        (err) => {
          // Not cached: a server that was down is asked again next time.
          this._finding = undefined;
          throw err;
        },
      );
    }
    return this._finding;
  }

  /** @private @param {Deadline} deadline @returns {Promise<Backend>} */
  async _find(deadline) {
    try {
      await this._adapter.send(["RL.GCRA"], undefined, deadline);
    } catch (err) {
      if (!isReplyError(err)) throw err;
      if (WRONG_ARITY.test(/** @type {Error} */ (err).message)) return "module";
      // unknown command, or denied: look further
    }
    // Every primary must have the library at this version (on a Cluster, a
    // new primary may never have had it).
    const masters = await this._adapter.masters(deadline);
    if (masters.length === 0) throw new Unavailable("the Redis client knows no primary yet");
    const versions = await Promise.allSettled(masters.map((to) => to(["FCALL", "rl_version", "0"], undefined, deadline)));
    let current = true;
    for (const v of versions) {
      if (v.status === "fulfilled") {
        if (String(v.value) !== VERSION) current = false;
        continue;
      }
      if (!isReplyError(v.reason)) throw v.reason;
      // No Functions (Redis 6), or FCALL denied: the scripts.
      if (!FUNCTION_NOT_FOUND.test(/** @type {Error} */ (v.reason).message)) return this._scriptsOrThrow();
      current = false;
    }
    if (current) return "functions";
    if (librarySource() !== null) {
      try {
        await this._loadLibrary(deadline);
        return "functions";
      } catch (err) {
        if (!isReplyError(err)) throw err;
      }
    }
    return this._scriptsOrThrow();
  }

  /** @private @returns {Backend} */
  _scriptsOrThrow() {
    if (standaloneScripts().size === 0) {
      throw new RateLimitError(
        "no backend: RL.GCRA is not a command here, the functions library could not be loaded, " +
          "and this client has no functions library to derive the standalone scripts from (ratelimit.lua is missing)",
      );
    }
    return "scripts";
  }

  /**
   * `FUNCTION LOAD REPLACE` of the packaged library on every master; calls
   * that find the library lost at the same time share one load.
   * @private
   * @param {Deadline} deadline
   * @returns {Promise<void>}
   */
  _loadLibrary(deadline) {
    if (this._loading === undefined) {
      this._loading = this._loadOnMasters(deadline).finally(() => {
        this._loading = undefined;
      });
    }
    return this._loading;
  }

  /** @private @param {Deadline} deadline */
  async _loadOnMasters(deadline) {
    const source = librarySource();
    if (source === null) throw new RateLimitError("this client has no functions library (ratelimit.lua is missing)");
    const masters = await this._adapter.masters(deadline);
    await Promise.all(masters.map((send) => send(["FUNCTION", "LOAD", "REPLACE", source], undefined, deadline)));
  }

  /**
   * Sends function `fn` (`gcra`, `all`, `release`, ...) with its keys and
   * the arguments after them, on the backend in use, within the deadline;
   * resolves to the raw reply.
   * @param {string} fn
   * @param {string[]} keys
   * @param {string[]} args
   * @returns {Promise<any>}
   */
  call(fn, keys, args) {
    return this._within((deadline) => this._send(fn, keys, args, deadline));
  }

  /**
   * As `call`, the reply turned into a value by `map`.
   * @template T
   * @param {string} fn
   * @param {string[]} keys
   * @param {string[]} args
   * @param {(reply: any) => T} map
   * @returns {Promise<T>}
   */
  run(fn, keys, args, map) {
    return this._within((deadline) => this._send(fn, keys, args, deadline).then(map));
  }

  /**
   * @private
   * @param {string} fn @param {string[]} keys @param {string[]} args @param {Deadline} deadline
   * @returns {Promise<any>}
   */
  _send(fn, keys, args, deadline) {
    const kind = this._kind;
    if (kind === undefined) return this._backend(deadline).then(() => this._send(fn, keys, args, deadline));
    const prefix = this._adapter.prefix;
    if (prefix) keys = keys.map((k) => prefix + k);
    const send = (/** @type {string[]} */ command) => this._adapter.send(command, keys[0], deadline);
    if (kind === "module") {
      const name = MODULE_COMMANDS[fn];
      return send(fn === "all" ? [name, String(keys.length), ...keys, ...args] : [name, ...keys, ...args]);
    }
    if (kind === "functions") {
      const command = ["FCALL", `rl_${fn}`, String(keys.length), ...keys, ...args];
      return send(command).catch((err) => {
        // The library was lost (a replica promoted before the load reached
        // it, FUNCTION FLUSH): the call did not run. Load it, retry once.
        if (!replyMatches(err, FUNCTION_NOT_FOUND)) throw err;
        return this._loadLibrary(deadline).then(() => send(command));
      });
    }
    const script = standaloneScripts().get(`rl_${fn}`);
    if (!script) return Promise.reject(new RateLimitError(`the functions library has no script for rl_${fn}`));
    const command = ["EVALSHA", script.sha, String(keys.length), ...keys, ...args];
    return send(command).catch((err) => {
      // Not in this server's script cache (a restart, SCRIPT FLUSH, a new
      // node): the call did not run. Load it where the key lives, retry once.
      if (!replyMatches(err, NOSCRIPT)) throw err;
      return send(["SCRIPT", "LOAD", script.source]).then(() => send(command));
    });
  }

  /**
   * Who used the sliding log on `key` within the last `window` (ms or a
   * duration string; reservations, in the future, included), changing
   * nothing (`RL.LOG`). By default its entries, newest first, one per
   * instant and tag: `{instantUs, units, tag}`; with `byTag`, the units per
   * tag, most first: `{tag, units}`, `tag` null for the untagged. `count`:
   * at most this many items. A missing key answers `[]`; a key of another
   * limiter rejects with ServerError. Tags are read as UTF-8 strings.
   * @param {string} key
   * @param {number | string} window
   * @param {import("./reading").LogOptions} [options]
   * @returns {Promise<any[]>}
   */
  log(key, window, options) {
    const keys = [limiters.checkKey(key)];
    const args = logArgs(window, options);
    return this.run("log", keys, args, options?.byTag ? tagTotals : logEntries);
  }

  /**
   * The state the limiter on `key` keeps, changing nothing (`RL.INSPECT`):
   * `kind` ("gcra", "sliding_log", ...; null when the key holds only a
   * block), the kind's fields as integers (`tat_us`; `tokens`,
   * `updated_us`; `entries`, `tagged`, `oldest_us`, `newest_us`; ...),
   * `blocked_until_us` when a block was set, `pttl` (-1: no expiry). Null
   * for a missing key. The module's RESP3 map and the flat array read alike.
   * @param {string} key
   * @returns {Promise<Record<string, number | string | null> | null>}
   */
  inspect(key) {
    return this.run("inspect", [limiters.checkKey(key)], [], inspection);
  }

  /**
   * Ends the limiter on `key` (`DEL`, the client's key prefix applied, under
   * the deadline): its state and any block. Resolves to whether the key
   * existed.
   * @param {string} key
   * @returns {Promise<boolean>}
   */
  delete(key) {
    const k = this._adapter.prefix + limiters.checkKey(key);
    return this._within((deadline) => this._adapter.send(["DEL", k], k, deadline)).then((n) => Number(n) > 0);
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

module.exports = { RateLimits, VERSION };
