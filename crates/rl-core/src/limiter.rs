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
    /// What a refund changes: for most algorithms the new state, for the
    /// sliding log the entries to remove.
    type Refund;

    /// Decide on a request of `quantity` units at `now`, given the stored
    /// `state` (`None`: never used, or expired).
    fn check(&self, state: Option<&Self::State<'_>>, now: Instant, quantity: u64) -> Outcome<Self::Change>;

    /// Give back `quantity` units at `now`: the state moves toward fully
    /// rested by that much, never past it. Never refused; the decision is
    /// that of a query (`quantity` 0) right after the refund.
    fn refund(&self, state: Option<&Self::State<'_>>, now: Instant, quantity: u64) -> Refunded<Self::Refund>;

    /// The reply's `limit` field.
    fn limit(&self) -> u64;

    /// Whether a request can be reserved for a later instant
    /// ([`Limiter::reserve`]): true where the state can hold a request
    /// from the future beside the present ones (not a window's counts).
    const RESERVES: bool = false;

    /// Record `quantity` units at `now` whatever the state, past the limit
    /// if need be: a debt that later requests wait out. The decision is
    /// that of an allowed request (`remaining` 0 while in debt; `reset`
    /// until fully rested, debt included). `Err` when the limiter would
    /// hold more than [`MAX_HELD`](crate::bounds::MAX_HELD) units: nothing
    /// is recorded then.
    fn force(
        &self,
        state: Option<&Self::State<'_>>,
        now: Instant,
        quantity: u64,
    ) -> Result<Outcome<Self::Change>, Overdrawn>;

    /// Record a request of `quantity` units as made at `at` (later than
    /// `now`, and an instant at which it is allowed): exactly what a
    /// request at `at` would leave. The decision is as of `now`, after the
    /// reservation. `None` where the algorithm cannot ([`Limiter::RESERVES`]).
    fn reserve(
        &self,
        _state: Option<&Self::State<'_>>,
        _now: Instant,
        _at: Instant,
        _quantity: u64,
    ) -> Option<Outcome<Self::Change>> {
        None
    }

    /// When `state` is fully rested, if nothing else happens: `now` plus a
    /// query's `reset`. An algorithm that can tell without deciding a query
    /// says so more cheaply (a call on a blocked key needs only this).
    fn rested_at(&self, state: Option<&Self::State<'_>>, now: Instant) -> Instant {
        now.saturating_add(self.check(state, now, 0).decision.reset)
    }
}

/// A forced request that would leave a limiter holding more than
/// [`MAX_HELD`](crate::bounds::MAX_HELD) units, debt included.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Overdrawn;

/// The result of a refund: the decision of a query after it, and what to
/// store.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Refunded<R> {
    pub decision: Decision,
    pub giveback: Giveback<R>,
}

/// What a refund stores.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Giveback<R> {
    /// Nothing changes: no state (a refund never creates one), a limiter
    /// already fully rested, or `quantity` 0.
    Nothing,
    /// The limiter is fully rested now: its state can go.
    Rested,
    /// The state to store, and when it stops mattering.
    Store(Update<R>),
}

/// Where a refund leaves a limiter whose whole state is one value.
pub(crate) enum After<T> {
    Same,
    Rested,
    State(T),
}

/// The refund answer of a limiter whose state is one value of `T`: the
/// decision of a query on the state it leaves, which expires when that
/// state is fully rested.
pub(crate) fn refunded<T, L>(limiter: &L, state: Option<&T>, now: Instant, after: After<T>) -> Refunded<T>
where
    L: for<'a> Limiter<State<'a> = T, Change = T>,
{
    let query = |state: Option<&T>| limiter.check(state, now, 0).decision;
    match after {
        After::Same => Refunded {
            decision: query(state),
            giveback: Giveback::Nothing,
        },
        After::Rested => Refunded {
            decision: query(None),
            giveback: Giveback::Rested,
        },
        After::State(value) => {
            let decision = query(Some(&value));
            Refunded {
                decision,
                giveback: Giveback::Store(Update {
                    change: value,
                    expires_at: now.saturating_add(decision.reset),
                }),
            }
        }
    }
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
