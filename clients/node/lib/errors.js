"use strict";

/**
 * An error answered by the server (bad arguments, a key holding another
 * algorithm's state, WRONGTYPE, ...). `message` is the server's own text;
 * `cause` is the Redis client's error.
 */
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

/**
 * Thrown by `Concurrency.withLease` when no lease could be taken: `lease`
 * is the refusal (its `retryAfter` says when one may be free).
 */
class LeaseRefusedError extends Error {
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
 * node-redis 4/5 (ErrorReply, SimpleError, BlobError) report it; false for a
 * transport error (connection refused or closed, timeout).
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
 * The library's error for a server error reply, anything else unchanged.
 * @param {any} err
 * @returns {any}
 */
function wrap(err) {
  return isReplyError(err) ? new RateLimitError(err.message, err) : err;
}

module.exports = { RateLimitError, LeaseRefusedError, isReplyError, wrap };
