"use strict";

// A limiter that rate-limiter-flexible accepts wherever it accepts its own
// (RateLimiterUnion, insuranceLimiter, RLWrapperTimeouts, ...): an instance
// of its RateLimiterCompatibleAbstract, with its method names, its
// RateLimiterRes and its rejection conventions, every decision made by the
// server through RateLimits. rate-limiter-flexible is an optional peer
// dependency, loaded at the first FlexibleLimiter.

const { RateLimits } = require("./client");
const { InvalidParameter, RateLimitError, Unavailable } = require("./errors");
const { checkOptions, toInt } = require("./duration");
const { limiterFor, checkAlgorithm } = require("./express-store");

/** @type {any} rate-limiter-flexible's exports, once loaded */
let flexible;

/** @returns {any} */
function rateLimiterFlexible() {
  if (flexible === undefined) {
    try {
      const lib = require("rate-limiter-flexible");
      // What its own checks name beside RateLimiterCompatibleAbstract, not
      // among its exports: the class RateLimiterMemory extends.
      flexible = { ...lib, RateLimiterAbstract: Object.getPrototypeOf(lib.RateLimiterMemory) };
    } catch (err) {
      if (/** @type {any} */ (err).code !== "MODULE_NOT_FOUND") throw err;
      throw new RateLimitError("FlexibleLimiter needs rate-limiter-flexible: npm install rate-limiter-flexible", err);
    }
    // Its own classes check `instanceof RateLimiterCompatibleAbstract`.
    Object.setPrototypeOf(FlexibleLimiter.prototype, flexible.RateLimiterCompatibleAbstract.prototype);
  }
  return flexible;
}

/**
 * @typedef {object} FlexibleLimiterOptions
 * @property {any} storeClient an ioredis or node-redis client or cluster, as RateLimits takes
 * @property {number} points units per window
 * @property {number} duration the window, in seconds (whole milliseconds)
 * @property {number} [blockDuration] seconds a key is blocked when a consume is refused (0, the default: no block)
 * @property {string} [keyPrefix] default `"rlflx"`; the key of `key` is `${keyPrefix}:${key}`
 * @property {any} [insuranceLimiter] a rate-limiter-flexible limiter that answers when the server cannot be reached
 * @property {import("./express-store").Algorithm} [algorithm] default `"fixed"`
 * @property {number | string} [timeout] as RateLimits takes it (default 250 ms)
 * @property {"auto" | import("./client").Backend} [backend] as RateLimits takes it
 * @property {boolean} [execEvenly] false only
 * @property {import("./metrics").PrometheusMetrics} [metrics] as RateLimits takes it
 */

const FLEXIBLE_OPTIONS = [
  "storeClient",
  "points",
  "duration",
  "blockDuration",
  "keyPrefix",
  "insuranceLimiter",
  "algorithm",
  "timeout",
  "backend",
  "execEvenly",
  "metrics",
];

/** @param {unknown} seconds @param {string} name @param {number} min @returns {number} */
function secondsToMs(seconds, name, min) {
  // Scaled as toMs scales a string: 1.1 s is 1100 ms, not 1100.0000000000002.
  const ms = typeof seconds === "number" ? Math.round(seconds * 1000 * 1e6) / 1e6 : NaN;
  if (!Number.isSafeInteger(ms) || ms < min || ms > 1_000_000_000_000) {
    throw new InvalidParameter(`${name} must be a number of seconds in whole milliseconds, from ${min / 1000} to 1000000000, got ${String(seconds)}`);
  }
  return ms;
}

/** @param {unknown} options @param {string} method */
function noOptions(options, method) {
  if (options !== undefined && options !== null && (typeof options !== "object" || Object.keys(options).length > 0)) {
    throw new InvalidParameter(`FlexibleLimiter.${method}: options (customDuration, ...) are not supported: the window is the limiter's duration`);
  }
}

/**
 * A rate-limiter-flexible limiter decided by redis-ratelimit:
 * `new FlexibleLimiter({ storeClient: redis, points: 10, duration: 1 })`,
 * a fixed window of `duration` seconds allowing `points` (RL.FIXED).
 */
