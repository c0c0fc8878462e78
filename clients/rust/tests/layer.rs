//! The tower layer in front of a real axum server on loopback, called over
//! TCP: the IETF headers on allowed and refused responses, `Retry-After`,
//! client IP and custom keys, several policies in one `RL.ALL`, refunds of
//! failed work, and failing closed or open when Redis is down.

mod common;

use std::net::SocketAddr;
use std::time::Duration;

use axum::http::StatusCode;
use axum::routing::get;
use axum::Router;
use common::{Kind, Server};
use redis_ratelimit_client::aio::RateLimits;
use redis_ratelimit_client::layer::RateLimitLayer;
use redis_ratelimit_client::Limit;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

const HOUR: Duration = Duration::from_secs(3600);

/// Serve `app` on a free loopback port (with the client's address).
async fn serve(app: Router) -> SocketAddr {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    tokio::spawn(async move {
        axum::serve(listener, app.into_make_service_with_connect_info::<SocketAddr>())
            .await
            .unwrap();
    });
    address
}

/// Serve `app` without `ConnectInfo`.
async fn serve_plain(app: Router) -> SocketAddr {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    address
}

/// A response as the test reads it: status, the rate-limit headers, body.
#[derive(Debug, PartialEq, Eq)]
struct Reply {
    status: u16,
    policy: Option<String>,
    ratelimit: Option<String>,
    retry_after: Option<String>,
    body: String,
}

async fn get_path(address: SocketAddr, path: &str, headers: &[(&str, &str)]) -> Reply {
    let mut stream = tokio::net::TcpStream::connect(address).await.unwrap();
    let mut request = format!("GET {path} HTTP/1.1\r\nHost: test\r\nConnection: close\r\n");
    for (name, value) in headers {
        request.push_str(&format!("{name}: {value}\r\n"));
    }
    request.push_str("\r\n");
    stream.write_all(request.as_bytes()).await.unwrap();
    let mut response = String::new();
    stream.read_to_string(&mut response).await.unwrap();
    let (head, body) = response.split_once("\r\n\r\n").unwrap();
    let header = |name: &str| {
        head.lines().find_map(|l| {
            let (n, v) = l.split_once(": ")?;
            n.eq_ignore_ascii_case(name).then(|| v.to_string())
        })
    };
    Reply {
        status: head.split(' ').nth(1).unwrap().parse().unwrap(),
        policy: header("RateLimit-Policy"),
        ratelimit: header("RateLimit"),
        retry_after: header("Retry-After"),
        body: body.to_string(),
    }
}

fn app(layer: RateLimitLayer<redis::aio::MultiplexedConnection>) -> Router {
    Router::new()
        .route("/", get(|| async { "ok\n" }))
        .route(
            "/fail",
            get(|| async { (StatusCode::BAD_GATEWAY, "bad gateway\n") }),
        )
        .layer(layer)
}

fn some(s: &str) -> Option<String> {
    Some(s.to_string())
}

