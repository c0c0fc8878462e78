//! The blocking client on every backend: the module; the functions library
//! loaded by the client, or already there, or lost and loaded again; the
//! scripts through EVALSHA on an EVAL-only Redis 7 and on Redis 6. The same
//! scenario runs on each and asserts the same exact replies; the server's
//! error messages are compared with the module's.
//!
//! Limits here refill by one unit an hour, so a reply's counts never depend
//! on when the call ran; times that count down from an earlier call are
//! checked against the time measured around them.

mod common;

use std::time::{Duration, Instant};

use common::{assert_left, calls, cmd, elapsed_ms, preload_library, Kind, Server};
use redis_ratelimit_client::{
    Acquisition, Backend, ConcurrencyLimit, Connector, Error, Limit, RateLimits, Take,
};

const HOUR: Duration = Duration::from_secs(3600);

fn hours(n: u64) -> Duration {
    HOUR * n as u32
}

/// (allowed, limit, remaining, granted, binding): the counts of a decision.
fn counts(d: &redis_ratelimit_client::Decision) -> (bool, u64, u64, u64, usize) {
    (d.allowed, d.limit, d.remaining, d.granted, d.binding)
}

/// Every call of the API, with exact expectations; returns the server's
/// error messages met on the way, to compare across backends.
fn scenario<C: Connector>(limits: &RateLimits<C>) -> Vec<String> {
    let mut errors = Vec::new();

    // GCRA, one an hour, three at once.
    let gcra = limits.limiter(Limit::gcra_with_burst(1, HOUR, 3).unwrap());
    let start = Instant::now();
    let d = gcra.take("gcra").unwrap();
    assert_eq!(counts(&d), (true, 3, 2, 1, 1));
    assert_eq!((d.retry_after, d.reset), (None, HOUR));
    assert_eq!(d.raw(), [0, 3, 2, -1, 3_600_000]);
    let d = gcra.take_n("gcra", 2).unwrap();
    assert_eq!(counts(&d), (true, 3, 0, 2, 1));
    assert_left(Some(d.reset), hours(3), elapsed_ms(start), "take_n: reset");
    let d = gcra.take("gcra").unwrap();
    let elapsed = elapsed_ms(start);
    assert_eq!(counts(&d), (false, 3, 0, 0, 1));
    assert_left(d.retry_after, HOUR, elapsed, "refused take: retry_after");
    assert_left(Some(d.reset), hours(3), elapsed, "refused take: reset");
    // PEEK answers as the call would; a query reports, changing nothing.
    let p = gcra.peek("gcra").unwrap();
    assert_eq!(counts(&p), (false, 3, 0, 0, 1));
    let q = gcra.query("gcra").unwrap();
    assert_eq!(counts(&q), (true, 3, 0, 0, 1));
    // More than the limit can never pass.
    let d = gcra.take_n("gcra:big", 4).unwrap();
    assert_eq!((d.allowed, d.retry_after), (false, None));
    // REFUND gives back, FORCE takes past the limit.
    let d = gcra.refund("gcra", 1).unwrap();
    assert_eq!((counts(&d), d.retry_after), ((true, 3, 1, 1, 1), None));
    let d = gcra.force("gcra", 3).unwrap();
    assert_eq!((d.allowed, d.remaining, d.retry_after), (true, 0, None));
    let elapsed = elapsed_ms(start);
    // Five units of debt past the three at once: five hours to rest.
    assert_left(Some(d.reset), hours(5), elapsed, "forced: reset");

    // AT_MOST grants what is left.
    let d = gcra.at_most("gcra:batch", 5).unwrap();
    assert_eq!(counts(&d), (true, 3, 0, 3, 1));
    assert_eq!(d.raw().len(), 6);
    let d = gcra.at_most("gcra:batch", 5).unwrap();
    assert_eq!(counts(&d), (false, 3, 0, 0, 1));

    // WAIT: a reservation within max_wait, a refusal past it.
    let paced = limits.limiter(Limit::gcra(1, HOUR).unwrap());
    let start = Instant::now();
    assert!(paced.take("paced").unwrap().allowed);
    let d = paced.wait("paced", hours(2)).unwrap();
    let elapsed = elapsed_ms(start);
    assert_eq!(counts(&d), (true, 1, 0, 1, 1));
    assert_left(d.retry_after, HOUR, elapsed, "reservation: retry_after");
    let d = paced
        .call("paced", Take::one().wait(Duration::from_millis(1)))
        .unwrap();
    assert_eq!(counts(&d), (false, 1, 0, 0, 1));
    // BLOCK: the refusal blocks the key; a query then answers blocked.
    let start = Instant::now();
    assert!(paced.take("blocked").unwrap().allowed);
    let d = paced.call("blocked", Take::one().block(hours(2))).unwrap();
    let elapsed = elapsed_ms(start);
    assert_eq!(counts(&d), (false, 1, 0, 0, 1));
    assert_left(d.retry_after, hours(2), elapsed + 1, "block: retry_after");
    let q = paced.query("blocked").unwrap();
    assert!(!q.allowed);

    // The other algorithms: two of three taken.
    let tb = limits.limiter(Limit::token_bucket(3, 1, HOUR).unwrap());
    let d = tb.take_n("tb", 2).unwrap();
    assert_eq!((counts(&d), d.reset), ((true, 3, 1, 2, 1), hours(2)));
    let log = limits.limiter(Limit::sliding_log(3, HOUR).unwrap());
    let d = log.take_n("log", 2).unwrap();
    assert_eq!((counts(&d), d.reset), ((true, 3, 1, 2, 1), HOUR));
    // Windows aligned to the epoch (10^9 s: the next boundary is in 2033).
    let window = Duration::from_secs(1_000_000_000);
    for limit in [
        Limit::fixed_window(3, window).unwrap(),
        Limit::sliding_counter(3, window).unwrap(),
    ] {
        let l = limits.limiter(limit);
        let key = format!("window:{}", limit);
        let d = l.take_n(&key, 2).unwrap();
        assert_eq!(counts(&d), (true, 3, 1, 2, 1), "{limit}");
        let d = l.take_n(&key, 2).unwrap();
        assert_eq!(counts(&d), (false, 3, 1, 0, 1), "{limit}");
    }

    // Several limits as one: the binding one is the most constrained.
    let burst = Limit::gcra_with_burst(1, HOUR, 3).unwrap();
    let hourly = Limit::sliding_log(2, HOUR).unwrap();
    let both = limits.all_of([burst, hourly]).unwrap();
    let keys = ["{user:1}:burst", "{user:1}:hourly"];
    let d = both.take(&keys).unwrap();
    assert_eq!((counts(&d), d.raw().len()), ((true, 2, 1, 1, 2), 6));
    let d = both.take(&keys).unwrap();
    assert_eq!(counts(&d), (true, 2, 0, 1, 2));
    let d = both.take(&keys).unwrap();
    assert_eq!(counts(&d), (false, 2, 0, 0, 2));
    // Refused by one, counted by none: the burst still has one left.
    assert_eq!(limits.limiter(burst).query(keys[0]).unwrap().remaining, 1);
    let d = both.call(&keys, Take::one().refund()).unwrap();
    assert_eq!(counts(&d), (true, 2, 1, 1, 2));
    let d = both.call(&keys, Take::n(5).at_most()).unwrap();
    assert_eq!((counts(&d), d.raw().len()), ((true, 2, 0, 1, 2), 7));
    match both.take(&keys[..1]) {
        Err(Error::InvalidParameter { name: "keys", .. }) => {}
        other => panic!("one key for two limits: {other:?}"),
    }

    // Leases: taken, refused, renewed, released explicitly and on drop.
    let jobs = limits.concurrency(ConcurrencyLimit::new(2, HOUR).unwrap());
    let first = jobs.acquire("jobs").unwrap().lease().expect("a lease");
    assert_eq!(counts(first.decision()), (true, 2, 1, 1, 1));
    assert_eq!(first.decision().reset, HOUR);
    assert!(first.id() > 0);
    let second = jobs.acquire("jobs").unwrap().lease().expect("a second lease");
    assert!(second.id() > first.id());
    match jobs.acquire("jobs").unwrap() {
        Acquisition::Refused(d) => assert_eq!(counts(&d), (false, 2, 0, 0, 1)),
        Acquisition::Granted(lease) => panic!("a third lease of two: {lease:?}"),
    }
    assert_eq!(jobs.peek("jobs", 0).unwrap().remaining, 0);
    assert!(first.renew(hours(2)).unwrap());
    let id = second.id();
    drop(second);
    assert_eq!(jobs.peek("jobs", 0).unwrap().remaining, 1, "released on drop");
    assert_eq!(jobs.release("jobs", id).unwrap(), 0, "already released");
    assert!(!jobs.renew("jobs", id, HOUR).unwrap());
    assert_eq!(first.release().unwrap(), 1);
    let kept = jobs
        .acquire_n("jobs", 2)
        .unwrap()
        .lease()
        .expect("two units")
        .forget();
    assert_eq!(
        jobs.peek("jobs", 0).unwrap().remaining,
        0,
        "a forgotten lease stays held"
    );
    assert_eq!(jobs.release("jobs", kept).unwrap(), 2);

    // The server's errors, carried with its message.
    for result in [
        // A key of another algorithm.
        limits.limiter(Limit::fixed_window(3, HOUR).unwrap()).take("gcra"),
        // WAIT on a fixed window.
        limits
            .limiter(Limit::fixed_window(3, HOUR).unwrap())
            .wait("fixed", HOUR),
        // Options that exclude one another.
        gcra.call("gcra", Take::n(1).force().block(HOUR)),
    ] {
        match result {
            Err(e @ Error::ServerError { .. }) => errors.push(e.to_string()),
            other => panic!("expected a server error, got {other:?}"),
        }
    }
    errors
}

