//! Property tests for GCRA and the token bucket, with time moved by hand.

mod common;

use common::{assert_retry_and_reset_are_exact, Driver, Stored};
use proptest::prelude::*;
use proptest::test_runner::FileFailurePersistence;
use rl_core::bounds::{MAX_BURST, MAX_LIMIT, MAX_PERIOD_MICROS};
use rl_core::{Gcra, Instant, Limiter, RetryAfter, TimeUnit, TokenBucket};

const T0: u64 = 1_763_700_000_000_000;

/// Small parameters, where bursts and refills interact within a test.
fn small_params() -> impl Strategy<Value = (u64, u64, u64)> {
    (0u64..20, 1u64..50, 1u64..5_000_000)
}

/// Any parameters at all, including both ends of every range.
fn any_params() -> impl Strategy<Value = (u64, u64, u64)> {
    (
        prop_oneof![Just(0), Just(MAX_BURST), 0..=MAX_BURST],
        prop_oneof![Just(1), Just(MAX_LIMIT), 1..=MAX_LIMIT],
        prop_oneof![Just(1), Just(MAX_PERIOD_MICROS), 1..=MAX_PERIOD_MICROS],
    )
}

/// A script of calls at non-decreasing instants: (gap µs, quantity).
fn monotone_script() -> impl Strategy<Value = Vec<(u64, u64)>> {
    prop::collection::vec((prop_oneof![Just(0u64), 0u64..3_000_000], 0u64..25), 1..60)
}

/// Allowed units between any two calls `i <= j` (inclusive) never exceed the
/// exact model: `limit + (t_j - t_i) * count / period`.
fn assert_within_rate<L>(mut d: Driver<L>, script: &[(u64, u64)], limit: u64, count: u64, period: u64)
where
    L: Stored,
{
    let mut now = T0;
    let mut allowed: Vec<(u64, u64)> = Vec::new();
    for &(gap, q) in script {
        now += gap;
        let decision = d.call(now, q);
        assert!(decision.remaining <= decision.limit);
        if !decision.blocked && q > 0 {
            allowed.push((now, q));
        }
    }
    for i in 0..allowed.len() {
        let mut units: u128 = 0;
        for j in i..allowed.len() {
            units += u128::from(allowed[j].1);
            let elapsed = u128::from(allowed[j].0 - allowed[i].0);
            // units <= limit + elapsed * count / period, multiplied out.
            assert!(
                units * u128::from(period)
                    <= u128::from(limit) * u128::from(period) + elapsed * u128::from(count),
                "{units} units in {elapsed} µs exceeds the model"
            );
        }
    }
}

