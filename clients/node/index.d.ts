// Type declarations of redis-ratelimit (the Node.js client of the
// redis-ratelimit module and its functions edition). Tested with ioredis 5
// and 6, node-redis 4, 5 and 6.

/** A duration: milliseconds, or a string such as "500ms", "1s", "1.5m", "1h", "1d". Whole milliseconds only. */
export type Duration = number | string;

/** Where the limiters run: the module's RL.* commands, the functions library (FCALL), or the standalone scripts (EVALSHA). */
export type Backend = "module" | "functions" | "scripts";

/** The client's version; the functions library it loads answers the same from `FCALL rl_version 0`. */
export declare const VERSION: string;

/** Options of one call. `refund`, `force`, `wait` and `atMost` exclude one another (the server says so). */
export interface TakeOptions {
  /** Answer what the call would, change nothing. */
  peek?: boolean;
  /** Give `n` units back instead of taking them (work admitted, then not done). */
  refund?: boolean;
  /** Record the request even past the limit: the excess is a debt later requests wait out. */
  force?: boolean;
  /** A reservation: admit a request that the limit allows within this long; `retryAfter` is then the wait before doing the work. GCRA, token bucket and sliding log only. */
  wait?: Duration;
  /** Take as many units as the limit allows now, up to `n`; `granted` says how many. */
  atMost?: boolean;
  /** When refused, block the key this long: every request on it is refused until then. */
  block?: Duration;
  /** Who takes the units (1 to 1,024 bytes in UTF-8; the server's cap, tag_max_bytes, is 64 by default): each entry a sliding log records carries it, for `log()`. Sliding logs and allOf only (the server refuses it elsewhere). */
  tag?: string;
}

/** Options of `log`. */
export interface LogOptions {
  /** The units per tag instead of the entries. */
  byTag?: boolean;
  /** At most this many items (1 to 1,000,000,000). */
  count?: number;
}

/** Units a sliding log holds at one instant under one tag. */
export interface LogEntry {
  /** When they were taken (or reserved: a future instant), in microseconds since the Unix epoch, the server's clock. */
  instantUs: number;
  units: number;
  /** The `tag` of the calls that took them (read as UTF-8), null for none. */
  tag: string | null;
}

/** The units a sliding log holds under one tag, within the window. */
export interface TagUnits {
  /** Null: the units taken without a tag. */
  tag: string | null;
  units: number;
}

/** `inspect`'s fields by name: `kind` ("gcra", "token_bucket", "fixed", "sliding_log", "sliding_counter", "concurrency"; null when the key holds only a block), the kind's fields (`tat_us`; `tokens`, `updated_us`; `window_start_us`, `count`; `entries`, `tagged`, `oldest_us`, `newest_us`; `window_start_us`, `previous`, `current`; `leases`, `units`, `next_deadline_us`, `last_id`), `blocked_until_us` when a block was set, and `pttl` (ms, -1 for no expiry); integers, or null where the server says nil. */
export type Inspection = { kind: string | null; pttl: number } & Record<string, number | string | null>;

/** The decision of one call. Durations are milliseconds. */
export declare class Result {
  /** The request was allowed (or, with `wait`, reserved). */
  readonly allowed: boolean;
  /** The most units allowed at once from rest. */
  readonly limit: number;
  /** Units that would be allowed right after this call. */
  readonly remaining: number;
  /** Refused: ms until the same request would be allowed. A reservation (`wait`): ms to wait before the work. Null when the reply says -1 (allowed at once, or a request larger than `limit`, which can never pass). */
  readonly retryAfter: number | null;
  /** Ms until the limiter is fully rested. */
  readonly reset: number;
  /** Units granted: `n` when allowed, 0 when refused; with `atMost`, what the server granted. */
  readonly granted: number;
  /** 1-based position of the binding limit in an `allOf` (1 for a single limiter). */
  readonly binding: number;
  /** True when the server could not be asked and the failure policy (`failOpen`) let the request through: `allowed` true, `remaining` 0, `reset` 0, `retryAfter` null. */
  readonly failedOpen: boolean;
  /** The reply's integers as the server sent them (empty when failed open). */
  readonly raw: number[];
}

