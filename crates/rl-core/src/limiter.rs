//! What every algorithm provides: one pure decision from (state, now, quantity).

use crate::decision::{Decision, RetryAfter};
use crate::time::Instant;

/// The result of one check: the decision, and the change to store if any.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Outcome<C> {
    pub decision: Decision,
    /// `Some` only when the request was allowed with `quantity >= 1`: refused
    /// requests and queries change nothing.
    pub update: Option<Update<C>>,
}

/// A change to the stored state (for most algorithms: the whole new state),
/// and the instant at which the state stops mattering (the limiter is fully
/// rested then), rounded up to the microsecond.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Update<C> {
    pub change: C,
    pub expires_at: Instant,
}

/// A rate-limiting algorithm with validated parameters.
///
/// Implementations are pure: no clock, no I/O, no panics for any input.
pub trait Limiter {
    /// What is stored between calls, as read (it may borrow the stored bytes).
    type State<'a>;
    /// What an allowed request changes: for most algorithms the new state,
    /// for the sliding log the entries to append.
    type Change;

    /// Decide on a request of `quantity` units at `now`, given the stored
    /// `state` (`None`: never used, or expired).
    fn check(&self, state: Option<&Self::State<'_>>, now: Instant, quantity: u64) -> Outcome<Self::Change>;

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

    /// The two answers every algorithm gives the same way, given the
    /// decision describing the current state: a query (`quantity` 0) changes
    /// nothing, and more than `limit` units can never pass.
    pub(crate) fn settled(mut decision: Decision, quantity: u64) -> Option<Self> {
        if quantity == 0 {
            return Some(Outcome::unchanged(decision));
        }
        if quantity > decision.limit {
            decision.blocked = true;
            decision.retry_after = RetryAfter::Never;
            return Some(Outcome::unchanged(decision));
        }
        None
    }
}
