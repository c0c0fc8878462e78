//! Table-driven GCRA cases: (instant, quantity) -> the exact reply.

mod common;

use common::{Driver, MS, SEC};
use rl_core::{Gcra, Instant, Limiter, RetryAfter, TimeUnit::*};

fn gcra(max_burst: u64, count: u64, period: u64) -> Driver<Gcra> {
    Driver::new(Gcra::new(max_burst, count, period).expect("valid parameters"))
}

/// Start from a realistic wall-clock instant so nothing depends on `now == 0`.
const T0: u64 = 1_763_700_000 * SEC;

#[test]
fn redis_cell_readme_example() {
    // CL.THROTTLE user123 15 30 60: 30 per minute, bursts of 16.
    let mut d = gcra(15, 30, 60 * SEC);
    assert_eq!(d.reply(T0, 1, Seconds), [0, 16, 15, -1, 2]);
    assert_eq!(d.reply(T0, 1, Seconds), [0, 16, 14, -1, 4]);
    for i in 3..=16 {
        let remaining = 16 - i;
        assert_eq!(d.reply(T0, 1, Seconds), [0, 16, remaining, -1, 2 * i]);
    }
    // The 17th at the same instant: refused until one emission interval frees up.
    assert_eq!(d.reply(T0, 1, Seconds), [1, 16, 0, 2, 32]);
    // Two seconds later exactly one more fits.
    assert_eq!(d.reply(T0 + 2 * SEC, 1, Seconds), [0, 16, 0, -1, 32]);
    assert_eq!(d.reply(T0 + 2 * SEC, 1, Seconds), [1, 16, 0, 2, 32]);
}

#[test]
fn max_burst_zero_allows_one_per_interval() {
    let mut d = gcra(0, 1, 10 * SEC);
    assert_eq!(d.reply(T0, 1, Seconds), [0, 1, 0, -1, 10]);
    assert_eq!(d.reply(T0, 1, Seconds), [1, 1, 0, 10, 10]);
    assert_eq!(d.reply(T0 + 10 * SEC - 1, 1, Seconds), [1, 1, 0, 1, 1]);
    assert_eq!(d.reply(T0 + 10 * SEC, 1, Seconds), [0, 1, 0, -1, 10]);
}

#[test]
fn quantity_zero_is_a_query_that_changes_nothing() {
    let mut d = gcra(15, 30, 60 * SEC);
    assert_eq!(d.reply(T0, 0, Seconds), [0, 16, 16, -1, 0]);
    assert!(d.state.is_none());
    d.reply(T0, 1, Seconds);
    let before = d.state;
    let out = d
        .limiter
        .check(d.state.as_ref(), Instant::from_micros(T0 + SEC), 0);
    assert!(out.update.is_none());
    assert_eq!(out.decision.to_reply(Seconds), [0, 16, 15, -1, 1]);
    assert_eq!(d.state, before);
}

#[test]
fn quantity_equal_to_limit_then_more_than_limit() {
    let mut d = gcra(4, 5, 5 * SEC);
    assert_eq!(d.reply(T0, 5, Seconds), [0, 5, 0, -1, 5]);
    assert_eq!(d.reply(T0, 5, Seconds), [1, 5, 0, 5, 5]);
    // More than the limit can never succeed: retry_after is -1.
    let out = d.limiter.check(d.state.as_ref(), Instant::from_micros(T0), 6);
    assert_eq!(out.decision.retry_after, RetryAfter::Never);
    assert_eq!(out.decision.to_reply(Seconds), [1, 5, 0, -1, 5]);
    assert!(out.update.is_none());
}

#[test]
fn milliseconds_round_up() {
    // 3 per 1000 ms, no burst: T = 333.33.. ms.
    let mut d = gcra(0, 3, 1000 * MS);
    assert_eq!(d.reply(T0, 1, Millis), [0, 1, 0, -1, 334]);
    assert_eq!(d.reply(T0, 1, Millis), [1, 1, 0, 334, 334]);
    // 333_333 µs later it is still 1/3 µs early.
    assert_eq!(d.reply(T0 + 333_333, 1, Millis), [1, 1, 0, 1, 1]);
    assert_eq!(d.reply(T0 + 333_334, 1, Millis), [0, 1, 0, -1, 334]);
}

#[test]
fn non_integral_interval_is_exact_over_a_whole_burst() {
    // 3 per second with bursts of 3: the third request lands exactly on tau.
    let mut d = gcra(2, 3, SEC);
    assert_eq!(d.reply(T0, 1, Seconds), [0, 3, 2, -1, 1]);
    assert_eq!(d.reply(T0, 1, Seconds), [0, 3, 1, -1, 1]);
    // reset is exactly one second: reported as 1, not 2.
    assert_eq!(d.reply(T0, 1, Seconds), [0, 3, 0, -1, 1]);
    assert_eq!(d.reply(T0, 1, Millis), [1, 3, 0, 334, 1000]);
    assert_eq!(d.reply(T0 + SEC, 0, Seconds), [0, 3, 3, -1, 0]);
}

