//! Pacing, charges and partial grants (`WAIT`, `FORCE`, `AT_MOST`), with
//! time moved by hand, then property tests against models: a reservation
//! at `t` leaves the state a request at `t` would; a grant of `g` is an
//! allowed request of `g`, and `g + 1` would be refused; the sliding log
//! never lets more than `limit` units start in any window, counting
//! reservations at their instants; the token bucket decides as GCRA under
//! every option.

mod common;

use common::{Driver, Stored, SEC};
use proptest::prelude::*;
use proptest::test_runner::FileFailurePersistence;
use rl_core::bounds::{MAX_HELD, MAX_QUANTITY};
use rl_core::{
    Decision, FixedWindow, Gcra, Instant, Micros, Mode, Overdrawn, Request, RetryAfter, SlidingCounter,
    SlidingLog, TimeUnit::Seconds, TokenBucket,
};

const T0: u64 = 1_763_700_000 * SEC;

fn req(quantity: u64, mode: Mode) -> Request {
    Request {
        quantity,
        mode,
        block: None,
    }
}

fn wait(secs: u64) -> Mode {
    Mode::Wait(Micros(u128::from(secs * SEC)))
}

/// One per second, no burst: each reservation lands a second after the
/// last, the wait answered in `retry_after`; past the wait, refused with the
/// time until the call would pass.
#[test]
fn wait_reserves_the_next_free_slots() {
    let mut d = Driver::new(Gcra::new(0, 1, SEC).unwrap());
    assert_eq!(
        d.request(T0, &req(1, wait(2))).to_reply(Seconds),
        [0, 1, 0, -1, 1]
    );
    assert_eq!(d.request(T0, &req(1, wait(2))).to_reply(Seconds), [0, 1, 0, 1, 2]);
    assert_eq!(d.request(T0, &req(1, wait(2))).to_reply(Seconds), [0, 1, 0, 2, 3]);
    // The next free slot is 3 s away: 1 s past the wait.
    assert_eq!(d.request(T0, &req(1, wait(2))).to_reply(Seconds), [1, 1, 0, 1, 3]);
    // The reservations count for every later call, with or without WAIT.
    assert_eq!(
        d.request(T0 + SEC / 2, &req(1, Mode::Take)).to_reply(Seconds),
        [1, 1, 0, 3, 3]
    );
    // Half a second later, the fourth fits in a wait of 2 s.
    let reply = d.request(T0 + SEC / 2, &req(1, wait(3))).to_reply(Seconds);
    assert_eq!(reply, [0, 1, 0, 3, 4]);
    // More than the limit never passes: refused for ever.
    assert_eq!(
        d.request(T0, &req(2, wait(100))).to_reply(Seconds),
        [1, 1, 0, -1, 4]
    );
}

/// The token bucket reserves as GCRA: the level at `t`, less the request,
/// as of `t`; before `t` the refill up to it is owed.
#[test]
fn the_bucket_reserves_a_level_as_of_a_later_instant() {
    let mut g = Driver::new(Gcra::new(1, 1, SEC).unwrap());
    let mut t = Driver::new(TokenBucket::new(2, 1, SEC).unwrap());
    for (at, q, mode) in [
        (T0, 2, Mode::Take),
        (T0, 1, wait(5)),
        (T0, 2, wait(5)),
        (T0 + 100_000, 1, Mode::Take),
        (T0 + 100_000, 1, wait(1)),
        (T0 + 4 * SEC, 1, Mode::AtMost),
        (T0 + 9 * SEC, 2, Mode::Take),
    ] {
        assert_eq!(
            t.request(at, &req(q, mode)),
            g.request(at, &req(q, mode)),
            "{at} {q} {mode:?}"
        );
    }
    let Some(tokens) = t.state else { panic!("a state") };
    assert_eq!(tokens.updated_at(), Instant::from_micros(T0 + 9 * SEC));
}