/// The module's answers to the scenario, to compare the others with.
fn module_errors() -> Vec<String> {
    let server = Server::start(Kind::Module);
    let limits = RateLimits::new(server.redis());
    assert_eq!(limits.backend().unwrap(), Backend::Module);
    scenario(&limits)
}

#[test]
fn module() {
    let errors = module_errors();
    assert_eq!(errors.len(), 3);
    assert!(
        errors
            .iter()
            .all(|e| e.starts_with("ERR ") || e.starts_with("WRONGTYPE ")),
        "{errors:?}"
    );
}

#[test]
fn functions_loaded_by_the_client() {
    let server = Server::start(Kind::Functions);
    let mut admin = server.client();
    let limits = RateLimits::new(server.redis());
    assert_eq!(limits.backend().unwrap(), Backend::Functions);
    assert_eq!(
        calls(&mut admin, "function|load"),
        1,
        "the client loaded the library"
    );
    let errors = scenario(&limits);
    assert_eq!(errors, module_errors());
    // Found once per client: no more probes, no more loads.
    assert_eq!(calls(&mut admin, "function|load"), 1);
    let fcalls = calls(&mut admin, "fcall");
    let api = limits.limiter(Limit::gcra(1, HOUR).unwrap());
    assert!(api.take("once more").unwrap().allowed);
    assert_eq!(calls(&mut admin, "fcall"), fcalls + 1, "the call alone");
}

