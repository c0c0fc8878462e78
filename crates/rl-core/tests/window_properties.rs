//! Property tests for the window family: every decision equals an
//! independent, direct computation of the spec's model over the history of
//! allowed requests; retry_after and reset are exact; nothing panics.

mod common;

use common::{assert_retry_and_reset_are_exact, call_with_exact_times, Driver, Stored};
use proptest::prelude::*;
use proptest::test_runner::FileFailurePersistence;
use rl_core::bounds::{MAX_LIMIT, MAX_PERIOD_MICROS};
use rl_core::{Decision, FixedWindow, Instant, Limiter, LogView, RetryAfter, SlidingCounter, SlidingLog};

const T0: u64 = 1_763_700_000_000_000;
/// 4000-01-01 in µs since the epoch: below the latest storable window start.
const YEAR_4000: u64 = 64_060_588_800_000_000;

fn small() -> impl Strategy<Value = (u64, u64)> {
    (1u64..20, prop_oneof![1u64..5_000_000, Just(1_000_000)])
}

/// Non-decreasing instants: (gap µs, quantity).
fn script() -> impl Strategy<Value = Vec<(u64, u64)>> {
    prop::collection::vec(
        (prop_oneof![Just(0u64), 0u64..3_000_000, 1..100u64], 0u64..25),
        1..60,
    )
}

/// Run `script`, and for every call compare with `model(history, now, q)`,
/// which answers (allowed, remaining) from the allowed (instant, units) so far.
fn assert_matches_model<L: Stored>(
    limiter: L,
    script: &[(u64, u64)],
    model: impl Fn(&[(u64, u64)], u64, u64) -> (bool, u64),
) {
    let limit = limiter.limit();
    let mut d = Driver::new(limiter);
    let mut history = Vec::new();
    let mut now = T0;
    for &(gap, q) in script {
        now += gap;
        let (allowed, remaining) = model(&history, now, q);
        let decision: Decision = d.call(now, q);
        if q > limit {
            assert_eq!(decision.retry_after, RetryAfter::Never);
        }
        assert_eq!(!decision.blocked, allowed || q == 0, "at +{} µs, q {q}", now - T0);
        assert_eq!(
            decision.remaining,
            remaining,
            "remaining at +{} µs, q {q}",
            now - T0
        );
        if !decision.blocked && q > 0 {
            history.push((now, q));
        }
    }
}

fn settings() -> ProptestConfig {
    ProptestConfig {
        cases: 300,
        failure_persistence: Some(Box::new(FileFailurePersistence::Direct(
            "proptest-regressions/window_properties.txt",
        ))),
        ..ProptestConfig::default()
    }
}

proptest! {
    #![proptest_config(settings())]

    #[test]
    fn fixed_window_is_the_model((limit, w) in small(), script in script()) {
        assert_matches_model(FixedWindow::new(limit, w).unwrap(), &script, |history, now, q| {
            let used: u64 = history.iter().filter(|(t, _)| t / w == now / w).map(|(_, n)| n).sum();
            let allowed = used + q <= limit;
            (allowed, limit - used - if allowed { q } else { 0 })
        });
    }

    #[test]
    fn sliding_log_is_the_model((limit, w) in small(), script in script()) {
        assert_matches_model(SlidingLog::new(limit, w).unwrap(), &script, |history, now, q| {
            let used: u64 = history.iter().filter(|(t, _)| t + w > now).map(|(_, n)| n).sum();
            let allowed = used + q <= limit;
            (allowed, limit - used - if allowed { q } else { 0 })
        });
    }

    #[test]
    fn sliding_counter_is_the_model((limit, w) in small(), script in script()) {
        assert_matches_model(SlidingCounter::new(limit, w).unwrap(), &script, |history, now, q| {
            let k = now / w;
            let sum = |window: u64| -> u64 { history.iter().filter(|(t, _)| t / w == window).map(|(_, n)| n).sum() };
            let (prev, cur) = (u128::from(sum(k - 1)), u128::from(sum(k)));
            let (w, l, e) = (u128::from(w), u128::from(limit), u128::from(now % w));
            let allowed = prev * (w - e) + (cur + u128::from(q)) * w <= l * w;
            let cur = cur + if allowed { u128::from(q) } else { 0 };
            // remaining: the largest r with prev*(W-e) + (cur + r)*W <= limit*W.
            let remaining = ((l * w).saturating_sub(prev * (w - e)) / w).saturating_sub(cur);
            (allowed, u64::try_from(remaining).unwrap())
        });
    }

    #[test]
    fn fixed_window_retry_and_reset_are_exact((limit, w) in small(), script in script()) {
        assert_retry_and_reset_are_exact(Driver::new(FixedWindow::new(limit, w).unwrap()), &script);
    }

    #[test]
    fn sliding_log_retry_and_reset_are_exact((limit, w) in small(), script in script()) {
        assert_retry_and_reset_are_exact(Driver::new(SlidingLog::new(limit, w).unwrap()), &script);
    }

    #[test]
    fn sliding_counter_retry_and_reset_are_exact((limit, w) in small(), script in script()) {
        assert_retry_and_reset_are_exact(Driver::new(SlidingCounter::new(limit, w).unwrap()), &script);
    }

    /// Any parameters, any instants (the clock jumping anywhere, backwards
    /// included), any quantity: no panic, and the reply's invariants hold.
    #[test]
    fn windows_never_panic(
        limit in prop_oneof![Just(1u64), Just(MAX_LIMIT), 1..=MAX_LIMIT],
        w in prop_oneof![Just(1u64), Just(MAX_PERIOD_MICROS), 1..=MAX_PERIOD_MICROS],
        calls in prop::collection::vec((any::<u64>(), prop_oneof![0u64..4, any::<u64>()]), 1..20),
        log in prop::collection::vec(any::<u64>(), 0..8),
    ) {
        let fixed = FixedWindow::new(limit, w).unwrap();
        let counter = SlidingCounter::new(limit, w).unwrap();
        let sliding = SlidingLog::new(limit, w).unwrap();
        let mut log = log;
        log.sort_unstable();
        let bytes: Vec<u8> = log.iter().flat_map(|t| t.to_le_bytes()).collect();
        let view = LogView::new(&bytes, 0).unwrap();
        let (mut fs, mut cs) = (None, None);
        for (now, q) in calls {
            let now = Instant::from_micros(now);
            let f = fixed.check(fs.as_ref(), now, q);
            let c = counter.check(cs.as_ref(), now, q);
            let s = sliding.check(Some(&view), now, q);
            let checks = [
                (f.decision, f.update.as_ref().map(|u| u.expires_at)),
                (c.decision, c.update.as_ref().map(|u| u.expires_at)),
                (s.decision, s.update.as_ref().map(|u| u.expires_at)),
            ];
            for (decision, expires_at) in checks {
                prop_assert!(decision.remaining <= decision.limit);
                prop_assert_eq!(expires_at.is_some(), !decision.blocked && q > 0);
                prop_assert_eq!(decision.blocked, decision.retry_after != RetryAfter::Allowed);
                if q > limit {
                    prop_assert_eq!(decision.retry_after, RetryAfter::Never);
                } else if now.as_micros() < YEAR_4000 {
                    // Only a window starting past what can be stored (the
                    // year 4253) can never take a request that fits.
                    prop_assert_ne!(decision.retry_after, RetryAfter::Never);
                }
                let _ = decision.to_reply(rl_core::TimeUnit::Millis);
            }
            if let Some(u) = f.update { fs = Some(u.change); }
            if let Some(u) = c.update { cs = Some(u.change); }
        }
    }
}

