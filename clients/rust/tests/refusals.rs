//! The local memory of refusals (`local_refusals`) through the clients:
//! what is remembered (a plain take refused with a `retry_after`), what is
//! answered from it (the same call until that instant, nothing sent, the
//! times shortened), what never is (peeks, queries, refunds, other units,
//! keys or limiters), and what is forgotten first past the count. The
//! exact arithmetic of the shortened times is tested in src/memory.rs with
//! a clock of its own; here the times are bounded by the clock read around
//! the calls.

mod common;

use std::time::{Duration, Instant};

use common::fake::{Answer, Fake, Resp, Step};
use redis_ratelimit_client::{aio, Decision, Limit, RateLimits, Take};

fn ints(v: &[i64]) -> Answer {
    Answer::Reply(Resp::Array(v.iter().map(|&i| Resp::Int(i)).collect()))
}

const FOUND: &str = "ERR wrong number of arguments for 'rl.gcra' command";

/// A module, then `calls` of `RL.GCRA <key> 19 10 1000 <tail>`.
fn script(calls: &[(&str, &[&str], Answer)]) -> Vec<Step> {
    let mut steps = vec![Step::new(&["RL.GCRA"], Answer::Error(FOUND.into()))];
    for (key, tail, answer) in calls {
        let mut send = vec!["RL.GCRA", key, "19", "10", "1000"];
        send.extend_from_slice(tail);
        steps.push(Step::new(&send, answer.clone()));
    }
    steps
}

fn gcra() -> Limit {
    Limit::gcra_with_burst(10, Duration::from_secs(1), 20).unwrap()
}

fn sent(fake: &Fake) -> usize {
    fake.received().len()
}

/// A refusal, its times set aside.
fn counts(d: &Decision) -> (bool, u64, u64, u64, usize, bool) {
    (
        d.allowed,
        d.limit,
        d.remaining,
        d.granted,
        d.binding,
        d.failed_open,
    )
}

const REFUSED: (bool, u64, u64, u64, usize, bool) = (false, 20, 0, 0, 1, false);

/// `d`'s times: the refusal's, shortened by at least `least` and at most
/// `most` gone by, rounded up to the millisecond.
fn shortened(d: &Decision, retry_after: u64, reset: u64, least: Duration, most: Duration) {
    let ms =
        |x: u64, gone: Duration| Duration::from_micros((x * 1000).saturating_sub(gone.as_micros() as u64));
    let up = |d: Duration| Duration::from_millis(d.as_micros().div_ceil(1000) as u64);
    let r = d.retry_after.expect("a retry_after");
    assert!(
        up(ms(retry_after, most)).max(Duration::from_millis(1)) <= r && r <= up(ms(retry_after, least)),
        "retry_after {r:?} after {least:?} to {most:?}"
    );
    assert!(
        up(ms(reset, most)) <= d.reset && d.reset <= up(ms(reset, least)),
        "reset {:?} after {least:?} to {most:?}",
        d.reset
    );
}

#[test]
fn off_by_default() {
    let refused = ints(&[1, 20, 0, 1500, 2000]);
    let fake = Fake::start(script(&[
        ("k", &["1", "MS"], refused.clone()),
        ("k", &["1", "MS"], refused),
    ]));
    let api = RateLimits::new(fake.client()).limiter(gcra());
    assert_eq!(counts(&api.take("k").unwrap()), REFUSED);
    assert_eq!(counts(&api.take("k").unwrap()), REFUSED);
    assert_eq!(
        (sent(&fake), fake.left()),
        (3, 0),
        "both calls reached the server"
    );
}

#[test]
fn a_refusal_is_answered_locally_until_its_end() {
    let fake = Fake::start(script(&[
        ("k", &["1", "MS"], ints(&[1, 20, 0, 80, 2000])),
        ("k", &["1", "MS"], ints(&[0, 20, 19, -1, 100])),
    ]));
    let limits = RateLimits::new(fake.client()).local_refusals(10).unwrap();
    let api = limits.limiter(gcra());
    let asked = Instant::now();
    let first = api.take("k").unwrap();
    let answered = Instant::now();
    assert_eq!(
        (counts(&first), first.raw()),
        (REFUSED, &[1, 20, 0, 80, 2000][..])
    );
    // A clone made after shares the memory.
    let clone = limits.clone().limiter(gcra());
    let before = Instant::now();
    let again = clone.take("k").unwrap();
    let after = Instant::now();
    assert_eq!(sent(&fake), 2, "answered in-process");
    assert_eq!(counts(&again), REFUSED);
    shortened(&again, 80, 2000, before - answered, after - asked);
    assert_eq!(again.raw()[..3], [1, 20, 0]);
    // Past its end, the server is asked again.
    std::thread::sleep(
        Duration::from_millis(80).saturating_sub(answered.elapsed()) + Duration::from_millis(1),
    );
    let later = api.take("k").unwrap();
    assert_eq!(
        (later.allowed, later.remaining, sent(&fake), fake.left()),
        (true, 19, 3, 0)
    );
}

