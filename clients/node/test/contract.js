"use strict";

// The clients' contract (clients/contract/*.json) as this client reads it:
// the files, a limiter and a call from their language-neutral form, a
// decision in the contract's words, and the placeholders of a command.

const fs = require("node:fs");
const path = require("node:path");
const { AllOf, Concurrency, VERSION } = require("../lib");
const { librarySource, standaloneScripts } = require("../lib/lua");

const DIR = path.join(__dirname, "..", "..", "contract");

/** @param {string} file @returns {any} */
function load(file) {
  return JSON.parse(fs.readFileSync(path.join(DIR, file), "utf8"));
}

/** Cases for this client: those without `languages`, or naming node. @param {any[]} cases */
const forNode = (cases) => cases.filter((c) => !c.languages || c.languages.includes("node"));

/**
 * A limiter from its neutral form: `per_ms` becomes `per`, `window_ms`
 * `window`, `timeout_ms` `timeout`; any other field is passed as it is (a
 * misspelt option stays misspelt).
 * @param {import("../lib").RateLimits} limits
 * @param {any} spec
 * @returns {any}
 */
function makeLimiter(limits, spec) {
  if (spec === null) return limits; // a reading (log, inspect): the client's own
  if (spec.kind === "all_of") return limits.allOf(...spec.limiters.map((/** @type {any} */ s) => makeLimiter(limits, s)));
  /** @type {Record<string, unknown>} */
  const options = {};
  for (const [field, value] of Object.entries(spec)) {
    if (field === "kind") continue;
    options[field.endsWith("_ms") ? field.slice(0, -3) : field] = value;
  }
  switch (spec.kind) {
    case "gcra":
      return limits.gcra(/** @type {any} */ (options));
    case "token_bucket":
      return limits.tokenBucket(/** @type {any} */ (options));
    case "fixed_window":
      return limits.fixedWindow(/** @type {any} */ (options));
    case "sliding_log":
      return limits.slidingLog(/** @type {any} */ (options));
    case "sliding_counter":
      return limits.slidingCounter(/** @type {any} */ (options));
    case "concurrency":
      return limits.concurrency(/** @type {any} */ (options));
    default:
      throw new Error(`contract: unknown limiter kind ${spec.kind}`);
  }
}

/** A call's options in this client's words (`wait_ms` → wait, `at_most` → atMost, ...). @param {any} call */
function callOptions(call) {
  if (call.node_options) return call.node_options;
  /** @type {Record<string, unknown>} */
  const options = {};
  for (const [field, value] of Object.entries(call.options ?? {})) {
    const name = field === "at_most" ? "atMost" : field === "by_tag" ? "byTag" : field.endsWith("_ms") ? field.slice(0, -3) : field;
    options[name] = value;
  }
  return Object.keys(options).length > 0 ? options : undefined;
}

/**
 * Performs a neutral call on a limiter; resolves to what it answers.
 * @param {any} limiter @param {any} call
 * @returns {Promise<any>}
 */
function perform(limiter, call) {
  const key = limiter instanceof AllOf ? call.keys : call.keys?.[0];
  switch (call.op) {
    case "take":
      return limiter.take(key, call.n, callOptions(call));
    case "refund":
      return limiter.refund(key, call.n);
    case "acquire":
      return limiter.acquire(key, call.n, call.options?.peek ? { peek: true } : undefined);
    case "release":
      return limiter.release(key, call.lease);
    case "renew":
      return limiter.renew(key, call.lease, call.timeout_ms);
    case "check":
      return limiter.check();
    case "log":
      return limiter.log(call.keys[0], call.window_ms, callOptions(call));
    case "inspect":
      return limiter.inspect(call.keys[0]);
    default:
      throw new Error(`contract: unknown op ${call.op}`);
  }
}

/**
 * A decision (Result or Lease) in the contract's words, with `lease` when
 * `withLease`.
 * @param {any} r @param {boolean} withLease
 */
function decisionOf(r, withLease) {
  /** @type {Record<string, unknown>} */
  const decision = {
    allowed: r.allowed,
    limit: r.limit,
    remaining: r.remaining,
    retry_after_ms: r.retryAfter,
    reset_ms: r.reset,
    granted: r.granted,
    binding: r.binding,
    failed_open: r.failedOpen,
  };
  if (withLease) decision.lease = r.id;
  return decision;
}

/** What a call answers, in the contract's words: a decision, or `result`. @param {any} c @param {any} answer */
function answerOf(c, answer) {
  if ("decision" in c) return decisionOf(answer, "lease" in c.decision);
  if (c.call?.op === "log") {
    // instantUs is the contract's instant_us.
    return answer.map((/** @type {any} */ item) => ("instantUs" in item ? { instant_us: item.instantUs, units: item.units, tag: item.tag } : item));
  }
  return answer === undefined ? null : answer;
}

/** The expected answer of case `c`. @param {any} c */
const expectedOf = (c) => ("decision" in c ? c.decision : c.result);

/** A command or reply with its placeholders replaced. @param {any} value @returns {any} */
function substitute(value) {
  if (Array.isArray(value)) return value.map(substitute);
  if (typeof value !== "string") return value;
  if (value === "<library>") return librarySource();
  if (value === "<version>") return VERSION;
  const m = /^<(sha|script):(\w+)>$/.exec(value);
  if (m) {
    const script = standaloneScripts().get(m[2]);
    if (!script) throw new Error(`contract: no packaged script ${m[2]}`);
    return m[1] === "sha" ? script.sha : script.source;
  }
  return value;
}

module.exports = { load, forNode, makeLimiter, perform, decisionOf, answerOf, expectedOf, substitute, callOptions, Concurrency };
