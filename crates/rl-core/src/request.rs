//! A request as a command states it (how many units, and how to take them)
//! and its judgement by one limit, block included: what to answer and what
//! to store. Every option's rule is here, once for all five algorithms; the
//! algorithms themselves only decide, record and refund.
//!
//! A block (`BLOCK duration`) is part of a key's state: while it lasts,
//! every request on the key is refused and nothing is recorded; it is never
//! extended by the requests it refuses, and when it ends the limiter is
//! exactly where it was.
//!
//! Several limits decide one request together (`RL.ALL`): each judges it
//! alone first ([`Joint::Alone`]); when all allow it, those whose own
//! answer differs from the joint one are judged again with it (a
//! reservation at the latest of their earliest instants, a grant of the
//! least of their grants).

use crate::decision::{Decision, RetryAfter};
use crate::limiter::{Giveback, Limiter, Outcome, Overdrawn, Update};
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
    /// Taken now whatever the limit says, past it if need be (`FORCE`): a
    /// debt that later requests wait out. Never refused.
    Force,
    /// Taken at the earliest instant the limit allows them, if that is at
    /// most this long from now (`WAIT max_wait`): a reservation, recorded
    /// as a request made then, and answered with the wait.
    Wait(Micros),
    /// As many as the limit allows now, up to `quantity` (`AT_MOST`).
    AtMost,
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
    /// blocked. A reservation is allowed, its wait in `retry_after`.
    pub decision: Decision,
    /// Units recorded: the quantity of a request taken, reserved or forced,
    /// what `AT_MOST` grants; 0 for a refusal, a query, a refund.
    pub granted: u64,
    /// The earliest instant, from now on, at which this limit allows the
    /// request (a block's end at the soonest); `None`: never. With `WAIT`,
    /// the instant it is recorded at.
    pub earliest: Option<Instant>,
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

/// What the other limits of the same request decided, when all of them
/// allow it.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Joint {
    /// Nothing: the limit decides alone (the single-key commands, and every
    /// limit's first judgement).
    Alone,
    /// `WAIT`: every limit records the request at this instant, the latest
    /// of their earliest ones.
    At(Instant),
    /// `AT_MOST`: every limit records this many units, the least of their
    /// grants.
    Grant(u64),
}

/// The end of the block a key is under at `now`, if any (a block that has
/// ended is no block).
#[inline]
pub fn in_force(block: Option<Instant>, now: Instant) -> Option<Instant> {
    block.filter(|&until| now < until)
}

/// The judgement of `request` at `now` by `limiter` on its `state`, under
/// `block` (the end of the key's block, if it has one), given what the
/// other limits decided (`joint`). `Err` only for a forced request that
/// would hold more than a limiter may.
#[inline(always)]
pub fn judge<L: Limiter>(
    limiter: &L,
    state: Option<&L::State<'_>>,
    block: Option<Instant>,
    now: Instant,
    request: &Request,
    joint: Joint,
) -> Result<Verdict<L::Change, L::Refund>, Overdrawn> {
    let case = Case {
        limiter,
        state,
        block: in_force(block, now),
        now,
        request,
    };
    let q = request.quantity;
    // The usual call, decided by the algorithm alone: a request taken now
    // (or a query, or a grant of the whole quantity) on a key that is not
    // blocked, allowed, or refused without a penalty. (What `wait` and
    // `at_most` answer too, in one decision.)
    let decided_at_once = match request.mode {
        Mode::Take | Mode::AtMost | Mode::Wait(_) => true,
        Mode::Force | Mode::Refund => q == 0,
    };
    if case.block.is_none() && matches!(joint, Joint::Alone) && decided_at_once {
        let own = limiter.check(state, now, q);
        if !own.decision.blocked {
            return Ok(Verdict {
                decision: own.decision,
                granted: if own.update.is_some() { q } else { 0 },
                earliest: Some(now),
                effect: own.update.map_or(Effect::Nothing, Effect::Record),
            });
        }
        match request.mode {
            _ if q == 0 => {}
            Mode::AtMost => return Ok(case.grant_less(q)),
            Mode::Wait(max_wait) => return Ok(case.decide_wait(max_wait, joint, None, Some(own))),
            _ => {}
        }
        if request.block.is_none() {
            return Ok(Verdict {
                decision: own.decision,
                granted: 0,
                earliest: match own.decision.retry_after {
                    RetryAfter::After(wait) => Some(now.saturating_add(wait)),
                    _ => None,
                },
                effect: Effect::Nothing,
            });
        }
    }
    // The usual call on a blocked key: refused until the block ends. When
    // the limiter rests by then, the block alone decides (what `wait`
    // answers, without asking the algorithm).
    if let (Some(until), Mode::Take, Joint::Alone) = (case.block, request.mode, joint) {
        if limiter.rested_at(state, now) <= until {
            let left = until.saturating_since(now);
            let passes = q <= limiter.limit();
            return Ok(Verdict {
                decision: Decision {
                    blocked: true,
                    limit: limiter.limit(),
                    remaining: 0,
                    retry_after: if passes {
                        RetryAfter::After(left)
                    } else {
                        RetryAfter::Never
                    },
                    reset: left,
                },
                granted: 0,
                earliest: passes.then_some(until),
                effect: Effect::Nothing,
            });
        }
    }
    case.with_options(joint)
}

