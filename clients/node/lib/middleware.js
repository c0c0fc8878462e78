"use strict";

const { AllOf, Limiter } = require("./limiters");
const { InvalidParameter, Unavailable } = require("./errors");
const { checkOptions } = require("./duration");

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
 * @property {(req: any) => string | null | undefined} [key] the client's identity
 *   (default: `req.ip`, else the socket's address); null or undefined: not limited
 * @property {number | ((req: any) => number)} [cost] units a request takes (default 1)
 * @property {string} [prefix] of every key (default `"ratelimit:"`); a limiter's key is
 *   `${prefix}{${key(req)}}:${limiter.name}`, one hash tag per client
 * @property {boolean} [failOpen] when the limiter is unavailable: false answers 503,
 *   true lets the request through marked `failedOpen`; unset, the client's `failOpen`
 * @property {(err: unknown, req: any) => void} [onError] told of each Unavailable
 *   (`req` null for the start-up check)
 * @property {string} [message] the 429's body (default `"too many requests\n"`)
 * @property {(req: any) => string | null | undefined} [tag] who made the request
 *   within its identity (a user id): sent as `TAG` to the sliding logs among the
 *   limits, which record it for `limits.log(key, window, { byTag: true })`;
 *   null or undefined: untagged. A tag is 1 to 1,024 bytes in UTF-8 (the
 *   server's cap is 64 by default): another goes to `next(err)`, never cut
 *   short. Refused when no limit is a sliding log.
 */

const MIDDLEWARE_OPTIONS = ["limiter", "key", "cost", "prefix", "failOpen", "onError", "message", "tag"];
const TAG_WITHOUT_LOG = "tag: none of the limits is a sliding_log, the one kind that records a tag";

/** @param {any} req @returns {string | undefined} */
function clientAddress(req) {
  return req.ip ?? req.socket?.remoteAddress;
}

/**
 * @typedef {((req: any, res: any, next: (err?: unknown) => void) => void) & {ready: Promise<void>}} Middleware
 */

/**
 * Express middleware (also plain `node:http`: it needs only `setHeader`,
 * `statusCode` and `end`): takes `cost` units for the request's identity;
 * allowed, it sets the RateLimit headers and calls `next()` (the decision is
 * in `req.rateLimit`); refused, it answers 429 with the headers and
 * `Retry-After`. When the limiter is unavailable: 503 with `Retry-After: 1`
 * (fail closed), or `next()` without headers and `req.rateLimit.failedOpen`
 * true (fail open). A server error (a misconfiguration) goes to `next(err)`.
 *
 * At once, it checks its limiters with the server (one PEEK on its keys for
 * the identity "check"): `middleware.ready` rejects with the ServerError of
 * a limiter the server refuses (unhandled, that rejection ends the process,
 * as a failed start should), and resolves when the server takes them or
 * cannot be reached (told to `onError` and logged). Requests are served
 * meanwhile.
 * @param {MiddlewareOptions} options
 * @returns {Middleware}
 */
function rateLimit(options) {
  if (options === null || typeof options !== "object") throw new InvalidParameter("rateLimit: options must be an object with a limiter");
  checkOptions(options, "rateLimit", MIDDLEWARE_OPTIONS);
  const { limiter, key = clientAddress, cost = 1, prefix = "ratelimit:", failOpen, onError, tag } = options;
  const message = options.message ?? "too many requests\n";
  if (!(limiter instanceof Limiter) && !(limiter instanceof AllOf)) {
    throw new InvalidParameter("rateLimit: limiter must be a limiter or an allOf(...) of limiters");
  }
  if (typeof key !== "function") throw new InvalidParameter("rateLimit: key must be a function of the request");
  if (typeof cost !== "function" && (!Number.isInteger(cost) || cost < 0)) {
    throw new InvalidParameter("rateLimit: cost must be a non-negative integer or a function of the request");
  }
  if (typeof prefix !== "string") throw new InvalidParameter("rateLimit: prefix must be a string");
  if (failOpen !== undefined && typeof failOpen !== "boolean") throw new InvalidParameter("rateLimit: failOpen must be true or false");
  if (onError !== undefined && typeof onError !== "function") throw new InvalidParameter("rateLimit: onError must be a function");
  const parts = partsOf(limiter);
  if (tag !== undefined && tag !== null) {
    if (typeof tag !== "function") throw new InvalidParameter("rateLimit: tag must be a function of the request");
    if (!parts.some((p) => p.fn === "sliding_log")) throw new InvalidParameter(TAG_WITHOUT_LOG);
  }
  // Where a tag goes on the wire: a sliding log alone, or RL.ALL (which
  // tags its sliding logs and leaves its other limits be).
  const tags = typeof tag === "function" && (limiter instanceof AllOf || limiter.fn === "sliding_log");
  const names = parts.map((p) => p.name);
  const twice = names.find((n, i) => names.indexOf(n) !== i);
  if (twice !== undefined) throw new InvalidParameter(`two limiters are named '${twice}': give each its own name`);
  const policy = policyHeader(limiter);
  const limits = /** @type {any} */ (limiter)._limits;

  /** @type {any} */
  const middleware = function rateLimitMiddleware(/** @type {any} */ req, /** @type {any} */ res, /** @type {(err?: unknown) => void} */ next) {
    let id, n, who;
    try {
      id = key(req);
      n = typeof cost === "function" ? cost(req) : cost;
      who = tags ? /** @type {Function} */ (tag)(req) : undefined;
    } catch (err) {
      next(err);
      return;
    }
    if (id === undefined || id === null) {
      next(); // no identity: not limited
      return;
    }
    const keys = names.map((name) => `${prefix}{${id}}:${name}`);
    const open = failOpen ?? limits.failOpen;
    let decided;
    try {
      decided = limiter._take(keys, n, who === undefined || who === null ? undefined : { tag: who }, false, String(id), open);
    } catch (err) {
      next(err);
      return;
    }
    decided.then(
      (result) => {
        req.rateLimit = result;
        const binding = parts[result.binding - 1] ?? parts[0];
        res.setHeader("RateLimit-Policy", policy);
        res.setHeader("RateLimit", `"${binding.name}";r=${result.remaining};t=${seconds(result.reset)}`);
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
        if (!(err instanceof Unavailable)) {
          next(err); // a misconfiguration: never failed open
          return;
        }
        if (onError) onError(err, req);
        if (open) {
          req.rateLimit = limiter._failedOpen(n);
          next();
          return;
        }
        res.statusCode = 503;
        res.setHeader("Retry-After", "1");
        res.setHeader("Content-Type", "text/plain; charset=utf-8");
        res.end("rate limiter unavailable\n");
      },
    );
  };
  middleware.ready = limiter._check(names.map((name) => `${prefix}{check}:${name}`)).then(
    () => undefined,
    (err) => {
      if (!(err instanceof Unavailable)) throw err;
      console.warn(`rateLimit: the start-up check of ${names.map((n) => `'${n}'`).join(", ")} could not reach Redis (${err.message}); serving, the failure policy applies`);
      if (onError) onError(err, null);
    },
  );
  return /** @type {Middleware} */ (middleware);
}

module.exports = { rateLimit, rateLimitHeaders, policyHeader };
