"use strict";

const { toInt, toMs } = require("./duration");
const { LeaseRefusedError } = require("./errors");

const MAX_COUNT = 1_000_000_000;
const MAX_MS = 1_000_000_000_000;
// The server-side caps (ratelimit.sliding_log_max_limit and
// ratelimit.concurrency_max_limit) default to 10,000 and may be raised up to
// 1,000,000: the server names its own cap when a limit is above it.
const MAX_SETTING = 1_000_000;
const NAME = /^[a-z*][a-z0-9_\-.*]*$/;

/**
 * @typedef {object} TakeOptions
 * @property {boolean} [peek] answer what the call would, change nothing
 * @property {boolean} [refund] give `n` units back instead of taking them
 * @property {boolean} [force] record the request even past the limit (a debt)
 * @property {number | string} [wait] a reservation: admit a request that
 *   fits within this long, with `retryAfter` the time to wait before the work
 * @property {boolean} [atMost] take as many units as allowed, up to `n`
 * @property {number | string} [block] when refused, block the key this long
 */

/** @typedef {{rate: number, per: number | string, burst?: number, name?: string}} GcraOptions */
/** @typedef {{capacity: number, refill: number, per: number | string, name?: string}} TokenBucketOptions */
/** @typedef {{limit: number, window: number | string, name?: string}} WindowOptions */
/** @typedef {{limit: number, timeout: number | string, name?: string}} ConcurrencyOptions */

const OPTIONS = new Set(["peek", "refund", "force", "wait", "atMost", "block"]);

/**
 * The arguments after the parameters: quantity, MS and the options.
 * @param {number} n
 * @param {TakeOptions | undefined} options
 * @returns {string[]}
 */
function optionArgs(n, options) {
  const args = [String(toInt(n, "n", 0, MAX_COUNT)), "MS"];
  if (options === undefined || options === null) return args;
  if (typeof options !== "object") throw new TypeError("options must be an object");
  for (const key of Object.keys(options)) {
    if (!OPTIONS.has(key)) {
      throw new TypeError(`unknown option '${key}' (expected peek, refund, force, wait, atMost or block)`);
    }
  }
  if (options.peek) args.push("PEEK");
  if (options.refund) args.push("REFUND");
  if (options.force) args.push("FORCE");
  if (options.wait !== undefined && options.wait !== null) args.push("WAIT", String(toMs(options.wait, "wait", 0, MAX_MS)));
  if (options.atMost) args.push("AT_MOST");
  if (options.block !== undefined && options.block !== null) args.push("BLOCK", String(toMs(options.block, "block", 1, MAX_MS)));
  return args;
}

/** @param {unknown} name @param {string} fallback @returns {string} */
function policyName(name, fallback) {
  if (name === undefined) return fallback;
  if (typeof name !== "string" || !NAME.test(name)) {
    throw new TypeError(
      `name must be a header token: a lowercase letter, then lowercase letters, digits, '_', '-', '.' or '*'; got ${JSON.stringify(name)}`,
    );
  }
  return name;
}

/** @param {string} key @returns {string} */
function checkKey(key) {
  if (typeof key !== "string" || key.length === 0) throw new TypeError("key must be a non-empty string");
  return key;
}

/**
 * The decision of one call.
 *
 * - `allowed`: the request was allowed (or, with `wait`, reserved).
 * - `limit`: the most units allowed at once from rest.
 * - `remaining`: units that would be allowed right after this call.
 * - `retryAfter`: ms until the same request would be allowed (refused), or
 *   to wait before doing the work (a reservation with `wait`); null when the
 *   reply says -1 (allowed at once, or a request that can never pass).
 * - `reset`: ms until the limiter is fully rested.
 * - `granted`: units granted (`n` when allowed, 0 when refused; with
 *   `atMost`, what the server granted).
 * - `binding`: 1-based position of the binding limit (`allOf`; 1 otherwise).
 * - `raw`: the reply's integers as the server sent them.
 */
