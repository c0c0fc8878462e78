//! A rate-limited axum app: two limits, one decision, in the client's tower
//! layer; and a login that locks out password guessing.
//!
//! Each client (the X-Client-Id header) has two policies, decided together
//! by one `RL.ALL` call (a request counts against both only when both allow
//! it):
//! - "burst": 3 at once, then one every 10 seconds (GCRA);
//! - "hourly": 3 per hour (an exact sliding log).
//!
//! The layer maps each decision onto the IETF rate-limit header fields
//! (draft-ietf-httpapi-ratelimit-headers-10): RateLimit-Policy lists the
//! policies, RateLimit reports the binding one, and a refusal is a 429 with
//! Retry-After. When the (simulated) upstream work of an admitted request
//! fails (GET /fail answers 502), the layer gives the request's unit back to
//! both limits: the RateLimit header then shows the state after the refund.
//!
//! GET /login?account=...&password=... protects a login against guessing: 5
//! failed attempts in 15 minutes, per account and per client address, lock
//! both out for an hour (`all_of` with `block`). Only failures count; while
//! locked, every attempt is a 429 with Retry-After, the right password
//! included.
//!
//! ```sh
//! REDIS_PORT=6379 cargo run -p redis-ratelimit-client --example http_limiter   # serves, then calls itself 12 times
//! ```

use std::collections::HashMap;
use std::net::SocketAddr;
use std::time::Duration;

