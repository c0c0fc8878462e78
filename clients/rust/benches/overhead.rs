//! What the client costs over a raw call: calls per second through
//! `Limiter::take` against the same command sent with `redis::cmd` on one
//! connection, pipeline 1 (each call waits for its reply), in the same run.
//! The two alternate in blocks of `BLOCK` calls, so that both see the same
//! machine (a shared machine's load moves within seconds); a round's rate is
//! its calls over the time its blocks took, and the report gives the medians
//! over the rounds.
//!
//! ```sh
//! cargo bench -p redis-ratelimit-client --bench overhead
//! RL_BENCH_CALLS=50000 RL_BENCH_ROUNDS=7 cargo bench -p redis-ratelimit-client --bench overhead
//! ```
//!
//! It starts its own servers on free loopback ports: `redis-server`
//! (`RL_SERVER_BIN`) with the module cargo built beside this benchmark
//! (`RL_MODULE` to name another), and one without it (the functions
//! library, loaded by the client).
//!
//! Then a flood: one identity calls one limit (10 a second) as fast as it
//! can for `RL_BENCH_FLOOD_MS` (default 2000) through the blocking client,
//! without and with the local memory of refusals (`local_refusals`), and
//! the server's calls are counted (`INFO commandstats`): with the memory,
//! a refusal is answered in-process until its `retry_after`.

use std::future::Future;
use std::time::{Duration, Instant};

use redis_ratelimit_client::{aio, Limit, RateLimits};

// The tests' harness: servers on free loopback ports.
#[path = "../tests/common/mod.rs"]
mod common;
use common::{calls as server_calls, Kind, Server};

fn start(with_module: bool) -> Server {
    Server::start(if with_module {
        Kind::Module
    } else {
        Kind::Functions
    })
}

fn client(server: &Server) -> redis::Client {
    server.redis()
}

