//! The async client, over tokio: the same API as the blocking one, each
//! call a future.

use std::sync::Arc;
use std::time::Duration;

use redis::Value;
use tokio::sync::OnceCell;

use crate::backend::Backend;
use crate::call::{self, Found, Plan};
use crate::conn::AsyncConnection;
use crate::limit::{ConcurrencyLimit, Limit, Take};
use crate::{Acquisition, Decision, Error};

/// The async client: wraps a connection that is cloned for each call
/// ([`redis::aio::ConnectionManager`], which reconnects by itself;
/// [`redis::aio::MultiplexedConnection`];
/// [`redis::cluster_async::ClusterConnection`]; or any
/// [`AsyncConnection`]) and the backend found on its first call.
///
/// Cheap to clone (the clones share the connection and the backend);
/// calls from many tasks run concurrently over a multiplexed connection.
///
/// ```no_run
/// use redis_ratelimit_client::{aio::RateLimits, Limit};
/// use std::time::Duration;
///
/// # async fn run() -> Result<(), Box<dyn std::error::Error>> {
/// let client = redis::Client::open("redis://127.0.0.1/")?;
/// let limits = RateLimits::new(client.get_connection_manager().await?);
/// let api = limits.limiter(Limit::gcra_with_burst(10, Duration::from_secs(1), 20)?);
/// let decision = api.take("user:42").await?;
/// println!("allowed: {}, remaining: {}", decision.allowed, decision.remaining);
/// # Ok(())
/// # }
/// ```
pub struct RateLimits<C> {
    conn: C,
    backend: Arc<OnceCell<Backend>>,
}

impl<C: Clone> Clone for RateLimits<C> {
    fn clone(&self) -> Self {
        RateLimits {
            conn: self.conn.clone(),
            backend: Arc::clone(&self.backend),
        }
    }
}

impl<C> std::fmt::Debug for RateLimits<C> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("aio::RateLimits")
            .field("backend", &self.backend.get())
            .finish_non_exhaustive()
    }
}

impl<C: AsyncConnection> RateLimits<C> {
    /// A client over `conn`. Nothing is sent until the first call.
    pub fn new(conn: C) -> RateLimits<C> {
        RateLimits {
            conn,
            backend: Arc::new(OnceCell::new()),
        }
    }

    /// The backend, found now if no call has found it yet (one discovery
    /// at a time: concurrent first calls wait for it).
    ///
    /// # Errors
    ///
    /// [`Error::Redis`] when the connection fails.
    pub async fn backend(&self) -> Result<Backend, Error> {
        if let Some(b) = self.backend.get() {
            return Ok(*b);
        }
        let mut conn = self.conn.clone();
        let found = self
            .backend
            .get_or_try_init(|| async move {
                for probe in call::probes() {
                    let reply = call::checked(conn.send(&probe.cmd, None).await);
                    if let Found::Backend(b) = probe.answer(reply)? {
                        return Ok(b);
                    }
                }
                Ok::<_, Error>(call::LAST_RESORT)
            })
            .await?;
        Ok(*found)
    }

    /// A limiter of `limit`, bound to this client.
    pub fn limiter(&self, limit: Limit) -> Limiter<C> {
        Limiter {
            limits: self.clone(),
            limit,
        }
    }

    /// Several limits decided at once (`RL.ALL`); see
    /// [`crate::RateLimits::all_of`].
    ///
    /// # Errors
    ///
    /// [`Error::InvalidParameter`] (`limits`) for an empty list.
    pub fn all_of<I>(&self, limits: I) -> Result<AllOf<C>, Error>
    where
        I: IntoIterator,
        I::Item: AsRef<Limit>,
    {
        let limits: Vec<Limit> = limits.into_iter().map(|l| *l.as_ref()).collect();
        if limits.is_empty() {
            return Err(Error::invalid("limits", "at least one limit".to_string()));
        }
        Ok(AllOf {
            limits: self.clone(),
            all: limits,
        })
    }

    /// Leases of `limit` units of work in flight, bound to this client.
    pub fn concurrency(&self, limit: ConcurrencyLimit) -> Concurrency<C> {
        Concurrency {
            limits: self.clone(),
            limit,
        }
    }

    /// Send `plan` over `keys` on the backend; reload a lost library or
    /// script and send again, once.
    async fn run(&self, plan: &Plan, keys: &[&str]) -> Result<Value, Error> {
        let backend = self.backend().await?;
        let cmd = plan.cmd(backend, keys);
        let key = keys.first().copied();
        let mut conn = self.conn.clone();
        match call::checked(conn.send(&cmd, key).await) {
            Ok(v) => Ok(v),
            Err(e) => match call::recovery(backend, plan.command, &e) {
                Some(reload) => {
                    call::checked(conn.send(&reload, None).await)?;
                    Ok(call::checked(conn.send(&cmd, key).await)?)
                }
                None => Err(e.into()),
            },
        }
    }

    async fn decide(&self, plan: &Plan, keys: &[&str]) -> Result<(Decision, i64), Error> {
        plan.decision(&self.run(plan, keys).await?)
    }
}

