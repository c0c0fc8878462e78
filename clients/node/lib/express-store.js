"use strict";

// A Store for express-rate-limit (its `Store` interface, version 7 and
// later): express-rate-limit keeps its options, headers and handler; every
// decision is made by the server, one call per request, through RateLimits
// (its backend search, deadline and failure policy).

const { RateLimits } = require("./client");
const { InvalidParameter, RateLimitError } = require("./errors");
const { checkOptions, toInt, toMs } = require("./duration");

/** @typedef {"fixed" | "sliding_log" | "sliding_counter" | "gcra" | "token_bucket"} Algorithm */

const ALGORITHMS = ["fixed", "sliding_log", "sliding_counter", "gcra", "token_bucket"];

/**
 * The limiter of `algorithm` that allows `limit` units per `windowMs`: the
 * window algorithms with that limit and window, GCRA with `limit` per
 * window and bursts of `limit`, a token bucket of `limit` tokens refilled
 * by `limit` per window.
 * @param {RateLimits} limits
 * @param {Algorithm} algorithm
 * @param {number} limit
 * @param {number} windowMs
 */
function limiterFor(limits, algorithm, limit, windowMs) {
  switch (algorithm) {
    case "fixed":
      return limits.fixedWindow({ limit, window: windowMs });
    case "sliding_log":
      return limits.slidingLog({ limit, window: windowMs });
    case "sliding_counter":
      return limits.slidingCounter({ limit, window: windowMs });
    case "gcra":
      return limits.gcra({ rate: limit, per: windowMs, burst: limit });
    case "token_bucket":
      return limits.tokenBucket({ capacity: limit, refill: limit, per: windowMs });
  }
}

/** @param {unknown} algorithm @param {string} who @returns {Algorithm} */
function checkAlgorithm(algorithm, who) {
  if (!ALGORITHMS.includes(/** @type {string} */ (algorithm))) {
    throw new InvalidParameter(`${who}: algorithm must be one of ${ALGORITHMS.map((a) => `"${a}"`).join(", ")}, got ${JSON.stringify(algorithm)}`);
  }
  return /** @type {Algorithm} */ (algorithm);
}

/**
 * @typedef {object} RateLimitStoreOptions
 * @property {Algorithm} [algorithm] how the server decides (default
 *   `"fixed"`, as express-rate-limit's MemoryStore counts)
 * @property {string} [prefix] of every key (default `"erl:"`, not rate-limit-redis's
 *   `"rl:"`, whose counters RL.FIXED would refuse while they last)
 * @property {"auto" | import("./client").Backend} [backend] as RateLimits takes it
 * @property {number | string} [timeout] as RateLimits takes it (default 250 ms)
 * @property {boolean} [failOpen] as RateLimits takes it: an unreachable server
 *   lets the request through (default false: increment rejects, and
 *   express-rate-limit answers with the error, or lets it through with its
 *   own `passOnStoreError`)
 * @property {import("./metrics").PrometheusMetrics} [metrics] as RateLimits
 *   takes it: each increment is a decision of the algorithm's limiter
 */

const STORE_OPTIONS = ["algorithm", "prefix", "backend", "timeout", "failOpen", "metrics"];

const NOT_INITIALIZED = "RateLimitStore: init() was not called: give the store to express-rate-limit's rateLimit({ store })";

/**
 * express-rate-limit's `Store`, decided by redis-ratelimit:
 * `rateLimit({ windowMs, limit, store: new RateLimitStore(redis) })`.
 *
 * - `increment(key)` is one call of the chosen algorithm with `limit` and
 *   `windowMs` from `init`. Allowed: `totalHits` is the units the limit
 *   holds (`limit - remaining`, at most `limit`), `resetTime` when it is
 *   fully rested. Refused: `totalHits` is `limit - remaining + 1`, above
 *   `limit`, so express-rate-limit refuses it, and `resetTime` is when the
 *   same request would be allowed (its Retry-After).
 * - `decrement(key)` refunds one unit (REFUND). With `skipFailedRequests`,
 *   express-rate-limit decrements after a refused request too; the server
 *   never counted it, so the store remembers the refusals it answered (until
 *   their `resetTime`) and lets such a decrement pass without a refund.
 * - `get(key)` is a query (it changes nothing); undefined when the limit is
 *   fully rested. `resetKey(key)` deletes the key.
 * - No `resetAll`: the keys of every client live on the server, where only
 *   a scan of every node could find them; delete them with a pattern there.
 */
