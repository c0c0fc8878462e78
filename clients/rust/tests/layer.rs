//! The tower layer in front of a real axum server on loopback, called over
//! TCP: the IETF headers on allowed and refused responses, `Retry-After`,
//! client IP and custom keys, several limits in one `RL.ALL`, refunds of
//! failed work, failing closed or open when Redis is down, a server's
//! refusal as a 500, and the start-up check.

mod common;

use std::time::Duration;

use axum::http::StatusCode;
use axum::routing::get;
use axum::Router;
use common::http::{app_handler, get_path, serve, serve_plain, Reply};
use common::{Kind, Server};
use redis_ratelimit_client::aio::RateLimits;
use redis_ratelimit_client::layer::RateLimitLayer;
use redis_ratelimit_client::Limit;

const HOUR: Duration = Duration::from_secs(3600);

fn app<C: redis_ratelimit_client::AsyncConnector>(layer: RateLimitLayer<C>) -> Router {
    Router::new()
        .route("/", get(app_handler))
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
    let address = serve(app(RateLimitLayer::new(limits, "api", limit).unwrap())).await;
    let ok = |r: u64, t: u64| Reply {
        status: 200,
        policy: some(r#""api";q=3;w=30"#),
        ratelimit: Some(format!(r#""api";r={r};t={t}"#)),
        retry_after: None,
        body: "ok\n".to_string(),
        seen: some("decision"),
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
            seen: None,
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
    .unwrap()
    .and("hourly", Limit::sliding_log(3, HOUR).unwrap())
    .unwrap()
    .key(|parts| {
        parts
            .headers
            .get("x-client-id")
            .and_then(|v| v.to_str().ok())
            .map(str::to_string)
    })
    .prefix("rl:")
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
    let limits = RateLimits::new(server.redis());
    let closed = serve(app(RateLimitLayer::new(limits.clone(), "api", limit).unwrap())).await;
    let open = serve(app(RateLimitLayer::new(
        limits.clone().fail_open(true),
        "api",
        limit,
    )
    .unwrap()))
    .await;
    // The layer's own policy over its client's.
    let own_open = serve(app(RateLimitLayer::new(limits, "api", limit)
        .unwrap()
        .fail_open(true)))
    .await;
    for address in [closed, open, own_open] {
        assert_eq!(get_path(address, "/", &[]).await.status, 200);
    }
    server.kill();
    let r = get_path(closed, "/", &[]).await;
    assert_eq!(
        (r.status, r.body.as_str(), r.ratelimit, r.retry_after),
        (503, "rate limiter unavailable\n", None, some("1"))
    );
    for address in [open, own_open] {
        let r = get_path(address, "/", &[]).await;
        assert_eq!(
            (
                r.status,
                r.body.as_str(),
                r.ratelimit,
                r.policy,
                r.retry_after,
                r.seen
            ),
            (200, "ok\n", None, None, None, some("failed_open"))
        );
    }
}

#[tokio::test]
async fn a_server_error_is_a_500_never_failed_open() {
    let server = Server::start(Kind::Module);
    let mut admin = server.client();
    // The key the layer would use holds a string of another kind.
    let () = redis::cmd("SET")
        .arg("ratelimit:{127.0.0.1}:api")
        .arg("x")
        .query(&mut admin)
        .unwrap();
    let limits = RateLimits::new(server.redis()).fail_open(true);
    let layer = RateLimitLayer::new(limits, "api", Limit::gcra(1, HOUR).unwrap()).unwrap();
    let address = serve(app(layer)).await;
    let r = get_path(address, "/", &[]).await;
    assert_eq!((r.status, r.ratelimit, r.retry_after), (500, None, None));
}

#[tokio::test]
async fn the_start_up_check_finds_what_the_server_refuses() {
    // Past the module's and the library's default cap of 10,000.
    let log = Limit::sliding_log(20_000, HOUR).unwrap();
    for kind in [Kind::Module, Kind::Functions] {
        let words = common::past_the_cap(kind);
        let server = Server::start(kind);
        let layer = RateLimitLayer::new(RateLimits::new(server.redis()), "hourly", log).unwrap();
        match layer.check().await {
            Err(e @ redis_ratelimit_client::Error::ServerError { .. }) => assert_eq!(e.to_string(), words),
            other => panic!("{kind:?}: {other:?}"),
        }
        // Under the cap, the check passes and takes nothing.
        let fine = RateLimitLayer::new(
            RateLimits::new(server.redis()),
            "hourly",
            Limit::sliding_log(10_000, HOUR).unwrap(),
        )
        .unwrap();
        fine.check().await.unwrap();
        let mut admin = server.client();
        let keys: Vec<String> = redis::cmd("KEYS").arg("*").query(&mut admin).unwrap();
        assert_eq!(keys, Vec::<String>::new(), "{kind:?}: a PEEK writes nothing");
    }
    // A server that does not answer is no reason not to start.
    let mut server = Server::start(Kind::Module);
    let limits = RateLimits::new(server.redis());
    server.kill();
    let layer = RateLimitLayer::new(limits, "hourly", log).unwrap();
    layer.check().await.unwrap();
}

#[tokio::test]
async fn without_connect_info_the_default_key_is_an_error() {
    let server = Server::start(Kind::Module);
    let limits = RateLimits::new(server.multiplexed().await);
    let address = serve_plain(app(RateLimitLayer::new(
        limits,
        "api",
        Limit::gcra(1, HOUR).unwrap(),
    )
    .unwrap()))
    .await;
    let r = get_path(address, "/", &[]).await;
    assert_eq!(r.status, 500);
    assert!(
        r.body.contains("into_make_service_with_connect_info"),
        "{}",
        r.body
    );
}
