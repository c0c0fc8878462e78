//! Tags, `RL.LOG` and `RL.INSPECT` (`rl_log`, `rl_inspect`) on every
//! backend, through the blocking and the async client: who used a sliding
//! log, an `all_of`'s tags, the state of each kind of limiter; and the
//! layer's tag function, end to end.

mod common;

use std::time::Duration;

use common::{Kind, Server};
use redis_ratelimit_client::{aio, ConcurrencyLimit, Error, Limit, LogEntry, RateLimits, TagUnits, Take};

const MINUTE: Duration = Duration::from_secs(60);
const HOUR: Duration = Duration::from_secs(3600);

fn totals(pairs: &[(Option<&str>, u64)]) -> Vec<TagUnits> {
    pairs
        .iter()
        .map(|(tag, units)| TagUnits {
            tag: tag.map(|t| t.as_bytes().to_vec()),
            units: *units,
        })
        .collect()
}

const KINDS: [(&str, Kind); 3] = [
    ("module", Kind::Module),
    ("functions", Kind::Functions),
    ("scripts", Kind::EvalOnly),
];

#[test]
fn who_used_a_sliding_log_blocking() {
    for (backend, kind) in KINDS {
        let server = Server::start(kind);
        let limits = RateLimits::new(server.redis());
        let api = limits.limiter(Limit::sliding_log(10, MINUTE).unwrap());
        api.call("ip", Take::n(2).tag("alice")).unwrap();
        api.take("ip").unwrap();
        api.call("ip", Take::n(3).tag(b"bob".to_vec())).unwrap();
        api.call("ip", Take::one().tag("alice")).unwrap();
        assert_eq!(
            limits.log_by_tag("ip", MINUTE, None).unwrap(),
            totals(&[(Some("alice"), 3), (Some("bob"), 3), (None, 1)]),
            "{backend}"
        );
        assert_eq!(
            limits.log_by_tag("ip", MINUTE, Some(1)).unwrap(),
            totals(&[(Some("alice"), 3)]),
            "{backend}"
        );
        let entries: Vec<LogEntry> = limits.log("ip", MINUTE, None).unwrap();
        let shape: Vec<(u64, Option<&[u8]>)> = entries.iter().map(|e| (e.units, e.tag.as_deref())).collect();
        assert_eq!(
            shape,
            [
                (1, Some(&b"alice"[..])),
                (3, Some(&b"bob"[..])),
                (1, None),
                (2, Some(&b"alice"[..]))
            ],
            "{backend}"
        );
        assert!(
            entries.windows(2).all(|w| w[0].instant_us >= w[1].instant_us),
            "{backend}: newest first"
        );
        assert_eq!(limits.log("nobody", MINUTE, None).unwrap(), [], "{backend}");
        let state = limits.inspect("ip").unwrap().unwrap();
        assert_eq!(state.kind(), Some("sliding_log"), "{backend}");
        assert_eq!(
            (state.get("entries"), state.get("tagged")),
            (Some(7), Some(6)),
            "{backend}"
        );
        assert_eq!(
            state.get("oldest_us"),
            entries.last().map(|e| e.instant_us),
            "{backend}"
        );
        assert_eq!(
            state.get("newest_us"),
            entries.first().map(|e| e.instant_us),
            "{backend}"
        );
        assert!(
            state.pttl().is_some_and(|p| p > 0 && p <= 61_000),
            "{backend}: {state:?}"
        );
        // A tag elsewhere than a sliding log: the server's refusal.
        let gcra = limits.limiter(Limit::gcra(10, Duration::from_secs(1)).unwrap());
        assert!(
            matches!(
                gcra.call("g", Take::one().tag("alice")),
                Err(Error::ServerError { .. })
            ),
            "{backend}"
        );
    }
}

