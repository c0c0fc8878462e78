"use strict";

const { toInt, toMs, checkOptions } = require("./duration");
const { InvalidParameter, LeaseRefusedError, Unavailable } = require("./errors");
const { checkTag } = require("./reading");

const MAX_COUNT = 1_000_000_000;
const MAX_MS = 1_000_000_000_000;
// The server-side caps (ratelimit.sliding_log_max_limit and
// ratelimit.concurrency_max_limit) default to 10,000 and may be raised up to
// 1,000,000: the server names its own cap when a limit is above it, and
// check() finds that before the first request.
const MAX_SETTING = 1_000_000;
// Printable ASCII without the characters a RateLimit-Policy string or a
// Cluster hash tag would have to escape: '"', '\', '{', '}'.
const NAME = /^[\x20\x21\x23-\x5b\x5d-\x7a\x7c\x7e]+$/;
const NAME_WORDS = 'name must be a non-empty string of printable ASCII without ", \\, { or }';

/**
 * @typedef {object} TakeOptions
 * @property {boolean} [peek] answer what the call would, change nothing
 * @property {boolean} [refund] give `n` units back instead of taking them
 * @property {boolean} [force] record the request even past the limit (a debt)
 * @property {number | string} [wait] a reservation: admit a request that
 *   fits within this long, with `retryAfter` the time to wait before the work
 * @property {boolean} [atMost] take as many units as allowed, up to `n`
 * @property {number | string} [block] when refused, block the key this long
 * @property {string} [tag] who takes the units (1 to 1,024 bytes in UTF-8;
 *   the server's cap is 64 by default): each entry a sliding log records
 *   carries it, for `log()`. Sliding logs and allOf only (the server refuses
 *   it elsewhere).
 */

/** @typedef {{rate: number, per: number | string, burst?: number, name?: string}} GcraOptions */
/** @typedef {{capacity: number, refill: number, per: number | string, name?: string}} TokenBucketOptions */
/** @typedef {{limit: number, window: number | string, name?: string}} WindowOptions */
/** @typedef {{limit: number, timeout: number | string, name?: string}} ConcurrencyOptions */

const TAKE_OPTIONS = ["peek", "refund", "force", "wait", "atMost", "block", "tag"];

/**
 * The arguments after the parameters: quantity, MS and the options.
 * @param {number} n
 * @param {TakeOptions | undefined} options
 * @returns {string[]}
 */
function optionArgs(n, options) {
  const args = [String(toInt(n, "n", 0, MAX_COUNT)), "MS"];
  if (options === undefined || options === null) return args;
  checkOptions(options, "take", TAKE_OPTIONS);
  if (options.peek) args.push("PEEK");
  if (options.refund) args.push("REFUND");
  if (options.force) args.push("FORCE");
  if (options.wait !== undefined && options.wait !== null) args.push("WAIT", String(toMs(options.wait, "wait", 0, MAX_MS)));
  if (options.atMost) args.push("AT_MOST");
  if (options.block !== undefined && options.block !== null) args.push("BLOCK", String(toMs(options.block, "block", 1, MAX_MS)));
  if (options.tag !== undefined && options.tag !== null) args.push("TAG", checkTag(options.tag));
  return args;
}

/**
 * A take that the local memory of refusals may answer: no peek, refund,
 * force, wait or atMost (each changes what a refusal means), n above 0. A
 * tag changes nothing in a refusal (a refused take logs nothing): it is
 * remembered with the tag, in the take's arguments.
 * @param {number} n @param {TakeOptions | undefined} options
 */
function plain(n, options) {
  if (n <= 0) return false;
  if (options === undefined || options === null) return true;
  return !options.peek && !options.refund && !options.force && !options.atMost && (options.wait === undefined || options.wait === null);
}

/** @param {unknown} name @param {string} fallback @returns {string} */
function policyName(name, fallback) {
  if (name === undefined) return fallback;
  if (typeof name !== "string" || !NAME.test(name)) throw new InvalidParameter(NAME_WORDS);
  return name;
}

/** @param {unknown} key @returns {string} */
function checkKey(key) {
  if (typeof key !== "string" || key.length === 0) throw new InvalidParameter("key must be a non-empty string");
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
 * - `failedOpen`: true when the server could not be asked and the failure
 *   policy let the request through (then `remaining` 0, `reset` 0).
 * - `raw`: the reply's integers (empty when failed open).
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
    /** @type {boolean} */
    this.failedOpen = false;
    /** @type {number[]} */
    this.raw = raw;
  }

  /**
   * The decision the failure policy answers when failing open.
   * @param {number} limit @param {number} n
   */
  static failedOpen(limit, n) {
    const result = new Result([0, limit, 0, -1, 0], n, 1, -1);
    result.failedOpen = true;
    result.raw = [];
    return result;
  }

  /**
   * This refusal `elapsed` ms later: `retryAfter` (at least 1 ms) and
   * `reset` shortened by the time gone by (the local memory's answer).
   * @param {number} elapsed
   * @returns {Result}
   */
  later(elapsed) {
    const retry = Math.max(1, Math.ceil(/** @type {number} */ (this.retryAfter) - elapsed));
    const reset = Math.max(retry, Math.ceil(this.reset - elapsed));
    const raw = [...this.raw];
    raw[3] = retry;
    raw[4] = reset;
    return new Result(raw, 0, this.binding, -1);
  }
}

