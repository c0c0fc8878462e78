// A job runner with ioredis and the redis-ratelimit client: at most 2 jobs at
// once per tenant.
//
// Each job holds a lease while it runs: acquire() takes it (or refuses, with
// how long until a lease ends), release() gives it back in a `finally`, and
// renew() extends a long-running job's lease. A lease also ends at its
// deadline, so a worker that crashes without releasing blocks the tenant for
// at most its timeout: the example crashes one and waits for that. (When the
// count of units released does not matter, jobs.withLease(key, work) does
// the acquire, the try and the release in one call.)
//
//   npm install
//   REDIS_PORT=6379 node jobs.js
"use strict";

const Redis = require("ioredis");
const { RateLimits } = require("redis-ratelimit");

const redis = new Redis({
  host: process.env.REDIS_HOST || "127.0.0.1",
  port: Number(process.env.REDIS_PORT || 6379),
});
const limits = new RateLimits(redis);

// One hash tag per tenant: in a Cluster, the tenant's key has one slot.
const KEY = "jobs:{tenant-a}";
// A job's lease lasts at most a minute unless renewed: generous, so that only
// the crashed worker's lease ever reaches its deadline here.
const jobs = limits.concurrency({ limit: 2, timeout: "60s" });
// The crashed worker's lease is short, so the example need not wait long.
const shortLived = limits.concurrency({ limit: 2, timeout: "1s" });

const units = (n) => (n === 1 ? `${n} unit` : `${n} units`);
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

// The lease for this job, or null when the tenant is at its limit.
async function take(job, limiter = jobs) {
  const lease = await limiter.acquire(KEY);
  if (!lease.allowed) {
    // retryAfter (ms) is how long until a lease ends; its exact value
    // depends on timing, so show it rounded up to seconds.
    console.log(`job ${job}: refused, retry in ${Math.ceil(lease.retryAfter / 1000)} s`);
    return null;
  }
  // Lease ids come from the server's clock: keep them, never show them.
  console.log(`job ${job}: lease taken, ${units(lease.remaining)} free`);
  return lease;
}

// Run work(lease) under a lease, or not at all when refused.
async function run(job, work) {
  const lease = await take(job);
  if (lease === null) {
    return;
  }
  try {
    await work(lease);
  } finally {
    // Released on every path, errors included: the unit is free at once
    // instead of at the lease's deadline.
    console.log(`job ${job}: done, released ${units(await lease.release())}`);
  }
}

// Until a job could take a lease; peek answers as the call would, and takes nothing.
async function waitForFreeUnit(deadlineMs = 10000) {
  const giveUp = Date.now() + deadlineMs;
  while (!(await jobs.acquire(KEY, 1, { peek: true })).allowed) {
    if (Date.now() > giveUp) {
      throw new Error(`no unit free after ${deadlineMs} ms: the crashed lease did not end`);
    }
    await sleep(20);
  }
}

async function longJob(lease) {
  // A crashed worker: it takes a lease and never releases it.
  const crashed = await take(2, shortLived);
  console.log("job 2: worker crashed, lease not released");
  // Job 1 and the crashed job hold both units.
  await run(3, async () => {});
  // Job 1 is still at work: it renews its lease before the deadline.
  console.log(`job 1: still running, lease renewed: ${Number(await lease.renew())}`);
  // The crashed lease ends at its deadline, freeing its unit for others.
  await waitForFreeUnit();
  console.log("crashed worker's lease ended at its deadline");
  await run(4, async () => {});
  // A worker that comes back too late finds its lease already ended.
  console.log(`job 2: late release answers ${await crashed.release()}`);
}

async function main() {
  await redis.del(KEY); // a fresh key: nothing left from an earlier run
  await run(1, longJob);
}

main()
  .catch((err) => {
    console.error(err);
    process.exitCode = 1;
  })
  .finally(() => redis.disconnect());
