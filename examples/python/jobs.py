"""A job runner with redis-py and RL.CONCURRENCY: at most 2 jobs at once per tenant.

Each job holds a lease while it runs: RL.CONCURRENCY takes it (or refuses,
with how long until a lease ends), RL.RELEASE gives it back in a `finally`,
and RL.RENEW extends a long-running job's lease. A lease also ends at its
deadline, so a worker that crashes without releasing blocks the tenant for
at most its timeout: the example crashes one and waits for that.

    pip install redis
    REDIS_PORT=6379 python jobs.py
"""

import math
import os
import time

import redis

r = redis.Redis(host=os.environ.get("REDIS_HOST", "127.0.0.1"), port=int(os.environ.get("REDIS_PORT", "6379")))

# One hash tag per tenant: in a Cluster, the tenant's key has one slot.
KEY = "jobs:{tenant-a}"
LIMIT = 2
# A job's lease lasts at most this long (ms) unless renewed: generous, so that
# only the crashed worker's lease ever reaches its deadline here.
TIMEOUT_MS = 60000
# The crashed worker's lease is short, so the example need not wait long.
CRASH_TIMEOUT_MS = 1000


def units(n):
    return f"{n} unit" if n == 1 else f"{n} units"


def take(job, timeout_ms=TIMEOUT_MS):
    """The lease id for this job, or None when the tenant is at its limit."""
    blocked, _limit, remaining, retry_after, _reset, lease = r.execute_command(
        "RL.CONCURRENCY", KEY, LIMIT, timeout_ms, "MS"
    )
    if blocked:
        # retry_after (ms) is how long until a lease ends; its exact value
        # depends on timing, so show it rounded up to seconds.
        print(f"job {job}: refused, retry in {math.ceil(retry_after / 1000)} s")
        return None
    # Lease ids come from the server's clock: keep them, never show them.
    print(f"job {job}: lease taken, {units(remaining)} free")
    return lease


def run(job, work):
    """Run work(lease) under a lease, or not at all when refused."""
    lease = take(job)
    if lease is None:
        return
    try:
        work(lease)
    finally:
        # Released on every path, errors included: the unit is free at once
        # instead of at the lease's deadline.
        released = r.execute_command("RL.RELEASE", KEY, lease)
        print(f"job {job}: done, released {units(released)}")


def wait_for_free_unit(deadline_s=10):
    """Until a job could take a lease; PEEK answers as the call would, and writes nothing."""
    give_up = time.monotonic() + deadline_s
    while r.execute_command("RL.CONCURRENCY", KEY, LIMIT, TIMEOUT_MS, "MS", "PEEK")[0]:
        if time.monotonic() > give_up:
            raise RuntimeError(f"no unit free after {deadline_s} s: the crashed lease did not end")
        time.sleep(0.02)


def long_job(lease):
    # A crashed worker: it takes a lease and never releases it.
    crashed = take(2, CRASH_TIMEOUT_MS)
    print("job 2: worker crashed, lease not released")
    # Job 1 and the crashed job hold both units.
    run(3, lambda _: None)
    # Job 1 is still at work: it renews its lease before the deadline.
    renewed = r.execute_command("RL.RENEW", KEY, lease, TIMEOUT_MS, "MS")
    print(f"job 1: still running, lease renewed: {renewed}")
    # The crashed lease ends at its deadline, freeing its unit for others.
    wait_for_free_unit()
    print("crashed worker's lease ended at its deadline")
    run(4, lambda _: None)
    # A worker that comes back too late finds its lease already ended.
    print(f"job 2: late release answers {r.execute_command('RL.RELEASE', KEY, crashed)}")


def main():
    r.delete(KEY)  # a fresh key: nothing left from an earlier run
    run(1, long_job)


if __name__ == "__main__":
    main()
