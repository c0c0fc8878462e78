//! Property tests for refunds: random walks of consumptions and refunds,
//! with time moving, judged against independent models of the spec (section
//! 9); a consumption refunded at once leaves the limiter as it was; a refund
//! gives back at most its quantity and never more than a rested limiter
//! has; nothing overflows or panics at the ends of the ranges.

mod common;

use common::{call_with_exact_times, Driver, Stored};
use proptest::prelude::*;
use proptest::test_runner::FileFailurePersistence;
use rl_core::bounds::{MAX_BURST, MAX_LIMIT, MAX_PERIOD_MICROS, MAX_QUANTITY};
use rl_core::{
    Decision, FixedWindow, Gcra, Giveback, Instant, Limiter, RetryAfter, SlidingCounter, SlidingLog,
    TokenBucket,
};

const T0: u64 = 1_763_700_000_000_000;

fn settings() -> ProptestConfig {
    ProptestConfig {
        cases: 400,
        failure_persistence: Some(Box::new(FileFailurePersistence::Direct(
            "proptest-regressions/refund_properties.txt",
        ))),
        ..ProptestConfig::default()
    }
}

/// One step of a walk: after `gap` µs, take `quantity` units or refund them.
#[derive(Copy, Clone, Debug)]
struct Step {
    gap: u64,
    refund: bool,
    quantity: u64,
}

fn walk() -> impl Strategy<Value = Vec<Step>> {
    prop::collection::vec(
        (
            prop_oneof![Just(0u64), 0u64..3_000_000, 1..100u64],
            prop::bool::weighted(0.35),
            0u64..25,
        )
            .prop_map(|(gap, refund, quantity)| Step {
                gap,
                refund,
                quantity,
            }),
        1..80,
    )
}

/// An exact model of one algorithm: `take` answers (allowed, remaining)
/// and records an allowed request; `refund` gives units back and answers
/// `remaining` after it, and whether the state changed.
trait Model {
    fn take(&mut self, now: u64, q: u64) -> (bool, u64);
    fn refund(&mut self, now: u64, q: u64) -> (u64, bool);
}

/// The fixed window: the units of the window `[k*W, (k+1)*W)` holding now.
struct FixedModel {
    limit: u64,
    w: u64,
    window: u64,
    count: u64,
}

impl FixedModel {
    fn roll(&mut self, now: u64) {
        if now / self.w != self.window {
            self.window = now / self.w;
            self.count = 0;
        }
    }
}

impl Model for FixedModel {
    fn take(&mut self, now: u64, q: u64) -> (bool, u64) {
        self.roll(now);
        let allowed = self.count + q <= self.limit;
        if allowed {
            self.count += q;
        }
        (allowed, self.limit - self.count)
    }

    fn refund(&mut self, now: u64, q: u64) -> (u64, bool) {
        self.roll(now);
        let back = q.min(self.count);
        self.count -= back;
        (self.limit - self.count, back > 0)
    }
}

/// The sliding log: every allowed unit's instant; those in `(now - W, now]`
/// count.
struct LogModel {
    limit: u64,
    w: u64,
    log: Vec<u64>,
}

impl LogModel {
    fn live(&self, now: u64) -> u64 {
        self.log.iter().filter(|&&t| t + self.w > now).count() as u64
    }
}

impl Model for LogModel {
    fn take(&mut self, now: u64, q: u64) -> (bool, u64) {
        let live = self.live(now);
        let allowed = live + q <= self.limit;
        if allowed {
            self.log.extend(std::iter::repeat_n(now, q as usize));
        }
        (allowed, self.limit - self.live(now))
    }

    fn refund(&mut self, now: u64, q: u64) -> (u64, bool) {
        // The newest live entries go: the log is in time order.
        let shed = q.min(self.live(now)) as usize;
        self.log.truncate(self.log.len() - shed);
        (self.limit - self.live(now), shed > 0)
    }
}

/// The sliding counter: units per window; the previous window weighs
/// `(W - e) / W`.
struct CounterModel {
    limit: u64,
    w: u64,
    counts: std::collections::BTreeMap<u64, u64>,
}

impl CounterModel {
    fn at(&self, now: u64) -> (u64, u64, u128) {
        let k = now / self.w;
        let cur = self.counts.get(&k).copied().unwrap_or(0);
        let prev = k
            .checked_sub(1)
            .and_then(|p| self.counts.get(&p))
            .copied()
            .unwrap_or(0);
        let elapsed = u128::from(now - k * self.w);
        (prev, cur, elapsed)
    }