class Result {
  /**
   * @param {number[]} raw
   * @param {number} n
   * @param {number} binding
   * @param {number} grantedAt index of the granted units in raw, or -1
   */
  constructor(raw, n, binding, grantedAt) {
    /** @type {boolean} */
    this.allowed = raw[0] === 0;
    /** @type {number} */
    this.limit = raw[1];
    /** @type {number} */
    this.remaining = raw[2];
    /** @type {number | null} */
    this.retryAfter = raw[3] < 0 ? null : raw[3];
    /** @type {number} */
    this.reset = raw[4];
    /** @type {number} */
    this.granted = grantedAt >= 0 ? raw[grantedAt] : this.allowed ? n : 0;
    /** @type {number} */
    this.binding = binding;
    /** @type {number[]} */
    this.raw = raw;
  }
}

/** One limiter on one key per call: RL.GCRA, RL.TOKEN_BUCKET, RL.FIXED, RL.SLIDING_LOG, RL.SLIDING_COUNTER. */
class Limiter {
  /**
   * @param {import("./client").RateLimits} limits
   * @param {string} fn the library's function (gcra, token_bucket, ...)
   * @param {number[]} params the positional parameters, durations in ms
   * @param {string} name the policy's name in the RateLimit headers
   * @param {number} quota `q` of RateLimit-Policy
   * @param {number} windowMs the policy's window, `w` of RateLimit-Policy in ms
   */
  constructor(limits, fn, params, name, quota, windowMs) {
    /** @private */
    this._limits = limits;
    /** @readonly */
    this.algorithm = fn.toUpperCase();
    /** @readonly @type {string} */
    this.fn = fn;
    /** @readonly the parameters as sent (durations in ms) */
    this.params = params.map(String);
    /** @readonly */
    this.name = name;
    /** @readonly */
    this.quota = quota;
    /** @readonly */
    this.windowMs = windowMs;
    /** @private the arguments of a plain take of one unit */
    this._one = [...this.params, "1", "MS"];
    /** @private its reply's value */
    this._oneResult = (/** @type {number[]} */ raw) => new Result(raw, 1, 1, -1);
  }

  /**
   * Takes `n` units (default 1) on `key`, with the options asked.
   * @param {string} key
   * @param {number} [n]
   * @param {TakeOptions} [options]
   * @returns {Promise<Result>}
   */
  take(key, n = 1, options) {
    checkKey(key);
    if (n === 1 && options === undefined) return this._limits.run(this.fn, [key], this._one, this._oneResult);
    const args = [...this.params, ...optionArgs(n, options)];
    const grantedAt = options !== undefined && options !== null && options.atMost ? 5 : -1;
    return this._limits.run(this.fn, [key], args, (raw) => new Result(raw, n, 1, grantedAt));
  }

  /**
   * What taking `n` units would answer now; changes nothing.
   * @param {string} key @param {number} [n] @param {TakeOptions} [options]
   */
  peek(key, n = 1, options) {
    return this.take(key, n, { ...options, peek: true });
  }

  /**
   * The state of `key` (a request of 0 units); changes nothing.
   * @param {string} key
   */
  query(key) {
    return this.take(key, 0);
  }

  /**
   * Gives `n` units back (work admitted and then not done).
   * @param {string} key @param {number} [n]
   */
  refund(key, n = 1) {
    return this.take(key, n, { refund: true });
  }
}

/**
 * @param {import("./client").RateLimits} limits
 * @param {GcraOptions} options
 */
function gcra(limits, options) {
  const { rate, per, burst = rate, name } = options ?? /** @type {any} */ ({});
  const count = toInt(rate, "rate", 1, MAX_COUNT);
  const period = toMs(per, "per", 1, MAX_MS);
  const atOnce = toInt(burst, "burst", 1, MAX_COUNT);
  return new Limiter(limits, "gcra", [atOnce - 1, count, period], policyName(name, "gcra"), atOnce, (atOnce * period) / count);
}

