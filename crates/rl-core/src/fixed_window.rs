//! The fixed window: at most `limit` units in each window `[k*W, (k+1)*W)`.

use crate::bounds::{MAX_HELD, MAX_LIMIT};
use crate::decision::{Decision, RetryAfter};
use crate::error::{in_range, ParamError};
use crate::limiter::{refunded, After, Limiter, Outcome, Overdrawn, Refunded, Update};
use crate::time::{Instant, Micros};
use crate::window::{Window, MAX_WINDOW_START};

/// Validated fixed-window parameters.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct FixedWindow {
    limit: u64,
    window: Window,
}

/// Units allowed so far in the window that starts at `start` (µs).
///
/// The start, not the window's index, is stored: an index read under another
/// window length would point decades away; a start stays a real instant.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct WindowCount {
    start: u64,
    count: u64,
}

impl WindowCount {
    /// `None` unless `start <= 2^56 - 1` µs and `count <= 4 * 10^9` (past
    /// the limit: a debt, [`MAX_HELD`]).
    pub fn new(start: u64, count: u64) -> Option<WindowCount> {
        (start <= MAX_WINDOW_START && count <= MAX_HELD).then_some(WindowCount { start, count })
    }

    pub fn start(&self) -> u64 {
        self.start
    }

    pub fn count(&self) -> u64 {
        self.count
    }
}

impl FixedWindow {
    /// `limit` 1 ..= 10^9, `window_micros` 1 ..= 10^15.
    pub fn new(limit: u64, window_micros: u64) -> Result<FixedWindow, ParamError> {
        Ok(FixedWindow {
            limit: in_range("limit", limit, 1, MAX_LIMIT)?,
            window: Window::new(window_micros)?,
        })
    }
}

impl FixedWindow {
    /// The window in force at `now` and its units: (start, used). A stored
    /// start counts in the window of this length that holds it (it may have
    /// been written under another length). That window, if it is now's or a
    /// later one (the clock stepped back), stays in force until it ends:
    /// nothing extra is admitted.
    fn in_force(&self, state: Option<&WindowCount>, now: Instant) -> (u64, u64) {
        let current = self.window.start_of(now);
        match state {
            Some(s) if s.start >= current => (self.window.align(s.start), s.count),
            _ => (current, 0),
        }
    }
}

impl FixedWindow {
    /// The answer for `count` units recorded in the window that starts at
    /// `start`, and its update.
    fn recorded(&self, decision: Decision, start: u64, count: u64, now: Instant) -> Outcome<WindowCount> {
        let end = u128::from(start) + self.window.micros();
        Outcome {
            decision: Decision {
                remaining: self.limit.saturating_sub(count),
                reset: Window::until(now, end),
                ..decision
            },
            update: Some(Update {
                change: WindowCount { start, count },
                expires_at: Window::instant(end),
            }),
        }
    }
}

impl Limiter for FixedWindow {
    type State<'a> = WindowCount;
    type Change = WindowCount;
    type Refund = WindowCount;

    fn limit(&self) -> u64 {
        self.limit
    }

    fn check(&self, state: Option<&WindowCount>, now: Instant, quantity: u64) -> Outcome<WindowCount> {
        let (start, used) = self.in_force(state, now);
        let end = u128::from(start) + self.window.micros();
        let to_end = Window::until(now, end);
        let mut decision = Decision {
            blocked: false,
            limit: self.limit,
            remaining: self.limit.saturating_sub(used),
            retry_after: RetryAfter::Allowed,
            reset: if used == 0 { Micros::ZERO } else { to_end },
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
        if used + quantity > self.limit {
            decision.blocked = true;
            // The next window starts empty.
            decision.retry_after = RetryAfter::After(to_end);
            return Outcome::unchanged(decision);
        }
        self.recorded(decision, start, used + quantity, now)
    }

    /// `quantity` more in the current window, past `limit` if need be.
    fn force(
        &self,
        state: Option<&WindowCount>,
        now: Instant,
        quantity: u64,
    ) -> Result<Outcome<WindowCount>, Overdrawn> {
        let (start, used) = self.in_force(state, now);
        let count = used + quantity;
        if count > MAX_HELD || start > MAX_WINDOW_START {
            return Err(Overdrawn);
        }
        let decision = Decision {
            blocked: false,
            limit: self.limit,
            remaining: 0,
            retry_after: RetryAfter::Allowed,
            reset: Micros::ZERO,
        };
        Ok(self.recorded(decision, start, count, now))
    }

    /// The window's count minus `quantity`, floored at 0.
    fn refund(&self, state: Option<&WindowCount>, now: Instant, quantity: u64) -> Refunded<WindowCount> {
        let (start, used) = self.in_force(state, now);
        let after = match used.saturating_sub(quantity) {
            _ if used == 0 || quantity == 0 => After::Same,
            0 => After::Rested,
            count => After::State(WindowCount { start, count }),
        };
        refunded(self, state, now, after)
    }
}