#[tokio::test]
async fn the_async_client_too() {
    let fake = Fake::start(script(&[("k", &["1", "MS"], ints(&[1, 20, 0, 5000, 5000]))]));
    let api = aio::RateLimits::new(fake.client())
        .local_refusals(10)
        .unwrap()
        .limiter(gcra());
    let asked = Instant::now();
    assert_eq!(counts(&api.take("k").await.unwrap()), REFUSED);
    let answered = Instant::now();
    let again = api.take("k").await.unwrap();
    assert_eq!((counts(&again), sent(&fake)), (REFUSED, 2));
    shortened(&again, 5000, 5000, Duration::ZERO, asked.elapsed());
    assert!(
        answered.elapsed() < Duration::from_secs(5),
        "remembered, and still within its end"
    );
}

#[test]
fn only_plain_takes_are_answered_locally() {
    let refused = ints(&[1, 20, 0, 5000, 5000]);
    let rate = ints(&[0, 20, 0, -1, 5000]);
    let mut steps = script(&[
        ("k", &["1", "MS"], refused.clone()),
        // What is not the same plain take is asked each time.
        ("k", &["1", "MS", "PEEK"], refused.clone()),
        ("k", &["0", "MS"], rate.clone()),
        ("k", &["1", "MS", "REFUND"], rate.clone()),
        ("k", &["1", "MS", "FORCE"], rate.clone()),
        ("k", &["1", "MS", "WAIT", "100"], refused.clone()),
        ("k", &["1", "MS", "AT_MOST"], ints(&[1, 20, 0, 5000, 5000, 0])),
        ("k", &["1", "MS", "BLOCK", "1000"], refused.clone()),
        ("k", &["2", "MS"], refused.clone()),
        ("other", &["1", "MS"], rate.clone()),
    ]);
    // Another limiter on the same key.
    steps.push(Step::new(&["RL.GCRA", "k", "4", "5", "1000", "1", "MS"], rate));
    let fake = Fake::start(steps);
    let limits = RateLimits::new(fake.client()).local_refusals(10).unwrap();
    let api = limits.limiter(gcra());
    assert!(!api.take("k").unwrap().allowed);
    assert!(!api.peek("k").unwrap().allowed);
    assert!(api.query("k").unwrap().allowed);
    assert!(api.refund("k", 1).unwrap().allowed);
    assert!(api.force("k", 1).unwrap().allowed);
    assert!(!api.wait("k", Duration::from_millis(100)).unwrap().allowed);
    assert!(!api.at_most("k", 1).unwrap().allowed);
    assert!(
        !api.call("k", Take::one().block(Duration::from_secs(1)))
            .unwrap()
            .allowed
    );
    assert!(!api.take_n("k", 2).unwrap().allowed);
    assert!(api.take("other").unwrap().allowed);
    let other = limits.limiter(Limit::gcra(5, Duration::from_secs(1)).unwrap());
    assert!(other.take("k").unwrap().allowed);
    assert_eq!((sent(&fake), fake.left()), (12, 0));
    // The plain take, still refused: in-process.
    assert!(!api.take("k").unwrap().allowed);
    assert_eq!(sent(&fake), 12);
}

#[test]
fn past_the_count_the_refusal_nearest_its_end_is_forgotten() {
    let fake = Fake::start(script(&[
        ("late", &["1", "MS"], ints(&[1, 20, 0, 9000, 9000])),
        ("soon", &["1", "MS"], ints(&[1, 20, 0, 3000, 3000])),
        ("soon", &["1", "MS"], ints(&[1, 20, 0, 3000, 3000])),
    ]));
    let api = RateLimits::new(fake.client())
        .local_refusals(1)
        .unwrap()
        .limiter(gcra());
    assert!(!api.take("late").unwrap().allowed);
    assert!(!api.take("soon").unwrap().allowed);
    // "soon" ends first: it was the one left out.
    assert!(!api.take("late").unwrap().allowed);
    assert_eq!(sent(&fake), 3);
    assert!(!api.take("soon").unwrap().allowed);
    assert_eq!((sent(&fake), fake.left()), (4, 0));
}

#[test]
fn all_of_by_its_keys() {
    let all = |keys: &[&str], answer: &Answer| {
        let mut send = vec!["RL.ALL", "2"];
        send.extend_from_slice(keys);
        send.extend_from_slice(&["GCRA", "19", "10", "1000", "FIXED", "5", "60000", "1", "MS"]);
        Step::new(&send, answer.clone())
    };
    let refused = ints(&[1, 5, 0, 30000, 60000, 2]);
    let fake = Fake::start(vec![
        Step::new(&["RL.GCRA"], Answer::Error(FOUND.into())),
        all(&["{u}:a", "{u}:b"], &refused),
        all(&["{v}:a", "{v}:b"], &refused),
    ]);
    let limits = RateLimits::new(fake.client()).local_refusals(10).unwrap();
    let both = limits
        .all_of([gcra(), Limit::fixed_window(5, Duration::from_secs(60)).unwrap()])
        .unwrap();
    let first = both.take(&["{u}:a", "{u}:b"]).unwrap();
    let again = both.take(&["{u}:a", "{u}:b"]).unwrap();
    assert_eq!((again.allowed, again.binding, again.limit), (false, 2, 5));
    assert!(again.retry_after <= first.retry_after);
    assert_eq!(sent(&fake), 2);
    assert!(!both.take(&["{v}:a", "{v}:b"]).unwrap().allowed);
    assert_eq!((sent(&fake), fake.left()), (3, 0));
}