/// A [`Limit`] bound to an async client; see [`crate::Limiter`].
pub struct Limiter<C> {
    limits: RateLimits<C>,
    limit: Limit,
}

impl<C: AsyncConnection> Limiter<C> {
    /// The limit this limiter applies.
    pub fn limit(&self) -> &Limit {
        &self.limit
    }

    /// Take one unit.
    ///
    /// # Errors
    ///
    /// [`Error::Server`] with the server's message, [`Error::Redis`] when
    /// the connection fails.
    pub async fn take(&self, key: &str) -> Result<Decision, Error> {
        self.call(key, Take::one()).await
    }

    /// Take `n` units at once (all or none).
    ///
    /// # Errors
    ///
    /// As [`Limiter::take`].
    pub async fn take_n(&self, key: &str, n: u64) -> Result<Decision, Error> {
        self.call(key, Take::n(n)).await
    }

    /// What taking one unit would answer, taking nothing (`PEEK`).
    ///
    /// # Errors
    ///
    /// As [`Limiter::take`].
    pub async fn peek(&self, key: &str) -> Result<Decision, Error> {
        self.call(key, Take::one().peek()).await
    }

    /// The current state (a request of 0 units), changing nothing.
    ///
    /// # Errors
    ///
    /// As [`Limiter::take`].
    pub async fn query(&self, key: &str) -> Result<Decision, Error> {
        self.call(key, Take::query()).await
    }

    /// Give `n` units back (`REFUND`).
    ///
    /// # Errors
    ///
    /// As [`Limiter::take`].
    pub async fn refund(&self, key: &str, n: u64) -> Result<Decision, Error> {
        self.call(key, Take::n(n).refund()).await
    }

    /// Take `n` units even past the limit (`FORCE`).
    ///
    /// # Errors
    ///
    /// As [`Limiter::take`].
    pub async fn force(&self, key: &str, n: u64) -> Result<Decision, Error> {
        self.call(key, Take::n(n).force()).await
    }

    /// Reserve one unit within `max_wait` (`WAIT`).
    ///
    /// # Errors
    ///
    /// As [`Limiter::take`]; [`Error::InvalidParameter`] (`max_wait`).
    pub async fn wait(&self, key: &str, max_wait: Duration) -> Result<Decision, Error> {
        self.call(key, Take::one().wait(max_wait)).await
    }

    /// Take as many of `n` units as are left (`AT_MOST`).
    ///
    /// # Errors
    ///
    /// As [`Limiter::take`].
    pub async fn at_most(&self, key: &str, n: u64) -> Result<Decision, Error> {
        self.call(key, Take::n(n).at_most()).await
    }

    /// A call with any options.
    ///
    /// # Errors
    ///
    /// As [`Limiter::take`]; [`Error::InvalidParameter`] for a `WAIT` or
    /// `BLOCK` duration that is not whole milliseconds.
    pub async fn call(&self, key: &str, take: Take) -> Result<Decision, Error> {
        let plan = Plan::rate(&self.limit, &take)?;
        self.limits.decide(&plan, &[key]).await.map(|(d, _)| d)
    }

    /// The command of a call, for a pipeline of your own; see
    /// [`crate::Limiter::prepare`].
    ///
    /// # Errors
    ///
    /// As [`Limiter::call`].
    pub async fn prepare(&self, key: &str, take: Take) -> Result<crate::Prepared, Error> {
        let plan = Plan::rate(&self.limit, &take)?;
        let backend = self.limits.backend().await?;
        Ok(crate::Prepared::new(plan.cmd(backend, &[key]), plan))
    }
}

/// Several limits decided as one (`RL.ALL`), bound to an async client.
pub struct AllOf<C> {
    limits: RateLimits<C>,
    all: Vec<Limit>,
}

impl<C> AllOf<C> {
    #[cfg(feature = "axum")]
    pub(crate) fn from_parts(limits: RateLimits<C>, all: Vec<Limit>) -> AllOf<C> {
        AllOf { limits, all }
    }
}

impl<C: AsyncConnection> AllOf<C> {
    /// The limits, in the order of the keys.
    pub fn limits(&self) -> &[Limit] {
        &self.all
    }

    /// Take one unit from every limit, or from none.
    ///
    /// # Errors
    ///
    /// As [`crate::AllOf::take`].
    pub async fn take(&self, keys: &[&str]) -> Result<Decision, Error> {
        self.call(keys, Take::one()).await
    }

    /// A call with any options.
    ///
    /// # Errors
    ///
    /// As [`crate::AllOf::take`].
    pub async fn call(&self, keys: &[&str], take: Take) -> Result<Decision, Error> {
        let plan = Plan::all(&self.all, keys.len(), &take)?;
        self.limits.decide(&plan, keys).await.map(|(d, _)| d)
    }
}

/// Leases of work in flight (`RL.CONCURRENCY`), bound to an async client.
pub struct Concurrency<C> {
    limits: RateLimits<C>,
    limit: ConcurrencyLimit,
}

impl<C: AsyncConnection> Concurrency<C> {
    /// The limit these leases count against.
    pub fn limit(&self) -> &ConcurrencyLimit {
        &self.limit
    }

