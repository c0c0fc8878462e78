"use strict";

// The three errors every client of the contract raises alike
// (clients/contract/errors.json), under one base class.

const UNAVAILABLE_PREFIX = "rate limiter unavailable: ";

/** Error reply codes that say the server cannot serve now: an outage, not a mistake. */
const UNAVAILABLE_CODES = new Set(["LOADING", "BUSY", "MASTERDOWN", "CLUSTERDOWN", "TRYAGAIN", "READONLY", "OOM", "MISCONF", "NOREPLICAS"]);

/** The base of every error this library raises. */
class RateLimitError extends Error {
  /**
   * @param {string} message
   * @param {unknown} [cause]
   */
  constructor(message, cause) {
    super(message, cause === undefined ? undefined : { cause });
    this.name = "RateLimitError";
  }
}

/** A parameter refused before anything is sent (its words are in ranges.json and errors.json). */
class InvalidParameter extends RateLimitError {
  /** @param {string} message */
  constructor(message) {
    super(message);
    this.name = "InvalidParameter";
  }
}

/**
 * The server refused the call: a misconfiguration (a cap, a range, a key of
 * another type, an ACL), never an outage, so never failed open. `message`
 * is the reply as sent, code first; `code` its first word.
 */
class ServerError extends RateLimitError {
  /** @param {string} message @param {unknown} [cause] */
  constructor(message, cause) {
    super(message, cause);
    this.name = "ServerError";
    /** @type {string} */
    this.code = message.split(" ", 1)[0];
  }
}

/**
 * No answer within the deadline, a transport error, or an error reply that
 * says the server cannot serve now. The failure policy applies to it alone.
 */
class Unavailable extends RateLimitError {
  /**
   * @param {string} reason what happened, after "rate limiter unavailable: "
   * @param {unknown} [cause]
   * @param {string} [code] the error reply's code, when the server answered one
   */
  constructor(reason, cause, code) {
    super(UNAVAILABLE_PREFIX + reason, cause);
    this.name = "Unavailable";
    /** @type {string | undefined} */
    this.code = code;
  }
}

/**
 * Thrown by `Concurrency.withLease` when no lease could be taken: `lease`
 * is the refusal (its `retryAfter` says when one may be free).
 */
class LeaseRefusedError extends RateLimitError {
  /** @param {import("./limiters").Lease} lease */
  constructor(lease) {
    const wait = lease.retryAfter === null ? "more units than the limit: never" : `retry in ${lease.retryAfter} ms`;
    super(`no lease free on '${lease.key}': ${lease.remaining} of ${lease.limit} units free (${wait})`);
    this.name = "LeaseRefusedError";
    this.lease = lease;
  }
}

/**
 * True for an error reply of the server, as ioredis (ReplyError) and
 * node-redis 4/5/6 (ErrorReply, SimpleError, BlobError) report it; false for
 * a transport error (connection refused or closed, timeout).
 * @param {any} err
 * @returns {boolean}
 */
function isReplyError(err) {
  if (!(err instanceof Error)) return false;
  if (err.name === "ReplyError") return true;
  for (let proto = Object.getPrototypeOf(err); proto && proto !== Error.prototype; proto = Object.getPrototypeOf(proto)) {
    if (proto.constructor && proto.constructor.name === "ErrorReply") return true;
  }
  return false;
}

/**
 * What a transport error says happened: its message, else its code, else
 * its kind (node-redis closes some sockets with an empty message).
 * @param {any} err
 * @returns {string}
 */
function describe(err) {
  if (err instanceof Error) {
    const text = err.message || /** @type {any} */ (err).code || (err.name !== "Error" ? err.name : "");
    return text ? String(text) : "the connection failed";
  }
  return String(err);
}

/**
 * The library's error for what a Redis client rejected with: an error reply
 * as ServerError or (codes of an outage) Unavailable; anything else as
 * Unavailable; the library's own errors unchanged.
 * @param {unknown} err
 * @returns {RateLimitError}
 */
function classify(err) {
  if (err instanceof RateLimitError) return err;
  if (isReplyError(err)) {
    const message = /** @type {Error} */ (err).message;
    const code = message.split(" ", 1)[0];
    return UNAVAILABLE_CODES.has(code) ? new Unavailable(message, err, code) : new ServerError(message, err);
  }
  return new Unavailable(describe(err), err);
}

module.exports = {
  RateLimitError,
  InvalidParameter,
  ServerError,
  Unavailable,
  LeaseRefusedError,
  UNAVAILABLE_PREFIX,
  UNAVAILABLE_CODES,
  isReplyError,
  classify,
};