/** One rate limiter (RL.GCRA, RL.TOKEN_BUCKET, RL.FIXED, RL.SLIDING_LOG or RL.SLIDING_COUNTER). */
export declare class Limiter {
  /** The algorithm's name in RL.ALL: GCRA, TOKEN_BUCKET, FIXED, SLIDING_LOG, SLIDING_COUNTER. */
  readonly algorithm: string;
  /** Its parameters as sent, durations in milliseconds. */
  readonly params: readonly string[];
  /** The policy's name in the RateLimit headers, and the last part of the middleware's key. */
  readonly name: string;
  /** The policy's quota (`q`): the most units at once from rest. */
  readonly quota: number;
  /** The policy's window (`w`) in milliseconds: the window, or the time to refill the whole quota. */
  readonly windowMs: number;
  /** Takes `n` units (default 1) on `key`. */
  take(key: string, n?: number, options?: TakeOptions): Promise<Result>;
  /** What `take` would answer now; changes nothing. */
  peek(key: string, n?: number, options?: TakeOptions): Promise<Result>;
  /** The state of `key` (0 units); changes nothing. */
  query(key: string): Promise<Result>;
  /** Gives `n` units back (default 1). */
  refund(key: string, n?: number): Promise<Result>;
  /** One PEEK of one unit on `key` (default "ratelimit:{check}:1"): rejects with the ServerError of a limiter the server refuses (a cap, a range, a key of another type), whatever the failure policy. */
  check(key?: string): Promise<void>;
}

/** Several limiters decided at once (RL.ALL). Keys: one per limiter, in order, in one Cluster slot (use a hash tag: `{user:42}:burst`). */
export declare class AllOf {
  readonly limiters: readonly Limiter[];
  take(keys: string[], n?: number, options?: TakeOptions): Promise<Result>;
  peek(keys: string[], n?: number, options?: TakeOptions): Promise<Result>;
  query(keys: string[]): Promise<Result>;
  refund(keys: string[], n?: number): Promise<Result>;
  /** One PEEK of one unit on `keys` (default "ratelimit:{check}:1", ":2", ... by position); rejects with what the server refuses. */
  check(keys?: string[]): Promise<void>;
}

/** A lease on work in flight, or the refusal to give one. */
export declare class Lease {
  readonly key: string;
  readonly allowed: boolean;
  readonly limit: number;
  /** Units free after the call. */
  readonly remaining: number;
  /** Refused: ms until enough leases reach their deadlines (null: never, more units than `limit`). */
  readonly retryAfter: number | null;
  /** Ms until every lease has reached its deadline. */
  readonly reset: number;
  /** Units leased: `n` when allowed, else 0. */
  readonly granted: number;
  /** Always 1. */
  readonly binding: number;
  /** The lease id; null when refused, for a query or a peek, and when failed open. */
  readonly id: number | null;
  /** True when the server could not be asked and the failure policy let the work through (no lease id). */
  readonly failedOpen: boolean;
  readonly raw: number[];
  /** Gives the lease back; resolves to the units released (0 when it had ended, or was refused). */
  release(): Promise<number>;
  /** Moves the deadline to now + `timeout` (default: the limiter's); false when the lease had ended. */
  renew(timeout?: Duration): Promise<boolean>;
  /** `await using lease = await jobs.acquire(key)` (TypeScript 5.2+) releases it at the end of the block. */
  [Symbol.asyncDispose](): Promise<void>;
}

/** Work in flight: at most `limit` units leased at once (RL.CONCURRENCY, RL.RELEASE, RL.RENEW). */
export declare class Concurrency {
  readonly limit: number;
  /** Milliseconds. */
  readonly timeout: number;
  readonly name: string;
  /** A lease of `n` units (default 1) for at most `timeout`, or a refusal. */
  acquire(key: string, n?: number, options?: { peek?: boolean }): Promise<Lease>;
  /** Gives lease `id` back; the units released (0 for a lease unknown, released or past its deadline). */
  release(key: string, id: number): Promise<number>;
  /** Moves live lease `id`'s deadline to now + `timeout` (default: this limiter's); false when it had ended. */
  renew(key: string, id: number, timeout?: Duration): Promise<boolean>;
  /** One PEEK of one unit on `key` (default "ratelimit:{check}:1"); rejects with what the server refuses. */
  check(key?: string): Promise<void>;
  /** Runs `work` under a lease and releases it however `work` ends. Rejects with LeaseRefusedError when none is free. */
  withLease<T>(key: string, work: (lease: Lease) => Promise<T> | T, options?: { n?: number }): Promise<T>;
}

