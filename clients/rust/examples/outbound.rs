//! Paced outbound calls with a GCRA limiter and `wait`: many workers, one
//! provider limit.
//!
//! A provider lets us call its API 20 times per second, one call every 50 ms
//! with no burst. Four worker threads share that allowance through one key:
//! before each call a worker reserves the next free slot with
//! `Take::one().wait(max_wait)` (`RL.GCRA outbound:rust 0 20 1000 MS WAIT
//! 1000`), and the decision's retry_after is how long to sleep before
//! calling (none: call now). A reservation counts for every later call, so the workers' calls
//! come exactly one interval apart: no worker polls, and none of them wakes
//! up at the same instant as another to find the limit spent. A call whose
//! slot would be more than max_wait (1000 ms) away is refused (blocked 1) and
//! recorded nowhere; its retry_after says when asking again would fit, and
//! the worker then asks again.
//!
//! The summary prints only what the server decided, so it is the same on
//! every run: the slots come from the server's clock, not from this
//! process's timers. What the workers' clocks measured is only checked, with
//! some slack.
//!
//! ```sh
//! REDIS_PORT=6379 cargo run -p redis-ratelimit-client --release --example outbound
//! ```

use std::collections::VecDeque;
use std::sync::Mutex;
use std::thread;
use std::time::{Duration, Instant};

use redis_ratelimit_client::{Limit, Limiter, RateLimits, Take};

const KEY: &str = "outbound:rust";
/// Calls per second that the provider allows.
const RATE: u64 = 20;
/// 50 ms between calls.
const INTERVAL_MS: i64 = 1000 / RATE as i64;
/// The longest a call may be held back.
const MAX_WAIT: Duration = Duration::from_millis(1000);
const WORKERS: usize = 4;
const JOBS: u32 = 12;
/// Timers and thread scheduling may be a little late, never early; a call
/// measured more than this ahead of its slot would be a pacing bug.
const SLACK_MS: f64 = 20.0;

/// What the workers share: the jobs still to do, and what happened.
#[derive(Default)]
struct Run {
    jobs: Mutex<VecDeque<u32>>,
    /// Each call's slot (ms, server's clock) and the instant it was made.
    calls: Mutex<Vec<(i64, Instant)>>,
    /// Jobs refused past max_wait (asked again later).
    refusals: Mutex<Vec<u32>>,
}

/// (allowed, the wait before the call, start of the slot in ms on the
/// server's clock). The limiter's key expires when it is fully rested, one
/// interval after the latest reservation; read in the same transaction, its
/// expiry tells where this call's slot ends, to the millisecond, on the
/// server's clock. Only the summary needs that (hence a prepared call in a
/// transaction of our own): a worker needs nothing but retry_after.
fn reserve(
    limiter: &Limiter<redis::Client>,
    con: &mut redis::Connection,
) -> Result<(bool, Duration, i64), Box<dyn std::error::Error>> {
    let call = limiter.prepare(KEY, Take::one().wait(MAX_WAIT))?;
    let (reply, expires_at): (redis::Value, i64) = redis::pipe()
        .atomic()
        .add_command(call.cmd().clone())
        .cmd("PEXPIRETIME")
        .arg(KEY)
        .query(con)?;
    let decision = call.decision(&reply)?;
    let wait = decision.retry_after.unwrap_or_default();
    Ok((decision.allowed, wait, expires_at - INTERVAL_MS))
}

fn worker(
    limiter: &Limiter<redis::Client>,
    mut con: redis::Connection,
    run: &Run,
) -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
    loop {
        let Some(job) = run.jobs.lock().unwrap().pop_front() else {
            return Ok(());
        };
        let (retry_after, slot) = loop {
            let (allowed, retry_after, slot) = reserve(limiter, &mut con).map_err(|e| e.to_string())?;
            if allowed {
                break (retry_after, slot);
            }
            // Past max_wait: nothing was reserved. Ask again when the slot
            // would be within reach (or drop the job, if it can't wait).
            run.refusals.lock().unwrap().push(job);
            thread::sleep(retry_after);
        };
        thread::sleep(retry_after);
        // The call to the provider (simulated): the instant it is made.
        let called = Instant::now();
        run.calls.lock().unwrap().push((slot, called));
    }
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let host = std::env::var("REDIS_HOST").unwrap_or_else(|_| "127.0.0.1".into());
    let port = std::env::var("REDIS_PORT").unwrap_or_else(|_| "6379".into());
    let client = redis::Client::open(format!("redis://{host}:{port}/"))?;
    let mut con = client.get_connection()?;
    // A fresh limiter: nothing reserved by an earlier run.
    redis::cmd("DEL").arg(KEY).exec(&mut con)?;
    // One call every 50 ms, no burst. The client finds the backend once; the
    // workers send its prepared calls on their own connections.
    let limiter =
        RateLimits::new(client.clone()).limiter(Limit::gcra_with_burst(RATE, Duration::from_secs(1), 1)?);

    let run = Run {
        jobs: Mutex::new((1..=JOBS).collect()),
        ..Run::default()
    };
    // One connection per worker, opened before any starts, so that all of
    // them ask at once.
    let connections = (0..WORKERS)
        .map(|_| client.get_connection())
        .collect::<redis::RedisResult<Vec<_>>>()?;
    thread::scope(|s| {
        let workers: Vec<_> = connections
            .into_iter()
            .map(|con| s.spawn(|| worker(&limiter, con, &run)))
            .collect();
        workers
            .into_iter()
            .try_for_each(|w| w.join().expect("worker panicked"))
    })
    .map_err(|e| e.to_string())?;

    let mut calls = run.calls.into_inner()?;
    calls.sort();
    let (first_slot, first_call) = calls[0];
    let offsets: Vec<i64> = calls.iter().map(|(slot, _)| slot - first_slot).collect();
    let mut per_quarter = vec![0; (offsets[offsets.len() - 1] / 250 + 1) as usize];
    for offset in &offsets {
        per_quarter[(offset / 250) as usize] += 1;
    }
    // The clocks only confirm the pacing, with slack: each worker slept
    // retry_after (rounded up) after the reply, so no call should be
    // measured ahead of its slot, counting from the first call (made at
    // once).
    let on_time = calls.iter().zip(&offsets).all(|((_, called), offset)| {
        called.duration_since(first_call).as_secs_f64() * 1000.0 >= *offset as f64 - SLACK_MS
    });
    let join = |v: &[i64]| v.iter().map(i64::to_string).collect::<Vec<_>>().join(" ");
    println!(
        "{WORKERS} workers, {JOBS} calls, one shared limit: {RATE} calls per second, \
         no burst, WAIT up to {} ms",
        MAX_WAIT.as_millis()
    );
    println!(
        "calls made: {}, refused: {}",
        calls.len(),
        run.refusals.into_inner()?.len()
    );
    println!("slots, ms after the first: {}", join(&offsets));
    println!("calls in each 250 ms since the first: {}", join(&per_quarter));
    println!(
        "no call ahead of its slot: {}",
        if on_time { "yes" } else { "no" }
    );
    Ok(())
}
