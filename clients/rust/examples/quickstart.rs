// redis-ratelimit-client = { path = "clients/rust" }, with axum, redis and tokio
use std::{net::SocketAddr, time::Duration};

use axum::{routing::get, Router};
use redis_ratelimit_client::{aio::RateLimits, layer::RateLimitLayer, Limit};

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let url = std::env::var("REDIS_URL").unwrap_or_else(|_| "redis://localhost:6379".into());
    let limits = RateLimits::new(redis::Client::open(url)?);
    // 10 requests per second per client address, 20 at once.
    let api = RateLimitLayer::new(
        limits,
        "api",
        Limit::gcra_with_burst(10, Duration::from_secs(1), 20)?,
    )?;
    api.check().await?; // a limit the server refuses stops the start (axum has no start hook)
    let app = Router::new()
        .route("/", get(|| async { "hello world\n" }))
        .layer(api);
    let port = std::env::var("PORT").unwrap_or_else(|_| "3000".into());
    let listener = tokio::net::TcpListener::bind(format!("127.0.0.1:{port}")).await?;
    axum::serve(listener, app.into_make_service_with_connect_info::<SocketAddr>()).await?;
    Ok(())
}