export interface GcraOptions {
  /** Requests per `per`, evenly spaced. */
  rate: number;
  per: Duration;
  /** The most requests at once from rest (the reply's `limit`); default `rate`. */
  burst?: number;
  /** The policy's name (default "gcra"). */
  name?: string;
}

export interface TokenBucketOptions {
  /** Tokens the bucket holds, full at first. */
  capacity: number;
  /** Tokens added every `per`. */
  refill: number;
  per: Duration;
  /** The policy's name (default "token_bucket"). */
  name?: string;
}

export interface WindowOptions {
  limit: number;
  window: Duration;
  /** The policy's name (default "fixed", "sliding_log" or "sliding_counter"). */
  name?: string;
}

export interface ConcurrencyOptions {
  /** Units leased at once. */
  limit: number;
  /** A lease ends at most this long after it is taken or renewed. */
  timeout: Duration;
  name?: string;
}

/** A call's deadline, as an adapter sees it. */
export interface CallDeadline {
  /** True once the deadline has passed (the call has then answered Unavailable). */
  readonly aborted: boolean;
  /** An AbortSignal aborted when the deadline passes (made on first use). */
  readonly signal: AbortSignal;
}

/** The minimal client interface, for a Redis client without a built-in adapter. */
export interface Adapter {
  /** One command (name first, arguments as strings), routed by `key` on a Cluster. */
  send(args: string[], key?: string, deadline?: CallDeadline): Promise<unknown>;
  /** One sender per master (the client itself when not a Cluster). */
  masters(deadline?: CallDeadline): Promise<Array<(args: string[], key?: string, deadline?: CallDeadline) => Promise<unknown>>>;
}

export interface RateLimitsOptions {
  /** "auto" (the default) searches for the backend; another skips the search. */
  backend?: "auto" | Backend;
  /** The deadline of every call, from 1 ms to 60 s (default 250 ms): the backend search, a reload and its retry, connecting, sending, the reply, the Redis client's own waits. */
  timeout?: Duration;
  /** When a call meets Unavailable: false (the default) rejects with it; true answers an allowed decision marked `failedOpen`. `release`, `renew` and `check` always reject. */
  failOpen?: boolean;
  /** How many refused keys are remembered in-process (0, the default, is off; at most 1,000,000). */
  localRefusals?: number;
  /** Records every decision in Prometheus metrics (default: none recorded). */
  metrics?: PrometheusMetrics;
}

/** The outcome label of a decision in the metrics. */
export type Outcome = "allowed" | "refused" | "failed_open" | "failed_closed";

export interface PrometheusMetricsOptions {
  /** The prom-client Registry to register in (default: prom-client's global `register`). */
  register?: { registerMetric(metric: any): void };
  /** How many refused (limit, identity) pairs `ratelimit_client_top_refused` exports (0 to 10,000, default 10; 0 keeps none). */
  topK?: number;
}

/**
 * Space-saving over (limit, identity) pairs, `k` entries at most: a kept
 * pair's refusal adds 1; a new pair takes a free entry (count 1), else
 * replaces the least counted (ties: the least recently counted) and gets
 * its count plus 1.
 */
export declare class TopRefused {
  constructor(k: number);
  readonly k: number;
  /** Counts one refusal of `identity` by `limit`. */
  refused(limit: string, identity: string): void;
  /** The kept pairs and their counts, by limit and identity. */
  top(): Array<[limit: string, identity: string, count: number]>;
}