#[test]
fn functions_already_loaded() {
    let server = Server::start(Kind::Functions);
    let mut admin = server.client();
    preload_library(&mut admin);
    let limits = RateLimits::new(server.redis());
    assert_eq!(limits.backend().unwrap(), Backend::Functions);
    assert_eq!(calls(&mut admin, "function|load"), 1, "only the operator's load");
    assert_eq!(scenario(&limits), module_errors());
}

#[test]
fn functions_of_another_version_are_replaced() {
    let server = Server::start(Kind::Functions);
    let mut admin = server.client();
    let old = "#!lua name=ratelimit\nredis.register_function{function_name='rl_version', \
               callback=function() return '0.0.1' end, flags={'no-writes'}}";
    let _: String = cmd(&["FUNCTION", "LOAD", old]).query(&mut admin).unwrap();
    let limits = RateLimits::new(server.redis());
    assert_eq!(limits.backend().unwrap(), Backend::Functions);
    let version: String = cmd(&["FCALL", "rl_version", "0"]).query(&mut admin).unwrap();
    assert_eq!(version, redis_ratelimit_client::VERSION);
}

#[test]
fn library_lost_is_loaded_again_once() {
    let server = Server::start(Kind::Functions);
    let mut admin = server.client();
    let limits = RateLimits::new(server.redis());
    let api = limits.limiter(Limit::gcra_with_burst(1, HOUR, 3).unwrap());
    assert_eq!(api.take("k").unwrap().remaining, 2);
    // A failover to a replica that never got the library, as the server
    // sees it: the functions are gone, the keys are not.
    let () = cmd(&["FUNCTION", "FLUSH"]).query(&mut admin).unwrap();
    let d = api.take("k").unwrap();
    assert_eq!((d.allowed, d.remaining), (true, 1), "counted once");
    assert_eq!(calls(&mut admin, "function|load"), 2);
    assert_eq!(limits.backend().unwrap(), Backend::Functions);
}

