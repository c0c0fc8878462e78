//! The sliding log: the instants of allowed units; a request of `q` is
//! allowed iff the units logged in `(now - W, now]` plus `q` are at most
//! `limit`. Two units at one instant are two entries, and the log never needs
//! more than `limit` entries: the newest `limit` decide every request.
//!
//! The log is read through [`LogView`], a view over packed little-endian
//! `u64` instants kept as a ring, so the storage layer can hand over its
//! bytes without copying; admission is O(1) (the entry `limit - q` back from
//! the newest decides) and `remaining` a binary search.

use crate::bounds::{MAX_HELD, MAX_LIMIT};
use crate::decision::{Decision, RetryAfter};
use crate::error::{in_range, ParamError};
use crate::limiter::{Giveback, Limiter, Outcome, Overdrawn, Refunded, Update};
use crate::time::{Instant, Micros};
use crate::window::Window;

/// Bytes per logged instant.
pub const ENTRY_BYTES: usize = 8;

/// Validated sliding-log parameters.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct SlidingLog {
    limit: u64,
    window: Window,
}

/// A read-only view of a stored log: `len` instants in a ring of packed
/// `u64` LE slots, the oldest at slot `oldest`, non-decreasing from oldest
/// to newest; and the bytes the storage layer keeps with them (a tagged
/// log's tags), carried for it and never read here.
#[derive(Copy, Clone, Debug)]
pub struct LogView<'a> {
    slots: &'a [u8],
    oldest: usize,
    tags: Option<&'a [u8]>,
}

impl<'a> LogView<'a> {
    /// `None` unless `slots` is whole entries, `oldest` is one of them (or 0
    /// for an empty log), and the oldest entry is not after the newest. (The
    /// order of the others is not checked, to keep reading O(1); a log out of
    /// order gives wrong answers, never a panic.)
    pub fn new(slots: &'a [u8], oldest: usize) -> Option<LogView<'a>> {
        if !slots.len().is_multiple_of(ENTRY_BYTES) {
            return None;
        }
        let len = slots.len() / ENTRY_BYTES;
        if oldest >= len.max(1) {
            return None;
        }
        let view = LogView {
            slots,
            oldest,
            tags: None,
        };
        let ordered = len == 0 || view.get(0) <= view.get(len - 1);
        ordered.then_some(view)
    }

    /// The same view, carrying the storage layer's `tags` (see
    /// [`LogView::tags`]).
    pub fn with_tags(self, tags: &'a [u8]) -> LogView<'a> {
        LogView {
            tags: Some(tags),
            ..self
        }
    }

    /// What the storage layer keeps beside the instants, when it keeps
    /// anything: a tagged log's tags. Decisions never read them.
    pub fn tags(&self) -> Option<&'a [u8]> {
        self.tags
    }

    pub fn len(&self) -> usize {
        self.slots.len() / ENTRY_BYTES
    }

    pub fn is_empty(&self) -> bool {
        self.slots.is_empty()
    }

    pub fn oldest_slot(&self) -> usize {
        self.oldest
    }

    /// The `i`-th instant from the oldest, in microseconds.
    pub fn get(&self, i: usize) -> u64 {
        let slot = (self.oldest + i) % self.len();
        let mut raw = [0u8; ENTRY_BYTES];
        raw.copy_from_slice(&self.slots[slot * ENTRY_BYTES..(slot + 1) * ENTRY_BYTES]);
        u64::from_le_bytes(raw)
    }

    /// How many entries are later than `after` (binary search).
    pub fn count_later_than(&self, after: u128) -> usize {
        let (mut lo, mut hi) = (0, self.len());
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            if u128::from(self.get(mid)) > after {
                hi = mid;
            } else {
                lo = mid + 1;
            }
        }
        self.len() - lo
    }
}

/// What an allowed request adds: `count` entries at `at`, placed after every
/// entry at or before `at` and before any later one (a reservation's, or
/// one logged before the clock stepped back), after which only the newest
/// `keep` entries matter.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Append {
    pub at: Instant,
    pub count: u64,
    pub keep: u64,
}