class FlexibleLimiter {
  /** @param {FlexibleLimiterOptions} options */
  constructor(options) {
    const lib = rateLimiterFlexible();
    if (options === null || typeof options !== "object") throw new InvalidParameter("FlexibleLimiter: options must be an object with storeClient, points and duration");
    checkOptions(options, "FlexibleLimiter", FLEXIBLE_OPTIONS);
    const { storeClient, points, duration, blockDuration = 0, keyPrefix = "rlflx", algorithm = "fixed", timeout, backend, insuranceLimiter, metrics } = options;
    if (storeClient === undefined || storeClient === null) throw new InvalidParameter("FlexibleLimiter: storeClient is not set");
    /** @private */
    this._lib = lib;
    /** @readonly units per window */
    this.points = toInt(points, "points", 1, 1_000_000_000);
    /** @readonly the window in seconds */
    this.duration = duration;
    /** @readonly */
    this.msDuration = secondsToMs(duration, "duration", 1);
    /** @private @type {number} */
    this._blockDuration = 0;
    this.blockDuration = blockDuration;
    this.execEvenly = options.execEvenly;
    if (typeof keyPrefix !== "string") throw new InvalidParameter("keyPrefix must be string");
    /** @private */
    this._keyPrefix = keyPrefix;
    /** @readonly */
    this.algorithm = checkAlgorithm(algorithm, "FlexibleLimiter");
    /** @readonly */
    this.limits = new RateLimits(storeClient, {
      ...(timeout === undefined ? {} : { timeout }),
      ...(backend === undefined ? {} : { backend }),
      ...(metrics === undefined ? {} : { metrics }),
    });
    /** @private */
    this._limiter = limiterFor(this.limits, this.algorithm, this.points, this.msDuration);
    /** @private @type {any} */
    this._insurance = undefined;
    this.insuranceLimiter = insuranceLimiter;
  }

  get keyPrefix() {
    return this._keyPrefix;
  }

  /** Seconds a refused consume blocks its key for (0: none). */
  get blockDuration() {
    return this._blockDuration;
  }

  /** @param {number | undefined} value */
  set blockDuration(value) {
    const seconds = value ?? 0;
    if (seconds !== 0) secondsToMs(seconds, "blockDuration", 1);
    this._blockDuration = seconds;
  }

  /** Always false: the server decides at once, it does not delay. */
  get execEvenly() {
    return false;
  }

  /** @param {boolean | undefined} value */
  set execEvenly(value) {
    if (value) throw new InvalidParameter("FlexibleLimiter: execEvenly is not supported (the server answers at once; for pacing use RateLimits' wait option)");
  }

  /** The limiter that answers when the server cannot be reached (Unavailable). */
  get insuranceLimiter() {
    return this._insurance;
  }

  set insuranceLimiter(value) {
    if (value !== undefined && value !== null) {
      if (!(value instanceof this._lib.RateLimiterAbstract) && !(value instanceof this._lib.RateLimiterCompatibleAbstract)) {
        throw new InvalidParameter("insuranceLimiter must be instance of RateLimiterAbstract or RateLimiterCompatibleAbstract");
      }
      value.blockDuration = this.blockDuration;
      value.execEvenly = this.execEvenly;
    }
    this._insurance = value ?? undefined;
  }

  /** @param {string | number} key */
  getKey(key) {
    return this._keyPrefix.length > 0 ? `${this._keyPrefix}:${key}` : String(key);
  }

  /**
   * @private
   * The key in Redis: `rl:` before `getKey(key)`, so that a key that
   * rate-limiter-flexible's own RateLimiterRedis wrote (a counter RL.FIXED
   * would refuse) is never met when moving from it.
   * @param {string | number} key
   */
  _redisKey(key) {
    return `rl:${this.getKey(key)}`;
  }

  /** @param {string} rlKey */
  parseKey(rlKey) {
    return this._keyPrefix.length > 0 ? rlKey.substring(this._keyPrefix.length + 1) : rlKey;
  }

  /**
   * @private
   * Runs `work`; when it rejects with Unavailable and an insurance limiter is
   * set, answers what the insurance's `method` answers instead.
   * @param {string} method @param {unknown[]} args @param {() => Promise<any>} work
   */
  _insured(method, args, work) {
    let done;
    try {
      done = work();
    } catch (err) {
      return Promise.reject(err);
    }
    const insurance = this._insurance;
    if (insurance === undefined) return done;
    return done.catch((err) => {
      if (!(err instanceof Unavailable)) throw err;
      return insurance[method](...args);
    });
  }

  /**
   * A RateLimiterRes for `result`, a call of `n` units: the units counted
   * (`limit - remaining`; on a refusal, plus the `n` refused, so that
   * `consumedPoints > points` as in rate-limiter-flexible's own), the
   * remaining points and the time until the next change.
   * @private
   * @param {import("./limiters").Result} result @param {number} n
   */
  _res(result, n) {
    const counted = result.limit - result.remaining;
    if (result.allowed) return new this._lib.RateLimiterRes(result.remaining, result.reset, counted, n > 0 && counted === n);
    const consumed = counted + Math.max(n, 1);
    return new this._lib.RateLimiterRes(Math.max(result.limit - consumed, 0), result.retryAfter ?? result.reset, consumed, false);
  }

  /** @private @param {unknown} points @param {string} name */
  _points(points, name) {
    return toInt(points, name, 0, 1_000_000_000);
  }