#[test]
fn scripts_on_an_eval_only_server() {
    let server = Server::start(Kind::EvalOnly);
    let mut admin = server.client();
    let limits = RateLimits::new(server.redis());
    assert_eq!(limits.backend().unwrap(), Backend::Scripts);
    assert_eq!(scenario(&limits), module_errors());
    // A script flushed (a restart, a failover): NOSCRIPT, loaded, sent again.
    let loads = calls(&mut admin, "script|load");
    assert!(loads >= 1);
    let api = limits.limiter(Limit::gcra_with_burst(1, HOUR, 3).unwrap());
    assert_eq!(api.take("flushed").unwrap().remaining, 2);
    let () = cmd(&["SCRIPT", "FLUSH"]).query(&mut admin).unwrap();
    let d = api.take("flushed").unwrap();
    assert_eq!((d.allowed, d.remaining), (true, 1), "counted once");
    assert_eq!(calls(&mut admin, "script|load"), loads + 1);
}

#[test]
#[ignore = "needs a Redis 6 server in RL_REDIS6_BIN (run by .ci/client-rust)"]
fn scripts_on_redis_6() {
    let server = Server::start(Kind::Redis6);
    let limits = RateLimits::new(server.redis());
    assert_eq!(limits.backend().unwrap(), Backend::Scripts);
    assert_eq!(scenario(&limits), module_errors());
}

#[test]
fn bad_parameters_fail_before_any_call() {
    // No server at all: construction fails first, naming the parameter.
    let e = Limit::gcra_with_burst(10, Duration::from_secs(1), 0).unwrap_err();
    assert_eq!(
        e.to_string(),
        "burst must be an integer from 1 to 1000000000, got 0"
    );
    let server = Server::start(Kind::Module);
    let mut admin = server.client();
    let limits = RateLimits::new(server.redis());
    let api = limits.limiter(Limit::gcra(1, HOUR).unwrap());
    let before = calls(&mut admin, "rl.gcra");
    match api.call("k", Take::one().wait(Duration::from_micros(1500))) {
        Err(Error::InvalidParameter { name: "wait", .. }) => {}
        other => panic!("{other:?}"),
    }
    assert_eq!(calls(&mut admin, "rl.gcra"), before, "nothing sent");
}

#[test]
fn a_connection_error_is_not_a_server_error() {
    let mut server = Server::start(Kind::Module);
    let limits = RateLimits::new(server.redis());
    assert_eq!(limits.backend().unwrap(), Backend::Module);
    server.kill();
    match limits.limiter(Limit::gcra(1, HOUR).unwrap()).take("k") {
        Err(Error::Unavailable { code: None, .. }) => {}
        other => panic!("{other:?}"),
    }
}