/**
 * @param {import("./client").RateLimits} limits
 * @param {TokenBucketOptions} options
 */
function tokenBucket(limits, options) {
  const { capacity, refill, per, name } = options ?? /** @type {any} */ ({});
  const cap = toInt(capacity, "capacity", 1, MAX_COUNT);
  const count = toInt(refill, "refill", 1, MAX_COUNT);
  const period = toMs(per, "per", 1, MAX_MS);
  return new Limiter(limits, "token_bucket", [cap, count, period], policyName(name, "token_bucket"), cap, (cap * period) / count);
}

/**
 * @param {import("./client").RateLimits} limits
 * @param {"fixed" | "sliding_log" | "sliding_counter"} fn
 * @param {WindowOptions} options
 */
function window(limits, fn, options) {
  const { limit, window: span, name } = options ?? /** @type {any} */ ({});
  const most = toInt(limit, "limit", 1, fn === "sliding_log" ? MAX_SETTING : MAX_COUNT);
  const ms = toMs(span, "window", 1, MAX_MS);
  return new Limiter(limits, fn, [most, ms], policyName(name, fn), most, ms);
}

/** Several limiters, one decision (RL.ALL); `take` gets one key per limiter, in order. */
class AllOf {
  /**
   * @param {import("./client").RateLimits} limits
   * @param {Limiter[]} parts
   */
  constructor(limits, parts) {
    if (parts.length === 0 || parts.length > 100) throw new RangeError("allOf needs 1 to 100 limiters");
    for (const [i, part] of parts.entries()) {
      if (!(part instanceof Limiter)) throw new TypeError(`allOf: argument ${i + 1} is not a limiter`);
    }
    /** @private */
    this._limits = limits;
    /** @readonly */
    this.limiters = parts;
    /** @private */
    this._specs = parts.flatMap((p) => [p.algorithm, ...p.params]);
  }

  /**
   * Takes `n` units on every limiter at once: keys[i] for limiters[i]. On
   * a Cluster the keys must share a slot: give them one hash tag
   * (`{user:42}:burst`, `{user:42}:hourly`).
   * @param {string[]} keys
   * @param {number} [n]
   * @param {TakeOptions} [options]
   * @returns {Promise<Result>}
   */
  take(keys, n = 1, options) {
    if (!Array.isArray(keys) || keys.length !== this.limiters.length) {
      throw new TypeError(`allOf.take needs ${this.limiters.length} keys, one per limiter`);
    }
    keys.forEach(checkKey);
    const args = [...this._specs, ...optionArgs(n, options)];
    const grantedAt = options !== undefined && options !== null && options.atMost ? 6 : -1;
    return this._limits.run("all", keys, args, (raw) => new Result(raw, n, raw[5], grantedAt));
  }

  /** @param {string[]} keys @param {number} [n] @param {TakeOptions} [options] */
  peek(keys, n = 1, options) {
    return this.take(keys, n, { ...options, peek: true });
  }

  /** @param {string[]} keys */
  query(keys) {
    return this.take(keys, 0);
  }

  /** @param {string[]} keys @param {number} [n] */
  refund(keys, n = 1) {
    return this.take(keys, n, { refund: true });
  }
}

/**
 * A lease (RL.CONCURRENCY), or the refusal to give one: `allowed`, `limit`,
 * `remaining` (units free after the call), `retryAfter` (ms until enough
 * leases reach their deadlines, null when never), `reset`, `id` (null when
 * refused). `release()`, `renew()`, and `await using` release it.
 */
class Lease {
  /**
   * @param {Concurrency} owner @param {string} key @param {number[]} raw
   */
  constructor(owner, key, raw) {
    /** @private */
    this._owner = owner;
    /** @readonly */
    this.key = key;
    /** @type {boolean} */
    this.allowed = raw[0] === 0;
    /** @type {number} */
    this.limit = raw[1];
    /** @type {number} */
    this.remaining = raw[2];
    /** @type {number | null} */
    this.retryAfter = raw[3] < 0 ? null : raw[3];
    /** @type {number} */
    this.reset = raw[4];
    /** @type {number | null} the lease id, a positive integer (null when refused, or a query or PEEK) */
    this.id = raw[5] > 0 ? raw[5] : null;
    /** @type {number[]} */
    this.raw = raw;
  }