class RateLimitStore {
  /**
   * @param {any} client an ioredis or node-redis client or cluster, as RateLimits takes
   * @param {RateLimitStoreOptions} [options]
   */
  constructor(client, options = {}) {
    checkOptions(options, "RateLimitStore", STORE_OPTIONS);
    const { algorithm = "fixed", prefix = "erl:", ...rest } = options;
    /** @readonly @type {Algorithm} */
    this.algorithm = checkAlgorithm(algorithm, "RateLimitStore");
    if (typeof prefix !== "string") throw new InvalidParameter("RateLimitStore: prefix must be a string");
    /** @readonly prepended to every key (express-rate-limit's double-count check reads it) */
    this.prefix = prefix;
    /** @readonly keys are shared by every store on the same server */
    this.localKeys = false;
    /** @readonly */
    this.limits = new RateLimits(client, rest);
    /** @type {import("./limiters").Limiter | null} */
    this.limiter = null;
    /** @private @type {Error | null} why init failed */
    this._broken = null;
    /** @private whether express-rate-limit decrements after a refused request */
    this._refundsRefusals = false;
    /** @private refusals answered and not yet decremented: key -> instants (ms) until which each counts */
    this._refused = new Map();
  }

  /**
   * Called by express-rate-limit with its options: `windowMs` and `limit`
   * (or the older `max`). A limit given as a function of the request cannot
   * be decided by the server, which keeps one limit per key: init throws
   * (express-rate-limit logs it) and every increment rejects with the same
   * error.
   * @param {{windowMs?: unknown, limit?: unknown, max?: unknown, skipFailedRequests?: unknown}} options
   */
  init(options) {
    try {
      const limit = options.limit ?? options.max;
      if (typeof limit === "function") {
        throw new InvalidParameter(
          "RateLimitStore: limit is a function of the request, and the server keeps one limit per key: give rateLimit a number (one rateLimit per limit, routed by path or by skip)",
        );
      }
      const most = toInt(limit, "limit", 1, 1_000_000_000);
      const windowMs = toMs(/** @type {any} */ (options.windowMs), "windowMs", 1, 1_000_000_000_000);
      this.limiter = limiterFor(this.limits, this.algorithm, most, windowMs);
      this._refundsRefusals = options.skipFailedRequests === true;
      this._broken = null;
    } catch (err) {
      this._broken = /** @type {Error} */ (err);
      throw err;
    }
  }

  /** @private @returns {import("./limiters").Limiter} */
  _limiter() {
    if (this.limiter !== null) return this.limiter;
    throw this._broken ?? new RateLimitError(NOT_INITIALIZED);
  }

  /**
   * @param {string} key
   * @returns {Promise<{totalHits: number, resetTime: Date}>}
   */
  async increment(key) {
    const limiter = this._limiter();
    const result = await limiter.take(this.prefix + key);
    const now = Date.now();
    if (result.allowed) return { totalHits: result.limit - result.remaining, resetTime: new Date(now + result.reset) };
    const until = now + (result.retryAfter ?? result.reset);
    if (this._refundsRefusals) this._remember(key, until, now);
    return { totalHits: Math.max(result.limit - result.remaining + 1, result.limit + 1), resetTime: new Date(until) };
  }

  /**
   * @private
   * @param {string} key @param {number} until @param {number} now
   */
  _remember(key, until, now) {
    if (this._refused.size >= 10_000) {
      for (const [k, instants] of this._refused) {
        const live = instants.filter((/** @type {number} */ t) => t > now);
        if (live.length === 0) this._refused.delete(k);
        else this._refused.set(k, live);
      }
    }
    const instants = this._refused.get(key);
    if (instants === undefined) this._refused.set(key, [until]);
    else instants.push(until);
  }

  /**
   * Gives one unit back (REFUND), unless it answers a refusal this store
   * gave (see the class).
   * @param {string} key
   * @returns {Promise<void>}
   */
  async decrement(key) {
    const limiter = this._limiter();
    const instants = this._refused.get(key);
    if (instants !== undefined) {
      const now = Date.now();
      const live = instants.filter((/** @type {number} */ t) => t > now);
      if (live.length > 0) {
        live.shift();
        if (live.length > 0) this._refused.set(key, live);
        else this._refused.delete(key);
        return;
      }
      this._refused.delete(key);
    }
    await limiter.refund(this.prefix + key);
  }

  /**
   * The units the limit holds for `key` and when it is fully rested, changing
   * nothing; undefined when it is fully rested (nothing counted).
   * @param {string} key
   * @returns {Promise<{totalHits: number, resetTime: Date} | undefined>}
   */
  async get(key) {
    const result = await this._limiter().query(this.prefix + key);
    if (result.remaining === result.limit && result.reset === 0) return undefined;
    return { totalHits: result.limit - result.remaining, resetTime: new Date(Date.now() + result.reset) };
  }

  /**
   * Deletes `key`: its limit starts over.
   * @param {string} key
   * @returns {Promise<void>}
   */
  async resetKey(key) {
    this._refused.delete(key);
    await this.limits.delete(this.prefix + key);
  }

  /** Forgets the remembered refusals; the Redis client is the caller's to close. */
  shutdown() {
    this._refused.clear();
  }
}

module.exports = { RateLimitStore, limiterFor, checkAlgorithm, ALGORITHMS };