/**
 * Prometheus metrics (prom-client, an optional peer dependency: `npm
 * install prom-client`) of the decisions of the clients given it:
 * `ratelimit_client_decisions_total{limit,outcome}`,
 * `ratelimit_client_units_total{limit,outcome}`,
 * `ratelimit_client_call_duration_seconds{limit}`,
 * `ratelimit_client_backend{backend}`,
 * `ratelimit_client_top_refused{limit,identity}`. Make one per registry.
 */
export declare class PrometheusMetrics {
  constructor(options?: PrometheusMetricsOptions);
  readonly register: { registerMetric(metric: any): void };
  readonly topRefused: TopRefused;
  /** Records one decision of `limit` (what the client does for each call). */
  record(limit: string, outcome: Outcome, units: number, seconds: number, identity?: string): void;
}

/**
 * Wraps a Redis client (ioredis 5/6 `Redis` or `Cluster`; node-redis 4/5/6
 * `createClient` or `createCluster`, connected, a client with a
 * `socket.reconnectStrategy` of at most 100 ms) and finds the backend on
 * first use: the module, else the functions library at this client's
 * version, else it loads the library (on every master), else the standalone
 * scripts. The backend is cached per Redis client (every RateLimits over it
 * shares it). Throws InvalidParameter for a bad option or client.
 */
export declare class RateLimits {
  constructor(client: object, options?: RateLimitsOptions);
  readonly client: object;
  /** The deadline of every call, in ms. */
  readonly timeout: number;
  readonly failOpen: boolean;
  readonly localRefusals: number;
  /** The metrics every decision is recorded in, or null. */
  readonly metrics: PrometheusMetrics | null;
  /** The backend in use (found now if not yet). */
  backend(): Promise<Backend>;
  /** Sends library function `fn` (gcra, all, concurrency, ...) with its keys and arguments; the raw reply. */
  call(fn: string, keys: string[], args: string[]): Promise<any>;
  /** As `call`, the reply turned into a value by `map`. */
  run<T>(fn: string, keys: string[], args: string[], map: (reply: any) => T): Promise<T>;
  gcra(options: GcraOptions): Limiter;
  tokenBucket(options: TokenBucketOptions): Limiter;
  fixedWindow(options: WindowOptions): Limiter;
  slidingLog(options: WindowOptions): Limiter;
  slidingCounter(options: WindowOptions): Limiter;
  allOf(...limiters: Limiter[]): AllOf;
  concurrency(options: ConcurrencyOptions): Concurrency;
  /** Who used the sliding log on `key` within the last `window` (reservations included), changing nothing (RL.LOG): its entries, newest first, one per instant and tag; a missing key answers []. Rejects with ServerError for a key of another limiter. */
  log(key: string, window: Duration, options?: LogOptions & { byTag?: false }): Promise<LogEntry[]>;
  /** With `byTag`: the units per tag, most first (ties by the tag's bytes, the untagged first). */
  log(key: string, window: Duration, options: LogOptions & { byTag: true }): Promise<TagUnits[]>;
  log(key: string, window: Duration, options?: LogOptions): Promise<LogEntry[] | TagUnits[]>;
  /** The state the limiter on `key` keeps, changing nothing (RL.INSPECT); null for a missing key. The module's RESP3 map and the flat array read alike. */
  inspect(key: string): Promise<Inspection | null>;
  /** Ends the limiter on `key` (DEL, under the deadline): its state and any block. Whether the key existed. */
  delete(key: string): Promise<boolean>;
}

/** The base of every error of this library. */
export declare class RateLimitError extends Error {
  constructor(message: string, cause?: unknown);
}

/** A parameter refused before anything is sent; thrown at once by the call or constructor that got it. */
export declare class InvalidParameter extends RateLimitError {
  constructor(message: string);
}

/** The server refused the call (a misconfiguration: never failed open). `message` is the reply as sent, code first ("ERR limit must be ..."); `code` its first word. */
export declare class ServerError extends RateLimitError {
  readonly code: string;
}

/** "rate limiter unavailable: ..." — no answer within the deadline, a transport error, or an error reply that says the server cannot serve now (`code` then: LOADING, BUSY, READONLY, ...). The failure policy applies to it alone. */
export declare class Unavailable extends RateLimitError {
  readonly code: string | undefined;
}

