//! Redis Cluster (three primaries): the blocking and the async cluster
//! clients, with the module and without it (the library loaded by the
//! client on every primary); calls over keys in many slots, `all_of` over
//! keys that share a hash tag and over keys that do not (`CROSSSLOT`).

mod common;

use std::time::Duration;

use common::{cmd, Cluster, Kind};
use redis_ratelimit_client::{aio, Backend, ConcurrencyLimit, Error, Limit, RateLimits, TagUnits, Take};

const HOUR: Duration = Duration::from_secs(3600);

/// A cluster client as the README builds it: no retries of its own.
fn client(cluster: &Cluster) -> redis::cluster::ClusterClient {
    redis::cluster::ClusterClient::builder(cluster.urls())
        .retries(0)
        .build()
        .unwrap()
}

fn blocking(cluster: &Cluster, expected: Backend) {
    let limits = RateLimits::new(client(cluster));
    assert_eq!(limits.backend().unwrap(), expected);
    let api = limits.limiter(Limit::gcra_with_burst(1, HOUR, 2).unwrap());
    for i in 0..60 {
        let key = format!("user:{i}");
        assert_eq!(api.take(&key).unwrap().remaining, 1, "{key}");
        assert_eq!(api.take(&key).unwrap().remaining, 0, "{key}");
        assert!(!api.take(&key).unwrap().allowed, "{key}");
    }
    // Every primary holds some of the keys.
    for node in &cluster.nodes {
        let n: i64 = cmd(&["DBSIZE"]).query(&mut node.client()).unwrap();
        assert!(n > 0, "a primary holds none of the 60 keys");
    }
    // Several limits over one hash tag, in many slots.
    let both = limits
        .all_of([
            Limit::gcra(1, HOUR).unwrap(),
            Limit::sliding_log(1, HOUR).unwrap(),
        ])
        .unwrap();
    for i in 0..30 {
        let keys = [format!("{{tenant:{i}}}:a"), format!("{{tenant:{i}}}:b")];
        let keys = [keys[0].as_str(), keys[1].as_str()];
        assert!(both.take(&keys).unwrap().allowed);
        let d = both.take(&keys).unwrap();
        assert_eq!((d.allowed, d.binding), (false, 1));
    }
    match both.take(&["tenant:a", "tenant:b"]) {
        Err(Error::ServerError { code, .. }) => assert_eq!(code, "CROSSSLOT"),
        other => panic!("keys in two slots: {other:?}"),
    }
    let jobs = limits.concurrency(ConcurrencyLimit::new(1, HOUR).unwrap());
    for i in 0..20 {
        let key = format!("jobs:{i}");
        let lease = jobs.acquire(&key).unwrap().lease().expect("a lease");
        assert!(!jobs.acquire(&key).unwrap().is_granted());
        drop(lease);
        assert!(jobs.acquire(&key).unwrap().is_granted(), "released on drop");
    }
    // Tags and the readings go to each key's primary.
    let log = limits.limiter(Limit::sliding_log(10, HOUR).unwrap());
    for i in 0..30 {
        let key = format!("log:{i}");
        log.call(&key, Take::n(2).tag(format!("user:{i}"))).unwrap();
        let tag = Some(format!("user:{i}").into_bytes());
        assert_eq!(
            limits.log_by_tag(&key, HOUR, None).unwrap(),
            [TagUnits { tag, units: 2 }]
        );
        let state = limits.inspect(&key).unwrap().unwrap();
        assert_eq!(
            (state.kind(), state.get("tagged")),
            (Some("sliding_log"), Some(2)),
            "{key}"
        );
    }
}

async fn non_blocking(cluster: &Cluster, expected: Backend) {
    let limits = aio::RateLimits::new(client(cluster));
    assert_eq!(limits.backend().await.unwrap(), expected);
    let api = limits.limiter(Limit::token_bucket(2, 1, HOUR).unwrap());
    for i in 0..60 {
        let key = format!("async:{i}");
        assert_eq!(api.take(&key).await.unwrap().remaining, 1, "{key}");
        assert_eq!(api.take(&key).await.unwrap().remaining, 0, "{key}");
        assert!(!api.take(&key).await.unwrap().allowed, "{key}");
    }
    let both = limits
        .all_of([
            Limit::gcra(1, HOUR).unwrap(),
            Limit::sliding_log(1, HOUR).unwrap(),
        ])
        .unwrap();
    for i in 0..30 {
        let keys = [format!("{{async:{i}}}:a"), format!("{{async:{i}}}:b")];
        let keys = [keys[0].as_str(), keys[1].as_str()];
        assert!(both.take(&keys).await.unwrap().allowed);
        assert!(!both.take(&keys).await.unwrap().allowed);
    }
    let jobs = limits.concurrency(ConcurrencyLimit::new(1, HOUR).unwrap());
    for i in 0..20 {
        let key = format!("async-jobs:{i}");
        let lease = jobs.acquire(&key).await.unwrap().lease().expect("a lease");
        assert_eq!(lease.release().await.unwrap(), 1);
    }
    let log = limits.limiter(Limit::sliding_log(10, HOUR).unwrap());
    for i in 0..30 {
        let key = format!("async-log:{i}");
        log.call(&key, Take::one().tag("someone")).await.unwrap();
        let entries = limits.log(&key, HOUR, Some(5)).await.unwrap();
        assert_eq!(entries.len(), 1, "{key}");
        assert_eq!(entries[0].tag.as_deref(), Some(&b"someone"[..]), "{key}");
        assert!(limits.inspect(&format!("{key}:missing")).await.unwrap().is_none());
    }
}