/**
 * What every limiter and an allOf share: one call's arguments, the local
 * memory of refusals, the failure policy, check().
 */
class Decider {
  /**
   * @param {import("./client").RateLimits} limits
   * @param {string} fn the library's function (gcra, all, ...)
   * @param {string[]} spec the arguments before the quantity
   * @param {number} limit the decision's limit when failing open
   * @param {number} keyCount keys per call
   */
  constructor(limits, fn, spec, limit, keyCount) {
    /** @protected */
    this._limits = limits;
    /** @readonly @type {string} */
    this.fn = fn;
    /** @private */
    this._spec = spec;
    /** @private */
    this._failLimit = limit;
    /** @private the arguments of a plain take of one unit */
    this._one = [...spec, "1", "MS"];
    /** @private where the reply says the binding limit, and the units granted with atMost */
    this._bindingAt = fn === "all" ? 5 : -1;
    this._grantedAt = fn === "all" ? 6 : 5;
    /** @private */
    this._checkKeys = Array.from({ length: keyCount }, (_, i) => `ratelimit:{check}:${i + 1}`);
    /** @readonly @type {string} the `limit` label of its decisions in the metrics */
    this.metricName = fn;
  }

  /**
   * One decision on `keys` (checked), with the given failure policy,
   * recorded when the client has metrics: under `identity` when refused
   * (default: the binding limit's key), and an Unavailable rejection as
   * failed open when `failsOpen` (the middleware's policy).
   * @param {string[]} keys
   * @param {number} n
   * @param {TakeOptions | undefined} options
   * @param {boolean} failOpen
   * @param {string} [identity]
   * @param {boolean} [failsOpen]
   * @returns {Promise<Result>}
   */
  _take(keys, n, options, failOpen, identity, failsOpen = failOpen) {
    const decided = this._decide(keys, n, options, failOpen);
    const metrics = this._limits.metrics;
    // A decision takes units: a query (n 0), a peek or a refund is not one.
    if (metrics === null || n === 0 || options?.peek === true || options?.refund === true) return decided;
    return metrics.measure(decided, this._limits, this.metricName, keys, n, identity, failsOpen);
  }

  /**
   * @private
   * @param {string[]} keys @param {number} n @param {TakeOptions | undefined} options @param {boolean} failOpen
   * @returns {Promise<Result>}
   */
  _decide(keys, n, options, failOpen) {
    const args = n === 1 && options === undefined ? this._one : [...this._spec, ...optionArgs(n, options)];
    const grantedAt = options !== undefined && options !== null && options.atMost ? this._grantedAt : -1;
    const bindingAt = this._bindingAt;
    const limits = this._limits;
    const memory = limits.refusals;
    const remembered = memory !== null && plain(n, options) ? `${this.fn}\n${keys.join("\n")}\n${args.join(" ")}` : null;
    if (remembered !== null) {
      const refusal = /** @type {import("./refusals").RefusalMemory} */ (memory).get(remembered);
      if (refusal !== undefined) return Promise.resolve(refusal);
    }
    let decided = limits.run(this.fn, keys, args, (raw) => new Result(raw, n, bindingAt >= 0 ? raw[bindingAt] : 1, grantedAt));
    if (remembered !== null) {
      decided = decided.then((result) => {
        /** @type {import("./refusals").RefusalMemory} */ (memory).remember(remembered, result);
        return result;
      });
    }
    if (failOpen) {
      decided = decided.catch((err) => {
        if (err instanceof Unavailable) return this._failedOpen(n);
        throw err;
      });
    }
    return decided;
  }

  /** The decision of a call of `n` units let through by the failure policy. @param {number} n */
  _failedOpen(n) {
    return Result.failedOpen(this._failLimit, n);
  }

  /**
   * Sends one PEEK of one unit on `keys` (default `ratelimit:{check}:1`,
   * `:2`, ... by position) and rejects with what the server refuses (a cap,
   * the functions edition's ranges, a key of another type), whatever the
   * failure policy. Resolves to nothing.
   * @param {string[]} [keys]
   * @returns {Promise<void>}
   */
  _check(keys) {
    return this._decide(keys ?? this._checkKeys, 1, { peek: true }, false).then(() => undefined);
  }
}