#[tokio::test]
async fn all_of_tags_and_inspect_every_kind_async() {
    for (backend, kind) in KINDS {
        let server = Server::start(kind);
        let limits = aio::RateLimits::new(server.redis());
        let both = limits
            .all_of([
                Limit::gcra(10, Duration::from_secs(1)).unwrap(),
                Limit::sliding_log(100, HOUR).unwrap(),
            ])
            .unwrap();
        both.call(&["{u}:burst", "{u}:hourly"], Take::n(2).tag("alice"))
            .await
            .unwrap();
        assert_eq!(
            limits.log_by_tag("{u}:hourly", HOUR, None).await.unwrap(),
            totals(&[(Some("alice"), 2)]),
            "{backend}"
        );
        match limits.log("{u}:burst", HOUR, None).await {
            Err(Error::ServerError { message, .. }) => {
                assert!(
                    message.contains("holds an RL.GCRA state, not an RL.SLIDING_LOG one"),
                    "{backend}: {message}"
                )
            }
            other => panic!("{backend}: {other:?}"),
        }
        let gcra = limits.inspect("{u}:burst").await.unwrap().unwrap();
        assert_eq!(gcra.kind(), Some("gcra"), "{backend}");
        assert_eq!(
            gcra.fields().map(|(n, _)| n).collect::<Vec<_>>(),
            ["tat_us", "pttl"],
            "{backend}"
        );
        assert_eq!(limits.inspect("missing").await.unwrap(), None, "{backend}");
        let bucket = limits.limiter(Limit::token_bucket(10, 1, Duration::from_secs(1)).unwrap());
        bucket.take_n("t", 3).await.unwrap();
        let t = limits.inspect("t").await.unwrap().unwrap();
        assert_eq!(
            (t.kind(), t.get("tokens")),
            (Some("token_bucket"), Some(7)),
            "{backend}"
        );
        let fixed = limits.limiter(Limit::fixed_window(10, HOUR).unwrap());
        fixed.take_n("f", 4).await.unwrap();
        let f = limits.inspect("f").await.unwrap().unwrap();
        assert_eq!((f.kind(), f.get("count")), (Some("fixed"), Some(4)), "{backend}");
        let counter = limits.limiter(Limit::sliding_counter(10, HOUR).unwrap());
        counter.take_n("c", 5).await.unwrap();
        let c = limits.inspect("c").await.unwrap().unwrap();
        assert_eq!(
            (c.kind(), c.get("current")),
            (Some("sliding_counter"), Some(5)),
            "{backend}"
        );
        let jobs = limits.concurrency(ConcurrencyLimit::new(3, MINUTE).unwrap());
        let lease = jobs.acquire_n("q", 2).await.unwrap().lease().unwrap();
        let q = limits.inspect("q").await.unwrap().unwrap();
        assert_eq!(
            (q.kind(), q.get("leases"), q.get("units"), q.get("last_id")),
            (
                Some("concurrency"),
                Some(1),
                Some(2),
                i64::try_from(lease.id()).ok()
            ),
            "{backend}"
        );
        lease.forget();
        let once = limits.limiter(Limit::gcra_with_burst(1, HOUR, 1).unwrap());
        once.take("b").await.unwrap();
        once.call("b", Take::one().block(MINUTE)).await.unwrap();
        let b = limits.inspect("b").await.unwrap().unwrap();
        assert!(b.get("blocked_until_us").is_some(), "{backend}: {b:?}");
    }
}

/// Limit by address, tag by user, then ask who filled the limit: the layer
/// end to end on every backend.
#[tokio::test]
async fn who_caused_it_through_the_layer() {
    use redis_ratelimit_client::layer::RateLimitLayer;
    for (backend, kind) in KINDS {
        let server = Server::start(kind);
        let limits = aio::RateLimits::new(server.redis());
        let layer = RateLimitLayer::new(limits.clone(), "api", Limit::sliding_log(3, MINUTE).unwrap())
            .unwrap()
            .tag(|parts| Some(parts.headers.get("x-user")?.as_bytes().to_vec()))
            .unwrap();
        let app = axum::Router::new()
            .route("/", axum::routing::get(common::http::app_handler))
            .layer(layer.clone());
        let address = common::http::serve(app).await;
        for user in [Some("alice"), Some("alice"), None, Some("bob")] {
            let headers: Vec<(&str, &str)> = user.map(|u| ("x-user", u)).into_iter().collect();
            let reply = common::http::get_path(address, "/", &headers).await;
            let expected = if user == Some("bob") { 429 } else { 200 };
            assert_eq!(reply.status, expected, "{backend}: {user:?}");
        }
        let key = &layer.keys("127.0.0.1")[0];
        assert_eq!(
            limits.log_by_tag(key, MINUTE, None).await.unwrap(),
            totals(&[(Some("alice"), 2), (None, 1)]),
            "{backend}: a refused request logs nothing"
        );
    }
}

/// No answer within the deadline: `Unavailable`, whatever the policy (a
/// reading answers no decision to fail open with).
#[test]
fn a_reading_is_never_failed_open() {
    use common::fake::{Answer, Fake, Step};
    let fake = Fake::start(vec![Step::any(Answer::Silent)]);
    let limits = RateLimits::new(fake.client())
        .timeout(Duration::from_millis(50))
        .unwrap()
        .fail_open(true);
    match limits.log("k", MINUTE, None) {
        Err(e @ Error::Unavailable { .. }) => {
            assert_eq!(e.to_string(), "rate limiter unavailable: no answer within 50 ms")
        }
        other => panic!("{other:?}"),
    }
}