#[test]
fn check_finds_a_limit_past_the_servers_cap() {
    // Within the client's range (up to 1,000,000), past the server's
    // default cap of 10,000: only the server knows, check() asks it.
    let log = Limit::sliding_log(20_000, HOUR).unwrap();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    for kind in [Kind::Module, Kind::Functions] {
        let words = common::past_the_cap(kind);
        let server = Server::start(kind);
        let blocking = RateLimits::new(server.redis()).fail_open(true);
        let non_blocking = redis_ratelimit_client::aio::RateLimits::new(server.redis()).fail_open(true);
        // RL.ALL names the limit by its position and algorithm.
        let second = words.replacen("ERR ", "ERR limit 2 (SLIDING_LOG): ", 1);
        let checks = [
            (blocking.limiter(log).check(), words.to_string()),
            (
                runtime.block_on(non_blocking.limiter(log).check()),
                words.to_string(),
            ),
            (
                blocking
                    .all_of([Limit::gcra(1, HOUR).unwrap(), log])
                    .unwrap()
                    .check(),
                second,
            ),
        ];
        for (outcome, expected) in checks {
            match outcome {
                Err(e @ Error::ServerError { .. }) => assert_eq!(e.to_string(), expected, "{kind:?}"),
                other => panic!("{kind:?}: {other:?}"),
            }
        }
        // A take is refused alike, failing open or not: a misconfiguration.
        match blocking.limiter(log).take("k") {
            Err(e @ Error::ServerError { .. }) => assert_eq!(e.to_string(), words),
            other => panic!("{kind:?}: {other:?}"),
        }
        if kind == Kind::Module {
            // Raised: the same limit is accepted, and the check takes nothing.
            let mut admin = server.client();
            let () = cmd(&["CONFIG", "SET", "ratelimit.sliding_log_max_limit", "20000"])
                .query(&mut admin)
                .unwrap();
            blocking.limiter(log).check().unwrap();
            let keys: Vec<String> = cmd(&["KEYS", "*"]).query(&mut admin).unwrap();
            assert!(keys.is_empty(), "{keys:?}");
        }
    }
}

#[test]
fn a_reply_that_says_the_server_cannot_serve_drops_the_connection() {
    use common::fake::{Answer, Fake, Resp, Step};
    // The server cannot serve now (LOADING, READONLY...): the next call
    // opens a new connection.
    let take = |answer| Step::new(&["RL.GCRA", "k", "0", "1", "3600000", "1", "MS"], answer);
    let allowed = Answer::Reply(Resp::Array([0, 1, 0, -1, 3600000].map(Resp::Int).to_vec()));
    let script = || {
        vec![
            Step::new(
                &["RL.GCRA"],
                Answer::Error("ERR wrong number of arguments for 'rl.gcra' command".into()),
            ),
            take(Answer::Error(
                "LOADING Redis is loading the dataset in memory".into(),
            )),
            take(allowed.clone()),
        ]
    };
    let limit = Limit::gcra(1, HOUR).unwrap();
    let fake = Fake::start(script());
    let api = RateLimits::new(fake.client()).limiter(limit);
    match api.take("k") {
        Err(e @ Error::Unavailable { .. }) => {
            assert_eq!(
                e.to_string(),
                "rate limiter unavailable: LOADING Redis is loading the dataset in memory"
            )
        }
        other => panic!("{other:?}"),
    }
    assert!(api.take("k").unwrap().allowed);
    assert_eq!((fake.connections(), fake.left()), (2, 0), "a new connection");
    let fake = Fake::start(script());
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let api = redis_ratelimit_client::aio::RateLimits::new(fake.client()).limiter(limit);
    assert!(runtime.block_on(api.take("k")).unwrap_err().is_unavailable());
    assert!(runtime.block_on(api.take("k")).unwrap().allowed);
    assert_eq!((fake.connections(), fake.left()), (2, 0), "a new connection");
}

#[test]
fn moved_from_one_server_is_a_misconfiguration() {
    // A client of one node pointed at a Cluster: MOVED says the key lives
    // elsewhere, for good. A ServerError, raised, never failed open.
    use common::fake::{Answer, Fake, Step};
    let fake = Fake::start(vec![
        Step::new(
            &["RL.GCRA"],
            Answer::Error("ERR wrong number of arguments for 'rl.gcra' command".into()),
        ),
        Step::new(
            &["RL.GCRA", "k", "0", "1", "3600000", "1", "MS"],
            Answer::Error("MOVED 3999 127.0.0.1:6381".into()),
        ),
    ]);
    let api = RateLimits::new(fake.client())
        .fail_open(true)
        .limiter(Limit::gcra(1, HOUR).unwrap());
    match api.take("k") {
        Err(Error::ServerError { code, message }) => {
            assert_eq!(
                (code.as_str(), message.as_str()),
                ("MOVED", "MOVED 3999 127.0.0.1:6381")
            )
        }
        other => panic!("{other:?}"),
    }
}