/** Rejected by `withLease` when no lease is free; `lease` is the refusal. */
export declare class LeaseRefusedError extends RateLimitError {
  constructor(lease: Lease);
  readonly lease: Lease;
}

export interface MiddlewareOptions<Req = any> {
  /** What each request takes: a limiter, or an allOf. */
  limiter: Limiter | AllOf;
  /** The client's identity (default: `req.ip`, else the socket's address); null or undefined: the request is not limited. */
  key?: (req: Req) => string | null | undefined;
  /** Units a request takes (default 1). */
  cost?: number | ((req: Req) => number);
  /** Of every key (default "ratelimit:"): a limiter's key is `${prefix}{${key(req)}}:${limiter.name}`. */
  prefix?: string;
  /** When the limiter is unavailable: false answers 503 with Retry-After: 1; true lets the request through, marked `failedOpen`, without headers. Unset: the client's `failOpen`. A ServerError always goes to `next(err)`. */
  failOpen?: boolean;
  /** Told of each Unavailable (`req` null for the start-up check). */
  onError?: (err: unknown, req: Req | null) => void;
  /** The 429's body (default "too many requests\n"). */
  message?: string;
  /** Who made the request within its identity (a user id): sent as TAG to the sliding logs among the limits (a slidingLog, or an allOf's), which record it for `log(key, window, { byTag: true })`; null or undefined: untagged. A tag of 0 or more than 1,024 bytes goes to `next(err)` (InvalidParameter), one past the server's cap (64 bytes by default) too (ServerError): never cut short. Refused (InvalidParameter) when no limit is a sliding log. */
  tag?: (req: Req) => string | null | undefined;
}

/** The middleware, and its start-up check. */
export interface RateLimitMiddleware<Req = any> {
  (req: Req, res: any, next: (err?: unknown) => void): void;
  /** The start-up check (one PEEK of its limiters on the keys of the identity "check"): rejects with the ServerError of a limiter the server refuses (left unhandled, that ends the process); resolves when the server takes them or cannot be reached. */
  readonly ready: Promise<void>;
}

/** Express (or node:http) middleware: 429 with Retry-After and the draft-10 RateLimit-Policy and RateLimit headers; the headers on allowed responses too; the decision in `req.rateLimit`. */
export declare function rateLimit<Req = any>(options: MiddlewareOptions<Req>): RateLimitMiddleware<Req>;

/** The response headers for a decision: RateLimit-Policy, RateLimit and, when refused, Retry-After (seconds, rounded up). */
export declare function rateLimitHeaders(limiter: Limiter | AllOf, result: Result): Record<string, string>;

/** The RateLimit-Policy field of a limiter or an allOf. */
export declare function policyHeader(limiter: Limiter | AllOf): string;

/** Milliseconds from a Duration, or an error naming `name`. */
export declare function toMs(value: Duration, name: string, min?: number, max?: number): number;

declare global {
  namespace Express {
    interface Request {
      /** The rate limiter's decision for this request (set by redis-ratelimit's middleware). */
      rateLimit?: Result;
    }
  }
}

/** How an adapter's limit is decided: `limit` per window with the window algorithms; GCRA with `limit` per window and bursts of `limit`; a token bucket of `limit` tokens refilled at `limit` per window. */
export type AdapterAlgorithm = "fixed" | "sliding_log" | "sliding_counter" | "gcra" | "token_bucket";

/** Options of `RateLimitStore`. */
export interface RateLimitStoreOptions {
  /** Default `"fixed"` (RL.FIXED, as express-rate-limit's MemoryStore counts). */
  algorithm?: AdapterAlgorithm;
  /** Before every key (default `"erl:"`). */
  prefix?: string;
  backend?: "auto" | Backend;
  timeout?: Duration;
  /** The server unreachable: let the request through (default false: increment rejects). */
  failOpen?: boolean;
  /** as RateLimits takes it: each increment is a decision of the algorithm's limiter */
  metrics?: PrometheusMetrics;
}

/** What express-rate-limit reads from a store. */
export interface StoreHits {
  totalHits: number;
  resetTime: Date | undefined;
}