proptest! {
    // Failing cases are kept in proptest-regressions/properties.txt (committed)
    // and replayed first on every run.
    #![proptest_config(ProptestConfig {
        cases: 400,
        failure_persistence: Some(Box::new(FileFailurePersistence::Direct("proptest-regressions/properties.txt"))),
        ..ProptestConfig::default()
    })]

    #[test]
    fn gcra_never_admits_more_than_the_model((burst, count, period) in small_params(), script in monotone_script()) {
        let d = Driver::new(Gcra::new(burst, count, period).unwrap());
        assert_within_rate(d, &script, burst + 1, count, period);
    }

    #[test]
    fn token_bucket_never_admits_more_than_the_model((burst, count, period) in small_params(), script in monotone_script()) {
        let d = Driver::new(TokenBucket::new(burst + 1, count, period).unwrap());
        assert_within_rate(d, &script, burst + 1, count, period);
    }

    #[test]
    fn gcra_retry_and_reset_are_exact((burst, count, period) in small_params(), script in monotone_script()) {
        assert_retry_and_reset_are_exact(Driver::new(Gcra::new(burst, count, period).unwrap()), &script);
    }

    #[test]
    fn token_bucket_retry_and_reset_are_exact((burst, count, period) in small_params(), script in monotone_script()) {
        assert_retry_and_reset_are_exact(Driver::new(TokenBucket::new(burst + 1, count, period).unwrap()), &script);
    }

    /// The rate bound holds over the full parameter ranges too, with gaps
    /// from nothing to years.
    #[test]
    fn never_more_than_the_model_over_full_ranges(
        (burst, count, period) in any_params(),
        script in prop::collection::vec((prop_oneof![Just(0u64), 0u64..1_000, 0u64..100_000_000_000_000], 0u64..40), 1..40),
    ) {
        assert_within_rate(Driver::new(Gcra::new(burst, count, period).unwrap()), &script, burst + 1, count, period);
        assert_within_rate(Driver::new(TokenBucket::new(burst + 1, count, period).unwrap()), &script, burst + 1, count, period);
    }

    /// The token bucket decides exactly as GCRA with `max_burst = capacity - 1`,
    /// for any instants, including a clock that steps backwards.
    #[test]
    fn token_bucket_equals_gcra(
        (burst, count, period) in prop_oneof![small_params(), any_params()],
        script in prop::collection::vec((-5_000_000i64..5_000_000, prop_oneof![4 => 0u64..30, 1 => 1..=MAX_LIMIT]), 1..60),
    ) {
        let mut g = Driver::new(Gcra::new(burst, count, period).unwrap());
        let mut t = Driver::new(TokenBucket::new(burst + 1, count, period).unwrap());
        let mut now = T0;
        for (step, q) in script {
            now = now.saturating_add_signed(step);
            prop_assert_eq!(g.call(now, q), t.call(now, q));
        }
    }

    /// A bucket whose rate changes keeps the tokens it holds, rounded down
    /// to the new token size: at the instant it was last written, it holds
    /// the same whole tokens under either rate, for any capacity and rates.
    #[test]
    fn a_rate_change_keeps_the_whole_tokens(
        (burst, count, period) in any_params(),
        count2 in prop_oneof![Just(1), Just(MAX_LIMIT), 1..=MAX_LIMIT],
        period2 in prop_oneof![Just(1), Just(MAX_PERIOD_MICROS), 1..=MAX_PERIOD_MICROS],
        script in prop::collection::vec((prop_oneof![Just(0u64), 0u64..1_000, 0u64..100_000_000_000], prop_oneof![0u64..40, 1..=MAX_LIMIT]), 1..20),
    ) {
        let capacity = burst + 1;
        let mut d = Driver::new(TokenBucket::new(capacity, count, period).unwrap());
        let mut now = T0;
        for (gap, q) in script {
            now += gap;
            d.call(now, q);
        }
        if let Some(written) = d.state.map(|s| s.updated_at().as_micros()) {
            let before = d.peek(written, 0).remaining;
            d.limiter = TokenBucket::new(capacity, count2, period2).unwrap();
            prop_assert_eq!(d.peek(written, 0).remaining, before);
        }
    }

    /// Nothing panics or overflows anywhere in the parameter, quantity and
    /// clock ranges; every outcome obeys the reply's invariants.
    #[test]
    fn no_panic_anywhere(
        (burst, count, period) in any_params(),
        script in prop::collection::vec((any::<u64>(), prop_oneof![0u64..4, 1..=MAX_LIMIT, any::<u64>()]), 1..20),
    ) {
        let limiters = (Gcra::new(burst, count, period).unwrap(), TokenBucket::new(burst + 1, count, period).unwrap());
        let (mut gs, mut ts) = (None, None);
        for (now, q) in script {
            let now = Instant::from_micros(now);
            let go = limiters.0.check(gs.as_ref(), now, q);
            let to = limiters.1.check(ts.as_ref(), now, q);
            for (decision, updated) in [(go.decision, go.update.is_some()), (to.decision, to.update.is_some())] {
                prop_assert!(decision.remaining <= decision.limit);
                prop_assert_eq!(updated, !decision.blocked && q > 0);
                prop_assert_eq!(decision.blocked, decision.retry_after != RetryAfter::Allowed);
                // "Never" means exactly quantity > limit, at any instant:
                // a TAT past u64::MAX µs is still allowed or waited for.
                prop_assert_eq!(decision.retry_after == RetryAfter::Never, q > decision.limit);
                let _ = decision.to_reply(TimeUnit::Millis);
            }
            // After now, or the latest expiry there is.
            let later = |at: Instant| at > now || at == Instant::MAX;
            if let Some(u) = go.update { prop_assert!(later(u.expires_at)); gs = Some(u.change); }
            if let Some(u) = to.update { prop_assert!(later(u.expires_at)); ts = Some(u.change); }
        }
    }
}
