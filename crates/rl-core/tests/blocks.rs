//! Blocks (`BLOCK duration`), with time moved by hand: a refusal that asks
//! for it blocks the key; while blocked every request is refused and
//! nothing is recorded; the block is never extended by the requests it
//! refuses; a refund gives units back and leaves the block; when the block
//! ends the limiter is exactly where it was. Then property tests: the same
//! limiter with and without blocks, over random walks, for all five
//! algorithms.

mod common;

use common::{Driver, Stored, SEC};
use proptest::prelude::*;
use proptest::test_runner::FileFailurePersistence;
use rl_core::request::in_force;
use rl_core::{
    Decision, FixedWindow, Gcra, Instant, Micros, Mode, Request, RetryAfter, SlidingCounter, SlidingLog,
    TimeUnit::Seconds, TokenBucket,
};

const T0: u64 = 1_763_700_000 * SEC;

fn take(quantity: u64, block_secs: Option<u64>) -> Request {
    Request {
        quantity,
        mode: Mode::Take,
        block: block_secs.map(|s| Micros(u128::from(s * SEC))),
    }
}

fn refund(quantity: u64) -> Request {
    Request {
        quantity,
        mode: Mode::Refund,
        block: None,
    }
}

/// "5 failed logins in 15 minutes, then locked out for an hour": GCRA of 5
/// per 900 s with a burst of 5, and `BLOCK 3600`.
#[test]
fn five_failures_then_an_hour_out() {
    let mut d = Driver::new(Gcra::new(4, 5, 900 * SEC).unwrap());
    let mut plain = Driver::new(Gcra::new(4, 5, 900 * SEC).unwrap());
    let login = take(1, Some(3600));
    for (i, reset) in [180, 360, 540, 720, 900].into_iter().enumerate() {
        let reply = d.request(T0, &login).to_reply(Seconds);
        assert_eq!(reply, [0, 5, 4 - i as i64, -1, reset]);
        plain.call(T0, 1);
    }
    // The sixth is refused by the limiter (one slot frees in 180 s): the
    // key is blocked for an hour, and the reply says so.
    assert_eq!(d.request(T0, &login).to_reply(Seconds), [1, 5, 0, 3600, 3600]);
    assert_eq!(d.block, Some(Instant::from_micros(T0 + 3600 * SEC)));
    // Refused while blocked, with or without BLOCK, after the limiter's own
    // slot has freed; nothing recorded, the block not extended.
    for (at, request) in [(T0 + 10 * SEC, login), (T0 + 1000 * SEC, take(1, None))] {
        let left = (T0 + 3600 * SEC - at) / SEC;
        assert_eq!(
            d.request(at, &request).to_reply(Seconds),
            [1, 5, 0, left as i64, left as i64]
        );
        assert_eq!(d.block, Some(Instant::from_micros(T0 + 3600 * SEC)));
        assert_eq!(d.state, plain.state);
    }
    // A query says the key is blocked, and until when.
    assert_eq!(
        d.request(T0 + 1600 * SEC, &take(0, None)).to_reply(Seconds),
        [1, 5, 0, 2000, 2000]
    );
    // More than the limit never passes, blocked or not.
    assert_eq!(
        d.request(T0 + 1600 * SEC, &take(6, Some(3600))).to_reply(Seconds),
        [1, 5, 0, -1, 2000]
    );
    // One microsecond before the end it is still blocked; at the end the
    // limiter is exactly as it was (here rested: its last unit was taken
    // an hour ago).
    let end = T0 + 3600 * SEC;
    assert!(d.request(end - 1, &login).blocked);
    assert_eq!(d.request(end, &login).to_reply(Seconds), [0, 5, 4, -1, 180]);
    plain.call(end, 1);
    assert_eq!(d.state, plain.state);
    // The write dropped the block that had ended.
    assert_eq!(d.block, None);
}

/// A refusal blocks only when asked to, and only when the request could
/// ever pass; a block starts from the refusal's instant.
#[test]
fn only_a_refusal_that_asks_for_it_blocks() {
    let mut d = Driver::new(FixedWindow::new(2, 60 * SEC).unwrap());
    let start = T0 / (60 * SEC) * (60 * SEC);
    d.request(start, &take(2, None));
    // Refused without BLOCK: no block.
    assert_eq!(
        d.request(start + SEC, &take(1, None)).to_reply(Seconds),
        [1, 2, 0, 59, 59]
    );
    assert_eq!(d.block, None);
    // More than the limit, with BLOCK: refused for ever, no block.
    assert_eq!(
        d.request(start + SEC, &take(3, Some(600))).to_reply(Seconds),
        [1, 2, 0, -1, 59]
    );
    assert_eq!(d.block, None);
    // A query with BLOCK blocks nothing.
    assert_eq!(
        d.request(start + SEC, &take(0, Some(600))).to_reply(Seconds),
        [0, 2, 0, -1, 59]
    );
    assert_eq!(d.block, None);
    // A block shorter than the algorithm's own wait: the reply keeps the
    // longer of the two, and so does the key.
    let blocked = d.request(start + SEC, &take(1, Some(10)));
    assert_eq!(blocked.to_reply(Seconds), [1, 2, 0, 59, 59]);
    assert_eq!(d.block, Some(Instant::from_micros(start + 11 * SEC)));
    // Over at start + 11 s; the window's own limit still holds until it ends.
    assert_eq!(
        d.request(start + 11 * SEC, &take(1, None)).to_reply(Seconds),
        [1, 2, 0, 49, 49]
    );
    assert_eq!(
        d.request(start + 60 * SEC, &take(1, None)).to_reply(Seconds),
        [0, 2, 1, -1, 60]
    );
}

