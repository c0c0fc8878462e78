//! The metrics (clients/contract/metrics.json, SPEC 20): the space-saving
//! top-k's cases, exact; and, with the feature `prometheus`, a known
//! sequence of calls against real servers (the module, the functions
//! library) and the layer, scraped with the text encoder and compared
//! sample by sample, the families' names, types, help and labels with the
//! contract's; failing open and closed on a black-holed port.

mod common;

use common::contract;
use redis_ratelimit_client::TopK;
use serde_json::Value as Json;

fn text(v: &Json) -> &str {
    v.as_str().unwrap_or_else(|| panic!("not a string: {v}"))
}

#[test]
fn top_k_cases() {
    let doc = contract("metrics.json");
    let cases = doc["top_k"]["cases"].as_array().expect("top_k.cases");
    assert!(!cases.is_empty());
    for case in cases {
        let k = case["k"].as_u64().expect("k") as usize;
        let mut top = TopK::new(k);
        for refusal in case["refusals"].as_array().expect("refusals") {
            top.refused(text(&refusal[0]), text(&refusal[1]));
        }
        let mut expect: Vec<(String, String, u64)> = case["expect"]
            .as_array()
            .expect("expect")
            .iter()
            .map(|e| {
                (
                    text(&e[0]).to_string(),
                    text(&e[1]).to_string(),
                    e[2].as_u64().unwrap(),
                )
            })
            .collect();
        expect.sort();
        assert_eq!(top.entries(), expect, "case {case}");
    }
}

#[cfg(feature = "prometheus")]
mod exported {
    use std::collections::BTreeMap;
    use std::time::Duration;

    use axum::routing::get;
    use axum::Router;
    use prometheus::{Registry, TextEncoder};
    use redis_ratelimit_client::metrics::{PrometheusMetrics, DURATION_BUCKETS, TOP_K_DEFAULT};
    use redis_ratelimit_client::{
        aio, layer::RateLimitLayer, ConcurrencyLimit, Error, Limit, RateLimits, Take,
    };

    use super::{contract, text};
    use crate::common::http::{app_handler, client_id, get_path, serve};
    use crate::common::{black_hole, Kind, Server};

    fn scrape(registry: &Registry) -> String {
        TextEncoder::new().encode_to_string(&registry.gather()).unwrap()
    }

    /// The samples of the scrape, but the histogram's buckets (of a
    /// time) and sum: `name{labels} value`, in order.
    fn samples(scrape: &str) -> Vec<&str> {
        scrape
            .lines()
            .filter(|l| !l.starts_with('#'))
            .filter(|l| !l.contains("_seconds_bucket") && !l.contains("_seconds_sum"))
            .collect()
    }

    /// Each family's type, help and label names, from the `# TYPE` and
    /// `# HELP` lines and the samples.
    fn families(scrape: &str) -> BTreeMap<String, (String, String, Vec<String>)> {
        let mut out: BTreeMap<String, (String, String, Vec<String>)> = BTreeMap::new();
        for line in scrape.lines() {
            if let Some(rest) = line.strip_prefix("# TYPE ") {
                let (name, kind) = rest.split_once(' ').unwrap();
                out.entry(name.to_string()).or_default().0 = kind.to_string();
            } else if let Some(rest) = line.strip_prefix("# HELP ") {
                let (name, help) = rest.split_once(' ').unwrap();
                out.entry(name.to_string()).or_default().1 = help.to_string();
            } else {
                let (series, _) = line.split_once(' ').unwrap();
                let (name, labels) = series.split_once('{').unwrap_or((series, "}"));
                let family = ["_bucket", "_sum", "_count"]
                    .iter()
                    .find_map(|s| name.strip_suffix(s).filter(|f| out.contains_key(*f)))
                    .unwrap_or(name);
                let mut names: Vec<String> = labels
                    .trim_end_matches('}')
                    .split(',')
                    .filter(|l| !l.is_empty())
                    .map(|l| l.split_once('=').unwrap().0.to_string())
                    .filter(|l| l != "le")
                    .collect();
                names.sort();
                let entry = out.get_mut(family).unwrap();
                if entry.2.is_empty() {
                    entry.2 = names;
                } else {
                    assert_eq!(entry.2, names, "{family}: one set of labels");
                }
            }
        }
        out
    }

    /// The contract's families, as `families` reads a scrape.
    fn contract_families() -> BTreeMap<String, (String, String, Vec<String>)> {
        let doc = contract("metrics.json");
        doc["metrics"]
            .as_array()
            .unwrap()
            .iter()
            .map(|m| {
                let mut labels: Vec<String> = m["labels"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|l| text(l).to_string())
                    .collect();
                labels.sort();
                let help = text(&m["help"]).to_string();
                (
                    text(&m["name"]).to_string(),
                    (text(&m["type"]).to_string(), help, labels),
                )
            })
            .collect()
    }

