//! Faults against real servers: frozen (`SIGSTOP`), killed, restarted on
//! the same port, a dropped connection (`CLIENT KILL`), and a port that
//! accepts and never answers. For each, the blocking client, the async
//! client and the layer, failing closed and open: the policy applies
//! within the deadline plus 50 ms (250 ms, the default), and once the
//! server answers again, the first call goes through. Each measured time
//! is printed as a `figure` line (`cargo test --test faults --
//! --nocapture`): the README's table comes from them.

mod common;

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use axum::routing::get;
use axum::Router;
use common::http::{app_handler, client_id, get_path, serve, Reply};
use common::{Kind, Server};
use redis_ratelimit_client::aio::{self, connection_manager_config};
use redis_ratelimit_client::layer::RateLimitLayer;
use redis_ratelimit_client::{Decision, Error, Limit, RateLimits};

const TIMEOUT: Duration = Duration::from_millis(250);
const LATE: Duration = Duration::from_millis(50);

fn limit() -> Limit {
    Limit::gcra(1000, Duration::from_secs(1)).unwrap()
}

/// The clients under test, all on one server.
struct Clients {
    blocking: RateLimits<redis::Client>,
    non_blocking: aio::RateLimits<redis::Client>,
    /// The layer failing closed, and open.
    closed: SocketAddr,
    open: SocketAddr,
}

async fn layer(limits: aio::RateLimits<redis::Client>) -> SocketAddr {
    let layer = RateLimitLayer::new(limits, "api", limit())
        .unwrap()
        .key(client_id);
    serve(Router::new().route("/", get(app_handler)).layer(layer)).await
}

impl Clients {
    async fn new(url: &str) -> Clients {
        let client = redis::Client::open(url).unwrap();
        let non_blocking = aio::RateLimits::new(client.clone()).timeout(TIMEOUT).unwrap();
        Clients {
            blocking: RateLimits::new(client).timeout(TIMEOUT).unwrap(),
            closed: layer(non_blocking.clone()).await,
            open: layer(non_blocking.clone().fail_open(true)).await,
            non_blocking,
        }
    }
}

/// One call, timed.
fn timed<T>(call: impl FnOnce() -> T) -> (T, Duration) {
    let start = Instant::now();
    let out = call();
    (out, start.elapsed())
}

async fn timed_async<T>(call: impl std::future::Future<Output = T>) -> (T, Duration) {
    let start = Instant::now();
    let out = call.await;
    (out, start.elapsed())
}

/// A blocking call from an async test.
fn blocking<T>(call: impl FnOnce() -> T) -> T {
    tokio::task::block_in_place(call)
}

fn figure(fault: &str, what: &str, elapsed: Duration) {
    eprintln!(
        "figure | {fault} | {what} | {:.1} ms",
        elapsed.as_secs_f64() * 1000.0
    );
}

/// The policy within the deadline: `Unavailable` (in `words`, when the
/// deadline passed) or a failed-open decision; 503 or the app reached,
/// marked.
async fn policy_holds(c: &Clients, fault: &str, words: Option<&str>) {
    let key = || format!("k:{}", Instant::now().elapsed().as_nanos());
    let check_error = |what: &str, outcome: Result<Decision, Error>, elapsed: Duration| {
        figure(fault, what, elapsed);
        assert!(elapsed <= TIMEOUT + LATE, "{fault}, {what}: {elapsed:?}");
        match (outcome, words) {
            (Err(e @ Error::Unavailable { .. }), Some(words)) => {
                assert_eq!(e.to_string(), words, "{fault}, {what}")
            }
            (Err(e @ Error::Unavailable { .. }), None) => {
                assert!(
                    e.to_string().starts_with("rate limiter unavailable: "),
                    "{fault}, {what}: {e}"
                )
            }
            other => panic!("{fault}, {what}: {other:?}"),
        }
    };
    let check_open = |what: &str, outcome: Result<Decision, Error>, elapsed: Duration| {
        figure(fault, what, elapsed);
        assert!(elapsed <= TIMEOUT + LATE, "{fault}, {what}: {elapsed:?}");
        match outcome {
            Ok(d) => assert_eq!(
                (d.allowed, d.failed_open, d.limit, d.remaining, d.granted),
                (true, true, 1000, 0, 1),
                "{fault}, {what}"
            ),
            other => panic!("{fault}, {what}: {other:?}"),
        }
    };
    let api = c.blocking.limiter(limit());
    let (outcome, elapsed) = blocking(|| timed(|| api.take(&key())));
    check_error("blocking client, fail closed", outcome, elapsed);
    let api = c.blocking.clone().fail_open(true).limiter(limit());
    let (outcome, elapsed) = blocking(|| timed(|| api.take(&key())));
    check_open("blocking client, fail open", outcome, elapsed);
    let api = c.non_blocking.limiter(limit());
    let (outcome, elapsed) = timed_async(api.take(&key())).await;
    check_error("async client, fail closed", outcome, elapsed);
    let api = c.non_blocking.clone().fail_open(true).limiter(limit());
    let (outcome, elapsed) = timed_async(api.take(&key())).await;
    check_open("async client, fail open", outcome, elapsed);

    let id = key();
    let (r, elapsed) = timed_async(get_path(c.closed, "/", &[("x-client-id", &id)])).await;
    figure(fault, "layer, fail closed", elapsed);
    assert!(elapsed <= TIMEOUT + LATE, "{fault}, layer closed: {elapsed:?}");
    assert_eq!(
        (r.status, r.retry_after.as_deref(), r.body.as_str(), r.seen),
        (503, Some("1"), "rate limiter unavailable\n", None),
        "{fault}"
    );
    let (r, elapsed) = timed_async(get_path(c.open, "/", &[("x-client-id", &id)])).await;
    figure(fault, "layer, fail open", elapsed);
    assert!(elapsed <= TIMEOUT + LATE, "{fault}, layer open: {elapsed:?}");
    assert_eq!(
        (r.status, r.ratelimit, r.seen.as_deref()),
        (200, None, Some("failed_open")),
        "{fault}"
    );
}