/// What every rule of a judgement reads: the limit, its state, the key's
/// block in force (if any), the instant, and the request.
struct Case<'a, 's, L: Limiter> {
    limiter: &'a L,
    state: Option<&'a L::State<'s>>,
    block: Option<Instant>,
    now: Instant,
    request: &'a Request,
}

impl<L: Limiter> Clone for Case<'_, '_, L> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<L: Limiter> Copy for Case<'_, '_, L> {}

impl<'a, 's, L: Limiter> Case<'a, 's, L> {
    /// The same case, for another request.
    fn asking(self, request: &'a Request) -> Self {
        Case { request, ..self }
    }

    /// [`judge`] of a request with its options, or on a blocked key.
    #[inline(never)]
    fn with_options(self, joint: Joint) -> Result<Verdict<L::Change, L::Refund>, Overdrawn> {
        let (q, now, block) = (self.request.quantity, self.now, self.block);
        let verdict = match self.request.mode {
            // `quantity` 0 is a query whatever the mode: a wait of nothing.
            _ if q == 0 => self.wait(Micros::ZERO, Joint::Alone),
            Mode::Take => self.wait(Micros::ZERO, joint),
            Mode::Wait(max_wait) => self.wait(max_wait, joint),
            Mode::AtMost => self.at_most(joint),
            Mode::Refund => {
                let refunded = self.limiter.refund(self.state, now, q);
                Verdict {
                    decision: while_blocked(refunded.decision, block, now),
                    granted: 0,
                    earliest: None,
                    effect: Effect::Refund(refunded.giveback),
                }
            }
            Mode::Force => {
                let forced = self.limiter.force(self.state, now, q)?;
                recorded(forced, block, now, q, now)
            }
        };
        Ok(verdict)
    }

    /// The request taken at the earliest instant the limit allows it, if
    /// that is at most `max_wait` from now (plain requests and queries: no
    /// wait).
    fn wait(self, max_wait: Micros, joint: Joint) -> Verdict<L::Change, L::Refund> {
        // Under a block nothing is recorded, so the limiter rests when its
        // state does; one rested before the block ends allows the request at
        // the block's end (a request's own wait is never longer than the time
        // to rest), so it need not be decided: the common call on a blocked
        // key.
        let rested_at = self.block.map(|_| self.limiter.rested_at(self.state, self.now));
        let own = match (self.block, rested_at) {
            (Some(until), Some(rested)) if rested <= until => None,
            _ => Some(self.limiter.check(self.state, self.now, self.request.quantity)),
        };
        self.decide_wait(max_wait, joint, rested_at, own)
    }

    /// [`Case::wait`], once the limiter has decided the request alone
    /// (`own`; `None` when the block decides: the limiter rests at
    /// `rested_at`, before it ends).
    fn decide_wait(
        self,
        max_wait: Micros,
        joint: Joint,
        rested_at: Option<Instant>,
        own: Option<Outcome<L::Change>>,
    ) -> Verdict<L::Change, L::Refund> {
        let (q, now) = (self.request.quantity, self.now);
        let limit = self.limiter.limit();
        // How long until the request is allowed (exact: it may reach past
        // the last instant a clock can read).
        let left = self
            .block
            .map_or(Micros::ZERO, |until| until.saturating_since(now));
        let delay = match &own {
            None => (q <= limit).then_some(left),
            Some(own) => match own.decision.retry_after {
                RetryAfter::Allowed => Some(Micros::ZERO),
                RetryAfter::After(wait) => Some(wait),
                RetryAfter::Never => None,
            }
            .map(|wait| wait.max(left)),
        };
        let earliest = delay.map(|d| now.saturating_add(d));
        // The other limits' instant is never earlier than this one's.
        let delay = match joint {
            Joint::At(at) => Some(at.saturating_since(now)),
            _ => delay,
        };
        match (delay, own) {
            // Allowed now: an ordinary request (or a query).
            (Some(Micros::ZERO), Some(own)) if !own.decision.blocked => Verdict {
                decision: own.decision,
                granted: if own.update.is_some() { q } else { 0 },
                earliest,
                effect: own.update.map_or(Effect::Nothing, Effect::Record),
            },
            // Allowed later, within the wait: a reservation.
            (Some(delay), _) if delay <= max_wait && delay > Micros::ZERO => {
                let at = now.saturating_add(delay);
                match self.limiter.reserve(self.state, now, at, q) {
                    Some(reserved) => {
                        let mut verdict = recorded(reserved, self.block, now, q, at);
                        verdict.decision.retry_after = RetryAfter::After(delay);
                        verdict
                    }
                    // An algorithm that cannot reserve (never asked to wait).
                    None => self.refused(max_wait, Some(delay), rested_at, None),
                }
            }
            (delay, own) => self.refused(max_wait, delay, rested_at, own),
        }
    }