    /// A lease of one unit, or a refusal.
    ///
    /// # Errors
    ///
    /// [`Error::Server`], [`Error::Redis`].
    pub async fn acquire(&self, key: &str) -> Result<Acquisition<Lease<C>>, Error> {
        self.acquire_n(key, 1).await
    }

    /// A lease of `n` units: released by [`Lease::release`], or when the
    /// [`Lease`] drops (in a task spawned on the current tokio runtime); it
    /// ends by itself after the limit's timeout.
    ///
    /// # Errors
    ///
    /// As [`Concurrency::acquire`].
    pub async fn acquire_n(&self, key: &str, n: u64) -> Result<Acquisition<Lease<C>>, Error> {
        let plan = Plan::acquire(&self.limit, n, false);
        let (decision, id) = self.limits.decide(&plan, &[key]).await?;
        if !decision.allowed {
            return Ok(Acquisition::Refused(decision));
        }
        Ok(Acquisition::Granted(Lease {
            limits: self.limits.clone(),
            key: key.to_string(),
            id: u64::try_from(id).unwrap_or(0),
            decision,
            armed: id > 0,
        }))
    }

    /// What acquiring `n` units would answer, taking nothing (`PEEK`).
    ///
    /// # Errors
    ///
    /// As [`Concurrency::acquire`].
    pub async fn peek(&self, key: &str, n: u64) -> Result<Decision, Error> {
        let plan = Plan::acquire(&self.limit, n, true);
        self.limits.decide(&plan, &[key]).await.map(|(d, _)| d)
    }

    /// Release lease `id` of `key`: the units freed, 0 when it had ended.
    ///
    /// # Errors
    ///
    /// As [`Concurrency::acquire`].
    pub async fn release(&self, key: &str, id: u64) -> Result<u64, Error> {
        call::integer(&self.limits.run(&Plan::release(id), &[key]).await?)
    }

    /// Move lease `id`'s deadline to `timeout` from now: true when renewed.
    ///
    /// # Errors
    ///
    /// As [`Concurrency::acquire`]; [`Error::InvalidParameter`]
    /// (`timeout`).
    pub async fn renew(&self, key: &str, id: u64, timeout: Duration) -> Result<bool, Error> {
        let plan = Plan::renew(id, timeout)?;
        call::integer(&self.limits.run(&plan, &[key]).await?).map(|n| n == 1)
    }
}

/// A lease held by async code. Release it with [`Lease::release`] (and
/// await it); dropped unreleased, it is released by a task spawned on the
/// current tokio runtime (outside a runtime nothing can be sent: it then
/// ends at its deadline). [`Lease::forget`] keeps it held.
pub struct Lease<C: AsyncConnection> {
    limits: RateLimits<C>,
    key: String,
    id: u64,
    decision: Decision,
    armed: bool,
}

impl<C: AsyncConnection> Lease<C> {
    /// The lease's id.
    pub fn id(&self) -> u64 {
        self.id
    }

    /// The key the lease counts against.
    pub fn key(&self) -> &str {
        &self.key
    }

    /// The decision that granted it.
    pub fn decision(&self) -> &Decision {
        &self.decision
    }

    /// Move the deadline to `timeout` from now: true when renewed.
    ///
    /// # Errors
    ///
    /// [`Error::Server`], [`Error::Redis`], [`Error::InvalidParameter`].
    pub async fn renew(&self, timeout: Duration) -> Result<bool, Error> {
        let plan = Plan::renew(self.id, timeout)?;
        call::integer(&self.limits.run(&plan, &[&self.key]).await?).map(|n| n == 1)
    }

    /// Release now: the units freed (0 when the lease had already ended).
    /// If this future is dropped before it completes, the guard's drop
    /// releases the lease instead (releasing twice frees nothing twice).
    ///
    /// # Errors
    ///
    /// [`Error::Server`], [`Error::Redis`]; the lease then ends at its
    /// deadline.
    pub async fn release(mut self) -> Result<u64, Error> {
        let released = self.limits.run(&Plan::release(self.id), &[&self.key]).await;
        self.armed = false;
        call::integer(&released?)
    }

    /// Keep the lease held and return its id: dropping it no longer
    /// releases it.
    pub fn forget(mut self) -> u64 {
        self.armed = false;
        self.id
    }
}

impl<C: AsyncConnection> Drop for Lease<C> {
    fn drop(&mut self) {
        if !self.armed {
            return;
        }
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            let limits = self.limits.clone();
            let key = std::mem::take(&mut self.key);
            let id = self.id;
            runtime.spawn(async move {
                // An error leaves the lease to end at its deadline.
                let _ = limits.run(&Plan::release(id), &[&key]).await;
            });
        }
    }
}

crate::bound_impls!(Limiter { limits, limit });
crate::bound_impls!(AllOf { limits, all });
crate::bound_impls!(Concurrency { limits, limit });

impl<C: AsyncConnection> std::fmt::Debug for Lease<C> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("aio::Lease")
            .field("key", &self.key)
            .field("id", &self.id)
            .field("decision", &self.decision)
            .field("armed", &self.armed)
            .finish()
    }
}
