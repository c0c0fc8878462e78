//! A tiny driver: feed a limiter a script of (instant, quantity) and keep its
//! state between calls, as the Redis adapter does.
#![allow(dead_code)]

use rl_core::request::Joint;
use rl_core::{
    request, Decision, Effect, FixedWindow, Gcra, Giveback, Instant, Limiter, LogView, Overdrawn, Request,
    RetryAfter, SlidingCounter, SlidingLog, TimeUnit, TokenBucket,
};

/// How a test keeps a limiter's state between calls.
pub trait Stored: Limiter + Sized {
    type Owned: Default + Clone + PartialEq + std::fmt::Debug;
    fn view(owned: &Self::Owned) -> Option<Self::State<'_>>;
    fn apply(owned: &mut Self::Owned, change: Self::Change);
    /// Store what a refund changes.
    fn apply_refund(owned: &mut Self::Owned, refund: Self::Refund);
}

macro_rules! whole_state {
    ($($t:ty),*) => {$(
        impl Stored for $t {
            type Owned = Option<<$t as Limiter>::Change>;
            fn view(owned: &Self::Owned) -> Option<Self::State<'_>> {
                *owned
            }
            fn apply(owned: &mut Self::Owned, change: Self::Change) {
                *owned = Some(change);
            }
            fn apply_refund(owned: &mut Self::Owned, refund: Self::Refund) {
                *owned = Some(refund);
            }
        }
    )*};
}
whole_state!(Gcra, TokenBucket, FixedWindow, SlidingCounter);

/// The sliding log, kept as packed instants, oldest first.
impl Stored for SlidingLog {
    type Owned = Vec<u8>;
    fn view(owned: &Vec<u8>) -> Option<LogView<'_>> {
        if owned.is_empty() {
            None
        } else {
            Some(LogView::new(owned, 0).expect("a well-formed log"))
        }
    }
    /// The new entries go after every entry at or before their instant
    /// and before any later one, which stay the newest.
    fn apply(owned: &mut Vec<u8>, change: rl_core::Append) {
        let at = change.at.as_micros();
        let later = Self::view(owned).map_or(0, |log| log.count_later_than(u128::from(at)));
        let split = owned.len() - later * 8;
        let new: Vec<u8> = (0..change.count).flat_map(|_| at.to_le_bytes()).collect();
        owned.splice(split..split, new);
        let keep = usize::try_from(change.keep).unwrap() * 8;
        if owned.len() > keep {
            owned.drain(..owned.len() - keep);
        }
    }
    fn apply_refund(owned: &mut Vec<u8>, shed: rl_core::Shed) {
        let newest = usize::try_from(shed.newest).unwrap() * 8;
        owned.truncate(owned.len() - newest);
    }
}

pub struct Driver<L: Stored> {
    pub limiter: L,
    pub state: L::Owned,
    /// The end of the key's block, as the module stores it (kept after it
    /// has passed, until the next write).
    pub block: Option<Instant>,
}

impl<L: Stored> Driver<L> {
    pub fn new(limiter: L) -> Self {
        Driver {
            limiter,
            state: L::Owned::default(),
            block: None,
        }
    }

    /// A request judged at `now_micros` with its options and the key's
    /// block, storing what it stores as the module does: a block that has
    /// ended goes at the next write, a rested limiter under a block keeps
    /// the block alone.
    pub fn request(&mut self, now_micros: u64, request: &Request) -> Decision
    where
        L::Refund: Clone,
    {
        self.judged(now_micros, request).expect("not overdrawn").0
    }

    /// The same, with the units granted; `Err` for a forced request that
    /// would overdraw the limiter (nothing is stored then).
    pub fn judged(&mut self, now_micros: u64, request: &Request) -> Result<(Decision, u64), Overdrawn>
    where
        L::Refund: Clone,
    {
        let now = Instant::from_micros(now_micros);
        let verdict = request::judge(
            &self.limiter,
            L::view(&self.state).as_ref(),
            self.block,
            now,
            request,
            Joint::Alone,
        )?;
        let written = match verdict.effect {
            Effect::Nothing => false,
            Effect::Record(update) => {
                L::apply(&mut self.state, update.change);
                true
            }
            Effect::Refund(Giveback::Nothing) => false,
            Effect::Refund(Giveback::Rested) => {
                self.state = L::Owned::default();
                true
            }
            Effect::Refund(Giveback::Store(update)) => {
                L::apply_refund(&mut self.state, update.change);
                true
            }
            Effect::Block { until, .. } => {
                self.block = Some(until);
                false
            }
        };
        if written {
            self.block = request::in_force(self.block, now);
        }
        Ok((verdict.decision, verdict.granted))
    }

