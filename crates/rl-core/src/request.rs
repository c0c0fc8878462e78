//! A request as a command states it (how many units, and how to take them)
//! and its judgement by one limit, block included: what to answer and what
//! to store. Every option's rule is here, once for all five algorithms; the
//! algorithms themselves only decide, record and refund.
//!
//! A block (`BLOCK duration`) is part of a key's state: while it lasts,
//! every request on the key is refused and nothing is recorded; it is never
//! extended by the requests it refuses, and when it ends the limiter is
//! exactly where it was.

use crate::decision::{Decision, RetryAfter};
use crate::limiter::{Giveback, Limiter, Update};
use crate::time::{Instant, Micros};

/// What a call asks of a limit.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Request {
    /// Units the request costs (0: a query, whatever the mode).
    pub quantity: u64,
    pub mode: Mode,
    /// `BLOCK duration`: a request this limit refuses blocks its key for
    /// this long.
    pub block: Option<Micros>,
}

/// How the units are taken.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Mode {
    /// Taken now if the limit allows them now, else refused.
    Take,
    /// Given back (`REFUND`): never refused.
    Refund,
}

impl Request {
    /// `quantity` units taken now, no penalty.
    pub const fn take(quantity: u64) -> Request {
        Request {
            quantity,
            mode: Mode::Take,
            block: None,
        }
    }
}

/// What one limit answers to a request, and what it stores.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Verdict<C, R> {
    /// The reply's five fields for this limit. `blocked`: this limit
    /// refuses the request by itself (a blocked key included); with several
    /// limits, the binding limit is chosen among these, and only these are
    /// blocked.
    pub decision: Decision,
    pub effect: Effect<C, R>,
}

/// What a verdict stores.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Effect<C, R> {
    /// Nothing: a refusal that starts no block, a query.
    Nothing,
    /// The units taken: the algorithm's change. A block in force stays.
    Record(Update<C>),
    /// The units given back. A block in force stays (a state that is rested
    /// then is the block alone).
    Refund(Giveback<R>),
    /// A refusal that blocks the key until `until`; the algorithm's state
    /// stays as it is, and the key matters until `expires_at` (the later of
    /// the block's end and the state's rested instant).
    Block { until: Instant, expires_at: Instant },
}

/// The end of the block a key is under at `now`, if any (a block that has
/// ended is no block).
pub fn in_force(block: Option<Instant>, now: Instant) -> Option<Instant> {
    block.filter(|&until| now < until)
}

/// The judgement of `request` at `now` by `limiter` on its `state`, under
/// `block` (the end of the key's block, if it has one).
pub fn judge<L: Limiter>(
    limiter: &L,
    state: Option<&L::State<'_>>,
    block: Option<Instant>,
    now: Instant,
    request: &Request,
) -> Verdict<L::Change, L::Refund> {
    let block = in_force(block, now);
    let q = request.quantity;
    if q > 0 && request.mode == Mode::Refund {
        let refunded = limiter.refund(state, now, q);
        return Verdict {
            decision: match block {
                Some(until) => Decision {
                    remaining: 0,
                    reset: refunded.decision.reset.max(until.saturating_since(now)),
                    ..refunded.decision
                },
                None => refunded.decision,
            },
            effect: Effect::Refund(refunded.giveback),
        };
    }
    // Under a block, nothing is recorded: the limiter rests when its state
    // does, and a limiter rested before the block ends waits for the block
    // alone (a request's own wait is never longer than the time to rest):
    // no need to decide the request.
    let rested_at = block.map(|until| (until, limiter.rested_at(state, now)));
    if let Some((until, rested_at)) = rested_at {
        if rested_at <= until {
            let left = until.saturating_since(now);
            return Verdict {
                decision: Decision {
                    blocked: true,
                    limit: limiter.limit(),
                    remaining: 0,
                    retry_after: if q > limiter.limit() {
                        RetryAfter::Never
                    } else {
                        RetryAfter::After(left)
                    },
                    reset: left,
                },
                effect: Effect::Nothing,
            };
        }
    }
    let own = limiter.check(state, now, q);
    match (block, own.update) {
        // Allowed, or a query on a key that is not blocked.
        (None, update) if !own.decision.blocked => Verdict {
            decision: own.decision,
            effect: update.map_or(Effect::Nothing, Effect::Record),
        },
        // Refused by the algorithm alone: a block starts if asked for and
        // the request could ever pass.
        (None, _) => match request.block {
            Some(duration) if own.decision.retry_after != RetryAfter::Never => {
                let until = now.saturating_add(duration);
                Verdict {
                    decision: under_block(own.decision, until, now),
                    effect: Effect::Block {
                        until,
                        expires_at: now.saturating_add(own.decision.reset).max(until),
                    },
                }
            }
            _ => Verdict {
                decision: own.decision,
                effect: Effect::Nothing,
            },
        },
        // A blocked key refuses everything, queries included, and records
        // nothing: it rests when its state does.
        (Some(until), _) => {
            let rests = rested_at.map_or(Micros::ZERO, |(_, at)| at.saturating_since(now));
            Verdict {
                decision: under_block(
                    Decision {
                        reset: rests,
                        ..own.decision
                    },
                    until,
                    now,
                ),
                effect: Effect::Nothing,
            }
        }
    }
}

/// A refusal under a block that ends at `until`, given the algorithm's own
/// decision on the same request: nothing remains, and the request can pass
/// (and the limiter is rested) no sooner than the block ends. (On the path
/// of every call on a blocked key: kept to a few comparisons.)
#[inline(always)]
fn under_block(mut own: Decision, until: Instant, now: Instant) -> Decision {
    let left = Micros(u128::from(until.as_micros().saturating_sub(now.as_micros())));
    own.blocked = true;
    own.remaining = 0;
    own.retry_after = match own.retry_after {
        RetryAfter::After(wait) if wait > left => RetryAfter::After(wait),
        RetryAfter::Never => RetryAfter::Never,
        _ => RetryAfter::After(left),
    };
    if own.reset < left {
        own.reset = left;
    }
    own
}