/// FORCE records past the limit, on every algorithm: later requests wait
/// out the debt, and `remaining` is 0 until it is paid.
#[test]
fn force_charges_past_the_limit() {
    // GCRA, 10 per minute, burst 10: 25 forced is 15 in debt, a minute and
    // a half; the first unit passes again when the TAT is within the burst.
    let mut d = Driver::new(Gcra::new(9, 10, 60 * SEC).unwrap());
    assert_eq!(
        d.request(T0, &req(25, Mode::Force)).to_reply(Seconds),
        [0, 10, 0, -1, 150]
    );
    assert_eq!(
        d.request(T0, &req(1, Mode::Take)).to_reply(Seconds),
        [1, 10, 0, 96, 150]
    );
    assert!(d.request(T0 + 96 * SEC - 1, &req(1, Mode::Take)).blocked);
    assert_eq!(
        d.request(T0 + 96 * SEC, &req(1, Mode::Take)).to_reply(Seconds),
        [0, 10, 0, -1, 60]
    );
    // The token bucket: the same debt, as a level below zero.
    let mut t = Driver::new(TokenBucket::new(10, 10, 60 * SEC).unwrap());
    assert_eq!(
        t.request(T0, &req(25, Mode::Force)).to_reply(Seconds),
        [0, 10, 0, -1, 150]
    );
    assert_eq!(t.state.unwrap().level(), -15 * 6 * SEC as i128);
    assert_eq!(
        t.request(T0, &req(1, Mode::Take)).to_reply(Seconds),
        [1, 10, 0, 96, 150]
    );
    // A fixed window counts past its limit until it ends.
    let start = T0 / (60 * SEC) * (60 * SEC);
    let mut f = Driver::new(FixedWindow::new(10, 60 * SEC).unwrap());
    assert_eq!(
        f.request(start, &req(25, Mode::Force)).to_reply(Seconds),
        [0, 10, 0, -1, 60]
    );
    assert_eq!(
        f.request(start + SEC, &req(0, Mode::Take)).to_reply(Seconds),
        [0, 10, 0, -1, 59]
    );
    assert_eq!(
        f.request(start + 60 * SEC, &req(10, Mode::Take))
            .to_reply(Seconds),
        [0, 10, 0, -1, 60]
    );
    // The sliding counter: 25 in this window weigh on the next one.
    let mut c = Driver::new(SlidingCounter::new(10, 60 * SEC).unwrap());
    assert_eq!(
        c.request(start, &req(25, Mode::Force)).to_reply(Seconds),
        [0, 10, 0, -1, 120]
    );
    // Halfway into the next: 12.5 still weigh, nothing passes.
    assert!(c.request(start + 90 * SEC, &req(1, Mode::Take)).blocked);
    // The sliding log keeps every forced entry until it leaves the window.
    let mut l = Driver::new(SlidingLog::new(10, 60 * SEC).unwrap());
    assert_eq!(
        l.request(T0, &req(25, Mode::Force)).to_reply(Seconds),
        [0, 10, 0, -1, 60]
    );
    assert_eq!(l.state.len(), 25 * 8);
    assert!(l.request(T0 + 59 * SEC, &req(1, Mode::Take)).blocked);
    assert_eq!(
        l.request(T0 + 60 * SEC, &req(10, Mode::Take)).to_reply(Seconds),
        [0, 10, 0, -1, 60]
    );
    assert_eq!(l.state.len(), 10 * 8);
}

/// A debt has a bound: past `MAX_HELD` units held, FORCE is refused with an
/// error and records nothing.
#[test]
fn force_has_a_bound() {
    let mut d = Driver::new(Gcra::new(0, 1, SEC).unwrap());
    for _ in 0..4 {
        d.request(T0, &req(MAX_QUANTITY, Mode::Force));
    }
    let before = d.state;
    assert_eq!(d.judged(T0, &req(1, Mode::Force)), Err(Overdrawn));
    assert_eq!(d.state, before);
    let mut f = Driver::new(FixedWindow::new(1, 60 * SEC).unwrap());
    for _ in 0..4 {
        f.request(T0, &req(MAX_QUANTITY, Mode::Force));
    }
    assert_eq!(f.judged(T0, &req(1, Mode::Force)), Err(Overdrawn));
    assert_eq!(f.state.unwrap().count(), MAX_HELD);
}

