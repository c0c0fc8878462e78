//! A job runner with leases: at most 2 jobs at once per tenant.
//!
//! Each job holds a lease while it runs: `acquire` takes it (or is refused,
//! with how long until a lease ends), the `Lease` guard gives it back when
//! dropped (or by `release`, which tells the units freed), and `renew`
//! extends a long-running job's lease. A lease also ends at its deadline, so
//! a worker that crashes without releasing blocks the tenant for at most its
//! timeout: the example crashes one and waits for that.
//!
//! ```sh
//! REDIS_PORT=6379 cargo run -p redis-ratelimit-client --example job_runner
//! ```

use std::time::{Duration, Instant};

use redis_ratelimit_client::{Acquisition, ConcurrencyLimit, Lease, RateLimits};

/// One hash tag per tenant: in a Cluster, the tenant's key has one slot.
const KEY: &str = "jobs:{tenant-a}";
/// A job's lease lasts at most this long unless renewed: generous, so that
/// only the crashed worker's lease ever reaches its deadline here.
const TIMEOUT: Duration = Duration::from_secs(60);
/// The crashed worker's lease is short, so the example need not wait long.
const CRASH_TIMEOUT: Duration = Duration::from_secs(1);

fn units(n: u64) -> String {
    if n == 1 {
        format!("{n} unit")
    } else {
        format!("{n} units")
    }
}

type Tenant = redis_ratelimit_client::Concurrency<redis::Client>;

/// The lease for this job, or `None` when the tenant is at its limit.
fn take(tenant: &Tenant, job: u32) -> Result<Option<Lease<redis::Client>>, Box<dyn std::error::Error>> {
    match tenant.acquire(KEY)? {
        Acquisition::Granted(lease) => {
            println!(
                "job {job}: lease taken, {} free",
                units(lease.decision().remaining)
            );
            Ok(Some(lease))
        }
        Acquisition::Refused(refusal) => {
            // How long until a lease ends; its exact value depends on
            // timing, so show it rounded up to seconds.
            let wait = refusal.retry_after.unwrap_or_default();
            println!(
                "job {job}: refused, retry in {} s",
                wait.as_millis().div_ceil(1000)
            );
            Ok(None)
        }
    }
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let host = std::env::var("REDIS_HOST").unwrap_or_else(|_| "127.0.0.1".into());
    let port = std::env::var("REDIS_PORT").unwrap_or_else(|_| "6379".into());
    let client = redis::Client::open(format!("redis://{host}:{port}/"))?;
    // A fresh key: nothing left from an earlier run.
    redis::cmd("DEL").arg(KEY).exec(&mut client.get_connection()?)?;
    let limits = RateLimits::new(client);
    let tenant = limits.concurrency(ConcurrencyLimit::new(2, TIMEOUT)?);
    let crashing = limits.concurrency(ConcurrencyLimit::new(2, CRASH_TIMEOUT)?);

    let job1 = take(&tenant, 1)?.ok_or("job 1 refused on a fresh key")?;

    // A crashed worker: it takes a lease and never releases it. `forget`
    // disarms the guard, as a process that dies would.
    let crashed_id = take(&crashing, 2)?
        .ok_or("job 2 refused with a unit free")?
        .forget();
    println!("job 2: worker crashed, lease not released");

    // Job 1 and the crashed job hold both units.
    if let Some(_lease) = take(&tenant, 3)? {
        // Job 3's work would run here.
    }

    // Job 1 is still at work: it renews its lease before the deadline.
    println!(
        "job 1: still running, lease renewed: {}",
        u8::from(job1.renew(TIMEOUT)?)
    );

    // The crashed lease ends at its deadline, freeing its unit for others:
    // PEEK answers as an acquire would, taking nothing.
    let give_up = Instant::now() + Duration::from_secs(10);
    while !tenant.peek(KEY, 1)?.allowed {
        if Instant::now() > give_up {
            return Err("no unit free after 10 s: the crashed lease did not end".into());
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    println!("crashed worker's lease ended at its deadline");
    if let Some(lease) = take(&tenant, 4)? {
        // Job 4's work would run here; an early return or a panic would
        // release the lease all the same, when the guard drops.
        println!("job 4: done, released {}", units(lease.release()?));
    }

    // A worker that comes back too late finds its lease already ended.
    println!("job 2: late release answers {}", tenant.release(KEY, crashed_id)?);
    println!("job 1: done, released {}", units(job1.release()?));
    Ok(())
}