    fn remaining(&self, now: u64) -> u64 {
        let (prev, cur, e) = self.at(now);
        let (w, limit) = (u128::from(self.w), u128::from(self.limit));
        let free = (limit * w).saturating_sub(u128::from(prev) * (w - e)) / w;
        (free.saturating_sub(u128::from(cur)) as u64).min(self.limit)
    }
}

impl Model for CounterModel {
    fn take(&mut self, now: u64, q: u64) -> (bool, u64) {
        let (prev, cur, e) = self.at(now);
        let w = u128::from(self.w);
        let allowed = u128::from(prev) * (w - e) + u128::from(cur + q) * w <= u128::from(self.limit) * w;
        if allowed {
            *self.counts.entry(now / self.w).or_default() += q;
        }
        (allowed, self.remaining(now))
    }

    fn refund(&mut self, now: u64, q: u64) -> (u64, bool) {
        let k = now / self.w;
        let cur = self.counts.entry(k).or_default();
        let from_cur = q.min(*cur);
        *cur -= from_cur;
        let mut from_prev = 0;
        if let Some(prev) = k.checked_sub(1).and_then(|p| self.counts.get_mut(&p)) {
            from_prev = (q - from_cur).min(*prev);
            *prev -= from_prev;
        }
        (self.remaining(now), from_cur + from_prev > 0)
    }
}

/// GCRA over exact rationals: instants are scaled by `count`, so the
/// emission interval `period / count` is `period`.
struct GcraModel {
    limit: u64,
    count: u64,
    period: u64,
    /// The TAT times `count`.
    tat: u128,
}

impl GcraModel {
    fn remaining(&self, now: u64) -> u64 {
        let now = u128::from(now) * u128::from(self.count);
        let tat = self.tat.max(now);
        let horizon = now + u128::from(self.period) * u128::from(self.limit);
        ((horizon - tat.min(horizon)) / u128::from(self.period)).min(u128::from(self.limit)) as u64
    }
}

impl Model for GcraModel {
    fn take(&mut self, now: u64, q: u64) -> (bool, u64) {
        let scaled = u128::from(now) * u128::from(self.count);
        let new = self.tat.max(scaled) + u128::from(q) * u128::from(self.period);
        let allowed = new <= scaled + u128::from(self.period) * u128::from(self.limit);
        if allowed && q > 0 {
            self.tat = new;
        }
        (allowed, self.remaining(now))
    }

    fn refund(&mut self, now: u64, q: u64) -> (u64, bool) {
        let scaled = u128::from(now) * u128::from(self.count);
        let before = self.tat.max(scaled);
        self.tat = self
            .tat
            .saturating_sub(u128::from(q) * u128::from(self.period))
            .max(scaled);
        (self.remaining(now), self.tat != before)
    }
}

/// Walk `steps` on the limiter and the model side by side: every reply
/// matches the model, a refund's reply is a query's (never blocked,
/// `retry_after` -1), gives back at most its quantity, and its `reset` is
/// exact for the state it leaves.
fn assert_walk_matches<L: Stored>(limiter: L, mut model: impl Model, steps: &[Step])
where
    L::Refund: Clone,
{
    let limit = limiter.limit();
    let mut d = Driver::new(limiter);
    let mut now = T0;
    for (i, s) in steps.iter().enumerate() {
        now += s.gap;
        if s.refund {
            let before = d.peek(now, 0).remaining;
            let (decision, giveback) = d.refund(now, s.quantity);
            let (expected, changed) = model.refund(now, s.quantity);
            assert_eq!(decision.remaining, expected, "refund at step {i}: {s:?}");
            assert!(!decision.blocked && decision.retry_after == RetryAfter::Allowed);
            assert!(decision.remaining <= before + s.quantity && decision.remaining <= limit);
            // Something is stored exactly when the state changes.
            assert_eq!(!matches!(giveback, Giveback::Nothing), changed, "step {i}: {s:?}");
            assert_eq!(d.peek(now, 0), decision, "the reply is a query after the refund");
            assert_reset_is_exact(&d, now, &decision);
        } else {
            let (allowed, remaining) = model.take(now, s.quantity);
            let decision = call_with_exact_times(&mut d, now, s.quantity);
            assert_eq!(!decision.blocked, allowed || s.quantity == 0, "step {i}: {s:?}");
            assert_eq!(decision.remaining, remaining, "step {i}: {s:?}");
        }
    }
}

