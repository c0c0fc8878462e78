//! The async client: over a multiplexed connection and a
//! ConnectionManager, on the module and on the functions library; leases
//! released explicitly and on drop (by a spawned task); many tasks at once
//! sharing one discovery of the backend.

mod common;

use std::time::{Duration, Instant};

use common::{assert_left, calls, elapsed_ms, Kind, Server};
use redis_ratelimit_client::aio::RateLimits;
use redis_ratelimit_client::{Acquisition, AsyncConnector, Backend, ConcurrencyLimit, Error, Limit, Take};

const HOUR: Duration = Duration::from_secs(3600);

async fn scenario<C: AsyncConnector>(limits: &RateLimits<C>) {
    let gcra = limits.limiter(Limit::gcra_with_burst(1, HOUR, 3).unwrap());
    let start = Instant::now();
    let d = gcra.take("gcra").await.unwrap();
    assert_eq!((d.allowed, d.remaining, d.reset), (true, 2, HOUR));
    let d = gcra.take_n("gcra", 2).await.unwrap();
    assert_eq!((d.allowed, d.remaining), (true, 0));
    let d = gcra.take("gcra").await.unwrap();
    assert_eq!((d.allowed, d.remaining, d.granted), (false, 0, 0));
    assert_left(d.retry_after, HOUR, elapsed_ms(start), "retry_after");
    assert!(!gcra.peek("gcra").await.unwrap().allowed);
    assert_eq!(gcra.query("gcra").await.unwrap().remaining, 0);
    assert_eq!(gcra.refund("gcra", 2).await.unwrap().remaining, 2);
    assert_eq!(gcra.force("gcra", 4).await.unwrap().remaining, 0);
    assert_eq!(gcra.at_most("batch", 5).await.unwrap().granted, 3);
    let paced = limits.limiter(Limit::gcra(1, HOUR).unwrap());
    assert!(paced.take("paced").await.unwrap().allowed);
    let d = paced.wait("paced", HOUR * 2).await.unwrap();
    assert!(d.allowed && d.retry_after.is_some());
    let d = paced.call("paced", Take::one().block(HOUR)).await.unwrap();
    assert!(!d.allowed);

    let both = limits
        .all_of([
            Limit::gcra_with_burst(1, HOUR, 3).unwrap(),
            Limit::sliding_log(2, HOUR).unwrap(),
        ])
        .unwrap();
    let keys = ["{u}:burst", "{u}:hourly"];
    let d = both.take(&keys).await.unwrap();
    assert_eq!((d.allowed, d.remaining, d.binding), (true, 1, 2));
    let d = both.call(&keys, Take::n(2)).await.unwrap();
    assert_eq!((d.allowed, d.remaining, d.binding), (false, 1, 2));

    let jobs = limits.concurrency(ConcurrencyLimit::new(1, HOUR).unwrap());
    let lease = jobs.acquire("jobs").await.unwrap().lease().expect("a lease");
    assert!(!jobs.acquire("jobs").await.unwrap().is_granted());
    assert!(lease.renew(HOUR).await.unwrap());
    assert_eq!(lease.release().await.unwrap(), 1);
    // Dropped unreleased: a task releases it.
    let lease = jobs
        .acquire("jobs")
        .await
        .unwrap()
        .lease()
        .expect("a lease again");
    let id = lease.id();
    drop(lease);
    let deadline = Instant::now() + Duration::from_secs(5);
    while jobs.peek("jobs", 0).await.unwrap().remaining != 1 {
        assert!(Instant::now() < deadline, "the dropped lease was never released");
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    assert_eq!(jobs.release("jobs", id).await.unwrap(), 0);
    match jobs.acquire_n("jobs", 2).await.unwrap() {
        Acquisition::Refused(d) => assert_eq!(d.retry_after, None, "two units of one: never"),
        Acquisition::Granted(_) => panic!("two units of one"),
    }

    match limits
        .limiter(Limit::fixed_window(1, HOUR).unwrap())
        .take("gcra")
        .await
    {
        Err(Error::ServerError { code, message }) => {
            assert!(
                message.starts_with("ERR ") && message.contains("GCRA"),
                "{code} {message}"
            );
        }
        other => panic!("a key of another algorithm: {other:?}"),
    }
}

#[tokio::test]
async fn its_own_connection_on_the_module() {
    let server = Server::start(Kind::Module);
    let limits = RateLimits::new(server.redis());
    assert_eq!(limits.backend().await.unwrap(), Backend::Module);
    scenario(&limits).await;
}

#[tokio::test]
async fn multiplexed_on_the_module() {
    let server = Server::start(Kind::Module);
    let limits = RateLimits::new(server.multiplexed().await);
    assert_eq!(limits.backend().await.unwrap(), Backend::Module);
    scenario(&limits).await;
}

#[tokio::test]
async fn connection_manager_on_the_functions() {
    let server = Server::start(Kind::Functions);
    let client = redis::Client::open(server.url()).unwrap();
    let limits = RateLimits::new(client.get_connection_manager().await.unwrap());
    assert_eq!(limits.backend().await.unwrap(), Backend::Functions);
    scenario(&limits).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn many_tasks_one_discovery() {
    let server = Server::start(Kind::Functions);
    let limits = RateLimits::new(server.multiplexed().await);
    let api = limits.limiter(Limit::fixed_window(50, Duration::from_secs(1_000_000_000)).unwrap());
    let tasks: Vec<_> = (0..64)
        .map(|_| {
            let api = api.clone();
            tokio::spawn(async move { api.take("shared").await.unwrap().allowed })
        })
        .collect();
    let mut allowed = 0;
    for t in tasks {
        allowed += usize::from(t.await.unwrap());
    }
    assert_eq!(allowed, 50);
    let mut admin = server.client();
    // One search (its FCALL rl_version and its load), then the 64 calls.
    assert_eq!(calls(&mut admin, "function|load"), 1, "one load");
    assert_eq!(calls(&mut admin, "fcall"), 1 + 64, "one search");
}

#[tokio::test]
async fn library_lost_is_loaded_again_once() {
    let server = Server::start(Kind::Functions);
    let limits = RateLimits::new(server.multiplexed().await);
    let api = limits.limiter(Limit::gcra_with_burst(1, HOUR, 3).unwrap());
    assert_eq!(api.take("k").await.unwrap().remaining, 2);
    let mut admin = server.client();
    let () = redis::cmd("FUNCTION").arg("FLUSH").query(&mut admin).unwrap();
    let d = api.take("k").await.unwrap();
    assert_eq!((d.allowed, d.remaining), (true, 1));
    assert_eq!(calls(&mut admin, "function|load"), 2);
}