/// AT_MOST grants what a query says remains, up to the quantity; a grant
/// of none is refused with the wait for one unit, and starts a block if
/// asked to.
#[test]
fn at_most_grants_what_remains() {
    let mut d = Driver::new(Gcra::new(9, 10, 60 * SEC).unwrap());
    assert_eq!(
        d.judged(T0, &req(4, Mode::AtMost)).unwrap(),
        (decision(false, 6, -1, 24), 4)
    );
    assert_eq!(
        d.judged(T0, &req(100, Mode::AtMost)).unwrap(),
        (decision(false, 0, -1, 60), 6)
    );
    assert_eq!(
        d.judged(T0, &req(100, Mode::AtMost)).unwrap(),
        (decision(true, 0, 6, 60), 0)
    );
    // 13 s later, two more have dripped in (one per 6 s).
    assert_eq!(
        d.judged(T0 + 13 * SEC, &req(100, Mode::AtMost)).unwrap(),
        (decision(false, 0, -1, 59), 2)
    );
    // A query grants nothing and answers as a query.
    assert_eq!(
        d.judged(T0 + 13 * SEC, &req(0, Mode::AtMost)).unwrap(),
        (decision(false, 0, -1, 59), 0)
    );
    let blocking = Request {
        block: Some(Micros(600 * u128::from(SEC))),
        ..req(5, Mode::AtMost)
    };
    assert_eq!(
        d.judged(T0 + 13 * SEC, &blocking).unwrap(),
        (decision(true, 0, 600, 600), 0)
    );
    assert!(d.block.is_some());
}

fn decision(blocked: bool, remaining: i64, retry_after: i64, reset: i64) -> Decision {
    let micros = |s: i64| Micros(u128::try_from(s).unwrap() * u128::from(SEC));
    Decision {
        blocked,
        limit: 10,
        remaining: remaining as u64,
        retry_after: match retry_after {
            -1 if blocked => RetryAfter::Never,
            -1 => RetryAfter::Allowed,
            s => RetryAfter::After(micros(s)),
        },
        reset: micros(reset),
    }
}

fn settings(file: &'static str) -> ProptestConfig {
    ProptestConfig {
        cases: 300,
        failure_persistence: Some(Box::new(FileFailurePersistence::Direct(file))),
        ..ProptestConfig::default()
    }
}

/// A step of a walk: after `gap` µs (back in time now and then), a request
/// in any mode, with or without BLOCK.
fn walk() -> impl Strategy<Value = Vec<(i64, Request)>> {
    let mode = prop_oneof![
        4 => Just(Mode::Take),
        1 => Just(Mode::Refund),
        1 => Just(Mode::Force),
        2 => (0u64..3_000_000).prop_map(|w| Mode::Wait(Micros(u128::from(w)))),
        2 => Just(Mode::AtMost),
    ];
    let request =
        (0u64..8, mode, prop::option::weighted(0.2, 1u64..4_000_000)).prop_map(|(quantity, mode, block)| {
            Request {
                quantity,
                mode,
                // BLOCK does not go with REFUND or FORCE.
                block: block
                    .filter(|_| !matches!(mode, Mode::Refund | Mode::Force))
                    .map(|b| Micros(u128::from(b))),
            }
        });
    prop::collection::vec(
        (prop_oneof![8 => 0i64..3_000_000, 1 => -2_000_000i64..0], request),
        1..60,
    )
}

