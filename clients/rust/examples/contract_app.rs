//! The contract's app in Rust (clients/contract/README.md): axum and the
//! tower layer. `GET /` answers 200 "ok", limited per `X-Client-Id` by one
//! limit named "api" (GCRA, 5 per minute in bursts of 5), with the default
//! key prefix; it prints `listening <port>` once it serves.
//!
//! ```sh
//! PORT=0 REDIS_PORT=6379 cargo run -p redis-ratelimit-client --example contract_app
//! ```
//!
//! `RL_FAIL_OPEN=1` fails open; `RL_LIMIT=sliding_log:20000` limits by a
//! sliding log of that many a minute instead. A limit the server refuses
//! stops the start (`check()`, awaited before serving).

use std::time::Duration;

use axum::{routing::get, Router};
use redis_ratelimit_client::{aio::RateLimits, layer::RateLimitLayer, Limit};

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let env = |name: &str, default: &str| std::env::var(name).unwrap_or_else(|_| default.into());
    let redis = redis::Client::open(format!("redis://127.0.0.1:{}/", env("REDIS_PORT", "6379")))?;
    let limits = RateLimits::new(redis).fail_open(env("RL_FAIL_OPEN", "0") == "1");
    let limit = env("RL_LIMIT", "gcra:5");
    let (kind, count) = limit.split_once(':').ok_or("RL_LIMIT: kind:count")?;
    let count: u64 = count.parse()?;
    let minute = Duration::from_secs(60);
    let limit = match kind {
        "gcra" => Limit::gcra_with_burst(count, minute, count)?,
        _ => Limit::sliding_log(count, minute)?,
    };
    let api = RateLimitLayer::new(limits, "api", limit)?.key(|parts| {
        let id = parts.headers.get("x-client-id")?;
        id.to_str().ok().map(String::from)
    });
    api.check().await?;
    let app = Router::new().route("/", get(|| async { "ok" })).layer(api);
    let listener = tokio::net::TcpListener::bind(format!("127.0.0.1:{}", env("PORT", "0"))).await?;
    println!("listening {}", listener.local_addr()?.port());
    axum::serve(listener, app).await?;
    Ok(())
}
