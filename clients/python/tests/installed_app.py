"""The client as installed: CI (.ci/installed) runs this with an installed
package, from outside the repository, as `python installed_app.py URL KEY`.
It prints the backend found and the reply of one GCRA take; it fails when
the library it loads is not the copy the package holds."""

from __future__ import annotations

import sys
from pathlib import Path

import redis

from redis_ratelimit_client import RateLimits, _backend

url, key = sys.argv[1:]
package = Path(_backend.__file__).resolve().parent
if _backend.library_path() != package / "ratelimit.lua":
    sys.exit(f"the library was read from {_backend.library_path()}, not from the package ({package})")
limits = RateLimits(redis.Redis.from_url(url))
decision = limits.gcra(rate=1, per=60, burst=3).take(key)
print(limits.backend(), *decision.raw)