/** express-rate-limit's `Store` (version 7 and later), every decision made by the server: `rateLimit({ windowMs, limit, store: new RateLimitStore(redis) })`. No `resetAll`. */
export declare class RateLimitStore {
  constructor(client: object, options?: RateLimitStoreOptions);
  readonly algorithm: AdapterAlgorithm;
  readonly prefix: string;
  readonly localKeys: false;
  readonly limits: RateLimits;
  /** The limiter `init` made, null before. */
  limiter: Limiter | null;
  /** Takes `windowMs` and `limit` (or `max`, a number: a function of the request throws). */
  init(options: { windowMs?: unknown; limit?: unknown; max?: unknown; skipFailedRequests?: unknown }): void;
  /** One take: allowed, `totalHits` <= limit; refused, `totalHits` > limit and `resetTime` when it would be allowed. */
  increment(key: string): Promise<StoreHits>;
  /** A refund of one unit (REFUND); none for a refusal that express-rate-limit decrements under skipFailedRequests. */
  decrement(key: string): Promise<void>;
  /** A query; undefined when fully rested. */
  get(key: string): Promise<StoreHits | undefined>;
  /** Deletes the key. */
  resetKey(key: string): Promise<void>;
  shutdown(): void;
}

/** rate-limiter-flexible's RateLimiterRes (an instance of its class), as its declarations give it. */
export interface FlexibleRes {
  readonly remainingPoints: number;
  readonly msBeforeNext: number;
  readonly consumedPoints: number;
  readonly isFirstInDuration: boolean;
  toString(): string;
  toJSON(): { remainingPoints: number; msBeforeNext: number; consumedPoints: number; isFirstInDuration: boolean };
}

/** Options of `FlexibleLimiter`, as rate-limiter-flexible's own limiters take them. */
export interface FlexibleLimiterOptions {
  storeClient: object;
  /** Units per window. */
  points: number;
  /** The window, in seconds (whole milliseconds). */
  duration: number;
  /** Seconds a refused consume blocks its key (0: none). */
  blockDuration?: number;
  /** Default `"rlflx"`; the key in Redis is `rl:${keyPrefix}:${key}`. */
  keyPrefix?: string;
  /** A rate-limiter-flexible limiter that answers when the server cannot be reached. */
  insuranceLimiter?: object;
  algorithm?: AdapterAlgorithm;
  timeout?: Duration;
  backend?: "auto" | Backend;
  /** false only. */
  execEvenly?: boolean;
  /** as RateLimits takes it */
  metrics?: PrometheusMetrics;
}

/** A limiter rate-limiter-flexible accepts wherever it accepts its own (an instance of its RateLimiterCompatibleAbstract): its calls, its RateLimiterRes, its rejections. */
export declare class FlexibleLimiter {
  constructor(options: FlexibleLimiterOptions);
  readonly points: number;
  readonly duration: number;
  readonly msDuration: number;
  readonly algorithm: AdapterAlgorithm;
  readonly limits: RateLimits;
  readonly keyPrefix: string;
  blockDuration: number;
  /** false; setting true throws. */
  execEvenly: boolean;
  insuranceLimiter: object | undefined;
  getKey(key: string | number): string;
  parseKey(rlKey: string): string;
  /** Resolves allowed; rejects with a RateLimiterRes when refused, with an Error when the server fails. */
  consume(key: string | number, points?: number, options?: { [key: string]: any }): Promise<FlexibleRes>;
  penalty(key: string | number, points?: number, options?: { [key: string]: any }): Promise<FlexibleRes>;
  reward(key: string | number, points?: number, options?: { [key: string]: any }): Promise<FlexibleRes>;
  get(key: string | number, options?: { [key: string]: any }): Promise<FlexibleRes | null>;
  block(key: string | number, secDuration: number, options?: { [key: string]: any }): Promise<FlexibleRes>;
  /** `secDuration`, when given, must be `duration`. */
  set(key: string | number, points: number, secDuration?: number, options?: { [key: string]: any }): Promise<FlexibleRes>;
  delete(key: string | number, options?: { [key: string]: any }): Promise<boolean>;
}
