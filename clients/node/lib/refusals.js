"use strict";

// The local memory of refusals (SPEC 18, the contract's README): a plain
// take refused until an instant is refused in-process until then, with the
// same decision, without a round trip. Past its capacity, the entry nearest
// its end is dropped first.

/**
 * @typedef {object} Entry
 * @property {string} key
 * @property {number} until the clock's reading when the refusal ends
 * @property {number} at the clock's reading when it was answered
 * @property {import("./limiters").Result} result
 */

class RefusalMemory {
  /** @param {number} capacity how many keys are remembered */
  constructor(capacity) {
    this.capacity = capacity;
    /** the clock, in milliseconds (monotonic) */
    this.now = () => performance.now();
    /** @type {Map<string, Entry>} */
    this.entries = new Map();
    /** @type {Entry[]} a min-heap on `until`; entries replaced or dropped stay until they surface */
    this.heap = [];
  }

  /**
   * The remembered refusal of `key`, shortened by the time gone by, or
   * undefined when none is in force.
   * @param {string} key
   * @returns {import("./limiters").Result | undefined}
   */
  get(key) {
    const entry = this.entries.get(key);
    if (entry === undefined) return undefined;
    const now = this.now();
    if (now >= entry.until) {
      this.entries.delete(key);
      return undefined;
    }
    return entry.result.later(now - entry.at);
  }

  /**
   * Remembers a refusal with a retry_after until that instant.
   * @param {string} key
   * @param {import("./limiters").Result} result
   */
  remember(key, result) {
    if (result.allowed || result.retryAfter === null || result.retryAfter <= 0) return;
    const at = this.now();
    const entry = { key, until: at + result.retryAfter, at, result };
    this.entries.set(key, entry);
    this.push(entry);
    while (this.entries.size > this.capacity) this.dropNearest();
    if (this.heap.length > 2 * this.capacity + 16) this.rebuild();
  }

  /** Drops the live entry that ends first. */
  dropNearest() {
    while (this.heap.length > 0) {
      const entry = this.pop();
      if (this.entries.get(entry.key) === entry) {
        this.entries.delete(entry.key);
        return;
      }
    }
  }

  /** The heap again from the live entries alone. */
  rebuild() {
    this.heap = [];
    for (const entry of this.entries.values()) this.push(entry);
  }

  /** @param {Entry} entry */
  push(entry) {
    const heap = this.heap;
    heap.push(entry);
    let i = heap.length - 1;
    while (i > 0) {
      const parent = (i - 1) >> 1;
      if (heap[parent].until <= heap[i].until) break;
      [heap[parent], heap[i]] = [heap[i], heap[parent]];
      i = parent;
    }
  }

  /** @returns {Entry} */
  pop() {
    const heap = this.heap;
    const top = heap[0];
    const last = /** @type {Entry} */ (heap.pop());
    if (heap.length > 0) {
      heap[0] = last;
      let i = 0;
      for (;;) {
        const l = 2 * i + 1;
        const r = l + 1;
        let least = i;
        if (l < heap.length && heap[l].until < heap[least].until) least = l;
        if (r < heap.length && heap[r].until < heap[least].until) least = r;
        if (least === i) break;
        [heap[least], heap[i]] = [heap[i], heap[least]];
        i = least;
      }
    }
    return top;
  }
}

module.exports = { RefusalMemory };