/// A walk of requests on `d`, calling `each` with the state before each
/// request, the instant and the request.
fn run<L: Stored>(
    d: &mut Driver<L>,
    steps: &[(i64, Request)],
    mut each: impl FnMut(&Driver<L>, u64, &Request) -> Result<(), TestCaseError>,
) -> Result<(), TestCaseError>
where
    L::Refund: Clone,
{
    let mut now = T0;
    for (gap, request) in steps {
        now = now.saturating_add_signed(*gap);
        each(d, now, request)?;
        let _ = d.judged(now, request);
    }
    Ok(())
}

/// A reservation at `t` leaves the state a request at `t` would: from `t`
/// on, both decide every request alike. Its answer is a query's at now on
/// what it leaves, the wait aside.
fn reservation_is_a_request_at_t<L: Stored + Clone>(
    limiter: L,
    steps: &[(i64, Request)],
) -> Result<(), TestCaseError>
where
    L::Refund: Clone,
{
    let mut d = Driver::new(limiter);
    run(&mut d, steps, |d, now, request| {
        let q = request.quantity.min(d.limiter.limit());
        let at_now = Instant::from_micros(now);
        let state = L::view(&d.state);
        let RetryAfter::After(wait) = d.limiter.check(state.as_ref(), at_now, q).decision.retry_after else {
            return Ok(());
        };
        let t = at_now.saturating_add(wait);
        let at_t = d.limiter.check(state.as_ref(), t, q);
        prop_assert!(!at_t.decision.blocked, "refused at its earliest instant");
        let reserved = d.limiter.reserve(state.as_ref(), at_now, t, q).expect("reserves");
        let answered = reserved.decision;
        let (Some(a), Some(b)) = (reserved.update, at_t.update) else {
            return Err(TestCaseError::fail("no update"));
        };
        let mut after = d.state.clone();
        L::apply(&mut after, b.change);
        let mut reserved_state = d.state.clone();
        L::apply(&mut reserved_state, a.change);
        // From `t` on, every request is decided alike on both. (The sliding
        // log also keeps, after a reservation, the entries that leave the
        // window before `t`: they count until then.)
        for offset in [0, 1, 999, 100_000, 3_000_000] {
            let x = t.saturating_add(Micros(offset));
            for k in 0..=d.limiter.limit() + 1 {
                prop_assert_eq!(
                    d.limiter.check(L::view(&reserved_state).as_ref(), x, k).decision,
                    d.limiter.check(L::view(&after).as_ref(), x, k).decision
                );
            }
        }
        // The answer is a query's at now on what the reservation leaves.
        let query = d
            .limiter
            .check(L::view(&reserved_state).as_ref(), at_now, 0)
            .decision;
        prop_assert_eq!(
            (answered.remaining, answered.reset),
            (query.remaining, query.reset)
        );
        Ok(())
    })
}

/// A grant of `g` is an allowed request of `g`, and `g + 1` would be
/// refused when `g` is less than the quantity asked for.
fn a_grant_is_all_that_fits<L: Stored + Clone>(
    limiter: L,
    steps: &[(i64, Request)],
) -> Result<(), TestCaseError>
where
    L::Refund: Clone,
{
    let mut d = Driver::new(limiter);
    run(&mut d, steps, |d, now, request| {
        if request.quantity == 0 || d.block.is_some_and(|b| b.as_micros() > now) {
            return Ok(());
        }
        let mut probe = Driver {
            limiter: d.limiter.clone(),
            state: d.state.clone(),
            block: None,
        };
        let (decision, g) = probe.judged(now, &req(request.quantity, Mode::AtMost)).unwrap();
        let state = L::view(&d.state);
        let at = Instant::from_micros(now);
        prop_assert_eq!(decision.blocked, g == 0);
        prop_assert!(g <= request.quantity);
        if g > 0 {
            prop_assert!(!d.limiter.check(state.as_ref(), at, g).decision.blocked);
        }
        if g < request.quantity {
            prop_assert!(d.limiter.check(state.as_ref(), at, g + 1).decision.blocked);
        }
        Ok(())
    })
}

