//! Table-driven token-bucket cases: (instant, quantity) -> the exact reply.

mod common;

use common::{Driver, MS, SEC};
use rl_core::{Instant, Limiter, RetryAfter, TimeUnit::*, TokenBucket};

const T0: u64 = 1_763_700_000 * SEC;

fn bucket(capacity: u64, refill_count: u64, refill_period: u64) -> Driver<TokenBucket> {
    Driver::new(TokenBucket::new(capacity, refill_count, refill_period).expect("valid parameters"))
}

#[test]
fn drains_and_refills_continuously() {
    // 5 tokens, one more every 2 seconds.
    let mut d = bucket(5, 1, 2 * SEC);
    assert_eq!(d.reply(T0, 1, Seconds), [0, 5, 4, -1, 2]);
    assert_eq!(d.reply(T0, 4, Seconds), [0, 5, 0, -1, 10]);
    assert_eq!(d.reply(T0, 1, Seconds), [1, 5, 0, 2, 10]);
    assert_eq!(d.reply(T0 + SEC, 1, Millis), [1, 5, 0, 1000, 9000]);
    assert_eq!(d.reply(T0 + 2 * SEC, 0, Seconds), [0, 5, 1, -1, 8]);
    assert_eq!(d.reply(T0 + 2 * SEC, 1, Seconds), [0, 5, 0, -1, 10]);
    // Never above capacity, however long it rests.
    assert_eq!(d.reply(T0 + 1_000 * SEC, 0, Seconds), [0, 5, 5, -1, 0]);
}

#[test]
fn fractional_refill_is_exact() {
    // 3 tokens per second into a bucket of 3.
    let mut d = bucket(3, 3, SEC);
    assert_eq!(d.reply(T0, 3, Seconds), [0, 3, 0, -1, 1]);
    assert_eq!(d.reply(T0, 1, Millis), [1, 3, 0, 334, 1000]);
    assert_eq!(d.reply(T0 + 333_333, 1, Millis), [1, 3, 0, 1, 667]);
    assert_eq!(d.reply(T0 + 333_334, 1, Millis), [0, 3, 0, -1, 1000]);
}

#[test]
fn quantity_zero_and_over_capacity() {
    let mut d = bucket(10, 1, SEC);
    assert_eq!(d.reply(T0, 0, Seconds), [0, 10, 10, -1, 0]);
    assert!(d.state.is_none());
    let out = d.limiter.check(None, Instant::from_micros(T0), 11);
    assert_eq!(out.decision.retry_after, RetryAfter::Never);
    assert_eq!(out.decision.to_reply(Seconds), [1, 10, 10, -1, 0]);
    assert!(out.update.is_none());
    assert_eq!(d.reply(T0, 10, Seconds), [0, 10, 0, -1, 10]);
}

#[test]
fn state_is_tokens_and_expiry_is_full_rest() {
    let b = TokenBucket::new(4, 2, 1000 * MS).unwrap(); // 2 per second
    let out = b.check(None, Instant::from_micros(T0), 3);
    let update = out.update.unwrap();
    assert_eq!(update.change.updated_at(), Instant::from_micros(T0));
    // One token left; one token = 500_000 grains (2 per 10^6 µs, reduced).
    assert_eq!(update.change.grains_per_token(), 500_000);
    assert_eq!(update.change.level(), 500_000);
    assert_eq!(update.expires_at, Instant::from_micros(T0 + 1_500_000));
}

#[test]
fn clock_stepping_back_owes_the_refill() {
    let mut d = bucket(2, 1, 10 * SEC);
    assert_eq!(d.reply(T0, 2, Seconds), [0, 2, 0, -1, 20]);
    assert_eq!(d.reply(T0 - 5 * SEC, 1, Seconds), [1, 2, 0, 15, 25]);
    assert_eq!(d.reply(T0 + 10 * SEC, 1, Seconds), [0, 2, 0, -1, 20]);
}

