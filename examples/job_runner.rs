//! A job runner with the `redis` crate and RL.CONCURRENCY: at most 2 jobs
//! at once per tenant.
//!
//! Each job holds a lease while it runs: RL.CONCURRENCY takes it (or
//! refuses, with how long until a lease ends), a guard's `Drop` gives it
//! back with RL.RELEASE, and RL.RENEW extends a long-running job's lease. A
//! lease also ends at its deadline, so a worker that crashes without
//! releasing blocks the tenant for at most its timeout: the example crashes
//! one and waits for that.
//!
//! ```sh
//! REDIS_PORT=6379 cargo run --example job_runner
//! ```

use std::cell::RefCell;
use std::time::{Duration, Instant};

/// One hash tag per tenant: in a Cluster, the tenant's key has one slot.
const KEY: &str = "jobs:{tenant-a}";
const LIMIT: u64 = 2;
/// A job's lease lasts at most this long (ms) unless renewed: generous, so
/// that only the crashed worker's lease ever reaches its deadline here.
const TIMEOUT_MS: u64 = 60_000;
/// The crashed worker's lease is short, so the example need not wait long.
const CRASH_TIMEOUT_MS: u64 = 1_000;

fn units(n: i64) -> String {
    if n == 1 {
        format!("{n} unit")
    } else {
        format!("{n} units")
    }
}

/// The tenant's limiter. The connection is in a `RefCell` so that several
/// leases (each borrowing the tenant) can be held at once and still release
/// themselves.
struct Tenant {
    con: RefCell<redis::Connection>,
}

/// A lease held by a job: released when dropped, on every path (early
/// returns and panics included), so the unit is free at once instead of at
/// the lease's deadline.
struct Lease<'a> {
    tenant: &'a Tenant,
    job: u32,
    /// Derived from the server's clock: kept, never shown.
    id: i64,
}

impl Drop for Lease<'_> {
    fn drop(&mut self) {
        match self.tenant.release(self.id) {
            Ok(released) => println!("job {}: done, released {}", self.job, units(released)),
            Err(err) => eprintln!("job {}: release failed: {err}", self.job),
        }
    }
}

impl Tenant {
    /// The lease for this job, or `None` when the tenant is at its limit.
    fn take(&self, job: u32, timeout_ms: u64) -> redis::RedisResult<Option<Lease<'_>>> {
        let (blocked, _limit, remaining, retry_after, _reset, id): (i64, i64, i64, i64, i64, i64) =
            redis::cmd("RL.CONCURRENCY")
                .arg(KEY)
                .arg(LIMIT)
                .arg(timeout_ms)
                .arg("MS")
                .query(&mut *self.con.borrow_mut())?;
        if blocked == 1 {
            // retry_after (ms) is how long until a lease ends; its exact
            // value depends on timing, so show it rounded up to seconds.
            let seconds = (retry_after + 999) / 1000;
            println!("job {job}: refused, retry in {seconds} s");
            return Ok(None);
        }
        println!("job {job}: lease taken, {} free", units(remaining));
        Ok(Some(Lease {
            tenant: self,
            job,
            id,
        }))
    }

    /// The units the lease held, or 0 when it had already ended.
    fn release(&self, id: i64) -> redis::RedisResult<i64> {
        redis::cmd("RL.RELEASE")
            .arg(KEY)
            .arg(id)
            .query(&mut *self.con.borrow_mut())
    }

    /// 1 when the live lease now ends `TIMEOUT_MS` from now, else 0.
    fn renew(&self, id: i64) -> redis::RedisResult<i64> {
        redis::cmd("RL.RENEW")
            .arg(KEY)
            .arg(id)
            .arg(TIMEOUT_MS)
            .arg("MS")
            .query(&mut *self.con.borrow_mut())
    }

    /// Until a job could take a lease; PEEK answers as the call would, and
    /// writes nothing.
    fn wait_for_free_unit(&self, deadline: Duration) -> Result<(), Box<dyn std::error::Error>> {
        let give_up = Instant::now() + deadline;
        loop {
            let reply: Vec<i64> = redis::cmd("RL.CONCURRENCY")
                .arg(KEY)
                .arg(LIMIT)
                .arg(TIMEOUT_MS)
                .arg("MS")
                .arg("PEEK")
                .query(&mut *self.con.borrow_mut())?;
            if reply.first() == Some(&0) {
                return Ok(());
            }
            if Instant::now() > give_up {
                return Err(format!("no unit free after {deadline:?}: the crashed lease did not end").into());
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let host = std::env::var("REDIS_HOST").unwrap_or_else(|_| "127.0.0.1".into());
    let port = std::env::var("REDIS_PORT").unwrap_or_else(|_| "6379".into());
    let con = redis::Client::open(format!("redis://{host}:{port}/"))?.get_connection()?;
    let tenant = Tenant {
        con: RefCell::new(con),
    };
    // A fresh key: nothing left from an earlier run.
    redis::cmd("DEL").arg(KEY).exec(&mut *tenant.con.borrow_mut())?;

    let job1 = tenant
        .take(1, TIMEOUT_MS)?
        .ok_or("job 1 refused on a fresh key")?;

    // A crashed worker: it takes a lease and never releases it. `forget`
    // skips the guard's `Drop`, as a process that dies would.
    let crashed = tenant
        .take(2, CRASH_TIMEOUT_MS)?
        .ok_or("job 2 refused with a unit free")?;
    let crashed_id = crashed.id;
    std::mem::forget(crashed);
    println!("job 2: worker crashed, lease not released");

    // Job 1 and the crashed job hold both units.
    if let Some(_lease) = tenant.take(3, TIMEOUT_MS)? {
        // Job 3's work would run here.
    }

    // Job 1 is still at work: it renews its lease before the deadline.
    println!("job 1: still running, lease renewed: {}", tenant.renew(job1.id)?);

    // The crashed lease ends at its deadline, freeing its unit for others.
    tenant.wait_for_free_unit(Duration::from_secs(10))?;
    println!("crashed worker's lease ended at its deadline");
    if let Some(_lease) = tenant.take(4, TIMEOUT_MS)? {
        // Job 4's work would run here; its lease is released at the `}`.
    }

    // A worker that comes back too late finds its lease already ended.
    println!("job 2: late release answers {}", tenant.release(crashed_id)?);
    drop(job1);
    Ok(())
}