/// Once the server answers again, the first call of each goes through.
async fn first_calls_go_through(c: &Clients, fault: &str) {
    let api = c.blocking.limiter(limit());
    let (outcome, elapsed) = blocking(|| timed(|| api.take("after")));
    figure(fault, "blocking client, first call", elapsed);
    assert!(
        outcome.as_ref().is_ok_and(|d| d.allowed && !d.failed_open),
        "{fault}: {outcome:?}"
    );
    let api = c.non_blocking.limiter(limit());
    let (outcome, elapsed) = timed_async(api.take("after")).await;
    figure(fault, "async client, first call", elapsed);
    assert!(
        outcome.as_ref().is_ok_and(|d| d.allowed && !d.failed_open),
        "{fault}: {outcome:?}"
    );
    for address in [c.closed, c.open] {
        let (r, elapsed): (Reply, _) = timed_async(get_path(address, "/", &[("x-client-id", "after")])).await;
        figure(fault, "layer, first request", elapsed);
        assert_eq!((r.status, r.seen.as_deref()), (200, Some("decision")), "{fault}");
    }
}

/// A server of `kind`, and clients whose connections are open and which
/// have found the backend.
async fn warmed(kind: Kind) -> (Server, Clients) {
    let server = Server::start(kind);
    let c = Clients::new(&server.url()).await;
    first_calls_go_through(&c, "warm").await;
    (server, c)
}

fn deadline_words() -> String {
    format!(
        "rate limiter unavailable: no answer within {} ms",
        TIMEOUT.as_millis()
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn frozen_then_thawed() {
    let (server, c) = warmed(Kind::Module).await;
    server.freeze();
    policy_holds(&c, "frozen", Some(&deadline_words())).await;
    server.thaw();
    first_calls_go_through(&c, "thawed").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn killed_then_restarted() {
    let (mut server, c) = warmed(Kind::Module).await;
    server.kill();
    policy_holds(&c, "killed", None).await;
    server.restart();
    first_calls_go_through(&c, "restarted").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn restarted_while_idle() {
    // No call while the server is down: the connections the clients hold
    // are closed by the time they call again.
    let (mut server, c) = warmed(Kind::Functions).await;
    server.restart();
    // The library went with the restart: loaded again on the first call.
    first_calls_go_through(&c, "restarted while idle").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn connections_dropped() {
    let (server, c) = warmed(Kind::Module).await;
    let mut admin = server.client();
    let killed: u64 = redis::cmd("CLIENT")
        .arg("KILL")
        .arg("TYPE")
        .arg("normal")
        .arg("SKIPME")
        .arg("yes")
        .query(&mut admin)
        .unwrap();
    // The blocking client's and the async client's (the layers share it).
    assert_eq!(killed, 2);
    first_calls_go_through(&c, "dropped").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_port_that_never_answers() {
    let port = common::black_hole();
    let c = Clients::new(&format!("redis://127.0.0.1:{port}/")).await;
    policy_holds(&c, "black-holed", Some(&deadline_words())).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_connection_manager_of_ones_own() {
    let mut server = Server::start(Kind::Module);
    let client = server.redis();
    let manager = client
        .get_connection_manager_with_config(connection_manager_config(TIMEOUT))
        .await
        .unwrap();
    let limits = aio::RateLimits::new(manager).timeout(TIMEOUT).unwrap();
    let api = limits.limiter(limit());
    assert!(api.take("warm").await.unwrap().allowed);
    server.freeze();
    let (outcome, elapsed) = timed_async(api.take("frozen")).await;
    figure("frozen", "ConnectionManager", elapsed);
    assert!(elapsed <= TIMEOUT + LATE, "{elapsed:?}");
    assert_eq!(outcome.unwrap_err().to_string(), deadline_words());
    server.thaw();
    assert!(api.take("thawed").await.unwrap().allowed);
    server.kill();
    let (outcome, elapsed) = timed_async(api.take("killed")).await;
    figure("killed", "ConnectionManager", elapsed);
    assert!(elapsed <= TIMEOUT + LATE, "{elapsed:?}");
    assert!(outcome.unwrap_err().is_unavailable());
    // Down: each call's reconnection is refused at once.
    let (outcome, elapsed) = timed_async(api.take("down")).await;
    figure("killed, again", "ConnectionManager", elapsed);
    assert!(elapsed <= TIMEOUT + LATE, "{elapsed:?}");
    assert!(outcome.unwrap_err().is_unavailable());
    server.restart();
    let (outcome, elapsed) = timed_async(api.take("restarted")).await;
    figure("restarted", "ConnectionManager, first call", elapsed);
    assert!(
        outcome.unwrap().allowed,
        "no backoff: the first call goes through"
    );
}