#[test]
fn parameter_ranges() {
    assert!(TokenBucket::new(1, 1, 1).is_ok());
    assert!(TokenBucket::new(0, 1, 1).is_err());
    assert!(TokenBucket::new(1, 0, 1).is_err());
    assert!(TokenBucket::new(1, 1, 0).is_err());
    assert_eq!(
        TokenBucket::new(1, 1, 0).unwrap_err().to_string(),
        "refill_period must be an integer from 1 to 1000000000000000"
    );
    assert!(rl_core::Tokens::new(11, 1, Instant::EPOCH).is_some());
    assert!(rl_core::Tokens::new(1_000_000_001, 1, Instant::EPOCH).is_none());
    assert!(rl_core::Tokens::new(0, 0, Instant::EPOCH).is_none());
}

/// Regression: a bucket of 10^9 tokens whose rate changed had its level
/// converted to the new token size as `level * new / old`, a product past
/// 2^128: the level wrapped around (319,435,265 tokens left instead of
/// 999,999,999, and a reset of 680 trillion seconds).
#[test]
fn a_large_bucket_keeps_its_level_when_the_rate_changes() {
    let mut d = bucket(1_000_000_000, 2, 1_000_000_000 * SEC);
    assert_eq!(
        d.reply(T0, 1, Seconds),
        [0, 1_000_000_000, 999_999_999, -1, 500_000_000]
    );
    d.limiter = TokenBucket::new(1_000_000_000, 1, 1_000_000_000 * SEC).unwrap();
    assert_eq!(
        d.reply(T0, 0, Seconds),
        [0, 1_000_000_000, 999_999_999, -1, 1_000_000_000]
    );
    assert_eq!(
        d.reply(T0, 300_000_000, Seconds),
        [0, 1_000_000_000, 699_999_999, -1, 300_000_001_000_000_000]
    );
}

/// Regression: a refund where the refill owed to a later instant (the
/// clock stepped back here; a reservation's instant does the same) is
/// deeper than a stored debt may be, once a fast rate counts it in tokens,
/// was stored as of now, a state that did not read back ("token level or
/// refill unit out of range" on every later call). It is stored as of the
/// later instant at which the refill brings it near full: the same level
/// at every instant, so the same decisions as GCRA's.
#[test]
fn a_refund_owing_a_deep_refill_is_stored_in_range() {
    // 20 tokens, 10^9 per 2 ms: one token is one grain, 500,000 a µs.
    let bucket = TokenBucket::new(20, 1_000_000_000, 2 * MS).unwrap();
    let gcra = rl_core::Gcra::new(19, 1_000_000_000, 2 * MS).unwrap();
    let (mut d, mut g) = (Driver::new(bucket), Driver::new(gcra));
    assert_eq!(d.call(T0, 1), g.call(T0, 1));
    // 10 s and 3 µs back: 5 * 10^12 + 1.5 * 10^6 tokens owed, less 7.
    let back = T0 - 10 * SEC - 3;
    let (decision, giveback) = d.refund(back, 7);
    assert_eq!(decision, g.refund(back, 7).0);
    assert_eq!(decision.to_reply(Millis), [0, 20, 0, -1, 10_001]);
    let rl_core::Giveback::Store(update) = giveback else {
        panic!("{giveback:?}");
    };
    // The level at `back` is 26 - 5 * 10^12 - 1.5 * 10^6 grains: as of
    // T0 - 1 µs, 10,000,002 µs later, it is 26 - 500,000.
    let stored = update.change;
    assert_eq!(stored.updated_at(), Instant::from_micros(T0 - 1));
    assert_eq!(stored.level(), -499_974);
    assert_eq!(
        rl_core::Tokens::new(stored.level(), stored.grains_per_token(), stored.updated_at()),
        Some(stored)
    );
    assert_eq!(update.expires_at, Instant::from_micros(back + 10_000_003));
    for probe in [back, back + 1, T0 - 2, T0 - 1, T0, T0 + 1] {
        assert_eq!(d.peek(probe, 0), g.peek(probe, 0), "at {probe}");
        assert_eq!(d.peek(probe, 1), g.peek(probe, 1), "at {probe}");
    }
    assert_eq!(d.peek(T0 - 2, 0).to_reply(Millis), [0, 20, 0, -1, 1]);
    assert_eq!(d.peek(T0, 0).to_reply(Millis), [0, 20, 20, -1, 0]);
}
