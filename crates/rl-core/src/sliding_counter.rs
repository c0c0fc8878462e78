//! The sliding counter: the two-window approximation of a sliding window.
//!
//! With `prev` and `cur` the units allowed in the previous and the current
//! window and `e` the time elapsed in the current one, the estimate is
//! `prev * (W - e) / W + cur`, and a request of `q` is allowed iff
//! `prev * (W - e) + (cur + q) * W <= limit * W`, compared exactly.

use crate::bounds::{MAX_HELD, MAX_LIMIT};
use crate::decision::{Decision, RetryAfter};
use crate::error::{in_range, ParamError};
use crate::limiter::{refunded, After, Limiter, Outcome, Overdrawn, Refunded, Update};
use crate::time::{Instant, Micros};
use crate::window::{Window, MAX_WINDOW_START};

/// Validated sliding-counter parameters.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct SlidingCounter {
    limit: u64,
    window: Window,
}

/// Units allowed in the window that starts at `start` (µs; `current`) and
/// in the one before it (`previous`). As for the fixed window, the start is
/// stored rather than an index, so another window length cannot misplace it.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct WindowPair {
    start: u64,
    previous: u64,
    current: u64,
}

impl WindowPair {
    /// `None` unless `start <= 2^56 - 1` µs and both counts are at most
    /// 4 * 10^9 (past the limit: a debt, [`MAX_HELD`]).
    pub fn new(start: u64, previous: u64, current: u64) -> Option<WindowPair> {
        (start <= MAX_WINDOW_START && previous <= MAX_HELD && current <= MAX_HELD).then_some(WindowPair {
            start,
            previous,
            current,
        })
    }

    pub fn start(&self) -> u64 {
        self.start
    }

    pub fn previous(&self) -> u64 {
        self.previous
    }

    pub fn current(&self) -> u64 {
        self.current
    }
}

impl SlidingCounter {
    /// `limit` 1 ..= 10^9, `window_micros` 1 ..= 10^15.
    pub fn new(limit: u64, window_micros: u64) -> Result<SlidingCounter, ParamError> {
        Ok(SlidingCounter {
            limit: in_range("limit", limit, 1, MAX_LIMIT)?,
            window: Window::new(window_micros)?,
        })
    }

    /// The counts as they stand at `now`: (window start, prev, cur).
    fn counts_at(&self, state: Option<&WindowPair>, now: Instant) -> (u64, u64, u64) {
        let current = self.window.start_of(now);
        let Some(s) = state else {
            return (current, 0, 0);
        };
        // A start written under another window length counts in the window
        // of this length that holds it: its units were all taken at or after
        // it. The previous window's units were taken before it, possibly
        // just before: if the start is not on a boundary of this length, the
        // instant before it lies in the same window, so they count there
        // too, never in an earlier one.
        let start = self.window.align(s.start);
        let (previous, current_units) = if start == s.start {
            (s.previous, s.current)
        } else {
            (0, s.current + s.previous)
        };
        if start >= current {
            // Same window, or a later one (the clock stepped back): as stored.
            (start, previous, current_units)
        } else if u128::from(start) + self.window.micros() == u128::from(current) {
            (current, current_units, 0)
        } else {
            (current, 0, 0)
        }
    }

    /// Time until fully rested: the current count still weighs in the whole
    /// next window; the previous one until this window ends.
    fn reset(&self, now: Instant, start: u64, prev: u64, cur: u64) -> Micros {
        let start = u128::from(start);
        if cur > 0 {
            Window::until(now, start + 2 * self.window.micros())
        } else if prev > 0 {
            Window::until(now, start + self.window.micros())
        } else {
            Micros::ZERO
        }
    }

    /// The earliest instant at which `q` more units fit, given the counts of
    /// the window starting at `start` (only called when they do not fit at
    /// `now`).
    fn next_fit(&self, start: u64, elapsed: u128, prev: u64, cur: u64, q: u64) -> u128 {
        let (w, limit) = (self.window.micros(), u128::from(self.limit));
        let (prev, cur, q) = (u128::from(prev), u128::from(cur), u128::from(q));
        let start = u128::from(start);
        // Later in this window, as the previous window's weight decays:
        // prev * (W - e) <= (limit - cur - q) * W.
        if cur + q <= limit && prev > 0 {
            let e = w - ((limit - cur - q) * w / prev).min(w);
            if e < w && e > elapsed {
                return start + e;
            }
        }
        // In the next window, where `cur` becomes the previous count:
        // cur * (W - e) <= (limit - q) * W; at its end everything has left.
        let next = start + w;
        if cur == 0 {
            return next;
        }
        next + (w - ((limit - q) * w / cur).min(w))
    }
}

