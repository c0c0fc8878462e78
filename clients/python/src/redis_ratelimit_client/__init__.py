"""Rate limits as native Redis commands, from Python.

A thin client for the redis-ratelimit module (``RL.GCRA``, ``RL.ALL``,
``RL.CONCURRENCY``...) and its functions edition: limiters built from human
words, typed decisions, leases, ASGI middleware and a FastAPI dependency.

    import redis
    from redis_ratelimit_client import RateLimits

    limits = RateLimits(redis.Redis())
    api = limits.gcra(rate=10, per=1, burst=20)
    decision = api.take("user:42")
    if not decision.allowed:
        print("retry in", decision.retry_after)

Every decision is made by the server; the client finds the backend (the
module, else the functions library, which it loads when missing, else the
standalone scripts) once per client object. Every call has a deadline
(``timeout``, default 250 ms) and a failure policy (``fail_open``).
"""

from ._async import AsyncAllOf, AsyncConcurrency, AsyncLease, AsyncLimiter, AsyncRateLimits
from ._backend import BACKENDS, FUNCTIONS, MODULE, SCRIPTS
from ._core import Key, rate_limit_headers
from ._decision import Decision
from ._errors import InvalidParameter, LimitExceeded, RateLimitError, ServerError, Unavailable
from ._params import Duration
from ._reading import Inspection, LogEntry, TagUnits
from ._specs import RateSpec
from ._sync import AllOf, Concurrency, Lease, Limiter, RateLimits
from ._version import __version__

__all__ = [
    "BACKENDS",
    "FUNCTIONS",
    "MODULE",
    "SCRIPTS",
    "AllOf",
    "AsyncAllOf",
    "AsyncConcurrency",
    "AsyncLease",
    "AsyncLimiter",
    "AsyncRateLimits",
    "Concurrency",
    "Decision",
    "Duration",
    "Inspection",
    "InvalidParameter",
    "Key",
    "Lease",
    "LimitExceeded",
    "Limiter",
    "LogEntry",
    "RateLimitError",
    "RateLimits",
    "RateSpec",
    "ServerError",
    "TagUnits",
    "Unavailable",
    "__version__",
    "rate_limit_headers",
]