#[test]
fn cluster_with_the_module() {
    let cluster = Cluster::start(Kind::Module);
    blocking(&cluster, Backend::Module);
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
        .block_on(non_blocking(&cluster, Backend::Module));
}

#[test]
fn cluster_with_the_functions_loaded_on_every_primary() {
    let cluster = Cluster::start(Kind::Functions);
    let loaded_everywhere = || {
        for node in &cluster.nodes {
            let version: String = cmd(&["FCALL", "rl_version", "0"])
                .query(&mut node.client())
                .unwrap();
            assert_eq!(version, redis_ratelimit_client::VERSION);
        }
    };
    // The async client loads the library on every primary...
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
        .block_on(non_blocking(&cluster, Backend::Functions));
    loaded_everywhere();
    // ...and so does the blocking one, once it is gone from every node.
    for node in &cluster.nodes {
        let () = cmd(&["FUNCTION", "FLUSH"]).query(&mut node.client()).unwrap();
    }
    blocking(&cluster, Backend::Functions);
    loaded_everywhere();
}

/// Moves `key`'s slot (and the key) to another primary, as a reshard does.
fn move_slot(cluster: &Cluster, key: &str) {
    let slot: i64 = cmd(&["CLUSTER", "KEYSLOT", key])
        .query(&mut cluster.nodes[0].client())
        .unwrap();
    let owns = |node: &common::Server| {
        let n: i64 = cmd(&["CLUSTER", "COUNTKEYSINSLOT", &slot.to_string()])
            .query(&mut node.client())
            .unwrap();
        n > 0
    };
    let from = cluster.nodes.iter().find(|n| owns(n)).expect("the key's node");
    let to = cluster.nodes.iter().find(|n| n.port != from.port).unwrap();
    let id =
        |node: &common::Server| -> String { cmd(&["CLUSTER", "MYID"]).query(&mut node.client()).unwrap() };
    let (from_id, to_id, slot) = (id(from), id(to), slot.to_string());
    let () = cmd(&["CLUSTER", "SETSLOT", &slot, "IMPORTING", &from_id])
        .query(&mut to.client())
        .unwrap();
    let () = cmd(&["CLUSTER", "SETSLOT", &slot, "MIGRATING", &to_id])
        .query(&mut from.client())
        .unwrap();
    let port = to.port.to_string();
    let () = cmd(&["MIGRATE", "127.0.0.1", &port, "", "0", "5000", "KEYS", key])
        .query(&mut from.client())
        .unwrap();
    for node in &cluster.nodes {
        let () = cmd(&["CLUSTER", "SETSLOT", &slot, "NODE", &to_id])
            .query(&mut node.client())
            .unwrap();
    }
}

#[test]
fn a_slot_that_moves_is_an_outage_of_one_call() {
    // A cluster client with no retries does not follow MOVED: the call that
    // meets it is Unavailable (the failure policy applies, never a 500), and
    // the next one reads the slots afresh and finds the key, its state
    // moved with it.
    let cluster = Cluster::start(Kind::Module);
    let limit = Limit::gcra_with_burst(1, HOUR, 3).unwrap();
    let blocking = RateLimits::new(client(&cluster)).limiter(limit);
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let non_blocking = aio::RateLimits::new(client(&cluster)).limiter(limit);
    for (i, key) in ["moving:a", "moving:b"].into_iter().enumerate() {
        let take = |key| {
            if i == 0 {
                blocking.take(key)
            } else {
                runtime.block_on(non_blocking.take(key))
            }
        };
        assert_eq!(take(key).unwrap().remaining, 2);
        move_slot(&cluster, key);
        match take(key) {
            Err(e @ Error::Unavailable { .. }) => {
                assert!(e.to_string().contains("the keys' slot is moving (MOVED "), "{e}")
            }
            other => panic!("the call that meets MOVED: {other:?}"),
        }
        assert_eq!(take(key).unwrap().remaining, 1, "the state moved with its key");
    }
}