use axum::extract::{Query, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::Router;
use redis_ratelimit_client::aio::{AllOf, RateLimits};
use redis_ratelimit_client::layer::RateLimitLayer;
use redis_ratelimit_client::{headers, Limit, Take};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// Failed logins: 5 in any 15 minutes per account and per address (exact
/// sliding logs); the sixth blocks both for an hour.
const LOGIN_POLICIES: [&str; 2] = ["account", "address"];
const LOGIN_BLOCK: Duration = Duration::from_secs(3600);
/// The (simulated) user database.
const PASSWORDS: [(&str, &str); 1] = [("alice-rust", "correct horse")];

/// Status and rate-limit headers of a login attempt that was not let in.
fn denied(decision: &redis_ratelimit_client::Decision) -> Response {
    let name = LOGIN_POLICIES[decision.binding - 1];
    let status = if decision.allowed {
        StatusCode::UNAUTHORIZED
    } else {
        StatusCode::TOO_MANY_REQUESTS
    };
    let mut fields = vec![("RateLimit", headers::ratelimit(name, decision))];
    fields.extend(headers::retry_after(decision).map(|v| ("Retry-After", v)));
    let mut response = (status, "denied\n").into_response();
    for (name, value) in fields {
        response
            .headers_mut()
            .insert(name, value.parse().expect("a header value"));
    }
    response
}

/// GET /login: a query (quantity 0, records nothing) tells whether the
/// account or the address is locked out; a failed attempt counts, and the
/// one that goes over the limit blocks the limits it exceeds. (Keys of two
/// slots: on a Redis Cluster, make two calls, one per key, each with
/// BLOCK.)
async fn login(
    State(failures): State<AllOf<redis::Client>>,
    Query(query): Query<HashMap<String, String>>,
    request: HeaderMap,
) -> Response {
    let field = |name: &str| query.get(name).map_or("", String::as_str);
    let address = request
        .get("x-forwarded-for")
        .and_then(|v| v.to_str().ok())
        .unwrap_or("");
    let keys = [
        format!("login:account:{}", field("account")),
        format!("login:address:{address}"),
    ];
    let keys = [keys[0].as_str(), keys[1].as_str()];
    let unavailable = (StatusCode::SERVICE_UNAVAILABLE, "limiter unavailable\n").into_response();
    match failures.call(&keys, Take::query()).await {
        Ok(locked) if !locked.allowed => denied(&locked),
        Ok(_) if PASSWORDS.contains(&(field("account"), field("password"))) => "ok\n".into_response(),
        Ok(_) => match failures.call(&keys, Take::one().block(LOGIN_BLOCK)).await {
            Ok(failed) => denied(&failed),
            Err(_) => unavailable,
        },
        Err(_) => unavailable,
    }
}

/// GET `path` from `address` with `headers`: the status and the headers
/// shown (RateLimit and Retry-After), and RateLimit-Policy apart.
async fn call(address: SocketAddr, path: &str, headers: &str) -> std::io::Result<(String, String, String)> {
    let mut stream = tokio::net::TcpStream::connect(address).await?;
    let request = format!("GET {path} HTTP/1.1\r\nHost: example\r\nConnection: close\r\n{headers}\r\n");
    stream.write_all(request.as_bytes()).await?;
    let mut response = String::new();
    stream.read_to_string(&mut response).await?;
    let header = |name: &str| {
        response.lines().find_map(|l| {
            let (n, v) = l.split_once(": ")?;
            n.eq_ignore_ascii_case(name).then(|| v.to_string())
        })
    };
    let shown: Vec<String> = ["RateLimit", "Retry-After"]
        .iter()
        .filter_map(|name| header(name).map(|v| format!("{name}: {v}")))
        .collect();
    let status = response.split(' ').nth(1).unwrap_or("?").to_string();
    Ok((
        status,
        shown.join(" "),
        header("RateLimit-Policy").unwrap_or_default(),
    ))
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let host = std::env::var("REDIS_HOST").unwrap_or_else(|_| "127.0.0.1".into());
    let port = std::env::var("REDIS_PORT").unwrap_or_else(|_| "6379".into());
    let client = redis::Client::open(format!("redis://{host}:{port}/"))?;
    let limits = RateLimits::new(client);

    // The API: keys `ratelimit:{<client id>}:burst` and `...:hourly`, one
    // hash tag per client, so its two limiters share a Cluster slot.
    let api = RateLimitLayer::new(
        limits.clone(),
        "burst",
        Limit::gcra_with_burst(1, Duration::from_secs(10), 3)?,
    )?
    .and("hourly", Limit::sliding_log(3, Duration::from_secs(3600))?)?
    .key(|request| {
        let id = request.headers.get("x-client-id").and_then(|v| v.to_str().ok());
        Some(id.unwrap_or("anonymous").to_string())
    })
    // The work was not done, so the client does not pay for it.
    .refund_when(|status| status.is_server_error());
    // Before serving: the server accepts these limits (axum has no start
    // hook to do it for us).
    api.check().await?;
    let failures = limits.all_of([
        Limit::sliding_log(5, Duration::from_secs(900))?,
        Limit::sliding_log(5, Duration::from_secs(900))?,
    ])?;
    let app = Router::new()
        .route("/", get(|| async { "ok\n" }))
        // The work behind the limiter (simulated) fails.
        .route(
            "/fail",
            get(|| async { (StatusCode::BAD_GATEWAY, "bad gateway\n") }),
        )
        .layer(api)
        .merge(Router::new().route("/login", get(login)).with_state(failures));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let address = listener.local_addr()?;
    tokio::spawn(async move { axum::serve(listener, app).await });

    for (i, path) in ["/", "/fail", "/", "/", "/"].into_iter().enumerate() {
        let (status, shown, policy) = call(address, path, "X-Client-Id: example-rust\r\n").await?;
        if i == 0 {
            println!("RateLimit-Policy: {policy}");
        }
        // A 502: the upstream work failed and the layer refunded the unit.
        let refunded = if status == "502" { " (unit refunded)" } else { "" };
        println!("{status} {shown}{refunded}");
    }
    // Six wrong passwords, then the right one: locked out all the same. The
    // account (one per example) and the address (as a proxy would pass it)
    // are this example's own.
    for password in ["guess"; 6].into_iter().chain(["correct+horse"]) {
        let path = format!("/login?account=alice-rust&password={password}");
        let (status, shown, _) = call(address, &path, "X-Forwarded-For: 203.0.113.3\r\n").await?;
        let which = if password == "guess" { "wrong" } else { "right" };
        println!("login ({which} password): {status} {shown}");
    }
    Ok(())
}
