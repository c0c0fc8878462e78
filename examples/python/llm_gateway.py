"""An LLM gateway with the Python client: reserve the estimate, settle the real usage.

Each tenant has two limits: 60 requests per minute (GCRA) and a budget of
1200 tokens per hour (a token bucket, refilled by one token every 3 s). A
request's cost in tokens is known only when its completion ends, so the
gateway reserves its estimate (max_tokens) before calling the model, then
settles with the real usage:

- used less: tokens.refund(key, unused) gives the rest back;
- used more: tokens.take(key, overage, force=True) charges it even past the
  budget; the budget is then in debt (0 left) and later requests wait until
  the refill has paid it back;
- used exactly the estimate: nothing to settle (a query only reads).

Why two calls and not one all_of (RL.ALL): it decides several limits with one
quantity, which suits limits that count the same unit (tokens per minute and
tokens per day, say). Here one limit counts requests and the other tokens: an
all_of over both would charge max_tokens requests to the request limit. So
the gateway takes one request from the request limit first, then max_tokens
from the token budget, and when the budget refuses, gives the request back
(a refund): a refused request counts against neither limit. Between the two
calls another request may see that unit taken, so it can only be refused
early, never let past a limit.

The budget refills slowly on purpose: nothing refills during the run, and
every number printed is the same on every run.

    pip install ./clients/python
    REDIS_PORT=6379 python llm_gateway.py
"""

import math
import os

import redis
from redis_ratelimit_client import RateLimits

r = redis.Redis(host=os.environ.get("REDIS_HOST", "127.0.0.1"), port=int(os.environ.get("REDIS_PORT", "6379")))
limits = RateLimits(r)

# One hash tag per tenant keeps its two limits in one Cluster slot.
TENANT = "acme-python"
REQUESTS_KEY = f"llm:{{{TENANT}}}:requests"
TOKENS_KEY = f"llm:{{{TENANT}}}:tokens"
REQUESTS = limits.gcra(rate=60, per=60, burst=60)  # 60 at once, then one a second
TOKENS = limits.token_bucket(capacity=1200, refill=1200, per=3600)  # refilled over an hour
# How long an empty budget takes to fill again (s): a reset longer than this
# means the budget is in debt; each 3 s past it is a token owed.
FULL_REFILL_S = 3600
SECONDS_PER_TOKEN = 3


def seconds(duration):
    """A timedelta in whole seconds, rounded up."""
    return math.ceil(duration.total_seconds())


def reserve(request, max_tokens):
    """True when the request may go to the model with max_tokens reserved."""
    shown = f"request {request}: reserve {max_tokens} tokens"
    requests = REQUESTS.take(REQUESTS_KEY)
    if not requests.allowed:
        print(f"{shown}: refused by the request limit, retry in {seconds(requests.retry_after)} s")
        return False
    tokens = TOKENS.take(TOKENS_KEY, max_tokens)
    if not tokens.allowed:
        # The request was not served: it gives back its request too.
        REQUESTS.refund(REQUESTS_KEY)
        print(f"{shown}: refused by the token limit, retry in {seconds(tokens.retry_after)} s")
        return False
    print(f"{shown}: allowed, {tokens.remaining} tokens and {requests.remaining} requests left")
    return True


def settle(request, max_tokens, used):
    """Charge the real usage: give back what was reserved and not used, or
    charge the overage in full."""
    if used < max_tokens:
        tokens = TOKENS.refund(TOKENS_KEY, max_tokens - used)
        settled = f"{max_tokens - used} refunded"
    elif used > max_tokens:
        tokens = TOKENS.take(TOKENS_KEY, used - max_tokens, force=True)
        settled = f"{used - max_tokens} more charged"
    else:
        tokens = TOKENS.query(TOKENS_KEY)
        settled = "as reserved"
    owed = ""
    reset = seconds(tokens.reset)
    if reset > FULL_REFILL_S:
        # reset (the time until the budget is full) counts the debt too.
        owed = f", {(reset - FULL_REFILL_S) // SECONDS_PER_TOKEN} owed"
    print(f"request {request}: used {used} tokens, {settled}: {tokens.remaining} tokens left{owed}")


def main():
    r.delete(REQUESTS_KEY, TOKENS_KEY)  # fresh limits: nothing left from an earlier run
    print("limits per tenant: 60 requests per minute, 1200 tokens per hour")
    # (max_tokens asked for, tokens the completion really used; requests 3
    # and 5 are refused and never reach the model)
    requests = [(500, 320), (500, 500), (500, None), (300, 450), (100, None)]
    for request, (max_tokens, used) in enumerate(requests, 1):
        if reserve(request, max_tokens):
            # The completion (simulated) runs here and reports its usage.
            settle(request, max_tokens, used)


if __name__ == "__main__":
    main()
