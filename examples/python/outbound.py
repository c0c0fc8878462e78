"""Paced outbound calls with redis-py and RL.GCRA ... WAIT: many workers, one provider limit.

A provider lets us call its API 20 times per second, one call every 50 ms
with no burst. Four worker threads share that allowance through one key:
before each call a worker reserves the next free slot with

    RL.GCRA outbound:python 0 20 1000 MS WAIT 1000

and the reply's retry_after is how long to sleep before calling (-1: call
now). A reservation counts for every later call, so the workers' calls come
exactly one interval apart: no worker polls, and none of them wakes up at
the same instant as another to find the limit spent. A call whose slot would
be more than max_wait (1000 ms) away is refused (blocked 1) and recorded
nowhere; its retry_after says when asking again would fit, and the worker
then asks again.

The summary prints only what the server decided, so it is the same on every
run: the slots come from the server's clock, not from this process's timers.
What the workers' clocks measured is only checked, with some slack.

    pip install redis
    REDIS_PORT=6379 python outbound.py
"""

import os
import queue
import threading
import time

import redis

r = redis.Redis(host=os.environ.get("REDIS_HOST", "127.0.0.1"), port=int(os.environ.get("REDIS_PORT", "6379")))

KEY = "outbound:python"
RATE = 20  # calls per second that the provider allows
INTERVAL_MS = 1000 // RATE  # 50 ms between calls
MAX_WAIT_MS = 1000  # the longest a call may be held back
WORKERS = 4
JOBS = 12
# Timers and thread scheduling may be a little late, never early; a call
# measured more than this ahead of its slot would be a pacing bug.
SLACK_MS = 20


def reserve():
    """(blocked, retry_after in ms, start of the slot in ms on the server's clock).

    The limiter's key expires when it is fully rested, one interval after the
    latest reservation; read in the same transaction, its expiry tells where
    this call's slot ends, to the millisecond, on the server's clock. Only the
    summary needs that: a worker needs nothing but retry_after.
    """
    pipe = r.pipeline(transaction=True)
    pipe.execute_command("RL.GCRA", KEY, 0, RATE, 1000, "MS", "WAIT", MAX_WAIT_MS)
    pipe.execute_command("PEXPIRETIME", KEY)
    (blocked, _limit, _remaining, retry_after, _reset), expires_at = pipe.execute()
    return blocked, retry_after, expires_at - INTERVAL_MS


def worker(jobs, calls, refusals, lock):
    while True:
        try:
            job = jobs.get_nowait()
        except queue.Empty:
            return
        while True:
            blocked, retry_after, slot = reserve()
            if not blocked:
                break
            # Past max_wait: nothing was reserved. Ask again when the slot
            # would be within reach (or drop the job, if it can't wait).
            with lock:
                refusals.append(job)
            time.sleep(retry_after / 1000)
        if retry_after > 0:
            time.sleep(retry_after / 1000)
        # The call to the provider (simulated): the instant it is made.
        called = time.monotonic()
        with lock:
            calls.append((slot, called))


def main():
    r.delete(KEY)  # a fresh limiter: nothing reserved by an earlier run
    jobs = queue.Queue()
    for job in range(1, JOBS + 1):
        jobs.put(job)
    calls, refusals, lock = [], [], threading.Lock()
    threads = [threading.Thread(target=worker, args=(jobs, calls, refusals, lock)) for _ in range(WORKERS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()

    calls.sort()
    first_slot, first_call = calls[0]
    offsets = [slot - first_slot for slot, _ in calls]
    per_quarter = [0] * (offsets[-1] // 250 + 1)
    for offset in offsets:
        per_quarter[offset // 250] += 1
    # The clocks only confirm the pacing, with slack: each worker slept
    # retry_after (rounded up) after the reply, so no call should be
    # measured ahead of its slot, counting from the first call (made at once).
    on_time = all((called - first_call) * 1000 >= offset - SLACK_MS for (_, called), offset in zip(calls, offsets))
    print(
        f"{WORKERS} workers, {JOBS} calls, one shared limit: {RATE} calls per second, "
        f"no burst, WAIT up to {MAX_WAIT_MS} ms"
    )
    print(f"calls made: {len(calls)}, refused: {len(refusals)}")
    print(f"slots, ms after the first: {' '.join(map(str, offsets))}")
    print(f"calls in each 250 ms since the first: {' '.join(map(str, per_quarter))}")
    print(f"no call ahead of its slot: {'yes' if on_time else 'no'}")

if __name__ == "__main__":
    main()
