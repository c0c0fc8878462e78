// Paced outbound calls with ioredis and RL.GCRA ... WAIT: many workers, one provider limit.
//
// A provider lets us call its API 20 times per second, one call every 50 ms
// with no burst. Four async workers share that allowance through one key:
// before each call a worker reserves the next free slot with
//
//   RL.GCRA outbound:node 0 20 1000 MS WAIT 1000
//
// and the reply's retry_after is how long to sleep before calling (-1: call
// now). A reservation counts for every later call, so the workers' calls come
// exactly one interval apart: no worker polls, and none of them wakes up at
// the same instant as another to find the limit spent. A call whose slot
// would be more than max_wait (1000 ms) away is refused (blocked 1) and
// recorded nowhere; its retry_after says when asking again would fit, and the
// worker then asks again.
//
// The summary prints only what the server decided, so it is the same on
// every run: the slots come from the server's clock, not from this process's
// timers. What the workers' clocks measured is only checked, with some slack.
//
//   npm install
//   REDIS_PORT=6379 node outbound.js
"use strict";

const Redis = require("ioredis");

const redis = new Redis({
  host: process.env.REDIS_HOST || "127.0.0.1",
  port: Number(process.env.REDIS_PORT || 6379),
});

const KEY = "outbound:node";
const RATE = 20; // calls per second that the provider allows
const INTERVAL_MS = 1000 / RATE; // 50 ms between calls
const MAX_WAIT_MS = 1000; // the longest a call may be held back
const WORKERS = 4;
const JOBS = 12;
// Timers and scheduling may be a little late; a call measured more than this
// ahead of its slot would be a pacing bug.
const SLACK_MS = 20;

// setTimeout counts whole milliseconds on a clock it reads once per loop turn,
// so it may fire up to a millisecond early: sleep one more.
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms + 1));
const nowMs = () => performance.now();

// [blocked, retry_after in ms, start of the slot in ms on the server's clock].
// The limiter's key expires when it is fully rested, one interval after the
// latest reservation; read in the same transaction, its expiry tells where
// this call's slot ends, to the millisecond, on the server's clock. Only the
// summary needs that: a worker needs nothing but retry_after.
async function reserve() {
  const [[err, reply], [err2, expiresAt]] = await redis
    .multi()
    .call("RL.GCRA", KEY, 0, RATE, 1000, "MS", "WAIT", MAX_WAIT_MS)
    .pexpiretime(KEY)
    .exec();
  if (err || err2) {
    throw err || err2;
  }
  const [blocked, , , retryAfter] = reply;
  return [blocked, retryAfter, expiresAt - INTERVAL_MS];
}

async function worker(jobs, calls, refusals) {
  // One event loop: shift() hands each job to exactly one worker.
  for (let job = jobs.shift(); job !== undefined; job = jobs.shift()) {
    let blocked, retryAfter, slot;
    for (;;) {
      [blocked, retryAfter, slot] = await reserve();
      if (!blocked) {
        break;
      }
      // Past max_wait: nothing was reserved. Ask again when the slot would
      // be within reach (or drop the job, if it can't wait).
      refusals.push(job);
      await sleep(retryAfter);
    }
    if (retryAfter > 0) {
      await sleep(retryAfter);
    }
    // The call to the provider (simulated): the instant it is made.
    calls.push([slot, nowMs()]);
  }
}

async function main() {
  await redis.del(KEY); // a fresh limiter: nothing reserved by an earlier run
  const jobs = Array.from({ length: JOBS }, (_, i) => i + 1);
  const calls = [];
  const refusals = [];
  await Promise.all(Array.from({ length: WORKERS }, () => worker(jobs, calls, refusals)));

  calls.sort((a, b) => a[0] - b[0] || a[1] - b[1]);
  const [firstSlot, firstCall] = calls[0];
  const offsets = calls.map(([slot]) => slot - firstSlot);
  const perQuarter = new Array(Math.floor(offsets[offsets.length - 1] / 250) + 1).fill(0);
  for (const offset of offsets) {
    perQuarter[Math.floor(offset / 250)] += 1;
  }
  // The clocks only confirm the pacing, with slack: each worker slept
  // retry_after (rounded up) after the reply, so no call should be measured
  // ahead of its slot, counting from the first call (made at once).
  const onTime = calls.every(([, called], i) => called - firstCall >= offsets[i] - SLACK_MS);
  console.log(
    `${WORKERS} workers, ${JOBS} calls, one shared limit: ${RATE} calls per second, ` +
      `no burst, WAIT up to ${MAX_WAIT_MS} ms`,
  );
  console.log(`calls made: ${calls.length}, refused: ${refusals.length}`);
  console.log(`slots, ms after the first: ${offsets.join(" ")}`);
  console.log(`calls in each 250 ms since the first: ${perQuarter.join(" ")}`);
  console.log(`no call ahead of its slot: ${onTime ? "yes" : "no"}`);
}

main()
  .catch((err) => {
    console.error(err);
    process.exitCode = 1;
  })
  .finally(() => redis.disconnect());
