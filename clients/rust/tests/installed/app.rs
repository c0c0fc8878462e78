//! The crate as a dependency: CI (.ci/client-rust) builds this in an app
//! outside the repository, with a path dependency on the crate (a checkout's
//! clients/rust, and the crate `cargo package` made), and runs it as
//! `installed-app URL KEY` (.ci/installed). It prints the backend found and
//! the reply of one GCRA take.

use std::time::Duration;

use redis_ratelimit_client::{Backend, Limit, RateLimits};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let (Some(url), Some(key), None) = (args.next(), args.next(), args.next()) else {
        return Err("usage: installed-app URL KEY".into());
    };
    let limits = RateLimits::new(redis::Client::open(url)?);
    let limiter = limits.limiter(Limit::gcra_with_burst(1, Duration::from_secs(60), 3)?);
    let decision = limiter.take(&key)?;
    let backend = match limits.backend()? {
        Backend::Module => "module",
        Backend::Functions => "functions",
        Backend::Scripts => "scripts",
    };
    let raw: Vec<String> = decision.raw().iter().map(i64::to_string).collect();
    println!("{backend} {}", raw.join(" "));
    Ok(())
}
