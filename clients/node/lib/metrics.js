"use strict";

// Prometheus metrics of a client's decisions (SPEC 20), with prom-client,
// an optional peer dependency required only when PrometheusMetrics is made.
// The names, types, labels and buckets are clients/contract/metrics.json's,
// the same in every client.

const { InvalidParameter, RateLimitError, Unavailable } = require("./errors");

const OUTCOMES = ["allowed", "refused", "failed_open", "failed_closed"];
const DURATION_BUCKETS = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5];
const TOP_K_DEFAULT = 10;
const MAX_TOP_K = 10_000;

/**
 * Space-saving over (limit, identity) pairs, `k` entries at most
 * (clients/contract/metrics.json, `top_k`): a refusal of a kept pair adds 1
 * to its count; a new pair takes a free entry with count 1, else replaces
 * the entry of least count (ties: the least recently counted) and gets that
 * count plus 1. Each count's entries are kept in the order they reached it
 * (a Map), so the entry to replace is the first of the least count: every
 * refusal costs O(1), whatever `k`.
 */
class TopRefused {
  /** @param {number} k */
  constructor(k) {
    if (!Number.isInteger(k) || k < 0 || k > MAX_TOP_K) {
      throw new InvalidParameter(`topK must be an integer from 0 to ${MAX_TOP_K}, got ${JSON.stringify(k)}`);
    }
    /** @readonly */
    this.k = k;
    /** @private @type {Map<string, {limit: string, identity: string, count: number}>} */
    this._entries = new Map();
    /** @private @type {Map<number, Set<string>>} count -> its pairs, the least recently counted first */
    this._buckets = new Map();
    /** @private */
    this._least = 0;
  }

  /**
   * Counts one refusal of `identity` by `limit`.
   * @param {string} limit @param {string} identity
   */
  refused(limit, identity) {
    if (this.k === 0) return;
    const pair = JSON.stringify([limit, identity]);
    const entry = this._entries.get(pair);
    if (entry !== undefined) {
      this._leave(pair, entry.count);
      entry.count += 1;
      this._enter(pair, entry.count);
    } else if (this._entries.size < this.k) {
      this._entries.set(pair, { limit, identity, count: 1 });
      this._enter(pair, 1);
      this._least = 1;
    } else {
      const least = this._least;
      const victim = /** @type {string} */ (/** @type {Set<string>} */ (this._buckets.get(least)).values().next().value);
      this._leave(victim, least);
      this._entries.delete(victim);
      this._entries.set(pair, { limit, identity, count: least + 1 });
      this._enter(pair, least + 1);
    }
  }

  /** @private @param {string} pair @param {number} count */
  _enter(pair, count) {
    let bucket = this._buckets.get(count);
    if (bucket === undefined) this._buckets.set(count, (bucket = new Set()));
    bucket.add(pair);
  }

  /** @private @param {string} pair @param {number} count */
  _leave(pair, count) {
    const bucket = /** @type {Set<string>} */ (this._buckets.get(count));
    bucket.delete(pair);
    if (bucket.size === 0) {
      this._buckets.delete(count);
      // The pair leaves for count + 1 (or, replaced, its successor takes
      // least + 1): no count is lower than that now.
      if (count === this._least) this._least = count + 1;
    }
  }

  /**
   * The kept pairs and their counts, by limit and identity.
   * @returns {Array<[string, string, number]>}
   */
  top() {
    const rows = [...this._entries.values()].map((e) => /** @type {[string, string, number]} */ ([e.limit, e.identity, e.count]));
    return rows.sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : a[1] < b[1] ? -1 : a[1] > b[1] ? 1 : 0));
  }
}

/** @returns {any} prom-client, or a clear error when it is not installed */
function promClient() {
  try {
    return require("prom-client");
  } catch (err) {
    throw new RateLimitError("PrometheusMetrics needs prom-client, an optional peer dependency: npm install prom-client", err);
  }
}

/**
 * @typedef {object} PrometheusMetricsOptions
 * @property {any} [register] the prom-client Registry to register in
 *   (default: prom-client's global `register`)
 * @property {number} [topK] how many refused (limit, identity) pairs
 *   `ratelimit_client_top_refused` exports (0 to 10,000, default 10; 0
 *   keeps none)
 */

/**
 * The metrics of the decisions of the clients given it (`new
 * RateLimits(redis, { metrics })`): make one per registry (a second would
 * register the same names again) and give it to every client; their
 * decisions add up, and `ratelimit_client_backend` says the backend of the
 * last call.
 */