proptest! {
    #![proptest_config(settings())]

    /// Parameters may change between calls on one key (the window length
    /// above all): the state is still read as something near now, never
    /// as a window years away.
    #[test]
    fn windows_stay_near_now_when_parameters_change(
        script in prop::collection::vec((0u64..300_000, 0u64..4, 1u64..500_000, 1u64..10), 1..60),
    ) {
        let (mut fs, mut cs) = (None, None);
        let mut now = T0;
        for (gap, q, w, limit) in script {
            now += gap;
            let at = Instant::from_micros(now);
            let f = FixedWindow::new(limit, w).unwrap().check(fs.as_ref(), at, q);
            let c = SlidingCounter::new(limit, w).unwrap().check(cs.as_ref(), at, q);
            // The longest window seen is below 500 ms: nothing can matter for
            // more than two of them.
            for (decision, update) in [(f.decision, f.update.as_ref().map(|u| u.expires_at)), (c.decision, c.update.as_ref().map(|u| u.expires_at))] {
                prop_assert!(decision.reset.get() <= 1_000_000);
                if let Some(expires_at) = update {
                    prop_assert!(expires_at.as_micros() <= now + 1_000_000);
                }
            }
            if let Some(u) = f.update { fs = Some(u.change); }
            if let Some(u) = c.update { cs = Some(u.change); }
        }
    }
}

proptest! {
    #![proptest_config(settings())]

    /// The window length and the limit may change between calls on one key:
    /// `retry_after` and `reset`, read under the new parameters, stay exact,
    /// that is, they agree with the decisions that follow.
    #[test]
    fn retry_and_reset_stay_exact_when_parameters_change(
        script in prop::collection::vec(
            (
                prop_oneof![0u64..40_000, 0u64..400_000],
                0u64..6,
                prop_oneof![
                    Just(10_000u64), Just(15_000), Just(20_000), Just(7_000), Just(30_000),
                    1u64..400_000,
                ],
                1u64..6,
            ),
            1..60,
        ),
    ) {
        let (mut fs, mut cs, mut ls) = (None, None, Vec::new());
        let mut now = T0;
        for (gap, q, w, limit) in script {
            now += gap;
            let mut f = Driver { limiter: FixedWindow::new(limit, w).unwrap(), state: fs, block: None };
            call_with_exact_times(&mut f, now, q);
            fs = f.state;
            let mut c = Driver { limiter: SlidingCounter::new(limit, w).unwrap(), state: cs, block: None };
            call_with_exact_times(&mut c, now, q);
            cs = c.state;
            let mut l = Driver { limiter: SlidingLog::new(limit, w).unwrap(), state: ls, block: None };
            call_with_exact_times(&mut l, now, q);
            ls = l.state;
        }
    }
}