#[test]
fn retry_after_counts_the_whole_quantity() {
    let mut d = gcra(9, 10, 10 * SEC); // 1 per second, bursts of 10
    assert_eq!(d.reply(T0, 8, Seconds), [0, 10, 2, -1, 8]);
    assert_eq!(d.reply(T0, 5, Seconds), [1, 10, 2, 3, 8]);
    assert_eq!(d.reply(T0 + 3 * SEC, 5, Seconds), [0, 10, 0, -1, 10]);
}

#[test]
fn clock_stepping_back_admits_nothing_extra() {
    let mut d = gcra(1, 1, 10 * SEC);
    assert_eq!(d.reply(T0, 2, Seconds), [0, 2, 0, -1, 20]);
    // Five seconds back in time: the TAT stays where it was.
    assert_eq!(d.reply(T0 - 5 * SEC, 1, Seconds), [1, 2, 0, 15, 25]);
    assert_eq!(d.reply(T0 + 10 * SEC, 1, Seconds), [0, 2, 0, -1, 20]);
}

#[test]
fn expiry_is_the_instant_of_full_rest() {
    let g = Gcra::new(0, 3, SEC).unwrap();
    let out = g.check(None, Instant::from_micros(T0), 1);
    let update = out.update.expect("allowed");
    // TAT = T0 + 333_333.33 µs, rounded up.
    assert_eq!(update.expires_at, Instant::from_micros(T0 + 333_334));
    assert_eq!(update.change.units(), u128::from(T0) * 3 + 1_000_000);
    assert_eq!(update.change.per_micro(), 3);
}

#[test]
fn parameter_ranges() {
    assert!(Gcra::new(0, 1, 1).is_ok());
    assert!(Gcra::new(999_999_999, 1_000_000_000, 1_000_000_000_000_000).is_ok());
    assert!(Gcra::new(1_000_000_000, 1, 1).is_err());
    assert!(Gcra::new(0, 0, 1).is_err());
    assert!(Gcra::new(0, 1_000_000_001, 1).is_err());
    assert!(Gcra::new(0, 1, 0).is_err());
    assert!(Gcra::new(0, 1, 1_000_000_000_000_001).is_err());
    assert_eq!(
        Gcra::new(0, 0, 1).unwrap_err().to_string(),
        "count must be an integer from 1 to 1000000000"
    );
}

#[test]
fn a_state_written_with_other_parameters_is_read_conservatively() {
    let three = Gcra::new(0, 3, SEC).unwrap();
    let tat = three
        .check(None, Instant::from_micros(T0), 1)
        .update
        .unwrap()
        .change;
    // Now 7 per second: the TAT (T0 + 1/3 s) rounds up to the next 1/7 s tick.
    let seven = Gcra::new(0, 7, SEC).unwrap();
    let out = seven.check(Some(&tat), Instant::from_micros(T0), 0);
    assert_eq!(out.decision.to_reply(Millis), [0, 1, 0, -1, 334]);
}

#[test]
fn a_tat_beyond_the_last_expiry_is_still_exact() {
    // One per 10^9 s with bursts of 74,537: 52,810 units push the TAT past
    // u64::MAX µs (the year 586,000). The model allows them all the same.
    let mut d = gcra(74_536, 1, 1_000_000_000 * SEC);
    let out = d.limiter.check(None, Instant::from_micros(T0), 52_810);
    let update = out.update.expect("allowed by the model");
    // The key's expiry is the latest an expiry can name.
    assert_eq!(update.expires_at, Instant::MAX);
    assert_eq!(
        out.decision.to_reply(Seconds),
        [0, 74_537, 21_727, -1, 52_810_000_000_000]
    );
    d.state = Some(update.change);
    // The same again overshoots the tolerance by 31,083 periods: a finite wait.
    assert_eq!(
        d.reply(T0, 52_810, Seconds),
        [1, 74_537, 21_727, 31_083_000_000_000, 52_810_000_000_000]
    );
    assert_eq!(
        d.reply(T0, 21_727, Seconds),
        [0, 74_537, 0, -1, 74_537_000_000_000]
    );
    assert_eq!(
        d.reply(T0, 1, Seconds),
        [1, 74_537, 0, 1_000_000_000, 74_537_000_000_000]
    );
}

#[test]
fn a_far_tat_converts_exactly_between_denominators() {
    // 3 per 10^9 s, a burst of 10^9: the TAT lands 10^24/3 µs ahead.
    let three = Gcra::new(999_999_999, 3, 1_000_000_000 * SEC).unwrap();
    let tat = three
        .check(None, Instant::from_micros(T0), 1_000_000_000)
        .update
        .expect("a full burst fits")
        .change;
    assert_eq!(tat.units(), u128::from(T0) * 3 + 10u128.pow(24));
    // Read at 7 per 10^9 s: 1/3 µs past a whole µs rounds up to 3/7 µs, so
    // the rest time is 333..334 µs, reported as 333..334 s.
    let seven = Gcra::new(999_999_999, 7, 1_000_000_000 * SEC).unwrap();
    let out = seven.check(Some(&tat), Instant::from_micros(T0), 0);
    assert_eq!(out.decision.reset.get(), 333_333_333_333_333_333_333_334);
    assert_eq!(
        out.decision.to_reply(Seconds),
        [0, 1_000_000_000, 0, -1, 333_333_333_333_333_334]
    );
}
