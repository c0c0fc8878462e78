// Compiled by `tsc --noEmit` (npm test): the declarations as a TypeScript
// user meets them. Not run.
import express from "express";
import Redis from "ioredis";
import { rateLimit as expressRateLimit } from "express-rate-limit";
import { RateLimiterUnion, RateLimiterMemory } from "rate-limiter-flexible";
import { createClient } from "redis";
import {
  RateLimits,
  RateLimitStore,
  FlexibleLimiter,
  type FlexibleRes,
  rateLimit,
  rateLimitHeaders,
  LeaseRefusedError,
  RateLimitError,
  ServerError,
  Unavailable,
  InvalidParameter,
  PrometheusMetrics,
  type Result,
  type Lease,
  type Backend,
  type LogEntry,
  type TagUnits,
  type Inspection,
} from "..";

async function usage(): Promise<void> {
  const limits = new RateLimits(new Redis(), { timeout: "100ms", failOpen: true, localRefusals: 10_000 });
  const other = new RateLimits(createClient({ socket: { reconnectStrategy: () => 50 } }), { backend: "scripts" });
  const measured = new RateLimits(new Redis(), { metrics: new PrometheusMetrics({ topK: 20 }) });
  const kept: Array<[string, string, number]> = measured.metrics === null ? [] : measured.metrics.topRefused.top();
  const deadline: number = limits.timeout;
  const backend: Backend = await other.backend();
  const perUser = limits.gcra({ rate: 10, per: "1s", burst: 20 });
  const r: Result = await perUser.take("user:42", 2, { wait: "500ms", block: 60_000 });
  const wait: number | null = r.retryAfter;
  const marked: boolean = r.failedOpen;
  await perUser.check();
  const both = limits.allOf(perUser, limits.slidingLog({ limit: 100, window: "1h", name: "hourly" }));
  const b = await both.take(["{user:42}:a", "{user:42}:b"], 1, { atMost: true });
  const headers: Record<string, string> = rateLimitHeaders(both, b);
  const jobs = limits.concurrency({ limit: 2, timeout: "30s" });
  const lease: Lease = await jobs.acquire("jobs");
  const id: number | null = lease.id;
  const n: number = await jobs.withLease("jobs", async (l) => l.remaining);
  await using held = await jobs.acquire("jobs");
  const app = express();
  await both.take(["{user:42}:a", "{user:42}:b"], 1, { tag: "user:42" });
  const entries: LogEntry[] = await limits.log("{user:42}:b", "1h");
  const first: number | undefined = entries[0]?.instantUs;
  const totals: TagUnits[] = await limits.log("{user:42}:b", 3_600_000, { byTag: true, count: 10 });
  const who: string | null | undefined = totals[0]?.tag;
  const state: Inspection | null = await limits.inspect("{user:42}:b");
  const kind: string | null | undefined = state?.kind;
  const mw = rateLimit({
    limiter: both,
    key: (req: express.Request) => req.get("x-client-id"),
    tag: (req: express.Request) => req.get("x-user-id"),
    onError: (err) => console.warn(err),
  });
  await mw.ready;
  app.use(mw);
  try {
    await perUser.take("user:42");
  } catch (err) {
    if (err instanceof ServerError) console.error(err.code, err.message);
    else if (err instanceof Unavailable || err instanceof InvalidParameter || err instanceof RateLimitError) console.warn(err.message);
  }
  app.get("/", (req, res) => {
    res.json(req.rateLimit?.remaining);
  });
  void [backend, wait, headers, id, n, held, LeaseRefusedError, deadline, marked, first, who, kind];
}
void usage;

// Mistakes the declarations catch.
async function mistakes(limits: RateLimits): Promise<void> {
  // @ts-expect-error a limiter needs its rate
  limits.gcra({ per: "1s" });
  // @ts-expect-error allOf takes one key per limiter, as an array
  await limits.allOf(limits.gcra({ rate: 1, per: 1000 })).take("k");
  // @ts-expect-error no such option
  await limits.gcra({ rate: 1, per: 1000 }).take("k", 1, { atmost: true });
  // @ts-expect-error the totals, not the entries, with byTag
  const totals: LogEntry[] = await limits.log("k", "1m", { byTag: true });
  // @ts-expect-error a tag is a string
  await limits.slidingLog({ limit: 1, window: 1000 }).take("k", 1, { tag: 42 });
  void totals;
  // @ts-expect-error a misspelt option of the client
  new RateLimits(new Redis(), { timout: 100 });
}
void mistakes;

async function adapters(): Promise<void> {
  const redis = new Redis();
  const store = new RateLimitStore(redis, { algorithm: "sliding_log", prefix: "api:", timeout: "100ms" });
  express().use(expressRateLimit({ windowMs: 60_000, limit: 100, store }));
  const limiter = new FlexibleLimiter({ storeClient: redis, points: 10, duration: 1, blockDuration: 60, keyPrefix: "api" });
  const res: FlexibleRes = await limiter.consume("user:42", 2);
  const left: number = res.remainingPoints;
  const known: FlexibleRes | null = await limiter.get("user:42");
  const gone: boolean = await limiter.delete("user:42");
  new RateLimiterUnion(limiter, new RateLimiterMemory({ points: 1, duration: 1 }));
  void [left, known, gone];
}
void adapters;