fn env(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// Calls of one side between two switches.
const BLOCK: usize = 250;

/// The calls per second of `raw` and of `client` over `calls` calls each,
/// alternating in blocks.
fn rates(calls: usize, mut raw: impl FnMut(usize), mut client: impl FnMut(usize)) -> (f64, f64) {
    let (mut raw_time, mut client_time) = (Duration::ZERO, Duration::ZERO);
    for block in 0..calls.div_ceil(BLOCK) {
        let range = block * BLOCK..((block + 1) * BLOCK).min(calls);
        let start = Instant::now();
        range.clone().for_each(&mut raw);
        raw_time += start.elapsed();
        let start = Instant::now();
        range.for_each(&mut client);
        client_time += start.elapsed();
    }
    (
        calls as f64 / raw_time.as_secs_f64(),
        calls as f64 / client_time.as_secs_f64(),
    )
}

async fn rates_async<R, C>(
    calls: usize,
    mut raw: impl FnMut(usize) -> R,
    mut client: impl FnMut(usize) -> C,
) -> (f64, f64)
where
    R: Future<Output = ()>,
    C: Future<Output = ()>,
{
    let (mut raw_time, mut client_time) = (Duration::ZERO, Duration::ZERO);
    for block in 0..calls.div_ceil(BLOCK) {
        let range = block * BLOCK..((block + 1) * BLOCK).min(calls);
        let start = Instant::now();
        for i in range.clone() {
            raw(i).await;
        }
        raw_time += start.elapsed();
        let start = Instant::now();
        for i in range {
            client(i).await;
        }
        client_time += start.elapsed();
    }
    (
        calls as f64 / raw_time.as_secs_f64(),
        calls as f64 / client_time.as_secs_f64(),
    )
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// The median of each side's rates and of the per-round ratios.
fn report(name: &str, raw: Vec<f64>, client: Vec<f64>) {
    let ratios: Vec<f64> = raw.iter().zip(&client).map(|(r, c)| c / r).collect();
    println!(
        "| {name} | {:.0} | {:.0} | {:.3} |",
        median(raw),
        median(client),
        median(ratios)
    );
}

/// 100 keys, 1,000 a second, 1,000,000 at once: every call is allowed.
const KEYS: usize = 100;
const PARAMS: [u64; 3] = [999_999, 1000, 1000];

fn keys() -> Vec<String> {
    (0..KEYS).map(|i| format!("bench:{i}")).collect()
}

fn blocking(name: &str, with_module: bool, calls: usize, rounds: usize) {
    let server = start(with_module);
    let keys = keys();
    let limit = Limit::gcra_with_burst(1000, Duration::from_secs(1), 1_000_000).unwrap();
    let limits = RateLimits::new(client(&server));
    let limiter = limits.limiter(limit);
    let backend = limits.backend().unwrap();
    let mut raw_con = client(&server).get_connection().unwrap();
    // The raw call: the command this backend runs, by hand.
    let raw = |con: &mut redis::Connection, key: &str| -> Vec<i64> {
        let mut cmd = if with_module {
            redis::cmd("RL.GCRA")
        } else {
            let mut c = redis::cmd("FCALL");
            c.arg("rl_gcra").arg(1);
            c
        };
        cmd.arg(key).arg(&PARAMS).arg(1).arg("MS").query(con).unwrap()
    };
    // Warm both paths.
    for key in &keys {
        raw(&mut raw_con, key);
        limiter.take(key).unwrap();
    }
    let (mut raws, mut clients) = (Vec::new(), Vec::new());
    for _ in 0..rounds {
        let (r, c) = rates(
            calls,
            |i| assert_eq!(raw(&mut raw_con, &keys[i % KEYS])[0], 0),
            |i| assert!(limiter.take(&keys[i % KEYS]).unwrap().allowed),
        );
        raws.push(r);
        clients.push(c);
    }
    report(&format!("{name} ({backend:?})"), raws, clients);
}

async fn non_blocking<C: redis_ratelimit_client::AsyncConnector>(
    name: &str,
    server: &Server,
    limits: aio::RateLimits<C>,
    calls: usize,
    rounds: usize,
) {
    let keys = keys();
    let limit = Limit::gcra_with_burst(1000, Duration::from_secs(1), 1_000_000).unwrap();
    let limiter = limits.limiter(limit);
    let raw_con = client(server).get_multiplexed_async_connection().await.unwrap();
    let raw = |key: &str| {
        let mut con = raw_con.clone();
        let mut cmd = redis::cmd("RL.GCRA");
        cmd.arg(key).arg(&PARAMS).arg(1).arg("MS");
        async move { cmd.query_async::<Vec<i64>>(&mut con).await.unwrap() }
    };
    for key in &keys {
        raw(key).await;
        limiter.take(key).await.unwrap();
    }
    let (mut raws, mut clients) = (Vec::new(), Vec::new());
    for _ in 0..rounds {
        let (r, c) = rates_async(
            calls,
            |i| {
                let call = raw(&keys[i % KEYS]);
                async move { assert_eq!(call.await[0], 0) }
            },
            |i| {
                let (limiter, key) = (&limiter, &keys[i % KEYS]);
                async move { assert!(limiter.take(key).await.unwrap().allowed) }
            },
        )
        .await;
        raws.push(r);
        clients.push(c);
    }
    report(&format!("async, {name} (Module)"), raws, clients);
}

/// One identity floods one limit for `length`: (calls made, allowed,
/// calls the server ran).
fn flood(server: &Server, remembered: u64, key: &str, length: Duration) -> (u64, u64, u64) {
    let limits = RateLimits::new(client(server))
        .local_refusals(remembered)
        .unwrap();
    let api = limits.limiter(Limit::gcra(10, Duration::from_secs(1)).unwrap());
    let mut admin = server.client();
    let before = server_calls(&mut admin, "rl.gcra");
    let (mut made, mut allowed) = (0, 0);
    let start = Instant::now();
    while start.elapsed() < length {
        made += 1;
        allowed += u64::from(api.take(key).unwrap().allowed);
    }
    (made, allowed, server_calls(&mut admin, "rl.gcra") - before)
}

fn floods(length: Duration) {
    let server = start(true);
    println!();
    println!(
        "A flood from one identity, {} ms each, one limit of 10 a second (GCRA), blocking client:",
        length.as_millis()
    );
    println!();
    println!("| local_refusals | calls made | allowed | server calls | server calls per 1,000 made |");
    println!("|---|---:|---:|---:|---:|");
    let mut per_thousand = Vec::new();
    for (remembered, key) in [(0, "flood:off"), (1000, "flood:on")] {
        let (made, allowed, ran) = flood(&server, remembered, key, length);
        let rate = ran as f64 * 1000.0 / made as f64;
        per_thousand.push(rate);
        println!("| {remembered} | {made} | {allowed} | {ran} | {rate:.2} |");
    }
    let fewer = 1.0 - per_thousand[1] / per_thousand[0];
    println!();
    println!(
        "with the memory: {:.3}% fewer server calls per request",
        fewer * 100.0
    );
}

fn main() {
    // `cargo test --benches` runs this with --bench absent: a quick pass.
    let quick = !std::env::args().any(|a| a == "--bench");
    let calls = if quick { 200 } else { env("RL_BENCH_CALLS", 20_000) };
    let rounds = if quick { 1 } else { env("RL_BENCH_ROUNDS", 5) };
    println!("{rounds} rounds of {calls} calls each, pipeline 1, one connection; medians");
    println!();
    println!("| connection (backend) | raw calls/s | client calls/s | client / raw |");
    println!("|---|---:|---:|---:|");
    blocking("blocking, redis::Client", true, calls, rounds);
    blocking("blocking, redis::Client", false, calls, rounds);
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let server = start(true);
        let own = aio::RateLimits::new(client(&server));
        non_blocking("redis::Client", &server, own, calls, rounds).await;
        let multiplexed = client(&server).get_multiplexed_async_connection().await.unwrap();
        let multiplexed = aio::RateLimits::new(multiplexed);
        non_blocking("MultiplexedConnection", &server, multiplexed, calls, rounds).await;
    });
    let flood_ms = if quick {
        100
    } else {
        env("RL_BENCH_FLOOD_MS", 2000)
    };
    floods(Duration::from_millis(flood_ms as u64));
}