class PrometheusMetrics {
  /** @param {PrometheusMetricsOptions} [options] */
  constructor(options = {}) {
    if (options === null || typeof options !== "object") throw new InvalidParameter("PrometheusMetrics: options must be an object");
    for (const name of Object.keys(options)) {
      if (name !== "register" && name !== "topK") throw new InvalidParameter(`PrometheusMetrics: unknown option '${name}' (register, topK)`);
    }
    /** @readonly */
    this.topRefused = new TopRefused(options.topK ?? TOP_K_DEFAULT);
    const prom = promClient();
    const register = options.register ?? prom.register;
    if (register === null || typeof register !== "object" || typeof register.registerMetric !== "function") {
      throw new InvalidParameter("PrometheusMetrics: register must be a prom-client Registry");
    }
    /** @readonly */
    this.register = register;
    const registers = [register];
    /** @private */
    this._decisions = new prom.Counter({
      name: "ratelimit_client_decisions_total",
      help: "Decisions the client returned, by limit name and outcome (allowed, refused, failed_open, failed_closed).",
      labelNames: ["limit", "outcome"],
      registers,
    });
    /** @private */
    this._units = new prom.Counter({
      name: "ratelimit_client_units_total",
      help: "Units of those decisions: granted when allowed, asked for otherwise.",
      labelNames: ["limit", "outcome"],
      registers,
    });
    /** @private */
    this._duration = new prom.Histogram({
      name: "ratelimit_client_call_duration_seconds",
      help: "Time of a call from the client's side, its deadline and any retry included.",
      labelNames: ["limit"],
      buckets: DURATION_BUCKETS,
      registers,
    });
    /** @private */
    this._backend = new prom.Gauge({
      name: "ratelimit_client_backend",
      help: "1 for the backend the client found (module, functions, scripts), 0 for the others it has used before.",
      labelNames: ["backend"],
      registers,
    });
    /** @private @type {string | undefined} */
    this._backendKind = undefined;
    const top = this.topRefused;
    new prom.Gauge({
      name: "ratelimit_client_top_refused",
      help: "The most refused identities (space-saving top-k over limit and identity, at most k series): the estimated refusals of each, an upper bound.",
      labelNames: ["limit", "identity"],
      registers,
      /** @this {any} */
      collect() {
        this.reset();
        for (const [limit, identity, count] of top.top()) this.set({ limit, identity }, count);
      },
    });
  }

  /**
   * Records one decision of `limit`; a refusal counts `identity` among the top refused.
   * @param {string} limit
   * @param {string} outcome one of allowed, refused, failed_open, failed_closed
   * @param {number} units
   * @param {number} seconds
   * @param {string} [identity]
   */
  record(limit, outcome, units, seconds, identity) {
    this._decisions.inc({ limit, outcome });
    this._units.inc({ limit, outcome }, units);
    this._duration.observe({ limit }, seconds);
    if (outcome === "refused" && identity !== undefined) this.topRefused.refused(limit, identity);
  }

  /**
   * The backend of the last call: 1 for it, 0 for the one before.
   * @param {string | undefined} kind
   */
  backend(kind) {
    if (kind === undefined || kind === this._backendKind) return;
    if (this._backendKind !== undefined) this._backend.set({ backend: this._backendKind }, 0);
    this._backend.set({ backend: kind }, 1);
    this._backendKind = kind;
  }

  /**
   * `decided` with its decision recorded: the time until it settles, the
   * outcome, and (refused) `identity`, default the key of the limit the
   * decision reports. A rejection with Unavailable is recorded as
   * failed_closed, or failed_open when `failsOpen` (the caller, the
   * middleware, lets the request through); the rejection is passed on.
   * @template {{allowed: boolean, failedOpen: boolean, granted: number, binding: number}} R
   * @param {Promise<R>} decided
   * @param {any} limits the RateLimits the call went through
   * @param {string} limit
   * @param {string[]} keys
   * @param {number} n
   * @param {string | undefined} identity
   * @param {boolean} failsOpen
   * @returns {Promise<R>}
   */
  measure(decided, limits, limit, keys, n, identity, failsOpen) {
    const start = performance.now();
    return decided.then(
      (result) => {
        const seconds = (performance.now() - start) / 1000;
        if (result.failedOpen) this.record(limit, "failed_open", n, seconds);
        else if (result.allowed) this.record(limit, "allowed", result.granted, seconds);
        else this.record(limit, "refused", n, seconds, identity ?? keys[result.binding - 1] ?? keys[0]);
        this.backend(limits._kind);
        return result;
      },
      (err) => {
        if (err instanceof Unavailable) {
          this.record(limit, failsOpen ? "failed_open" : "failed_closed", n, (performance.now() - start) / 1000);
          this.backend(limits._kind);
        }
        throw err;
      },
    );
  }
}

module.exports = { PrometheusMetrics, TopRefused, OUTCOMES, DURATION_BUCKETS, TOP_K_DEFAULT };