/** One limiter on one key per call: RL.GCRA, RL.TOKEN_BUCKET, RL.FIXED, RL.SLIDING_LOG, RL.SLIDING_COUNTER. */
class Limiter extends Decider {
  /**
   * @param {import("./client").RateLimits} limits
   * @param {string} fn the library's function (gcra, token_bucket, ...)
   * @param {number[]} params the positional parameters, durations in ms
   * @param {string} name the policy's name in the RateLimit headers
   * @param {number} quota `q` of RateLimit-Policy: the most units at once from rest
   * @param {number} windowMs the policy's window, `w` of RateLimit-Policy in ms
   */
  constructor(limits, fn, params, name, quota, windowMs) {
    super(limits, fn, params.map(String), quota, 1);
    /** @readonly */
    this.algorithm = fn.toUpperCase();
    /** @readonly the parameters as sent (durations in ms) */
    this.params = params.map(String);
    /** @readonly */
    this.name = name;
    this.metricName = name;
    /** @readonly */
    this.quota = quota;
    /** @readonly */
    this.windowMs = windowMs;
  }

  /**
   * Takes `n` units (default 1) on `key`, with the options asked.
   * @param {string} key
   * @param {number} [n]
   * @param {TakeOptions} [options]
   * @returns {Promise<Result>}
   */
  take(key, n = 1, options) {
    return this._take([checkKey(key)], n, options, this._limits.failOpen);
  }

  /**
   * What taking `n` units would answer now; changes nothing.
   * @param {string} key @param {number} [n] @param {TakeOptions} [options]
   */
  peek(key, n = 1, options) {
    checkOptions(options, "take", TAKE_OPTIONS);
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

  /**
   * Asks the server whether it takes this limiter (one PEEK of one unit on
   * `key`, default `ratelimit:{check}:1`); rejects with its ServerError
   * (or Unavailable) whatever the failure policy.
   * @param {string} [key]
   * @returns {Promise<void>}
   */
  check(key) {
    return this._check(key === undefined ? undefined : [checkKey(key)]);
  }
}

/**
 * @param {string} kind the limiter's kind, named in errors
 * @param {unknown} options
 * @param {readonly string[]} known
 * @returns {any}
 */
function limiterOptions(kind, options, known) {
  if (options === undefined || options === null || typeof options !== "object") {
    throw new InvalidParameter(`${kind}: options must be an object with ${known.join(", ")}`);
  }
  checkOptions(options, kind, known);
  return options;
}

/**
 * @param {import("./client").RateLimits} limits
 * @param {GcraOptions} options
 */
function gcra(limits, options) {
  const { rate, per, burst = rate, name } = limiterOptions("gcra", options, ["rate", "per", "burst", "name"]);
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
  const { capacity, refill, per, name } = limiterOptions("token_bucket", options, ["capacity", "refill", "per", "name"]);
  const cap = toInt(capacity, "capacity", 1, MAX_COUNT);
  const count = toInt(refill, "refill", 1, MAX_COUNT);
  const period = toMs(per, "per", 1, MAX_MS);
  return new Limiter(limits, "token_bucket", [cap, count, period], policyName(name, "token_bucket"), cap, (cap * period) / count);
}

/** @type {Record<string, string>} */
const WINDOW_KINDS = { fixed: "fixed_window", sliding_log: "sliding_log", sliding_counter: "sliding_counter" };

/**
 * @param {import("./client").RateLimits} limits
 * @param {"fixed" | "sliding_log" | "sliding_counter"} fn
 * @param {WindowOptions} options
 */
function window(limits, fn, options) {
  const { limit, window: span, name } = limiterOptions(WINDOW_KINDS[fn], options, ["limit", "window", "name"]);
  const most = toInt(limit, "limit", 1, fn === "sliding_log" ? MAX_SETTING : MAX_COUNT);
  const ms = toMs(span, "window", 1, MAX_MS);
  const limiter = new Limiter(limits, fn, [most, ms], policyName(name, fn), most, ms);
  // Unnamed, its metrics' label is its kind as every client names it (fixed_window).
  if (name === undefined) limiter.metricName = WINDOW_KINDS[fn];
  return limiter;
}

/** Several limiters, one decision (RL.ALL); `take` gets one key per limiter, in order. */
class AllOf extends Decider {
  /**
   * @param {import("./client").RateLimits} limits
   * @param {Limiter[]} parts
   */
  constructor(limits, parts) {
    if (parts.length === 0 || parts.length > 100) throw new InvalidParameter(`all_of needs 1 to 100 limiters, got ${parts.length}`);
    for (const [i, part] of parts.entries()) {
      if (!(part instanceof Limiter)) throw new InvalidParameter(`all_of: argument ${i + 1} is not a limiter`);
    }
    super(limits, "all", parts.flatMap((p) => [p.algorithm, ...p.params]), parts[0].quota, parts.length);
    /** @readonly */
    this.limiters = parts;
    // Its limiters' names joined by "+".
    this.metricName = parts.map((p) => p.name).join("+");
  }