/// A refund on a blocked key gives the units back as usual and leaves the
/// block; a limiter rested by it keeps the block alone.
#[test]
fn a_refund_leaves_the_block() {
    let mut d = Driver::new(Gcra::new(4, 5, 900 * SEC).unwrap());
    let mut plain = Driver::new(Gcra::new(4, 5, 900 * SEC).unwrap());
    for _ in 0..5 {
        d.request(T0, &take(1, Some(3600)));
        plain.call(T0, 1);
    }
    d.request(T0, &take(1, Some(3600)));
    let at = T0 + 20 * SEC;
    // Two back: the TAT moves from T0 + 900 s to T0 + 540 s.
    assert_eq!(d.request(at, &refund(2)).to_reply(Seconds), [0, 5, 0, -1, 3580]);
    plain.refund(at, 2);
    assert_eq!(d.state, plain.state);
    assert!(d.request(at, &take(1, None)).blocked);
    // All of it back: the limiter is rested, the block stays.
    assert_eq!(d.request(at, &refund(5)).to_reply(Seconds), [0, 5, 0, -1, 3580]);
    assert_eq!(d.state, None);
    assert_eq!(d.block, Some(Instant::from_micros(T0 + 3600 * SEC)));
    assert!(d.request(at + 3000 * SEC, &take(1, None)).blocked);
    assert_eq!(
        d.request(T0 + 3600 * SEC, &take(5, None)).to_reply(Seconds),
        [0, 5, 0, -1, 900]
    );
}

/// Every algorithm blocks the same way: a refusal with BLOCK, then only
/// refusals, then the limiter as a twin without blocks left it.
#[test]
fn every_algorithm_blocks_alike() {
    fn check<L: Stored + Clone>(limiter: L, limit: u64)
    where
        L::Refund: Clone,
    {
        let mut d = Driver::new(limiter.clone());
        let mut plain = Driver::new(limiter);
        let at = T0 + 7 * SEC;
        assert!(!d.request(at, &take(limit, None)).blocked);
        plain.call(at, limit);
        let refused = d.request(at, &take(1, Some(30)));
        let own = plain.peek(at, 1);
        assert!(own.blocked, "{own:?}");
        assert_eq!(
            refused,
            Decision {
                blocked: true,
                remaining: 0,
                retry_after: match own.retry_after {
                    RetryAfter::After(w) => RetryAfter::After(w.max(Micros(30 * u128::from(SEC)))),
                    other => other,
                },
                reset: own.reset.max(Micros(30 * u128::from(SEC))),
                ..own
            }
        );
        for gap in [1, SEC, 29 * SEC, 30 * SEC - 1] {
            assert!(d.request(at + gap, &take(1, Some(30))).blocked);
            assert_eq!(d.state, plain.state);
            assert_eq!(d.block, Some(Instant::from_micros(at + 30 * SEC)));
        }
        let after = at + 30 * SEC;
        assert_eq!(d.request(after, &take(1, None)), plain.call(after, 1));
        assert_eq!(d.state, plain.state);
    }
    check(Gcra::new(2, 1, 3600 * SEC).unwrap(), 3);
    check(TokenBucket::new(3, 1, 3600 * SEC).unwrap(), 3);
    check(FixedWindow::new(3, 3600 * SEC).unwrap(), 3);
    check(SlidingLog::new(3, 3600 * SEC).unwrap(), 3);
    check(SlidingCounter::new(3, 3600 * SEC).unwrap(), 3);
}

/// A block ends; a stored block that has ended is no block.
#[test]
fn a_block_is_in_force_until_its_end_only() {
    let end = Instant::from_micros(T0);
    assert_eq!(in_force(Some(end), Instant::from_micros(T0 - 1)), Some(end));
    assert_eq!(in_force(Some(end), Instant::from_micros(T0)), None);
    assert_eq!(in_force(None, Instant::from_micros(T0)), None);
}

fn settings() -> ProptestConfig {
    ProptestConfig {
        cases: 300,
        failure_persistence: Some(Box::new(FileFailurePersistence::Direct(
            "proptest-regressions/blocks.txt",
        ))),
        ..ProptestConfig::default()
    }
}