/// What a refund removes: the `newest` entries of the log (all of them in
/// the window). `horizon`: an entry at or before this instant is out of the
/// window, so a slot may be kept with such an instant instead of being
/// removed (`None` when every entry counts: a clock within one window of
/// the epoch).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Shed {
    pub newest: u64,
    pub horizon: Option<Instant>,
}

impl SlidingLog {
    /// `limit` 1 ..= 10^9 (the module caps it lower: memory grows with it),
    /// `window_micros` 1 ..= 10^15.
    pub fn new(limit: u64, window_micros: u64) -> Result<SlidingLog, ParamError> {
        Ok(SlidingLog {
            limit: in_range("limit", limit, 1, MAX_LIMIT)?,
            window: Window::new(window_micros)?,
        })
    }

    /// Time until the entry at `at` leaves the window: it is out once
    /// `at <= now - W`.
    fn until_out(&self, now: Instant, at: u64) -> Micros {
        Window::until(now, u128::from(at) + self.window.micros())
    }

    /// Entries of `log` in the window at `now`: those later than `now - W`
    /// (entries "from the future", after the clock stepped back, count too).
    fn in_window(&self, log: &LogView<'_>, now: Instant) -> u64 {
        let n = match self.horizon(now) {
            Some(h) => log.count_later_than(h),
            None => log.len(),
        };
        u64::try_from(n).unwrap_or(u64::MAX)
    }

    /// Entries at or before this instant are out of the window at `now`.
    fn horizon(&self, now: Instant) -> Option<u128> {
        u128::from(now.as_micros()).checked_sub(self.window.micros())
    }

    /// A query's decision on a log of `n` entries of which the newest
    /// `in_window` are in the window: `remaining`, and `reset` from the
    /// newest one.
    fn query(&self, log: &LogView<'_>, now: Instant, n: usize, in_window: u64) -> Decision {
        let newest = n.checked_sub(1).map(|i| log.get(i));
        Decision {
            blocked: false,
            limit: self.limit,
            remaining: self.limit.saturating_sub(in_window),
            retry_after: RetryAfter::Allowed,
            reset: newest
                .filter(|_| in_window > 0)
                .map_or(Micros::ZERO, |t| self.until_out(now, t)),
        }
    }
}

impl SlidingLog {
    /// The newest entry of `state`, and how many of its entries are in the
    /// window at `now`.
    fn survey(&self, state: Option<&LogView<'_>>, now: Instant) -> (Option<u64>, u64) {
        match state {
            Some(log) => (
                log.len().checked_sub(1).map(|i| log.get(i)),
                self.in_window(log, now),
            ),
            None => (None, 0),
        }
    }

    /// The answer at `now` for `quantity` entries logged at `at` (no
    /// earlier than `now`) in a log whose newest entry is `newest` and of
    /// which `in_window` are in the window at `now`, and its update. The log
    /// keeps every entry in the window at `now` (past `limit` after a
    /// forced request, or a reservation beside entries that leave the
    /// window before its instant: a refund may take the reservation back),
    /// and at least `limit` entries.
    fn appended(
        &self,
        newest: Option<u64>,
        in_window: u64,
        now: Instant,
        at: Instant,
        quantity: u64,
    ) -> Outcome<Append> {
        let keep = self.limit.max(in_window + quantity);
        // The units are logged at their own instant, even before entries
        // from the future (a reservation's): those stay the newest, and the
        // limiter rests when the newest of all has left the window.
        let last = newest.map_or(at.as_micros(), |t| t.max(at.as_micros()));
        let reset = self.until_out(now, last);
        // The entries appended are in the window (at or after now), and so
        // are those of the others that were.
        let counted = in_window + quantity;
        Outcome {
            decision: Decision {
                blocked: false,
                limit: self.limit,
                remaining: self.limit.saturating_sub(counted),
                retry_after: RetryAfter::Allowed,
                reset,
            },
            update: Some(Update {
                change: Append {
                    at,
                    count: quantity,
                    keep,
                },
                expires_at: now.saturating_add(reset),
            }),
        }
    }
}

impl Limiter for SlidingLog {
    type State<'a> = LogView<'a>;
    type Change = Append;
    type Refund = Shed;

    const RESERVES: bool = true;

