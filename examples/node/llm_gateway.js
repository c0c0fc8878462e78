// An LLM gateway with ioredis and the redis-ratelimit client: reserve the
// estimate, settle the real usage.
//
// Each tenant has two limits: 60 requests per minute (GCRA) and a budget of
// 1200 tokens per hour (a token bucket, refilled by one token every 3 s). A
// request's cost in tokens is known only when its completion ends, so the
// gateway reserves its estimate (max_tokens) before calling the model, then
// settles with the real usage:
//
// - used less: refund(key, unused) gives the rest back;
// - used more: take(key, overage, { force: true }) charges it even past the
//   budget; the budget is then in debt (0 left) and later requests wait until
//   the refill has paid it back;
// - used exactly the estimate: nothing to settle (a query only reads).
//
// Why two calls and not one allOf (RL.ALL): RL.ALL decides several limits with one
// quantity, which suits limits that count the same unit (tokens per minute
// and tokens per day, say). Here one limit counts requests and the other
// tokens: an RL.ALL over both would charge max_tokens requests to the request
// limit. So the gateway takes one request from the request limit first, then
// max_tokens from the token budget, and when the budget refuses, gives the
// request back (a refund): a refused request counts against neither limit.
// Between the two calls another request may see that unit taken, so it can
// only be refused early, never let past a limit.
//
// The budget refills slowly on purpose: nothing refills during the run, and
// every number printed is the same on every run.
//
//   npm install
//   REDIS_PORT=6379 node llm_gateway.js
"use strict";

const Redis = require("ioredis");
const { RateLimits } = require("redis-ratelimit");

const redis = new Redis({
  host: process.env.REDIS_HOST || "127.0.0.1",
  port: Number(process.env.REDIS_PORT || 6379),
});
const limits = new RateLimits(redis);

// One hash tag per tenant keeps its two limits in one Cluster slot.
const TENANT = "acme-node";
const REQUESTS_KEY = `llm:{${TENANT}}:requests`;
const TOKENS_KEY = `llm:{${TENANT}}:tokens`;
const requests = limits.gcra({ rate: 60, per: "1m" }); // 60 at once, then one a second
const tokens = limits.tokenBucket({ capacity: 1200, refill: 1200, per: "1h" }); // refilled over an hour
// How long an empty budget takes to fill again (s): a reset longer than this
// means the budget is in debt.
const FULL_REFILL_S = 3600;

const seconds = (ms) => Math.ceil(ms / 1000);

// True when the request may go to the model with maxTokens reserved.
async function reserve(request, maxTokens) {
  const shown = `request ${request}: reserve ${maxTokens} tokens`;
  const asked = await requests.take(REQUESTS_KEY);
  if (!asked.allowed) {
    console.log(`${shown}: refused by the request limit, retry in ${seconds(asked.retryAfter)} s`);
    return false;
  }
  const budget = await tokens.take(TOKENS_KEY, maxTokens);
  if (!budget.allowed) {
    // The request was not served: it gives back its request too.
    await requests.refund(REQUESTS_KEY);
    console.log(`${shown}: refused by the token limit, retry in ${seconds(budget.retryAfter)} s`);
    return false;
  }
  console.log(`${shown}: allowed, ${budget.remaining} tokens and ${asked.remaining} requests left`);
  return true;
}

// Charge the real usage: give back what was reserved and not used, or charge
// the overage in full.
async function settle(request, maxTokens, used) {
  let result, settled;
  if (used < maxTokens) {
    result = await tokens.refund(TOKENS_KEY, maxTokens - used);
    settled = `${maxTokens - used} refunded`;
  } else if (used > maxTokens) {
    result = await tokens.take(TOKENS_KEY, used - maxTokens, { force: true });
    settled = `${used - maxTokens} more charged`;
  } else {
    result = await tokens.query(TOKENS_KEY);
    settled = "as reserved";
  }
  let owed = "";
  const reset = seconds(result.reset);
  if (reset > FULL_REFILL_S) {
    // reset (the time until the budget is full) counts the debt too: each
    // refill interval (3 s) past a full refill is a token owed.
    owed = `, ${Math.floor(((reset - FULL_REFILL_S) * 1200) / 3600)} owed`;
  }
  console.log(`request ${request}: used ${used} tokens, ${settled}: ${result.remaining} tokens left${owed}`);
}

async function main() {
  await redis.del(REQUESTS_KEY, TOKENS_KEY); // fresh limits: nothing left from an earlier run
  console.log("limits per tenant: 60 requests per minute, 1200 tokens per hour");
  // [max_tokens asked for, tokens the completion really used; requests 3
  // and 5 are refused and never reach the model]
  const requests = [
    [500, 320],
    [500, 500],
    [500, null],
    [300, 450],
    [100, null],
  ];
  for (const [i, [maxTokens, used]] of requests.entries()) {
    if (await reserve(i + 1, maxTokens)) {
      // The completion (simulated) runs here and reports its usage.
      await settle(i + 1, maxTokens, used);
    }
  }
}

main()
  .catch((err) => {
    console.error(err);
    process.exitCode = 1;
  })
  .finally(() => redis.disconnect());