fn assert_reset_is_exact<L: Stored>(d: &Driver<L>, now: u64, decision: &Decision) {
    let reset = u64::try_from(decision.reset.get()).unwrap();
    let rested = d.peek(now + reset, 0);
    assert_eq!((rested.remaining, rested.reset.get()), (rested.limit, 0));
    if reset > 0 {
        assert!(d.peek(now + reset - 1, 0).remaining < decision.limit);
    }
}

/// At any point of a walk, taking `q` and refunding `q` at once leaves a
/// limiter that answers every later request exactly as if neither
/// happened.
fn assert_take_then_refund_restores<L>(limiter: L, steps: &[Step], q: u64, probes: &[(u64, u64)])
where
    L: Stored + Clone,
    L::Refund: Clone,
{
    let mut d = Driver::new(limiter);
    let mut now = T0;
    for s in steps {
        now += s.gap;
        if s.refund {
            d.refund(now, s.quantity);
        } else {
            d.call(now, s.quantity);
        }
    }
    let untouched = Driver {
        limiter: d.limiter.clone(),
        state: d.state.clone(),
        block: None,
    };
    let mut both = Driver {
        limiter: d.limiter.clone(),
        state: d.state.clone(),
        block: None,
    };
    if both.call(now, q).blocked {
        return;
    }
    both.refund(now, q);
    for &(later, q2) in probes {
        assert_eq!(
            both.peek(now + later, q2),
            untouched.peek(now + later, q2),
            "+{later} µs, q {q2}"
        );
    }
}

fn probes() -> impl Strategy<Value = Vec<(u64, u64)>> {
    prop::collection::vec((prop_oneof![Just(0u64), 0u64..5_000_000], 0u64..25), 1..12)
}

proptest! {
    #![proptest_config(settings())]

    #[test]
    fn fixed_window_walks_match_the_model(limit in 1u64..20, w in 1u64..5_000_000, steps in walk()) {
        let model = FixedModel { limit, w, window: u64::MAX, count: 0 };
        assert_walk_matches(FixedWindow::new(limit, w).unwrap(), model, &steps);
    }

    #[test]
    fn sliding_log_walks_match_the_model(limit in 1u64..20, w in 1u64..5_000_000, steps in walk()) {
        let model = LogModel { limit, w, log: Vec::new() };
        assert_walk_matches(SlidingLog::new(limit, w).unwrap(), model, &steps);
    }

    #[test]
    fn sliding_counter_walks_match_the_model(limit in 1u64..20, w in 1u64..5_000_000, steps in walk()) {
        let model = CounterModel { limit, w, counts: Default::default() };
        assert_walk_matches(SlidingCounter::new(limit, w).unwrap(), model, &steps);
    }

    #[test]
    fn gcra_walks_match_the_model(burst in 0u64..20, count in 1u64..50, period in 1u64..5_000_000, steps in walk()) {
        let model = GcraModel { limit: burst + 1, count, period, tat: 0 };
        assert_walk_matches(Gcra::new(burst, count, period).unwrap(), model, &steps);
    }

    /// The token bucket's refund ("the level plus `q`, capped") decides as
    /// GCRA's ("the TAT back by `q*T`, never before now"), so the same
    /// model judges it.
    #[test]
    fn token_bucket_walks_match_the_model(burst in 0u64..20, count in 1u64..50, period in 1u64..5_000_000, steps in walk()) {
        let model = GcraModel { limit: burst + 1, count, period, tat: 0 };
        assert_walk_matches(TokenBucket::new(burst + 1, count, period).unwrap(), model, &steps);
    }

    #[test]
    fn a_refunded_take_restores_the_limiter(
        limit in 1u64..20, count in 1u64..50, w in 1u64..5_000_000,
        steps in walk(), q in 0u64..25, probes in probes(),
    ) {
        assert_take_then_refund_restores(FixedWindow::new(limit, w).unwrap(), &steps, q, &probes);
        assert_take_then_refund_restores(SlidingLog::new(limit, w).unwrap(), &steps, q, &probes);
        assert_take_then_refund_restores(SlidingCounter::new(limit, w).unwrap(), &steps, q, &probes);
        assert_take_then_refund_restores(Gcra::new(limit - 1, count, w).unwrap(), &steps, q, &probes);
        assert_take_then_refund_restores(TokenBucket::new(limit, count, w).unwrap(), &steps, q, &probes);
    }

    /// Any parameters, quantities up to the largest, gaps from nothing to
    /// years and a clock that steps back: no panic, and every refund
    /// answers a query of a state no better than rested.
    #[test]
    fn refunds_never_overflow(
        limit in prop_oneof![Just(1u64), Just(MAX_LIMIT), 1..=MAX_LIMIT],
        count in prop_oneof![Just(1u64), Just(MAX_LIMIT), 1..=MAX_LIMIT],
        period in prop_oneof![Just(1u64), Just(MAX_PERIOD_MICROS), 1..=MAX_PERIOD_MICROS],
        steps in prop::collection::vec(
            (-100_000_000_000_000i64..100_000_000_000_000, any::<bool>(),
             prop_oneof![Just(0u64), Just(MAX_QUANTITY), Just(u64::MAX), 0..=MAX_QUANTITY]),
            1..40,
        ),
    ) {
        let burst = (limit - 1).min(MAX_BURST);
        check_no_overflow(Gcra::new(burst, count, period).unwrap(), &steps);
        check_no_overflow(TokenBucket::new(limit, count, period).unwrap(), &steps);
        check_no_overflow(FixedWindow::new(limit, period).unwrap(), &steps);
        check_no_overflow(SlidingLog::new(limit.min(1_000), period).unwrap(), &steps);
        check_no_overflow(SlidingCounter::new(limit, period).unwrap(), &steps);
    }
}