    #[test]
    fn buckets_and_top_k_default_are_the_contracts() {
        let doc = contract("metrics.json");
        let buckets: Vec<f64> = doc["duration_buckets_seconds"]
            .as_array()
            .unwrap()
            .iter()
            .map(|b| b.as_f64().unwrap())
            .collect();
        assert_eq!(buckets, DURATION_BUCKETS);
        assert_eq!(doc["top_k_default"].as_u64(), Some(TOP_K_DEFAULT as u64));
    }

    #[test]
    fn a_known_sequence_on_the_module_and_the_functions() {
        for (kind, backend) in [(Kind::Module, "module"), (Kind::Functions, "functions")] {
            let server = Server::start(kind);
            let registry = Registry::new();
            let metrics = PrometheusMetrics::new(&registry, TOP_K_DEFAULT).unwrap();
            let limits = RateLimits::new(server.redis()).metrics(metrics);
            let api = limits
                .limiter(Limit::sliding_log(2, Duration::from_secs(60)).unwrap())
                .named("api")
                .unwrap();
            assert!(api.take("user:1").unwrap().allowed);
            assert!(api.take("user:1").unwrap().allowed);
            assert!(!api.take("user:1").unwrap().allowed);
            // Not counted: a peek, a query, a refund.
            api.peek("user:2").unwrap();
            api.query("user:2").unwrap();
            api.refund("user:1", 1).unwrap();
            // Unnamed: the algorithm's name; AT_MOST counts the units granted.
            let fixed = limits.limiter(Limit::fixed_window(3, Duration::from_secs(60)).unwrap());
            assert_eq!(fixed.call("user:3", Take::n(5).at_most()).unwrap().granted, 3);
            assert!(!fixed.take_n("user:3", 2).unwrap().allowed);
            // Leases: an acquire counts, its release does not.
            let jobs = limits.concurrency(ConcurrencyLimit::new(1, Duration::from_secs(60)).unwrap());
            let lease = jobs.acquire("job:1").unwrap();
            assert!(lease.is_granted());
            assert!(!jobs.acquire("job:1").unwrap().is_granted());
            drop(lease);
            let scrape = scrape(&registry);
            assert_eq!(
                samples(&scrape),
                [
                    format!("ratelimit_client_backend{{backend=\"{backend}\"}} 1"),
                    r#"ratelimit_client_call_duration_seconds_count{limit="api"} 3"#.to_string(),
                    r#"ratelimit_client_call_duration_seconds_count{limit="concurrency"} 2"#.to_string(),
                    r#"ratelimit_client_call_duration_seconds_count{limit="fixed_window"} 2"#.to_string(),
                    r#"ratelimit_client_decisions_total{limit="api",outcome="allowed"} 2"#.to_string(),
                    r#"ratelimit_client_decisions_total{limit="api",outcome="refused"} 1"#.to_string(),
                    r#"ratelimit_client_decisions_total{limit="concurrency",outcome="allowed"} 1"#
                        .to_string(),
                    r#"ratelimit_client_decisions_total{limit="concurrency",outcome="refused"} 1"#
                        .to_string(),
                    r#"ratelimit_client_decisions_total{limit="fixed_window",outcome="allowed"} 1"#
                        .to_string(),
                    r#"ratelimit_client_decisions_total{limit="fixed_window",outcome="refused"} 1"#
                        .to_string(),
                    r#"ratelimit_client_top_refused{identity="job:1",limit="concurrency"} 1"#.to_string(),
                    r#"ratelimit_client_top_refused{identity="user:1",limit="api"} 1"#.to_string(),
                    r#"ratelimit_client_top_refused{identity="user:3",limit="fixed_window"} 1"#.to_string(),
                    r#"ratelimit_client_units_total{limit="api",outcome="allowed"} 2"#.to_string(),
                    r#"ratelimit_client_units_total{limit="api",outcome="refused"} 1"#.to_string(),
                    r#"ratelimit_client_units_total{limit="concurrency",outcome="allowed"} 1"#.to_string(),
                    r#"ratelimit_client_units_total{limit="concurrency",outcome="refused"} 1"#.to_string(),
                    r#"ratelimit_client_units_total{limit="fixed_window",outcome="allowed"} 3"#.to_string(),
                    r#"ratelimit_client_units_total{limit="fixed_window",outcome="refused"} 2"#.to_string(),
                ],
                "{kind:?}:\n{scrape}"
            );
            assert!(
                scrape.contains(r#"ratelimit_client_call_duration_seconds_bucket{limit="api",le="+Inf"} 3"#)
            );
            assert_eq!(families(&scrape), contract_families(), "{kind:?}");
        }
    }

    #[test]
    fn an_all_of_is_counted_under_its_name_and_keys() {
        let server = Server::start(Kind::Module);
        let registry = Registry::new();
        let limits = RateLimits::new(server.redis()).metrics(PrometheusMetrics::new(&registry, 10).unwrap());
        let minute = Duration::from_secs(60);
        let both = limits
            .all_of([
                Limit::sliding_log(1, minute).unwrap(),
                Limit::fixed_window(5, minute).unwrap(),
            ])
            .unwrap();
        let keys = ["{u:1}:burst", "{u:1}:hourly"];
        assert!(both.take(&keys).unwrap().allowed);
        assert!(!both.take(&keys).unwrap().allowed);
        let scrape = scrape(&registry);
        let samples = samples(&scrape);
        assert!(
            samples.contains(
                &r#"ratelimit_client_top_refused{identity="{u:1}:burst",limit="sliding_log+fixed_window"} 1"#
            ),
            "{scrape}"
        );
        assert!(samples.contains(
            &r#"ratelimit_client_decisions_total{limit="sliding_log+fixed_window",outcome="refused"} 1"#
        ));
    }

    #[test]
    fn a_second_registration_and_a_top_k_past_its_cap_are_refused() {
        let registry = Registry::new();
        PrometheusMetrics::new(&registry, 10).unwrap();
        let again = PrometheusMetrics::new(&registry, 10).unwrap_err();
        assert!(
            matches!(&again, Error::InvalidParameter { name: "registry", .. }),
            "{again:?}"
        );
        // A registry holding one of the names: nothing is left registered.
        let taken = Registry::new();
        let gauge = prometheus::IntGauge::new("ratelimit_client_top_refused", "another").unwrap();
        taken.register(Box::new(gauge)).unwrap();
        PrometheusMetrics::new(&taken, 10).unwrap_err();
        let help = contract_families()["ratelimit_client_decisions_total"].1.clone();
        let opts = prometheus::Opts::new("ratelimit_client_decisions_total", help);
        let decisions = prometheus::IntCounterVec::new(opts, &["limit", "outcome"]).unwrap();
        taken
            .register(Box::new(decisions))
            .expect("the first collector was taken out again");
        let past = PrometheusMetrics::new(&Registry::new(), 10_001).unwrap_err();
        assert_eq!(
            past.to_string(),
            "top_k must be an integer from 0 to 10000, got 10001"
        );
    }

    #[test]
    fn failing_open_and_closed_on_a_black_holed_port() {
        let registry = Registry::new();
        let limits =
            RateLimits::new(redis::Client::open(format!("redis://127.0.0.1:{}/", black_hole())).unwrap())
                .timeout(Duration::from_millis(50))
                .unwrap()
                .metrics(PrometheusMetrics::new(&registry, 10).unwrap());
        let limit = Limit::gcra(10, Duration::from_secs(1)).unwrap();
        let closed = limits.limiter(limit).named("api").unwrap();
        assert!(closed.take("user:1").unwrap_err().is_unavailable());
        let open = limits
            .clone()
            .fail_open(true)
            .limiter(limit)
            .named("api")
            .unwrap();
        assert!(open.take_n("user:1", 3).unwrap().failed_open);
        let scrape = scrape(&registry);
        assert_eq!(
            samples(&scrape),
            [
                r#"ratelimit_client_call_duration_seconds_count{limit="api"} 2"#,
                r#"ratelimit_client_decisions_total{limit="api",outcome="failed_closed"} 1"#,
                r#"ratelimit_client_decisions_total{limit="api",outcome="failed_open"} 1"#,
                r#"ratelimit_client_units_total{limit="api",outcome="failed_closed"} 1"#,
                r#"ratelimit_client_units_total{limit="api",outcome="failed_open"} 3"#,
            ],
            "{scrape}"
        );
        // Each call waited out its 50 ms deadline.
        assert!(scrape.contains(r#"ratelimit_client_call_duration_seconds_bucket{limit="api",le="0.025"} 0"#));
    }

    #[tokio::test]
    async fn the_layer_counts_its_identity_under_its_names() {
        let server = Server::start(Kind::Module);
        let registry = Registry::new();
        let limits =
            aio::RateLimits::new(server.redis()).metrics(PrometheusMetrics::new(&registry, 1).unwrap());
        let layer = RateLimitLayer::new(
            limits,
            "api",
            Limit::sliding_log(1, Duration::from_secs(60)).unwrap(),
        )
        .unwrap()
        .and(
            "hourly",
            Limit::fixed_window(100, Duration::from_secs(3600)).unwrap(),
        )
        .unwrap()
        .key(client_id);
        let address = serve(Router::new().route("/", get(app_handler)).layer(layer)).await;
        let statuses = [
            get_path(address, "/", &[("x-client-id", "alice")]).await.status,
            get_path(address, "/", &[("x-client-id", "alice")]).await.status,
            get_path(address, "/", &[("x-client-id", "bob")]).await.status,
            get_path(address, "/", &[("x-client-id", "bob")]).await.status,
        ];
        assert_eq!(statuses, [200, 429, 200, 429]);
        let scrape = scrape(&registry);
        let samples = samples(&scrape);
        // k = 1: bob's refusal replaced alice's entry, and got its count + 1.
        assert!(
            samples.contains(&r#"ratelimit_client_top_refused{identity="bob",limit="api+hourly"} 2"#),
            "{scrape}"
        );
        assert!(!scrape.contains("alice"), "{scrape}");
        assert!(
            samples.contains(&r#"ratelimit_client_decisions_total{limit="api+hourly",outcome="refused"} 2"#)
        );
        assert!(
            samples.contains(&r#"ratelimit_client_decisions_total{limit="api+hourly",outcome="allowed"} 2"#)
        );
    }
}