impl SlidingCounter {
    /// The answer for counts `prev` and `cur` recorded in the window that
    /// starts at `start` (`remaining` left to the caller), and its update.
    fn recorded(&self, now: Instant, start: u64, prev: u64, cur: u64) -> Outcome<WindowPair> {
        let reset = self.reset(now, start, prev, cur);
        Outcome {
            decision: Decision {
                blocked: false,
                limit: self.limit,
                remaining: 0,
                retry_after: RetryAfter::Allowed,
                reset,
            },
            update: Some(Update {
                change: WindowPair {
                    start,
                    previous: prev,
                    current: cur,
                },
                expires_at: now.saturating_add(reset),
            }),
        }
    }
}

impl Limiter for SlidingCounter {
    type State<'a> = WindowPair;
    type Change = WindowPair;
    type Refund = WindowPair;

    fn limit(&self) -> u64 {
        self.limit
    }

    fn check(&self, state: Option<&WindowPair>, now: Instant, quantity: u64) -> Outcome<WindowPair> {
        let (start, prev, cur) = self.counts_at(state, now);
        let (w, limit) = (self.window.micros(), u128::from(self.limit));
        let elapsed = u128::from(now.as_micros().saturating_sub(start)).min(w);
        // prev's weighted share, scaled by W.
        let decayed = u128::from(prev) * (w - elapsed);
        let fits = |units: u64| decayed + (u128::from(cur) + u128::from(units)) * w <= limit * w;
        let remaining_with = |cur: u64| {
            let free = (limit * w).saturating_sub(decayed) / w;
            u64::try_from(free.saturating_sub(u128::from(cur)))
                .unwrap_or(u64::MAX)
                .min(self.limit)
        };
        let mut decision = Decision {
            blocked: false,
            limit: self.limit,
            remaining: remaining_with(cur),
            retry_after: RetryAfter::Allowed,
            reset: self.reset(now, start, prev, cur),
        };
        if let Some(done) = Outcome::settled(decision, quantity) {
            return done;
        }
        if start > MAX_WINDOW_START {
            // Beyond what can be stored (about the year 4253).
            decision.blocked = true;
            decision.retry_after = RetryAfter::Never;
            return Outcome::unchanged(decision);
        }
        if !fits(quantity) {
            decision.blocked = true;
            let at = self.next_fit(start, elapsed, prev, cur, quantity);
            decision.retry_after = RetryAfter::After(Window::until(now, at));
            return Outcome::unchanged(decision);
        }
        let mut outcome = self.recorded(now, start, prev, cur + quantity);
        outcome.decision.remaining = remaining_with(cur + quantity);
        outcome
    }

    /// `quantity` more in the current window, past `limit` if need be.
    fn force(
        &self,
        state: Option<&WindowPair>,
        now: Instant,
        quantity: u64,
    ) -> Result<Outcome<WindowPair>, Overdrawn> {
        let (start, prev, cur) = self.counts_at(state, now);
        let cur = cur + quantity;
        if cur > MAX_HELD || prev > MAX_HELD || start > MAX_WINDOW_START {
            return Err(Overdrawn);
        }
        let mut outcome = self.recorded(now, start, prev, cur);
        // What would pass now: the whole limit, less the weighted estimate.
        let (w, limit) = (self.window.micros(), u128::from(self.limit));
        let elapsed = u128::from(now.as_micros().saturating_sub(start)).min(w);
        let used = u128::from(prev) * (w - elapsed) + u128::from(cur) * w;
        outcome.decision.remaining = u64::try_from((limit * w).saturating_sub(used) / w).unwrap_or(0);
        Ok(outcome)
    }

    /// `quantity` comes off the current window's count, and what it lacks
    /// off the previous one's, floored at 0.
    fn refund(&self, state: Option<&WindowPair>, now: Instant, quantity: u64) -> Refunded<WindowPair> {
        let (start, prev, cur) = self.counts_at(state, now);
        let from_current = quantity.min(cur);
        let from_previous = (quantity - from_current).min(prev);
        let (previous, current) = (prev - from_previous, cur - from_current);
        let after = if quantity == 0 || prev + cur == 0 || start > MAX_WINDOW_START {
            // Nothing to give back (or a window beyond what can be stored).
            After::Same
        } else if previous + current == 0 {
            After::Rested
        } else {
            After::State(WindowPair {
                start,
                previous,
                current,
            })
        };
        refunded(self, state, now, after)
    }
}