proptest! {
    #![proptest_config(settings("proptest-regressions/options.txt"))]

    #[test]
    fn gcra_reserves_as_a_request_at_t(burst in 0u64..5, count in 1u64..4, period in 1u64..3_000_000, steps in walk()) {
        reservation_is_a_request_at_t(Gcra::new(burst, count, period).unwrap(), &steps)?;
    }

    #[test]
    fn token_bucket_reserves_as_a_request_at_t(capacity in 1u64..6, count in 1u64..4, period in 1u64..3_000_000, steps in walk()) {
        reservation_is_a_request_at_t(TokenBucket::new(capacity, count, period).unwrap(), &steps)?;
    }

    #[test]
    fn sliding_log_reserves_as_a_request_at_t(limit in 1u64..6, window in 1u64..3_000_000, steps in walk()) {
        reservation_is_a_request_at_t(SlidingLog::new(limit, window).unwrap(), &steps)?;
    }

    #[test]
    fn every_grant_is_all_that_fits(limit in 1u64..6, period in 1u64..3_000_000, steps in walk()) {
        a_grant_is_all_that_fits(Gcra::new(limit - 1, limit, period).unwrap(), &steps)?;
        a_grant_is_all_that_fits(TokenBucket::new(limit, 1, period).unwrap(), &steps)?;
        a_grant_is_all_that_fits(FixedWindow::new(limit, period).unwrap(), &steps)?;
        a_grant_is_all_that_fits(SlidingLog::new(limit, period).unwrap(), &steps)?;
        a_grant_is_all_that_fits(SlidingCounter::new(limit, period).unwrap(), &steps)?;
    }

    /// The token bucket's decisions equal GCRA's with the same rate and
    /// `max_burst = capacity - 1` under every option, blocks included.
    #[test]
    fn token_bucket_equals_gcra_under_every_option(burst in 0u64..5, count in 1u64..4, period in 1u64..3_000_000, steps in walk()) {
        let mut g = Driver::new(Gcra::new(burst, count, period).unwrap());
        let mut t = Driver::new(TokenBucket::new(burst + 1, count, period).unwrap());
        let mut now = T0;
        for (gap, request) in &steps {
            now = now.saturating_add_signed(*gap);
            prop_assert_eq!(t.judged(now, request), g.judged(now, request), "at +{}: {:?}", now as i128 - T0 as i128, request);
        }
    }

    /// The sliding log never lets more than `limit` units start in any
    /// window: each unit starts when it is allowed, a reservation's at its
    /// instant (`now` plus the wait the reply gives). No FORCE here: it
    /// starts units past the limit by design.
    #[test]
    fn the_sliding_log_never_lets_more_start_in_a_window(limit in 1u64..6, window in 1u64..3_000_000, steps in walk()) {
        let mut d = Driver::new(SlidingLog::new(limit, window).unwrap());
        let mut starts: Vec<u64> = Vec::new();
        let mut now = T0;
        for (gap, request) in &steps {
            now = now.saturating_add(gap.unsigned_abs());
            if request.mode == Mode::Force {
                continue;
            }
            let (decision, granted) = d.judged(now, request).unwrap();
            if request.mode == Mode::Refund {
                // Units given back: the newest ones did not start after all.
                let back = request.quantity.min(starts.iter().filter(|&&s| s + window > now).count() as u64);
                starts.sort_unstable();
                starts.truncate(starts.len() - back as usize);
                continue;
            }
            if granted > 0 {
                let wait = match decision.retry_after {
                    RetryAfter::After(w) => u64::try_from(w.get()).unwrap(),
                    _ => 0,
                };
                starts.extend(std::iter::repeat_n(now + wait, granted as usize));
            }
            for &end in &starts {
                let inside = starts.iter().filter(|&&s| s <= end && s + window > end).count() as u64;
                prop_assert!(inside <= limit, "{} units start in the window ending at +{}", inside, end - T0);
            }
        }
    }
}

