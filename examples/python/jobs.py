"""A job runner with the Python client and leases: at most 2 jobs at once per tenant.

Each job holds a lease while it runs: `jobs.lease(key)` takes it on entering
the `with` block (or raises LimitExceeded, with how long until a lease ends)
and gives it back on leaving it, errors included; `lease.renew()` extends a
long-running job's lease (RL.CONCURRENCY, RL.RELEASE and RL.RENEW underneath).
A lease also ends at its deadline, so a worker that crashes without
releasing blocks the tenant for at most its timeout: the example crashes one
and waits for that.

    pip install ./clients/python
    REDIS_PORT=6379 python jobs.py
"""

import math
import os
import time

import redis
from redis_ratelimit_client import LimitExceeded, RateLimits

r = redis.Redis(host=os.environ.get("REDIS_HOST", "127.0.0.1"), port=int(os.environ.get("REDIS_PORT", "6379")))
limits = RateLimits(r)

# One hash tag per tenant: in a Cluster, the tenant's key has one slot.
KEY = "jobs:{tenant-a}"
# 2 jobs at once; a job's lease lasts at most 60 s unless renewed: generous,
# so that only the crashed worker's lease ever reaches its deadline here.
JOBS = limits.concurrency(limit=2, timeout=60)
# The crashed worker's lease is short, so the example need not wait long.
CRASH_TIMEOUT = 1


def units(n):
    return f"{n} unit" if n == 1 else f"{n} units"


def run(job, work):
    """Run work(lease) under a lease, or not at all when refused."""
    try:
        with JOBS.lease(KEY) as lease:
            # Lease ids come from the server's clock: keep them, never show them.
            print(f"job {job}: lease taken, {units(lease.decision.remaining)} free")
            work(lease)
    except LimitExceeded as refused:
        # retry_after is how long until a lease ends; its exact value
        # depends on timing, so show it rounded up to seconds.
        print(f"job {job}: refused, retry in {math.ceil(refused.decision.retry_after.total_seconds())} s")
        return
    # Released on leaving the block, errors included: the unit is free at
    # once instead of at the lease's deadline.
    print(f"job {job}: done, released {units(lease.released)}")


def wait_for_free_unit(deadline_s=10):
    """Until a job could take a lease; peek answers as the call would, and writes nothing."""
    give_up = time.monotonic() + deadline_s
    while not JOBS.acquire(KEY, peek=True).allowed:
        if time.monotonic() > give_up:
            raise RuntimeError(f"no unit free after {deadline_s} s: the crashed lease did not end")
        time.sleep(0.02)


def long_job(lease):
    # A crashed worker: it takes a lease and never releases it.
    crashed = JOBS.acquire(KEY, timeout=CRASH_TIMEOUT)
    print(f"job 2: lease taken, {units(crashed.remaining)} free")
    print("job 2: worker crashed, lease not released")
    # Job 1 and the crashed job hold both units.
    run(3, lambda _: None)
    # Job 1 is still at work: it renews its lease before the deadline.
    print(f"job 1: still running, lease renewed: {lease.renew():d}")
    # The crashed lease ends at its deadline, freeing its unit for others.
    wait_for_free_unit()
    print("crashed worker's lease ended at its deadline")
    run(4, lambda _: None)
    # A worker that comes back too late finds its lease already ended.
    print(f"job 2: late release answers {JOBS.release(KEY, crashed.lease)}")


def main():
    r.delete(KEY)  # a fresh key: nothing left from an earlier run
    run(1, long_job)


if __name__ == "__main__":
    main()
