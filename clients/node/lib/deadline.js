"use strict";

// The deadline of each call. An AbortController costs about 4 µs to make,
// ten times what the rest of a call costs in this library, and a timer per
// call costs more than the call's own work: so a call's deadline is a small
// object, and the deadlines of one RateLimits (which all last `timeout`, so
// they end in the order they began) share one timer, armed for the oldest
// call still waiting.

/** One call's deadline: `aborted` once it has passed. */
class Deadline {
  /** @param {number} expires the clock's reading (performance.now()) when it passes */
  constructor(expires) {
    this.expires = expires;
    /** true once the deadline has passed */
    this.aborted = false;
    /** true once the call has answered (or the deadline passed) */
    this.done = false;
    /** @type {Array<() => void> | null} */
    this.listeners = null;
    /** @type {AbortController | null} */
    this.controller = null;
  }

  /** Calls `fn` when the deadline passes (not after the call answered). @param {() => void} fn */
  onAbort(fn) {
    if (this.listeners === null) this.listeners = [fn];
    else this.listeners.push(fn);
  }

  /** An AbortSignal aborted when the deadline passes, made on first use (for Redis clients that take one). */
  get signal() {
    if (this.controller === null) {
      this.controller = new AbortController();
      if (this.aborted) this.controller.abort();
    }
    return this.controller.signal;
  }

  /** The deadline has passed: tells every listener (called by Deadlines alone). */
  expire() {
    this.aborted = true;
    if (this.controller !== null) this.controller.abort();
    if (this.listeners !== null) for (const fn of this.listeners) fn();
  }
}

/** The deadlines of the calls of one RateLimits, all `ms` long, in one queue under one timer. */
class Deadlines {
  /** @param {number} ms */
  constructor(ms) {
    this.ms = ms;
    /** @type {Deadline[]} in the order they began, so in the order they pass */
    this.queue = [];
    this.head = 0;
    /** calls still waiting */
    this.live = 0;
    /** @type {NodeJS.Timeout | null} */
    this.timer = null;
  }

  /** A new call's deadline. */
  start() {
    const deadline = new Deadline(performance.now() + this.ms);
    this.queue.push(deadline);
    this.live += 1;
    // The timer, armed for an earlier deadline, fires first and is armed
    // again for this one; unless there is none yet.
    if (this.timer === null) this.arm(deadline.expires);
    else if (this.live === 1) this.timer.ref();
    return deadline;
  }

  /** The call answered before its deadline. @param {Deadline} deadline */
  finish(deadline) {
    if (deadline.done) return;
    deadline.done = true;
    this.live -= 1;
    if (this.live === 0) {
      // No call waiting: the timer stays for the next calls (one timer per
      // `ms`, not one per call) but no longer keeps the process alive.
      this.timer?.unref();
      this.queue.length = 0;
      this.head = 0;
    }
  }

  /** @private @param {number} at */
  arm(at) {
    this.timer = setTimeout(() => this.fire(), Math.max(1, Math.ceil(at - performance.now())));
  }

  /** @private Expires every deadline that has passed, then waits for the next. */
  fire() {
    this.timer = null;
    const now = performance.now();
    const queue = this.queue;
    while (this.head < queue.length) {
      const deadline = queue[this.head];
      if (deadline.done) {
        this.head += 1;
        continue;
      }
      if (deadline.expires > now) break;
      this.head += 1;
      deadline.done = true;
      this.live -= 1;
      deadline.expire();
    }
    if (this.live === 0) {
      this.queue.length = 0;
      this.head = 0;
      return;
    }
    if (this.head > 1024 && this.head * 2 > queue.length) {
      queue.splice(0, this.head);
      this.head = 0;
    }
    this.arm(queue[this.head].expires);
  }
}

module.exports = { Deadline, Deadlines };