    fn limit(&self) -> u64 {
        self.limit
    }

    fn check(&self, state: Option<&LogView<'_>>, now: Instant, quantity: u64) -> Outcome<Append> {
        let empty = LogView {
            slots: &[],
            oldest: 0,
            tags: None,
        };
        let log = state.unwrap_or(&empty);
        let n = log.len();
        let newest = n.checked_sub(1).map(|i| log.get(i));
        let in_window = self.in_window(log, now);
        let mut decision = self.query(log, now, n, in_window);
        if let Some(done) = Outcome::settled(decision, quantity) {
            return done;
        }
        // At most `limit - q` entries may stay in the window: the one just
        // older than those must have left it.
        let may_stay = usize::try_from(self.limit - quantity).unwrap_or(usize::MAX);
        if n > may_stay {
            let decisive = log.get(n - 1 - may_stay);
            let wait = self.until_out(now, decisive);
            if wait > Micros::ZERO {
                decision.blocked = true;
                decision.retry_after = RetryAfter::After(wait);
                return Outcome::unchanged(decision);
            }
        }
        self.appended(newest, in_window, now, now, quantity)
    }

    /// `quantity` entries at `now`, past `limit` if need be.
    fn force(
        &self,
        state: Option<&LogView<'_>>,
        now: Instant,
        quantity: u64,
    ) -> Result<Outcome<Append>, Overdrawn> {
        let (newest, in_window) = self.survey(state, now);
        if in_window + quantity > MAX_HELD {
            return Err(Overdrawn);
        }
        Ok(self.appended(newest, in_window, now, now, quantity))
    }

    /// `quantity` entries at `at`.
    fn reserve(
        &self,
        state: Option<&LogView<'_>>,
        now: Instant,
        at: Instant,
        quantity: u64,
    ) -> Option<Outcome<Append>> {
        let (newest, in_window) = self.survey(state, now);
        Some(self.appended(newest, in_window, now, at.max(now), quantity))
    }

    /// The newest `min(quantity, in window)` entries are removed.
    fn refund(&self, state: Option<&LogView<'_>>, now: Instant, quantity: u64) -> Refunded<Shed> {
        let Some(log) = state else {
            return Refunded {
                decision: self.check(None, now, 0).decision,
                giveback: Giveback::Nothing,
            };
        };
        let n = log.len();
        let in_window = self.in_window(log, now);
        let shed = quantity.min(in_window);
        // At most `n` entries are shed, so the rest is a valid count.
        let left = n - usize::try_from(shed).unwrap_or(n);
        let decision = self.query(log, now, left, in_window - shed);
        let giveback = if shed == 0 {
            Giveback::Nothing
        } else if shed == in_window {
            Giveback::Rested
        } else {
            Giveback::Store(Update {
                change: Shed {
                    newest: shed,
                    horizon: self.horizon(now).map(Window::instant),
                },
                expires_at: now.saturating_add(decision.reset),
            })
        };
        Refunded { decision, giveback }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn packed(instants: &[u64]) -> Vec<u8> {
        instants.iter().flat_map(|t| t.to_le_bytes()).collect()
    }

    #[test]
    fn view_reads_a_ring_from_its_oldest_slot() {
        let bytes = packed(&[40, 50, 10, 20, 30]);
        let view = LogView::new(&bytes, 2).unwrap();
        assert_eq!(
            (0..5).map(|i| view.get(i)).collect::<Vec<_>>(),
            vec![10, 20, 30, 40, 50]
        );
        assert_eq!(view.count_later_than(20), 3);
        assert_eq!(view.count_later_than(0), 5);
        assert_eq!(view.count_later_than(50), 0);
    }

    #[test]
    fn view_rejects_bad_shapes() {
        assert!(LogView::new(&[0u8; 7], 0).is_none());
        assert!(LogView::new(&packed(&[1, 2]), 2).is_none());
        assert!(LogView::new(&packed(&[2, 1]), 0).is_none());
        assert!(LogView::new(&packed(&[2, 1]), 1).is_some());
        assert!(LogView::new(&[], 0).is_some());
        assert!(LogView::new(&[], 1).is_none());
    }
}