  /** @private @param {unknown} keys @returns {string[]} */
  _keys(keys) {
    if (!Array.isArray(keys)) throw new InvalidParameter(`keys: ${this.limiters.length} limiters need ${this.limiters.length} keys, got ${typeof keys}`);
    if (keys.length !== this.limiters.length) {
      throw new InvalidParameter(`keys: ${this.limiters.length} limiters need ${this.limiters.length} keys, got ${keys.length}`);
    }
    return keys.map(checkKey);
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
    return this._take(this._keys(keys), n, options, this._limits.failOpen);
  }

  /** @param {string[]} keys @param {number} [n] @param {TakeOptions} [options] */
  peek(keys, n = 1, options) {
    checkOptions(options, "take", TAKE_OPTIONS);
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

  /**
   * One PEEK of one unit on `keys` (default `ratelimit:{check}:1`, `:2`,
   * ...); rejects with what the server refuses.
   * @param {string[]} [keys]
   * @returns {Promise<void>}
   */
  check(keys) {
    return this._check(keys === undefined ? undefined : this._keys(keys));
  }
}

/**
 * A lease (RL.CONCURRENCY), or the refusal to give one: `allowed`, `limit`,
 * `remaining` (units free after the call), `retryAfter` (ms until enough
 * leases reach their deadlines, null when never), `reset`, `granted`, `id`
 * (null when refused, peeked or failed open), `failedOpen`.
 * `release()`, `renew()`, and `await using` release it.
 */
class Lease {
  /**
   * @param {Concurrency} owner @param {string} key @param {number[]} raw @param {number} n
   */
  constructor(owner, key, raw, n) {
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
    /** @type {number} units leased (`n` when allowed, else 0) */
    this.granted = this.allowed ? n : 0;
    /** @type {number} */
    this.binding = 1;
    /** @type {number | null} the lease id, a positive integer (null when refused, or a query or PEEK) */
    this.id = raw[5] > 0 ? raw[5] : null;
    /** @type {boolean} */
    this.failedOpen = false;
    /** @type {number[]} */
    this.raw = raw;
  }

  /** Gives the lease back; resolves to the units released (0 if already ended, refused or failed open). */
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
    const { limit, timeout, name } = limiterOptions("concurrency", options, ["limit", "timeout", "name"]);
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
   * Failing open (the client's `failOpen`), an unreachable server answers
   * an allowed lease without an id.
   * @param {string} key
   * @param {number} [n]
   * @param {{peek?: boolean}} [options]
   * @returns {Promise<Lease>}
   */
  acquire(key, n = 1, options) {
    const leased = this._acquire(checkKey(key), n, options, this._limits.failOpen);
    const metrics = this._limits.metrics;
    if (metrics === null || options?.peek === true) return leased;
    return metrics.measure(leased, this._limits, this.name, [key], n, undefined, this._limits.failOpen);
  }

  /**
   * @private
   * @param {string} key @param {number} n @param {{peek?: boolean} | undefined} options @param {boolean} failOpen
   * @returns {Promise<Lease>}
   */
  _acquire(key, n, options, failOpen) {
    checkOptions(options, "acquire", ["peek"]);
    const args = [String(this.limit), String(this.timeout), String(toInt(n, "n", 0, MAX_COUNT)), "MS"];
    if (options?.peek) args.push("PEEK");
    const leased = this._limits.run("concurrency", [key], args, (raw) => new Lease(this, key, raw, n));
    if (!failOpen) return leased;
    return leased.catch((err) => {
      if (!(err instanceof Unavailable)) throw err;
      const lease = new Lease(this, key, [0, this.limit, 0, -1, 0, 0], n);
      lease.failedOpen = true;
      lease.raw = [];
      return lease;
    });
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
    const lease = String(toInt(id, "lease", 1, Number.MAX_SAFE_INTEGER));
    const ms = timeout === undefined ? this.timeout : toMs(timeout, "timeout", 1, MAX_MS);
    return this._limits.run("renew", [key], [lease, String(ms), "MS"], (reply) => reply === 1);
  }

  /**
   * One PEEK of one unit on `key` (default `ratelimit:{check}:1`); rejects
   * with what the server refuses (a limit past ratelimit.concurrency_max_limit).
   * @param {string} [key]
   * @returns {Promise<void>}
   */
  check(key) {
    return this._acquire(key === undefined ? "ratelimit:{check}:1" : checkKey(key), 1, { peek: true }, false).then(() => undefined);
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

module.exports = { Result, Limiter, AllOf, Concurrency, Lease, gcra, tokenBucket, window, checkKey, NAME_WORDS };
