"use strict";

// Reading a key without changing it: RL.LOG (who used a sliding log) and
// RL.INSPECT (the state any limiter keeps), their arguments and their typed
// answers. A reading answers no decision: the failure policy never applies,
// Unavailable is raised.

const { toInt, toMs, checkOptions } = require("./duration");
const { InvalidParameter, RateLimitError } = require("./errors");

const MAX_COUNT = 1_000_000_000;
const MAX_MS = 1_000_000_000_000;
const MAX_TAG_BYTES = 1024;

/**
 * A tag (`TAG`): a string of 1 to 1,024 bytes in UTF-8 (the server's cap,
 * tag_max_bytes, is 64 by default). Never cut short: two tags that share
 * their first bytes would become one.
 * @param {unknown} tag
 * @returns {string}
 */
function checkTag(tag) {
  if (typeof tag !== "string") throw new InvalidParameter(`tag must be a string, got ${tag === null ? "null" : typeof tag}`);
  const size = Buffer.byteLength(tag, "utf8");
  if (size < 1 || size > MAX_TAG_BYTES) throw new InvalidParameter(`tag must be from 1 to ${MAX_TAG_BYTES} bytes, got ${size} bytes`);
  return tag;
}

/**
 * @typedef {object} LogOptions
 * @property {boolean} [byTag] the units per tag instead of the entries
 * @property {number} [count] at most this many items (1 to 1,000,000,000)
 */

/**
 * RL.LOG's arguments after the key: window MS [BY TAG] [COUNT n].
 * @param {unknown} window @param {LogOptions | undefined} options
 * @returns {string[]}
 */
function logArgs(window, options) {
  checkOptions(options, "log", ["byTag", "count"]);
  const args = [String(toMs(window, "window", 1, MAX_MS)), "MS"];
  const byTag = options?.byTag ?? false;
  if (typeof byTag !== "boolean") throw new InvalidParameter(`byTag must be true or false, got ${JSON.stringify(byTag)}`);
  if (byTag) args.push("BY", "TAG");
  if (options?.count !== undefined && options.count !== null) args.push("COUNT", String(toInt(options.count, "count", 1, MAX_COUNT)));
  return args;
}

/** @param {string} what @param {unknown} reply */
const unexpected = (what, reply) => new RateLimitError(`${what}: unexpected reply ${JSON.stringify(reply)}`);

/** @param {unknown} value @param {unknown} reply @returns {string | null} */
function tagOf(value, reply) {
  if (value === null || value === undefined) return null;
  if (typeof value === "string") return value;
  if (Buffer.isBuffer(value)) return value.toString("utf8");
  throw unexpected("log", reply);
}

/** @param {unknown} value @param {string} what @param {unknown} reply @returns {number} */
function intOf(value, what, reply) {
  if (typeof value === "number" && Number.isInteger(value)) return value;
  throw unexpected(what, reply);
}

/** @param {unknown} reply @param {number} size @returns {any[][]} */
function items(reply, size) {
  if (!Array.isArray(reply) || !reply.every((item) => Array.isArray(item) && item.length === size)) throw unexpected("log", reply);
  return reply;
}

/**
 * `[[instant_us, units, tag or nil], ...]`, newest first.
 * @param {unknown} reply
 * @returns {{instantUs: number, units: number, tag: string | null}[]}
 */
function logEntries(reply) {
  return items(reply, 3).map(([at, units, tag]) => ({ instantUs: intOf(at, "log", reply), units: intOf(units, "log", reply), tag: tagOf(tag, reply) }));
}

/**
 * `[[tag or nil, units], ...]`, most units first.
 * @param {unknown} reply
 * @returns {{tag: string | null, units: number}[]}
 */
function tagTotals(reply) {
  return items(reply, 2).map(([tag, units]) => ({ tag: tagOf(tag, reply), units: intOf(units, "log", reply) }));
}

/**
 * RL.INSPECT's reply, a flat array of names and values (RESP2, the
 * functions edition) or a map (the module under RESP3: a Map or an object,
 * as the Redis client reads it), as an object; null for a missing key.
 * @param {unknown} reply
 * @returns {Record<string, number | string | null> | null}
 */
function inspection(reply) {
  if (reply === null || reply === undefined) return null;
  /** @type {[unknown, unknown][]} */
  let pairs;
  if (Array.isArray(reply)) {
    if (reply.length % 2 !== 0) throw unexpected("inspect", reply);
    pairs = [];
    for (let i = 0; i < reply.length; i += 2) pairs.push([reply[i], reply[i + 1]]);
  } else if (reply instanceof Map) {
    pairs = [...reply.entries()];
  } else if (typeof reply === "object" && !Buffer.isBuffer(reply)) {
    pairs = Object.entries(reply);
  } else {
    throw unexpected("inspect", reply);
  }
  /** @type {Record<string, number | string | null>} */
  const fields = {};
  for (const [name, value] of pairs) {
    const field = String(name);
    if (value === null || value === undefined) fields[field] = null;
    else if (field === "kind") fields[field] = String(value);
    else fields[field] = intOf(value, "inspect", reply);
  }
  return fields;
}

module.exports = { checkTag, logArgs, logEntries, tagTotals, inspection, MAX_TAG_BYTES };
