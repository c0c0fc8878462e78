// An LLM gateway with ioredis: reserve the estimate, settle the real usage.
//
// Each tenant has two limits: 60 requests per minute (GCRA) and a budget of
// 1200 tokens per hour (a token bucket, refilled by one token every 3 s). A
// request's cost in tokens is known only when its completion ends, so the
// gateway reserves its estimate (max_tokens) before calling the model, then
// settles with the real usage:
//
// - used less: RL.TOKEN_BUCKET ... <unused> REFUND gives the rest back;
// - used more: RL.TOKEN_BUCKET ... <overage> FORCE charges it even past the
//   budget; the budget is then in debt (0 left) and later requests wait until
//   the refill has paid it back;
// - used exactly the estimate: nothing to settle (quantity 0 only reads).
//
// Why two calls and not one RL.ALL: RL.ALL decides several limits with one
// quantity, which suits limits that count the same unit (tokens per minute
// and tokens per day, say). Here one limit counts requests and the other
// tokens: an RL.ALL over both would charge max_tokens requests to the request
// limit. So the gateway takes one request from the request limit first, then
// max_tokens from the token budget, and when the budget refuses, gives the
// request back (REFUND): a refused request counts against neither limit.
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

const redis = new Redis({
  host: process.env.REDIS_HOST || "127.0.0.1",
  port: Number(process.env.REDIS_PORT || 6379),
});

// One hash tag per tenant keeps its two limits in one Cluster slot.
const TENANT = "acme-node";
const REQUESTS_KEY = `llm:{${TENANT}}:requests`;
const TOKENS_KEY = `llm:{${TENANT}}:tokens`;
const REQUESTS = ["GCRA", 59, 60, 60]; // 60 at once, then one a second: 60 per minute
const TOKENS = ["TOKEN_BUCKET", 1200, 1200, 3600]; // 1200 tokens, refilled over an hour
// How long an empty budget takes to fill again (s): a reset longer than this
// means the budget is in debt.
const FULL_REFILL_S = (TOKENS[1] * TOKENS[3]) / TOKENS[2];

// The reply of RL.<algorithm> key params... quantity options...
function limit(key, [algorithm, ...params], quantity, ...options) {
  return redis.call(`RL.${algorithm}`, key, ...params, quantity, ...options);
}

// True when the request may go to the model with maxTokens reserved.
async function reserve(request, maxTokens) {
  const shown = `request ${request}: reserve ${maxTokens} tokens`;
  const [blocked, , requestsLeft, retryAfter] = await limit(REQUESTS_KEY, REQUESTS, 1);
  if (blocked) {
    console.log(`${shown}: refused by the request limit, retry in ${retryAfter} s`);
    return false;
  }
  const [tokensBlocked, , tokensLeft, tokensRetryAfter] = await limit(TOKENS_KEY, TOKENS, maxTokens);
  if (tokensBlocked) {
    // The request was not served: it gives back its request too.
    await limit(REQUESTS_KEY, REQUESTS, 1, "REFUND");
    console.log(`${shown}: refused by the token limit, retry in ${tokensRetryAfter} s`);
    return false;
  }
  console.log(`${shown}: allowed, ${tokensLeft} tokens and ${requestsLeft} requests left`);
  return true;
}

// Charge the real usage: give back what was reserved and not used, or charge
// the overage in full.
async function settle(request, maxTokens, used) {
  let reply, settled;
  if (used < maxTokens) {
    reply = await limit(TOKENS_KEY, TOKENS, maxTokens - used, "REFUND");
    settled = `${maxTokens - used} refunded`;
  } else if (used > maxTokens) {
    reply = await limit(TOKENS_KEY, TOKENS, used - maxTokens, "FORCE");
    settled = `${used - maxTokens} more charged`;
  } else {
    reply = await limit(TOKENS_KEY, TOKENS, 0); // quantity 0: a query
    settled = "as reserved";
  }
  const [, , tokensLeft, , reset] = reply;
  let owed = "";
  if (reset > FULL_REFILL_S) {
    // reset (the time until the budget is full) counts the debt too: each
    // refill interval past a full refill is a token owed.
    owed = `, ${Math.floor(((reset - FULL_REFILL_S) * TOKENS[2]) / TOKENS[3])} owed`;
  }
  console.log(`request ${request}: used ${used} tokens, ${settled}: ${tokensLeft} tokens left${owed}`);
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