  /**
   * Takes `points` (default 1) on `key`: resolves with a RateLimiterRes when
   * allowed, rejects with one when refused (then blocks the key for
   * `blockDuration` if set), rejects with an Error when the server fails
   * (or answers from the insurance limiter).
   * @param {string | number} key @param {number} [points] @param {object} [options]
   */
  consume(key, points = 1, options = {}) {
    return this._insured("consume", [key, points, options], () => {
      noOptions(options, "consume");
      const n = this._points(points, "points");
      const block = this._blockDuration > 0 ? { block: this._blockDuration * 1000 } : undefined;
      return this._limiter.take(this._redisKey(key), n, block).then((result) => {
        const res = this._res(result, n);
        if (result.allowed) return res;
        throw res;
      });
    });
  }

  /**
   * Charges `points` whatever the limit (FORCE): resolves with the state
   * after it; past the limit, a debt later consumes wait out.
   * @param {string | number} key @param {number} [points] @param {object} [options]
   */
  penalty(key, points = 1, options = {}) {
    return this._insured("penalty", [key, points, options], () => {
      noOptions(options, "penalty");
      const n = this._points(points, "points");
      return this._limiter.take(this._redisKey(key), n, { force: true }).then((result) => this._res(result, n));
    });
  }

  /**
   * Gives `points` back (REFUND), never below nothing counted.
   * @param {string | number} key @param {number} [points] @param {object} [options]
   */
  reward(key, points = 1, options = {}) {
    return this._insured("reward", [key, points, options], () => {
      noOptions(options, "reward");
      const n = this._points(points, "points");
      return this._limiter.refund(this._redisKey(key), n).then((result) => this._res(result, 0));
    });
  }

  /**
   * The state of `key`, changing nothing (a query): null when nothing is
   * counted and it is not blocked.
   * @param {string | number} key @param {object} [options]
   */
  get(key, options = {}) {
    return this._insured("get", [key, options], () => {
      noOptions(options, "get");
      return this._limiter.query(this._redisKey(key)).then((result) => {
        if (result.allowed && result.remaining === result.limit && result.reset === 0) return null;
        return this._res(result, 0);
      });
    });
  }

  /**
   * Blocks `key` for `secDuration` seconds (BLOCK, which the server starts on
   * a refusal): a consume of every point with BLOCK, refused and so blocking
   * when anything is counted; on an empty window it is allowed, a consume of
   * one point then blocks, and a refund gives the points back, so the count
   * is as before. A key already blocked keeps its block. Resolves with
   * RateLimiterRes(0, ms until the block ends, points + 1, false).
   * @param {string | number} key @param {number} secDuration @param {object} [options]
   */
  block(key, secDuration, options = {}) {
    return this._insured("block", [key, secDuration, options], async () => {
      noOptions(options, "block");
      const ms = secondsToMs(secDuration, "secDuration", 1);
      const rlKey = this._redisKey(key);
      const first = await this._limiter.take(rlKey, this.points, { block: ms });
      if (first.allowed) {
        await this._limiter.take(rlKey, 1, { block: ms });
        await this._limiter.refund(rlKey, this.points);
      }
      // A query on a blocked key answers the time until the block ends.
      const state = await this._limiter.query(rlKey);
      return new this._lib.RateLimiterRes(0, state.retryAfter ?? 0, this.points + 1, false);
    });
  }

  /**
   * Sets the points counted on `key` in the current window: deletes the
   * key, then charges `points` (FORCE). `secDuration`, when given, must be
   * the limiter's `duration`: the window is the limiter's.
   * @param {string | number} key @param {number} points @param {number} [secDuration] @param {object} [options]
   */
  set(key, points, secDuration, options = {}) {
    return this._insured("set", [key, points, secDuration, options], async () => {
      noOptions(options, "set");
      if (secDuration !== undefined && secDuration !== this.duration) {
        throw new InvalidParameter(`FlexibleLimiter.set: secDuration must be the limiter's duration (${this.duration}), got ${String(secDuration)}: the window is the limiter's`);
      }
      const n = this._points(points, "points");
      const rlKey = this._redisKey(key);
      await this.limits.delete(rlKey);
      if (n === 0) return new this._lib.RateLimiterRes(0, 0, 0, false);
      const result = await this._limiter.take(rlKey, n, { force: true });
      return new this._lib.RateLimiterRes(0, result.reset, n, false);
    });
  }

  /**
   * Deletes `key` (its count and any block); resolves to whether it existed.
   * @param {string | number} key @param {object} [options]
   */
  delete(key, options = {}) {
    return this._insured("delete", [key, options], () => {
      noOptions(options, "delete");
      return this.limits.delete(this._redisKey(key));
    });
  }
}

module.exports = { FlexibleLimiter };