    /// One call at `now_micros`; stores the change like the module does.
    pub fn call(&mut self, now_micros: u64, quantity: u64) -> Decision {
        let out = self.limiter.check(
            L::view(&self.state).as_ref(),
            Instant::from_micros(now_micros),
            quantity,
        );
        if let Some(update) = out.update {
            L::apply(&mut self.state, update.change);
        }
        out.decision
    }

    /// A refund of `quantity` at `now_micros`; stores what it changes (a
    /// rested limiter loses its state, as the module deletes its key).
    pub fn refund(&mut self, now_micros: u64, quantity: u64) -> (Decision, Giveback<L::Refund>)
    where
        L::Refund: Clone,
    {
        let out = self.limiter.refund(
            L::view(&self.state).as_ref(),
            Instant::from_micros(now_micros),
            quantity,
        );
        match out.giveback.clone() {
            Giveback::Nothing => {}
            Giveback::Rested => self.state = L::Owned::default(),
            Giveback::Store(update) => L::apply_refund(&mut self.state, update.change),
        }
        (out.decision, out.giveback)
    }

    /// One call, as the five integers of the reply.
    pub fn reply(&mut self, now_micros: u64, quantity: u64, unit: TimeUnit) -> [i64; 5] {
        self.call(now_micros, quantity).to_reply(unit)
    }

    /// What a call would answer, without keeping anything (PEEK).
    pub fn peek(&self, now_micros: u64, quantity: u64) -> Decision {
        self.limiter
            .check(
                L::view(&self.state).as_ref(),
                Instant::from_micros(now_micros),
                quantity,
            )
            .decision
    }
}

pub const SEC: u64 = 1_000_000;
pub const MS: u64 = 1_000;

/// After every refusal, waiting exactly `retry_after` succeeds and one
/// microsecond less does not; a query at `now + reset` finds the limiter
/// fully rested and one microsecond earlier it is not.
pub fn assert_retry_and_reset_are_exact<L>(mut d: Driver<L>, script: &[(u64, u64)])
where
    L: Stored,
{
    let mut now = 1_763_700_000_000_000;
    for &(gap, q) in script {
        now += gap;
        call_with_exact_times(&mut d, now, q);
    }
}

/// One call at `now`, checking first that a refusal's `retry_after` is
/// exact (in µs, and enough once rounded up to the reply's unit), then that
/// the `reset` it answers is exact for the state it leaves.
pub fn call_with_exact_times<L: Stored>(d: &mut Driver<L>, now: u64, q: u64) -> Decision {
    let decision = d.peek(now, q);
    if let RetryAfter::After(wait) = decision.retry_after {
        let wait = u64::try_from(wait.get()).unwrap();
        assert!(wait >= 1);
        assert!(!d.peek(now + wait, q).blocked, "retry at +{wait} µs refused");
        assert!(d.peek(now + wait - 1, q).blocked, "retry at +{wait}-1 µs allowed");
        for unit in [TimeUnit::Seconds, TimeUnit::Millis] {
            let reply = decision.to_reply(unit);
            let waited = u64::try_from(reply[3]).unwrap() * unit.micros_per_unit();
            assert!(!d.peek(now + waited, q).blocked);
        }
    }
    let decision = d.call(now, q);
    if decision.blocked {
        assert_ne!(decision.retry_after, RetryAfter::Allowed);
    }
    // `reset` describes the state after this call.
    let reset = u64::try_from(decision.reset.get()).unwrap();
    let rested = d.peek(now + reset, 0);
    assert_eq!(rested.remaining, rested.limit, "not rested at +{reset} µs");
    assert_eq!(rested.reset.get(), 0);
    if reset > 0 {
        assert!(
            d.peek(now + reset - 1, 0).remaining < decision.limit,
            "rested before +{reset} µs"
        );
    }
    decision
}
