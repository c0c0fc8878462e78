"use strict";

const { AllOf, Limiter } = require("./limiters");

/** @param {Limiter | AllOf} limiter @returns {Limiter[]} */
const partsOf = (limiter) => (limiter instanceof AllOf ? limiter.limiters : [limiter]);

/** @param {number} ms */
const seconds = (ms) => Math.ceil(ms / 1000);

/**
 * The `RateLimit-Policy` field (draft-ietf-httpapi-ratelimit-headers-10)
 * of a limiter or an allOf: each limiter's name, quota (`q`, its `limit`)
 * and window (`w`, in seconds: the window, or the time a GCRA or token
 * bucket takes to refill its whole quota).
 * @param {Limiter | AllOf} limiter
 * @returns {string}
 */
function policyHeader(limiter) {
  return partsOf(limiter)
    .map((p) => `"${p.name}";q=${p.quota};w=${seconds(p.windowMs)}`)
    .join(", ");
}

/**
 * The response headers for a decision: `RateLimit-Policy`, `RateLimit`
 * (the binding limiter's name, `r` remaining, `t` seconds until fully
 * rested) and, when refused, `Retry-After` in seconds rounded up (absent
 * when the request can never pass).
 * @param {Limiter | AllOf} limiter
 * @param {import("./limiters").Result} result
 * @returns {Record<string, string>}
 */
function rateLimitHeaders(limiter, result) {
  const parts = partsOf(limiter);
  const binding = parts[result.binding - 1] ?? parts[0];
  /** @type {Record<string, string>} */
  const headers = {
    "RateLimit-Policy": policyHeader(limiter),
    RateLimit: `"${binding.name}";r=${result.remaining};t=${seconds(result.reset)}`,
  };
  if (!result.allowed && result.retryAfter !== null) headers["Retry-After"] = String(seconds(result.retryAfter));
  return headers;
}

/**
 * @typedef {object} MiddlewareOptions
 * @property {Limiter | AllOf} limiter what each request takes
 * @property {(req: any) => string} [key] the client's identity (default: `req.ip`, else the socket's address)
 * @property {number | ((req: any) => number)} [cost] units a request takes (default 1)
 * @property {string} [prefix] of every key (default `"ratelimit:"`); a limiter's key is
 *   `${prefix}{${key(req)}}:${limiter.name}`, one hash tag per client
 * @property {boolean} [failOpen] when Redis is down or errors: false (the default) answers
 *   503, true lets the request through without headers
 * @property {(err: unknown, req: any) => void} [onError] told of every such error
 * @property {string} [message] the 429's body (default `"Too Many Requests\n"`)
 */

/** @param {any} req @returns {string} */
function clientAddress(req) {
  return req.ip ?? req.socket?.remoteAddress ?? "unknown";
}

/**
 * Express middleware (also plain `node:http`: it needs only `setHeader`,
 * `statusCode` and `end`): takes `cost` units for the request's key;
 * allowed, it sets the RateLimit headers and calls `next()` (the decision is
 * in `req.rateLimit`); refused, it answers 429 with the headers and
 * `Retry-After`. When Redis fails: 503 (fail closed, the default) or
 * `next()` without headers (`failOpen: true`).
 * @param {MiddlewareOptions} options
 * @returns {(req: any, res: any, next: (err?: unknown) => void) => void}
 */
function rateLimit(options) {
  const { limiter, key = clientAddress, cost = 1, prefix = "ratelimit:", failOpen = false, onError } = options ?? {};
  const message = options?.message ?? "Too Many Requests\n";
  if (!(limiter instanceof Limiter) && !(limiter instanceof AllOf)) {
    throw new TypeError("rateLimit: limiter must be a limiter or an allOf(...) of limiters");
  }
  if (typeof key !== "function") throw new TypeError("rateLimit: key must be a function of the request");
  if (typeof cost !== "function" && (!Number.isInteger(cost) || cost < 0)) {
    throw new TypeError("rateLimit: cost must be a non-negative integer or a function of the request");
  }
  if (typeof prefix !== "string") throw new TypeError("rateLimit: prefix must be a string");
  const parts = partsOf(limiter);
  const names = parts.map((p) => p.name);
  const twice = names.find((n, i) => names.indexOf(n) !== i);
  if (twice !== undefined) {
    throw new TypeError(`rateLimit: two limiters are named '${twice}': give each its own name (it names its key and its policy)`);
  }
  const policy = policyHeader(limiter);
  const all = limiter instanceof AllOf ? limiter : null;
  const single = /** @type {Limiter} */ (parts[0]);

  return function rateLimitMiddleware(req, res, next) {
    let keys, n;
    try {
      const id = key(req);
      keys = names.map((name) => `${prefix}{${id}}:${name}`);
      n = typeof cost === "function" ? cost(req) : cost;
    } catch (err) {
      next(err);
      return;
    }
    const decided = all ? all.take(keys, n) : single.take(keys[0], n);
    decided.then(
      (result) => {
        const binding = parts[result.binding - 1] ?? single;
        res.setHeader("RateLimit-Policy", policy);
        res.setHeader("RateLimit", `"${binding.name}";r=${result.remaining};t=${seconds(result.reset)}`);
        req.rateLimit = result;
        if (result.allowed) {
          next();
          return;
        }
        if (result.retryAfter !== null) res.setHeader("Retry-After", String(seconds(result.retryAfter)));
        res.statusCode = 429;
        res.setHeader("Content-Type", "text/plain; charset=utf-8");
        res.end(message);
      },
      (err) => {
        if (onError) onError(err, req);
        if (failOpen) {
          next();
          return;
        }
        res.statusCode = 503;
        res.setHeader("Content-Type", "text/plain; charset=utf-8");
        res.end("Service Unavailable: the rate limiter cannot decide\n");
      },
    );
  };
}

module.exports = { rateLimit, rateLimitHeaders, policyHeader };