/// The sliding log as SPEC 4 and 12-14 state it, on its own: every unit's
/// instant, in order. A unit taken, forced or granted is logged at `now`,
/// a reserved one at its instant `t`, even when the log holds entries from
/// the future (reservations): those stay the newest. A refund removes the
/// newest entries in the window, future ones first.
struct LogModel {
    limit: u64,
    window: u64,
    log: Vec<u64>,
}

impl LogModel {
    fn live(&self, now: u64) -> u64 {
        self.log.iter().filter(|&&t| t + self.window > now).count() as u64
    }

    /// The earliest instant from `now` on at which `q` units fit.
    fn earliest(&self, now: u64, q: u64) -> Option<u64> {
        let may_stay = usize::try_from(self.limit.checked_sub(q)?).unwrap();
        let n = self.log.len();
        Some(if n > may_stay {
            now.max(self.log[n - 1 - may_stay] + self.window)
        } else {
            now
        })
    }

    fn log_at(&mut self, at: u64, q: u64) {
        let split = self.log.partition_point(|&t| t <= at);
        self.log
            .splice(split..split, std::iter::repeat(at).take(q as usize));
    }

    /// A query's answer at `now`.
    fn query(&self, now: u64) -> Decision {
        let live = self.live(now);
        let newest = self.log.last().copied().unwrap_or(0);
        Decision {
            blocked: false,
            limit: self.limit,
            remaining: self.limit.saturating_sub(live),
            retry_after: RetryAfter::Allowed,
            reset: Micros(if live > 0 {
                u128::from(newest + self.window - now)
            } else {
                0
            }),
        }
    }

    fn refused(&self, now: u64, retry_after: RetryAfter) -> Decision {
        Decision {
            blocked: true,
            retry_after,
            ..self.query(now)
        }
    }

    /// The answer to `request` at `now`, and the units granted.
    fn request(&mut self, now: u64, request: &Request) -> (Decision, u64) {
        let q = request.quantity;
        let after = |wait: u64| RetryAfter::After(Micros(u128::from(wait)));
        if q == 0 {
            return (self.query(now), 0);
        }
        match request.mode {
            Mode::Take | Mode::Wait(_) | Mode::AtMost => {
                let max_wait = match request.mode {
                    Mode::Wait(w) => u64::try_from(w.get()).unwrap(),
                    _ => 0,
                };
                let wanted = match request.mode {
                    Mode::AtMost => q.min(self.query(now).remaining).max(1),
                    _ => q,
                };
                match self.earliest(now, wanted) {
                    None => (self.refused(now, RetryAfter::Never), 0),
                    Some(t) if t == now => {
                        self.log_at(now, wanted);
                        (self.query(now), wanted)
                    }
                    Some(t) if t - now <= max_wait => {
                        self.log_at(t, wanted);
                        let decision = Decision {
                            retry_after: after(t - now),
                            ..self.query(now)
                        };
                        (decision, wanted)
                    }
                    Some(t) => (self.refused(now, after(t - now - max_wait)), 0),
                }
            }
            Mode::Force => {
                self.log_at(now, q);
                (self.query(now), q)
            }
            Mode::Refund => {
                let shed = q.min(self.live(now)) as usize;
                self.log.truncate(self.log.len() - shed);
                (self.query(now), 0)
            }
        }
    }
}

