//! What every algorithm provides: one pure decision from (state, now, quantity).

use crate::decision::Decision;
use crate::time::Instant;

/// The result of one check: the decision, and the state to store if anything
/// changed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Outcome<S> {
    pub decision: Decision,
    /// `Some` only when the request was allowed with `quantity >= 1`: refused
    /// requests and queries change nothing.
    pub update: Option<Update<S>>,
}

/// A new state and the instant at which it stops mattering (the limiter is
/// fully rested then), rounded up to the microsecond.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Update<S> {
    pub state: S,
    pub expires_at: Instant,
}

/// A rate-limiting algorithm with validated parameters.
///
/// Implementations are pure: no clock, no I/O, no panics for any input.
pub trait Limiter {
    /// What is stored between calls.
    type State;

    /// Decide on a request of `quantity` units at `now`, given the stored
    /// `state` (`None`: never used, or expired).
    fn check(&self, state: Option<&Self::State>, now: Instant, quantity: u64) -> Outcome<Self::State>;

    /// The reply's `limit` field.
    fn limit(&self) -> u64;
}

impl<S> Outcome<S> {
    pub(crate) fn unchanged(decision: Decision) -> Self {
        Outcome {
            decision,
            update: None,
        }
    }
}
