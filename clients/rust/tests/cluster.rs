//! Redis Cluster (three primaries): the blocking and the async cluster
//! clients, with the module and without it (the library loaded by the
//! client on every primary); calls over keys in many slots, `all_of` over
//! keys that share a hash tag and over keys that do not (`CROSSSLOT`).

mod common;

use std::time::Duration;

use common::{cmd, Cluster, Kind};
use redis_ratelimit_client::{aio, Backend, ConcurrencyLimit, Error, Limit, RateLimits};

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