    /// A request this limit refuses (or a query on a blocked key): its
    /// answer, and the block it starts when the request asks for one.
    fn refused(
        self,
        max_wait: Micros,
        delay: Option<Micros>,
        rested_at: Option<Instant>,
        own: Option<Outcome<L::Change>>,
    ) -> Verdict<L::Change, L::Refund> {
        let (q, now, block) = (self.request.quantity, self.now, self.block);
        // Nothing is recorded: the limiter rests when its state does.
        let rests = match (rested_at, &own) {
            (Some(at), _) => at.saturating_since(now),
            (None, Some(own)) => own.decision.reset,
            (None, None) => Micros::ZERO,
        };
        let remaining = match (&own, block) {
            (Some(own), None) => own.decision.remaining,
            _ => 0,
        };
        // A block starts if asked for, on a key not blocked, for a request
        // that could ever pass.
        let starts = match (self.request.block, block, delay) {
            (Some(duration), None, Some(_)) if q > 0 => Some((now.saturating_add(duration), duration)),
            _ => None,
        };
        let retry_after = match delay {
            None => RetryAfter::Never,
            // The same call passes once the request is allowed within its
            // wait, and not before a block it starts ends.
            Some(delay) => {
                let delay = starts.map_or(delay, |(_, duration)| delay.max(duration));
                RetryAfter::After(Micros(delay.get().saturating_sub(max_wait.get())))
            }
        };
        let starts = starts.map(|(until, _)| until);
        let until = starts.or(block);
        let reset = until.map_or(rests, |until| rests.max(until.saturating_since(now)));
        Verdict {
            decision: Decision {
                blocked: q > 0 || block.is_some(),
                limit: self.limiter.limit(),
                remaining: if starts.is_some() { 0 } else { remaining },
                retry_after: if q == 0 && block.is_none() {
                    RetryAfter::Allowed
                } else {
                    retry_after
                },
                reset,
            },
            granted: 0,
            earliest: delay.map(|d| now.saturating_add(d)),
            effect: match starts {
                Some(until) => Effect::Block {
                    until,
                    expires_at: now.saturating_add(rests).max(until),
                },
                None => Effect::Nothing,
            },
        }
    }

    /// As many units as the limit allows now, up to the request's quantity
    /// (under a block, none); a grant of none is a refusal, which waits for
    /// one unit.
    fn at_most(self, joint: Joint) -> Verdict<L::Change, L::Refund> {
        let one = Request {
            quantity: 1,
            ..*self.request
        };
        if self.block.is_some() {
            return self.asking(&one).wait(Micros::ZERO, Joint::Alone);
        }
        // The whole quantity, when it fits (the usual case: one decision);
        // else what a query says remains.
        let wanted = match joint {
            Joint::Grant(granted) => granted,
            _ => self.request.quantity,
        };
        let taken = self.limiter.check(self.state, self.now, wanted);
        if taken.update.is_some() && !taken.decision.blocked {
            return recorded(taken, None, self.now, wanted, self.now);
        }
        self.grant_less(wanted)
    }

    /// `AT_MOST` on a key that is not blocked, when the limit refuses all
    /// `wanted` units: what a query says remains, or a refusal of one unit.
    fn grant_less(self, wanted: u64) -> Verdict<L::Change, L::Refund> {
        let one = Request {
            quantity: 1,
            ..*self.request
        };
        let (limiter, state, now) = (self.limiter, self.state, self.now);
        let granted = wanted.min(limiter.check(state, now, 0).decision.remaining);
        if granted == 0 {
            return self.asking(&one).wait(Micros::ZERO, Joint::Alone);
        }
        let taken = limiter.check(state, now, granted);
        match taken.update {
            Some(_) if !taken.decision.blocked => recorded(taken, None, now, granted, now),
            // Never: a grant is at most what the limit allows now.
            _ => self.asking(&one).wait(Micros::ZERO, Joint::Alone),
        }
    }
}

/// The answer of `granted` units recorded at `at` (`outcome`, allowed, as of
/// now), under `block` if one is in force.
fn recorded<C, R>(
    outcome: Outcome<C>,
    block: Option<Instant>,
    now: Instant,
    granted: u64,
    at: Instant,
) -> Verdict<C, R> {
    Verdict {
        decision: while_blocked(outcome.decision, block, now),
        granted,
        earliest: Some(at),
        effect: outcome.update.map_or(Effect::Nothing, Effect::Record),
    }
}

/// An answer that is not a refusal (a refund, a forced or reserved request)
/// on a key under `block`: nothing remains, and the limiter is not rested
/// before the block ends.
fn while_blocked(mut decision: Decision, block: Option<Instant>, now: Instant) -> Decision {
    if let Some(until) = block {
        decision.remaining = 0;
        decision.reset = decision.reset.max(until.saturating_since(now));
    }
    decision
}
