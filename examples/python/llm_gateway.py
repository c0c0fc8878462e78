"""An LLM gateway with redis-py: reserve the estimate, settle the real usage.

Each tenant has two limits: 60 requests per minute (GCRA) and a budget of
1200 tokens per hour (a token bucket, refilled by one token every 3 s). A
request's cost in tokens is known only when its completion ends, so the
gateway reserves its estimate (max_tokens) before calling the model, then
settles with the real usage:

- used less: RL.TOKEN_BUCKET ... <unused> REFUND gives the rest back;
- used more: RL.TOKEN_BUCKET ... <overage> FORCE charges it even past the
  budget; the budget is then in debt (0 left) and later requests wait until
  the refill has paid it back;
- used exactly the estimate: nothing to settle (quantity 0 only reads).

Why two calls and not one RL.ALL: RL.ALL decides several limits with one
quantity, which suits limits that count the same unit (tokens per minute and
tokens per day, say). Here one limit counts requests and the other tokens: an
RL.ALL over both would charge max_tokens requests to the request limit. So
the gateway takes one request from the request limit first, then max_tokens
from the token budget, and when the budget refuses, gives the request back
(REFUND): a refused request counts against neither limit. Between the two
calls another request may see that unit taken, so it can only be refused
early, never let past a limit.

The budget refills slowly on purpose: nothing refills during the run, and
every number printed is the same on every run.

    pip install redis
    REDIS_PORT=6379 python llm_gateway.py
"""

import os

import redis

r = redis.Redis(host=os.environ.get("REDIS_HOST", "127.0.0.1"), port=int(os.environ.get("REDIS_PORT", "6379")))

# One hash tag per tenant keeps its two limits in one Cluster slot.
TENANT = "acme-python"
REQUESTS_KEY = f"llm:{{{TENANT}}}:requests"
TOKENS_KEY = f"llm:{{{TENANT}}}:tokens"
REQUESTS = ["GCRA", 59, 60, 60]  # 60 at once, then one a second: 60 per minute
TOKENS = ["TOKEN_BUCKET", 1200, 1200, 3600]  # 1200 tokens, refilled over an hour
# How long an empty budget takes to fill again (s): a reset longer than this
# means the budget is in debt.
FULL_REFILL_S = TOKENS[1] * TOKENS[3] // TOKENS[2]


def limit(key, spec, quantity, *options):
    """The reply of RL.<algorithm> key params... quantity options..."""
    algorithm, *params = spec
    return r.execute_command(f"RL.{algorithm}", key, *params, quantity, *options)


def reserve(request, max_tokens):
    """True when the request may go to the model with max_tokens reserved."""
    shown = f"request {request}: reserve {max_tokens} tokens"
    blocked, _limit, requests_left, retry_after, _reset = limit(REQUESTS_KEY, REQUESTS, 1)
    if blocked:
        print(f"{shown}: refused by the request limit, retry in {retry_after} s")
        return False
    blocked, _limit, tokens_left, retry_after, _reset = limit(TOKENS_KEY, TOKENS, max_tokens)
    if blocked:
        # The request was not served: it gives back its request too.
        limit(REQUESTS_KEY, REQUESTS, 1, "REFUND")
        print(f"{shown}: refused by the token limit, retry in {retry_after} s")
        return False
    print(f"{shown}: allowed, {tokens_left} tokens and {requests_left} requests left")
    return True


def settle(request, max_tokens, used):
    """Charge the real usage: give back what was reserved and not used, or
    charge the overage in full."""
    if used < max_tokens:
        reply = limit(TOKENS_KEY, TOKENS, max_tokens - used, "REFUND")
        settled = f"{max_tokens - used} refunded"
    elif used > max_tokens:
        reply = limit(TOKENS_KEY, TOKENS, used - max_tokens, "FORCE")
        settled = f"{used - max_tokens} more charged"
    else:
        reply = limit(TOKENS_KEY, TOKENS, 0)  # quantity 0: a query
        settled = "as reserved"
    _blocked, _limit, tokens_left, _retry_after, reset = reply
    owed = ""
    if reset > FULL_REFILL_S:
        # reset (the time until the budget is full) counts the debt too:
        # each refill interval past a full refill is a token owed.
        owed = f", {(reset - FULL_REFILL_S) * TOKENS[2] // TOKENS[3]} owed"
    print(f"request {request}: used {used} tokens, {settled}: {tokens_left} tokens left{owed}")


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