/// A sliding log's parameters and a walk on it: steps a fraction of the
/// window apart, so that reservations are pending while other requests
/// come, in every mode but BLOCK.
fn log_walk() -> impl Strategy<Value = (u64, u64, Vec<(u64, Request)>)> {
    (1u64..6, 1u64..3_000_000).prop_flat_map(|(limit, window)| {
        let mode = prop_oneof![
            3 => Just(Mode::Take),
            1 => Just(Mode::Refund),
            2 => Just(Mode::Force),
            3 => (0..2 * window).prop_map(|w| Mode::Wait(Micros(u128::from(w)))),
            2 => Just(Mode::AtMost),
        ];
        let step = (
            prop_oneof![1 => Just(0u64), 4 => 0..=window / 2, 1 => 0..=2 * window],
            (0u64..8, mode).prop_map(|(quantity, mode)| req(quantity, mode)),
        );
        (Just(limit), Just(window), prop::collection::vec(step, 1..60))
    })
}

proptest! {
    #![proptest_config(settings("proptest-regressions/options.txt"))]

    /// Every answer of the sliding log, under every option but BLOCK, is
    /// the model's: units logged at their own instant, future entries the
    /// newest. (Time only moves forward here: after the clock steps back,
    /// entries the log already dropped would count again in the model.)
    #[test]
    fn the_sliding_log_logs_each_unit_at_its_own_instant((limit, window, steps) in log_walk()) {
        let mut d = Driver::new(SlidingLog::new(limit, window).unwrap());
        let mut model = LogModel { limit, window, log: Vec::new() };
        let mut now = T0;
        for (gap, request) in &steps {
            now += gap;
            let expected = model.request(now, request);
            prop_assert_eq!(d.judged(now, request).unwrap(), expected, "at +{}: {:?}", now - T0, request);
        }
    }
}

/// A reservation pending in a sliding log does not push later units into
/// the future: a forced unit, a plain one and a grant are logged now, and
/// leave the window a window later, while the reservation stays.
#[test]
fn units_logged_beside_a_reservation_leave_on_time() {
    let ms = 1_000;
    let mut d = Driver::new(SlidingLog::new(2, 1_000 * ms).unwrap());
    let reply = |d: &mut Driver<SlidingLog>, at: u64, request: Request| {
        d.judged(T0 + at * ms, &request)
            .unwrap()
            .0
            .to_reply(rl_core::TimeUnit::Millis)
    };
    assert_eq!(reply(&mut d, 0, req(2, Mode::Take)), [0, 2, 0, -1, 1000]);
    // Reserved at +1000, when the first two leave.
    let wait = Mode::Wait(Micros(2_000 * u128::from(ms)));
    assert_eq!(reply(&mut d, 4, req(1, wait)), [0, 2, 0, 996, 1996]);
    // Forced now, at +15: it leaves at +1015, before the reservation does.
    assert_eq!(reply(&mut d, 15, req(1, Mode::Force)), [0, 2, 0, -1, 1985]);
    assert_eq!(d.state.len(), 4 * 8);
    // 1.2 s on only the reservation is in the window: one more fits.
    assert_eq!(reply(&mut d, 1_215, req(1, Mode::Take)), [0, 2, 0, -1, 1000]);
    // A grant while a reservation is pending is logged now too. (Room
    // before a reservation: here the limit grew, as it may on a key whose
    // parameters change, or in RL.ALL, where a limit records a reservation
    // at the latest of every limit's earliest instant.)
    let mut one = Driver::new(SlidingLog::new(1, 1_000 * ms).unwrap());
    assert_eq!(reply(&mut one, 0, req(1, Mode::Take)), [0, 1, 0, -1, 1000]);
    assert_eq!(reply(&mut one, 0, req(1, wait)), [0, 1, 0, 1000, 2000]);
    let mut three = Driver {
        limiter: SlidingLog::new(3, 1_000 * ms).unwrap(),
        state: one.state,
        block: None,
    };
    assert_eq!(three.judged(T0 + 10 * ms, &req(5, Mode::AtMost)).unwrap().1, 1);
    // At +1010 the grant has left: only the reservation counts.
    assert_eq!(reply(&mut three, 1_009, req(0, Mode::Take)), [0, 3, 1, -1, 991]);
    assert_eq!(reply(&mut three, 1_010, req(0, Mode::Take)), [0, 3, 2, -1, 990]);
}