/// One step of a walk: after `gap` µs, a request (taken, with or without
/// BLOCK, or refunded).
#[derive(Copy, Clone, Debug)]
struct Step {
    gap: u64,
    request: Request,
}

fn walk() -> impl Strategy<Value = Vec<Step>> {
    let request =
        (0u64..6, 0u8..10, prop_oneof![Just(1u64), 1u64..5_000_000]).prop_map(|(quantity, kind, block)| {
            Request {
                quantity,
                mode: if kind == 0 { Mode::Refund } else { Mode::Take },
                block: (kind >= 5).then_some(Micros(u128::from(block))),
            }
        });
    prop::collection::vec(
        (prop_oneof![Just(0u64), 0u64..3_000_000, 1..100u64], request)
            .prop_map(|(gap, request)| Step { gap, request }),
        1..80,
    )
}

/// The model of a block: the limiter as a twin without blocks sees the
/// requests made while the key is not blocked; while it is, every request
/// is refused (a query says until when), nothing is recorded and the block
/// does not move; a refund goes through and leaves it.
fn against_the_model<L: Stored + Clone>(limiter: L, steps: &[Step]) -> Result<(), TestCaseError>
where
    L::Refund: Clone,
{
    let mut d = Driver::new(limiter.clone());
    let mut twin = Driver::new(limiter);
    let mut until: Option<u64> = None;
    let mut now = T0;
    for step in steps {
        now += step.gap;
        let got = d.request(now, &step.request);
        let q = step.request.quantity;
        let blocked = until.filter(|&u| now < u);
        let left = blocked.map(|u| Micros(u128::from(u - now)));
        let expected = match (step.request.mode, left) {
            (Mode::Refund, _) if q > 0 => {
                let (own, _) = twin.refund(now, q);
                match left {
                    Some(left) => Decision {
                        remaining: 0,
                        reset: own.reset.max(left),
                        ..own
                    },
                    None => own,
                }
            }
            (_, Some(left)) => {
                // Nothing is recorded: the limiter rests as a query says.
                let own = twin.peek(now, q);
                Decision {
                    blocked: true,
                    remaining: 0,
                    retry_after: match own.retry_after {
                        RetryAfter::Never => RetryAfter::Never,
                        RetryAfter::Allowed => RetryAfter::After(left),
                        RetryAfter::After(w) => RetryAfter::After(w.max(left)),
                    },
                    reset: twin.peek(now, 0).reset.max(left),
                    ..own
                }
            }
            (_, None) => {
                let own = twin.call(now, q);
                match step.request.block {
                    Some(duration) if own.blocked && own.retry_after != RetryAfter::Never => {
                        until = Some(now + u64::try_from(duration.get()).unwrap());
                        Decision {
                            remaining: 0,
                            retry_after: match own.retry_after {
                                RetryAfter::After(w) => RetryAfter::After(w.max(duration)),
                                other => other,
                            },
                            reset: own.reset.max(duration),
                            ..own
                        }
                    }
                    _ => own,
                }
            }
        };
        prop_assert_eq!(got, expected, "at +{} µs: {:?}", now - T0, step.request);
        // The instant the state rests, told cheaply, is a query's.
        let at = Instant::from_micros(now);
        prop_assert_eq!(
            d.limiter.rested_at(L::view(&d.state).as_ref(), at),
            at.saturating_add(d.peek(now, 0).reset)
        );
        // Nothing recorded while blocked: the state is the twin's, always.
        prop_assert_eq!(&d.state, &twin.state, "at +{} µs", now - T0);
        // The block is the model's while in force: never extended.
        prop_assert_eq!(
            in_force(d.block, Instant::from_micros(now)).map(Instant::as_micros),
            until.filter(|&u| now < u)
        );
    }
    Ok(())
}

proptest! {
    #![proptest_config(settings())]

    #[test]
    fn gcra_blocks_as_the_model(burst in 0u64..4, count in 1u64..4, period in 1u64..3_000_000, steps in walk()) {
        against_the_model(Gcra::new(burst, count, period).unwrap(), &steps)?;
    }

    #[test]
    fn token_bucket_blocks_as_the_model(capacity in 1u64..5, count in 1u64..4, period in 1u64..3_000_000, steps in walk()) {
        against_the_model(TokenBucket::new(capacity, count, period).unwrap(), &steps)?;
    }

    #[test]
    fn fixed_window_blocks_as_the_model(limit in 1u64..5, window in 1u64..3_000_000, steps in walk()) {
        against_the_model(FixedWindow::new(limit, window).unwrap(), &steps)?;
    }

    #[test]
    fn sliding_log_blocks_as_the_model(limit in 1u64..5, window in 1u64..3_000_000, steps in walk()) {
        against_the_model(SlidingLog::new(limit, window).unwrap(), &steps)?;
    }

    #[test]
    fn sliding_counter_blocks_as_the_model(limit in 1u64..5, window in 1u64..3_000_000, steps in walk()) {
        against_the_model(SlidingCounter::new(limit, window).unwrap(), &steps)?;
    }
}