fn check_no_overflow<L: Stored>(limiter: L, steps: &[(i64, bool, u64)])
where
    L::Refund: Clone,
{
    let mut d = Driver::new(limiter);
    let mut now = T0;
    for &(step, refund, q) in steps {
        now = now.saturating_add_signed(step);
        let decision = if refund {
            let (decision, giveback) = d.refund(now, q);
            if let Giveback::Store(update) = giveback {
                assert!(update.expires_at >= Instant::from_micros(now));
            }
            assert!(!decision.blocked);
            decision
        } else {
            d.call(now, q.min(MAX_QUANTITY))
        };
        assert!(decision.remaining <= decision.limit);
    }
}

/// What a refund stores, case by case.
#[test]
fn refunds_that_change_nothing_store_nothing() {
    let now = Instant::from_micros(T0);
    let g = Gcra::new(4, 1, 1_000_000).unwrap();
    // No state: a refund never creates one.
    assert_eq!(g.refund(None, now, 3).giveback, Giveback::Nothing);
    // Quantity 0 is a query.
    let taken = g.check(None, now, 2).update.unwrap().change;
    assert_eq!(g.refund(Some(&taken), now, 0).giveback, Giveback::Nothing);
    // A refund of everything taken, or more, rests the limiter.
    assert_eq!(g.refund(Some(&taken), now, 2).giveback, Giveback::Rested);
    assert_eq!(g.refund(Some(&taken), now, 9).giveback, Giveback::Rested);
    // A rested limiter (its TAT passed) has nothing to give back.
    let later = Instant::from_micros(T0 + 3_000_000);
    assert_eq!(g.refund(Some(&taken), later, 1).giveback, Giveback::Nothing);
    // Part of it: the TAT moves back one interval; remaining rises by one.
    let r = g.refund(Some(&taken), now, 1);
    assert_eq!(r.decision.remaining, 4);
    assert_eq!(r.decision.reset.get(), 1_000_000);
    let Giveback::Store(update) = r.giveback else {
        panic!("a partial refund stores the new TAT");
    };
    assert_eq!(update.expires_at, Instant::from_micros(T0 + 1_000_000));

    let log = SlidingLog::new(5, 10_000_000).unwrap();
    let mut d = Driver::new(log);
    d.call(T0, 2);
    d.call(T0 + 1_000_000, 2);
    // The two newest go; the first two stay, and decide the reset.
    let (decision, giveback) = d.refund(T0 + 2_000_000, 2);
    assert_eq!(
        giveback,
        Giveback::Store(rl_core::Update {
            change: rl_core::Shed {
                newest: 2,
                horizon: Some(Instant::from_micros(T0 + 2_000_000 - 10_000_000)),
            },
            expires_at: Instant::from_micros(T0 + 10_000_000),
        })
    );
    assert_eq!((decision.remaining, decision.reset.get()), (3, 8_000_000));
    // Past the window, nothing is live: nothing to give back.
    assert_eq!(d.refund(T0 + 10_000_000, 1).1, Giveback::Nothing);
}
