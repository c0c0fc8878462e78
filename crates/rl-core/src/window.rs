//! Windows aligned to the Unix epoch: `[k*W, (k+1)*W)`, shared by the fixed
//! window and the sliding counter.

use crate::bounds::MAX_PERIOD_MICROS;
use crate::error::{in_range, ParamError};
use crate::time::{Instant, Micros};

/// The latest window start that can be stored (56 bits of microseconds,
/// about the year 4253).
pub const MAX_WINDOW_START: u64 = (1 << 56) - 1;

/// A validated window length in microseconds.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(crate) struct Window(u64);

impl Window {
    pub(crate) fn new(micros: u64) -> Result<Window, ParamError> {
        in_range("window", micros, 1, MAX_PERIOD_MICROS).map(Window)
    }

    pub(crate) fn micros(self) -> u128 {
        u128::from(self.0)
    }

    /// Where the window holding `now` starts, in microseconds.
    pub(crate) fn start_of(self, now: Instant) -> u64 {
        self.align(now.as_micros())
    }

    /// Where the window holding the instant `at` (µs) starts. A stored
    /// window start written under another length maps to the window of this
    /// length that holds it: its units were all counted at or after `at`.
    pub(crate) fn align(self, at: u64) -> u64 {
        at / self.0 * self.0
    }

    /// Time from `now` until `at` (zero if `at` has passed).
    pub(crate) fn until(now: Instant, at: u128) -> Micros {
        Micros(at.saturating_sub(u128::from(now.as_micros())))
    }

    /// An instant in microseconds as an [`Instant`], saturating.
    pub(crate) fn instant(at: u128) -> Instant {
        Instant::from_micros(u64::try_from(at).unwrap_or(u64::MAX))
    }
}