  /** Gives the lease back; resolves to the units released (0 if already ended or refused). */
  release() {
    return this.id === null ? Promise.resolve(0) : this._owner.release(this.key, this.id);
  }

  /**
   * Moves the lease's deadline to now + timeout (default: the limiter's);
   * resolves to false when the lease had already ended.
   * @param {number | string} [timeout]
   */
  renew(timeout) {
    return this.id === null ? Promise.resolve(false) : this._owner.renew(this.key, this.id, timeout);
  }

  /** `await using lease = await jobs.acquire(key)` releases it at the end of the block. */
  async [Symbol.asyncDispose]() {
    await this.release();
  }
}

/** Work in flight (RL.CONCURRENCY, RL.RELEASE, RL.RENEW). */
class Concurrency {
  /**
   * @param {import("./client").RateLimits} limits
   * @param {ConcurrencyOptions} options
   */
  constructor(limits, options) {
    const { limit, timeout, name } = options ?? /** @type {any} */ ({});
    /** @private */
    this._limits = limits;
    /** @readonly */
    this.limit = toInt(limit, "limit", 1, MAX_SETTING);
    /** @readonly timeout in ms */
    this.timeout = toMs(timeout, "timeout", 1, MAX_MS);
    /** @readonly */
    this.name = policyName(name, "concurrency");
  }

  /**
   * Takes a lease of `n` units (default 1) on `key` for at most `timeout`.
   * @param {string} key
   * @param {number} [n]
   * @param {{peek?: boolean}} [options]
   * @returns {Promise<Lease>}
   */
  acquire(key, n = 1, options) {
    checkKey(key);
    const args = [String(this.limit), String(this.timeout), String(toInt(n, "n", 0, MAX_COUNT)), "MS"];
    if (options?.peek) args.push("PEEK");
    return this._limits.run("concurrency", [key], args, (raw) => new Lease(this, key, raw));
  }

  /**
   * Gives lease `id` back; resolves to the units released (0 for a lease
   * unknown, already released or past its deadline).
   * @param {string} key @param {number} id
   * @returns {Promise<number>}
   */
  release(key, id) {
    checkKey(key);
    return this._limits.call("release", [key], [String(toInt(id, "lease", 1, Number.MAX_SAFE_INTEGER))]);
  }

  /**
   * Moves live lease `id`'s deadline to now + `timeout` (default: this
   * limiter's); false when it had already ended.
   * @param {string} key @param {number} id @param {number | string} [timeout]
   * @returns {Promise<boolean>}
   */
  renew(key, id, timeout) {
    checkKey(key);
    const ms = timeout === undefined ? this.timeout : toMs(timeout, "timeout", 1, MAX_MS);
    return this._limits.run("renew", [key], [String(toInt(id, "lease", 1, Number.MAX_SAFE_INTEGER)), String(ms), "MS"], (reply) => reply === 1);
  }

  /**
   * Runs `work(lease)` under a lease of `n` units and releases it however
   * `work` ends; resolves to what `work` resolves to. Throws
   * LeaseRefusedError (with the refusal in `.lease`) when none is free.
   * @template T
   * @param {string} key
   * @param {(lease: Lease) => Promise<T> | T} work
   * @param {{n?: number}} [options]
   * @returns {Promise<T>}
   */
  async withLease(key, work, options) {
    const lease = await this.acquire(key, options?.n ?? 1);
    if (!lease.allowed) throw new LeaseRefusedError(lease);
    try {
      return await work(lease);
    } finally {
      await lease.release();
    }
  }
}

module.exports = { Result, Limiter, AllOf, Concurrency, Lease, gcra, tokenBucket, window };