#[tokio::test]
async fn headers_on_allowed_and_refused_responses() {
    let server = Server::start(Kind::Module);
    let limits = RateLimits::new(server.multiplexed().await);
    // Three at once, then one every 10 s.
    let limit = Limit::gcra_with_burst(1, Duration::from_secs(10), 3).unwrap();
    let address = serve(app(RateLimitLayer::new(limits, "api", limit))).await;
    let ok = |r: u64, t: u64| Reply {
        status: 200,
        policy: some(r#""api";q=3;w=30"#),
        ratelimit: Some(format!(r#""api";r={r};t={t}"#)),
        retry_after: None,
        body: "ok\n".to_string(),
    };
    assert_eq!(get_path(address, "/", &[]).await, ok(2, 10));
    assert_eq!(get_path(address, "/", &[]).await, ok(1, 20));
    assert_eq!(get_path(address, "/", &[]).await, ok(0, 30));
    let refused = get_path(address, "/", &[]).await;
    assert_eq!(
        refused,
        Reply {
            status: 429,
            policy: some(r#""api";q=3;w=30"#),
            ratelimit: some(r#""api";r=0;t=30"#),
            retry_after: some("10"),
            body: "too many requests\n".to_string(),
        }
    );
    // Keyed by client IP: the key holds the loopback address.
    let mut admin = server.client();
    let exists: bool = redis::cmd("EXISTS")
        .arg("ratelimit:{127.0.0.1}:api")
        .query(&mut admin)
        .unwrap();
    assert!(exists);
}

#[tokio::test]
async fn several_policies_custom_key_and_refunds() {
    let server = Server::start(Kind::Functions);
    let limits = RateLimits::new(server.multiplexed().await);
    let layer = RateLimitLayer::new(
        limits,
        "burst",
        Limit::gcra_with_burst(1, Duration::from_secs(10), 3).unwrap(),
    )
    .and("hourly", Limit::sliding_log(3, HOUR).unwrap())
    .key(|parts| {
        parts
            .headers
            .get("x-client-id")
            .and_then(|v| v.to_str().ok())
            .map(str::to_string)
    })
    .prefix("rl")
    .refund_when(|status| status.is_server_error());
    let address = serve(app(layer)).await;
    let client = [("X-Client-Id", "alice")];
    let line = |r: Reply| {
        format!(
            "{} {} {}",
            r.status,
            r.ratelimit.unwrap_or_default(),
            r.retry_after.unwrap_or_default()
        )
    };
    let policy = get_path(address, "/", &client).await;
    assert_eq!(policy.policy, some(r#""burst";q=3;w=30, "hourly";q=3;w=3600"#));
    assert_eq!(line(policy), r#"200 "burst";r=2;t=10 "#);
    // The failed work is refunded: the header shows the state after it.
    assert_eq!(
        line(get_path(address, "/fail", &client).await),
        r#"502 "burst";r=2;t=10 "#
    );
    assert_eq!(
        line(get_path(address, "/", &client).await),
        r#"200 "burst";r=1;t=20 "#
    );
    assert_eq!(
        line(get_path(address, "/", &client).await),
        r#"200 "burst";r=0;t=30 "#
    );
    assert_eq!(
        line(get_path(address, "/", &client).await),
        r#"429 "hourly";r=0;t=3600 3600"#
    );
    // Another key is another client; no key is not limited at all.
    assert_eq!(
        line(get_path(address, "/", &[("X-Client-Id", "bob")]).await),
        r#"200 "burst";r=2;t=10 "#
    );
    let anonymous = get_path(address, "/", &[]).await;
    assert_eq!(
        (anonymous.status, anonymous.ratelimit, anonymous.policy),
        (200, None, None)
    );
    let mut admin = server.client();
    let exists: i64 = redis::cmd("EXISTS")
        .arg("rl:{alice}:burst")
        .arg("rl:{alice}:hourly")
        .query(&mut admin)
        .unwrap();
    assert_eq!(exists, 2);
}

#[tokio::test]
async fn fail_closed_by_default_or_open() {
    let mut server = Server::start(Kind::Module);
    let limit = Limit::gcra(10, Duration::from_secs(1)).unwrap();
    let closed = serve(app(RateLimitLayer::new(
        RateLimits::new(server.multiplexed().await),
        "api",
        limit,
    )))
    .await;
    let open = serve(app(RateLimitLayer::new(
        RateLimits::new(server.multiplexed().await),
        "api",
        limit,
    )
    .fail_open()))
    .await;
    assert_eq!(get_path(closed, "/", &[]).await.status, 200);
    assert_eq!(get_path(open, "/", &[]).await.status, 200);
    server.kill();
    let r = get_path(closed, "/", &[]).await;
    assert_eq!(
        (r.status, r.body.as_str(), r.ratelimit),
        (503, "rate limiter unavailable\n", None)
    );
    let r = get_path(open, "/", &[]).await;
    assert_eq!(
        (r.status, r.body.as_str(), r.ratelimit, r.policy),
        (200, "ok\n", None, None)
    );
}

#[tokio::test]
async fn a_server_error_fails_closed_too() {
    let server = Server::start(Kind::Module);
    let mut admin = server.client();
    // The key the layer would use holds a string of another kind.
    let () = redis::cmd("SET")
        .arg("ratelimit:{127.0.0.1}:api")
        .arg("x")
        .query(&mut admin)
        .unwrap();
    let limits = RateLimits::new(server.multiplexed().await);
    let address = serve(app(RateLimitLayer::new(
        limits,
        "api",
        Limit::gcra(1, HOUR).unwrap(),
    )))
    .await;
    assert_eq!(get_path(address, "/", &[]).await.status, 503);
}

#[tokio::test]
async fn without_connect_info_the_default_key_is_an_error() {
    let server = Server::start(Kind::Module);
    let limits = RateLimits::new(server.multiplexed().await);
    let address = serve_plain(app(RateLimitLayer::new(
        limits,
        "api",
        Limit::gcra(1, HOUR).unwrap(),
    )))
    .await;
    let r = get_path(address, "/", &[]).await;
    assert_eq!(r.status, 500);
    assert!(
        r.body.contains("into_make_service_with_connect_info"),
        "{}",
        r.body
    );
}
