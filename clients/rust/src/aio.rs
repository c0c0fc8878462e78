//! The async client, over tokio: the same API as the blocking one, each
//! call a future.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock, PoisonError};
use std::time::{Duration, Instant};

use redis::{Cmd, Value};

use crate::backend::Backend;
use crate::call::{self, Name, Plan, Policy, Sender, Who};
use crate::conn::AsyncConnector;
use crate::error::{is_outage, reply_text};
use crate::limit::{ConcurrencyLimit, Limit, Take};
use crate::reading::{self, Inspection, LogEntry, TagUnits};
use crate::{Acquisition, Decision, Error};

/// The settings of a [`redis::aio::ConnectionManager`] of your own under
/// this client: no reconnection backoff (`number_of_retries` 0: by
/// default it waits 1 to 2 s, then up to a minute, between attempts, and
/// calls wait for it), and each attempt bounded by `timeout` (a host that
/// never answers would hold every call until the deadline). After a
/// failure the next call starts a new attempt at once.
///
/// ```no_run
/// # async fn run() -> Result<(), Box<dyn std::error::Error>> {
/// use redis_ratelimit_client::aio::{connection_manager_config, RateLimits};
/// use std::time::Duration;
///
/// let client = redis::Client::open("redis://127.0.0.1/")?;
/// let timeout = Duration::from_millis(250);
/// let manager = client.get_connection_manager_with_config(connection_manager_config(timeout)).await?;
/// let limits = RateLimits::new(manager).timeout(timeout)?;
/// # Ok(())
/// # }
/// ```
pub fn connection_manager_config(timeout: Duration) -> redis::aio::ConnectionManagerConfig {
    redis::aio::ConnectionManagerConfig::new()
        .set_number_of_retries(0)
        .set_connection_timeout(timeout)
}

/// A connection in use, and when it last answered.
struct Live<K> {
    con: K,
    opened: Instant,
    /// Microseconds after `opened` of the last answer.
    answered: AtomicU64,
}

impl<K> Live<K> {
    fn now(&self) -> u64 {
        u64::try_from(self.opened.elapsed().as_micros()).unwrap_or(u64::MAX)
    }

    fn touch(&self) {
        self.answered.fetch_max(self.now(), Ordering::Relaxed);
    }

    /// Nothing came back on this connection since `since`.
    fn silent_since(&self, since: u64) -> bool {
        self.answered.load(Ordering::Relaxed) < since
    }
}

struct Shared<C: AsyncConnector> {
    connector: C,
    current: Mutex<Option<Arc<Live<C::Connection>>>>,
    /// One connection opened at a time.
    opening: tokio::sync::Mutex<()>,
    backend: OnceLock<Backend>,
    /// One search at a time: concurrent first calls wait for it.
    search: tokio::sync::Mutex<()>,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

impl<C: AsyncConnector> Shared<C> {
    fn current(&self) -> Option<Arc<Live<C::Connection>>> {
        let mut current = lock(&self.current);
        match &*current {
            Some(live) if C::is_open(&live.con) => Some(Arc::clone(live)),
            Some(_) => {
                *current = None;
                None
            }
            None => None,
        }
    }

    /// The connection in use, or a new one.
    async fn live(&self) -> Result<Arc<Live<C::Connection>>, Error> {
        if let Some(live) = self.current() {
            return Ok(live);
        }
        let _one_at_a_time = self.opening.lock().await;
        if let Some(live) = self.current() {
            return Ok(live);
        }
        let live = Arc::new(Live {
            con: self.connector.connect().await?,
            opened: Instant::now(),
            answered: AtomicU64::new(0),
        });
        *lock(&self.current) = Some(Arc::clone(&live));
        Ok(live)
    }

    /// Stop using `live`: the next call opens another connection.
    fn drop_connection(&self, live: &Arc<Live<C::Connection>>) {
        let mut current = lock(&self.current);
        if current.as_ref().is_some_and(|c| Arc::ptr_eq(c, live)) {
            *current = None;
        }
    }
}

/// The async client: sends through what it opens from a [`redis::Client`]
/// (the connection the README documents), a
/// [`redis::cluster::ClusterClient`], or a connection of your own
/// ([`redis::aio::ConnectionManager`],
/// [`redis::aio::MultiplexedConnection`],
/// [`redis::cluster_async::ClusterConnection`]); finds the backend on its
/// first call.
///
/// Every call is bounded as a whole by [`timeout`](RateLimits::timeout)
/// (default 250 ms; `tokio::time::timeout` around opening the connection,
/// the search, the call, a reload and its retry); past it, the call ends
/// with [`Error::Unavailable`] or, [failing open](RateLimits::fail_open),
/// an allowed decision marked [`failed_open`](Decision::failed_open).
/// Over a [`redis::Client`], the client opens one multiplexed connection,
/// shared by every call; it opens another at once when the server closed
/// it (seen before a call is sent), when a call met a transport error or
/// a reply that says the server cannot serve now, or when a call's
/// deadline passed with no answer at all on the connection
/// meanwhile (a frozen or vanished server: the abandoned commands go with
/// the connection).
///
/// Cheap to clone (the clones share the connection, the backend and the
/// local memory; each has its own options).
///
/// ```no_run
/// use redis_ratelimit_client::{aio::RateLimits, Limit};
/// use std::time::Duration;
///
/// # async fn run() -> Result<(), Box<dyn std::error::Error>> {
/// let limits = RateLimits::new(redis::Client::open("redis://127.0.0.1/")?);
/// let api = limits.limiter(Limit::gcra_with_burst(10, Duration::from_secs(1), 20)?);
/// api.check().await?; // at start-up: the server accepts this limiter
/// let decision = api.take("user:42").await?;
/// println!("allowed: {}, remaining: {}", decision.allowed, decision.remaining);
/// # Ok(())
/// # }
/// ```
pub struct RateLimits<C: AsyncConnector> {
    shared: Arc<Shared<C>>,
    policy: Policy,
}

impl<C: AsyncConnector> Clone for RateLimits<C> {
    fn clone(&self) -> Self {
        RateLimits {
            shared: Arc::clone(&self.shared),
            policy: self.policy.clone(),
        }
    }
}

impl<C: AsyncConnector> std::fmt::Debug for RateLimits<C> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("aio::RateLimits")
            .field("backend", &self.shared.backend.get())
            .field("timeout", &self.policy.timeout)
            .field("fail_open", &self.policy.fail_open)
            .finish_non_exhaustive()
    }
}

/// One call's sender: the connection in use.
struct AsyncSender<'l, C: AsyncConnector> {
    live: &'l Live<C::Connection>,
    /// A transport error, or a reply that says the server cannot serve
    /// now: the connection is dropped.
    broken: bool,
}

impl<C: AsyncConnector> Sender for AsyncSender<'_, C> {
    fn send<'a>(&'a mut self, cmd: &'a Cmd, key: Option<&'a str>) -> call::Reply<'a> {
        Box::pin(async move {
            let mut con = self.live.con.clone();
            let reply = call::checked(C::send(&mut con, cmd, key).await);
            let answered = match &reply {
                Ok(_) => true,
                Err(e) => {
                    self.broken |= is_outage(e);
                    reply_text(e).is_some()
                }
            };
            if answered {
                self.live.touch();
            }
            reply
        })
    }
}

impl<C: AsyncConnector> RateLimits<C> {
    /// A client over `connector`. Nothing is sent (no connection is
    /// opened) until the first call.
    pub fn new(connector: C) -> RateLimits<C> {
        RateLimits {
            shared: Arc::new(Shared {
                connector,
                current: Mutex::new(None),
                opening: tokio::sync::Mutex::new(()),
                backend: OnceLock::new(),
                search: tokio::sync::Mutex::new(()),
            }),
            policy: Policy::default(),
        }
    }

    crate::call::policy_options!();

    /// The backend, found now if no call has found it yet (one search at
    /// a time: concurrent first calls wait for it).
    ///
    /// # Errors
    ///
    /// [`Error::Unavailable`] when the server does not answer in time.
    pub async fn backend(&self) -> Result<Backend, Error> {
        self.exchange(None).await.map(|(backend, _)| backend)
    }

    /// A limiter of `limit`, bound to this client.
    pub fn limiter(&self, limit: Limit) -> Limiter<C> {
        Limiter {
            limits: self.clone(),
            limit,
            name: limit.kind().into(),
        }
    }

    /// Several limits decided at once (`RL.ALL`); see
    /// [`crate::RateLimits::all_of`].
    ///
    /// # Errors
    ///
    /// [`Error::InvalidParameter`] (`limiters`) for none, or more than 100.
    pub fn all_of<I>(&self, limits: I) -> Result<AllOf<C>, Error>
    where
        I: IntoIterator,
        I::Item: AsRef<Limit>,
    {
        let all = crate::sync::all_of(limits)?;
        Ok(AllOf {
            limits: self.clone(),
            name: crate::sync::all_of_name(&all),
            all,
        })
    }

    /// Leases of `limit` units of work in flight, bound to this client.
    pub fn concurrency(&self, limit: ConcurrencyLimit) -> Concurrency<C> {
        Concurrency {
            limits: self.clone(),
            limit,
            name: crate::sync::CONCURRENCY.into(),
        }
    }

    /// Who used the sliding log on `key` within the last `window`
    /// (`RL.LOG`), as [`crate::RateLimits::log`].
    ///
    /// # Errors
    ///
    /// As [`crate::RateLimits::log`].
    pub async fn log(&self, key: &str, window: Duration, count: Option<u64>) -> Result<Vec<LogEntry>, Error> {
        reading::entries(&self.run(&Plan::log(window, false, count)?, &[key]).await?)
    }

    /// The units per tag (`RL.LOG ... BY TAG`), as
    /// [`crate::RateLimits::log_by_tag`].
    ///
    /// # Errors
    ///
    /// As [`crate::RateLimits::log`].
    pub async fn log_by_tag(
        &self,
        key: &str,
        window: Duration,
        count: Option<u64>,
    ) -> Result<Vec<TagUnits>, Error> {
        reading::totals(&self.run(&Plan::log(window, true, count)?, &[key]).await?)
    }

    /// The state of the limiter on `key` (`RL.INSPECT`), as
    /// [`crate::RateLimits::inspect`].
    ///
    /// # Errors
    ///
    /// As [`crate::RateLimits::inspect`].
    pub async fn inspect(&self, key: &str) -> Result<Option<Inspection>, Error> {
        reading::inspection(&self.run(&Plan::inspect(), &[key]).await?)
    }

    async fn backend_with(&self, sender: &mut AsyncSender<'_, C>) -> Result<Backend, Error> {
        if let Some(b) = self.shared.backend.get() {
            return Ok(*b);
        }
        let _one_search = self.shared.search.lock().await;
        if let Some(b) = self.shared.backend.get() {
            return Ok(*b);
        }
        let found = call::search(sender).await?;
        Ok(*self.shared.backend.get_or_init(|| found))
    }

    /// Within one call's deadline: the backend (found first if need be)
    /// and, for a call, its reply.
    async fn exchange(&self, call: Option<(&Plan, &[&str])>) -> Result<(Backend, Value), Error> {
        let timeout = self.policy.timeout;
        let deadline = tokio::time::Instant::now() + timeout;
        let live = match tokio::time::timeout_at(deadline, self.shared.live()).await {
            Ok(live) => live?,
            Err(_) => return Err(Error::deadline(timeout)),
        };
        let since = live.now();
        let mut sender = AsyncSender::<C> {
            live: &live,
            broken: false,
        };
        let outcome = tokio::time::timeout_at(deadline, async {
            let backend = self.backend_with(&mut sender).await?;
            let reply = match call {
                Some((plan, keys)) => call::exchange(&mut sender, backend, plan, keys).await?,
                None => Value::Nil,
            };
            Ok((backend, reply))
        })
        .await;
        match outcome {
            Ok(result) => {
                if sender.broken {
                    self.shared.drop_connection(&live);
                }
                result
            }
            Err(_) => {
                // Nothing at all came back meanwhile: a frozen or vanished
                // server. A connection that answers others is kept.
                if live.silent_since(since) {
                    self.shared.drop_connection(&live);
                }
                Err(Error::deadline(timeout))
            }
        }
    }

    /// Send `plan` over `keys` on the backend (found first if need be).
    async fn run(&self, plan: &Plan, keys: &[&str]) -> Result<Value, Error> {
        call::check_keys(keys)?;
        self.exchange(Some((plan, keys))).await.map(|(_, reply)| reply)
    }

    /// A decision: remembered locally, or the server's, or the failure
    /// policy's.
    async fn decide(&self, plan: &Plan, keys: &[&str], who: Who<'_>) -> Result<(Decision, i64), Error> {
        call::check_keys(keys)?;
        let watch = self.policy.watch(plan);
        let result = match self.policy.recall(plan, keys) {
            Some(d) => Ok((d, 0)),
            None => self.policy.settle(plan, keys, self.run(plan, keys).await),
        };
        watch.end(plan, keys, who, &result, || self.shared.backend.get().copied());
        result
    }

    /// One PEEK of one unit: what the server refuses is raised.
    async fn check(&self, plan: &Plan, keys: &[&str]) -> Result<(), Error> {
        plan.decision(&self.run(plan, keys).await?).map(drop)
    }
}

/// A [`Limit`] bound to an async client; see [`crate::Limiter`].
pub struct Limiter<C: AsyncConnector> {
    limits: RateLimits<C>,
    limit: Limit,
    name: Name,
}

impl<C: AsyncConnector> Limiter<C> {
    /// The layer's: its limit and its name.
    #[cfg(feature = "axum")]
    pub(crate) fn from_parts(limits: RateLimits<C>, limit: Limit, name: &str) -> Limiter<C> {
        Limiter {
            limits,
            limit,
            name: Name::given(name),
        }
    }

    /// The limit this limiter applies.
    pub fn limit(&self) -> &Limit {
        &self.limit
    }

    /// Take one unit.
    ///
    /// # Errors
    ///
    /// [`Error::ServerError`] with the server's words, [`Error::Unavailable`] when
    /// the server does not answer in time (or, failing open, an allowed
    /// decision marked `failed_open`).
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
        self.limits
            .decide(&plan, &[key], Who::named(self.name.as_str()))
            .await
            .map(|(d, _)| d)
    }

    /// [`Limiter::call`] for `identity` (the layer's), as the metrics
    /// count it.
    #[cfg(feature = "axum")]
    pub(crate) async fn call_for(&self, key: &str, take: Take, identity: &str) -> Result<Decision, Error> {
        let plan = Plan::rate(&self.limit, &take)?;
        let who = Who {
            name: self.name.as_str(),
            identity: Some(identity),
        };
        self.limits.decide(&plan, &[key], who).await.map(|(d, _)| d)
    }

    /// Whether the server accepts this limiter; see
    /// [`crate::Limiter::check`].
    ///
    /// # Errors
    ///
    /// As [`crate::Limiter::check`].
    pub async fn check(&self) -> Result<(), Error> {
        self.check_key(&call::check_keys_for(1)[0]).await
    }

    /// [`Limiter::check`] on `key`.
    ///
    /// # Errors
    ///
    /// As [`crate::Limiter::check`].
    pub async fn check_key(&self, key: &str) -> Result<(), Error> {
        let plan = Plan::rate(&self.limit, &Take::one().peek())?;
        self.limits.check(&plan, &[key]).await
    }

    /// The command of a call, for a pipeline of your own; see
    /// [`crate::Limiter::prepare`].
    ///
    /// # Errors
    ///
    /// As [`Limiter::call`].
    pub async fn prepare(&self, key: &str, take: Take) -> Result<crate::Prepared, Error> {
        let plan = Plan::rate(&self.limit, &take)?;
        call::check_keys(&[key])?;
        let backend = self.limits.backend().await?;
        Ok(crate::Prepared::new(plan.cmd(backend, &[key]), plan))
    }
}

/// Several limits decided as one (`RL.ALL`), bound to an async client.
pub struct AllOf<C: AsyncConnector> {
    limits: RateLimits<C>,
    all: Vec<Limit>,
    name: Name,
}

impl<C: AsyncConnector> AllOf<C> {
    /// The layer's: its limits, named as one.
    #[cfg(feature = "axum")]
    pub(crate) fn from_parts(limits: RateLimits<C>, all: Vec<Limit>, name: &str) -> AllOf<C> {
        AllOf {
            limits,
            all,
            name: Name::given(name),
        }
    }
}

impl<C: AsyncConnector> AllOf<C> {
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
        self.limits
            .decide(&plan, keys, Who::named(self.name.as_str()))
            .await
            .map(|(d, _)| d)
    }

    /// [`AllOf::call`] for `identity` (the layer's), as the metrics count
    /// it.
    #[cfg(feature = "axum")]
    pub(crate) async fn call_for(
        &self,
        keys: &[&str],
        take: Take,
        identity: &str,
    ) -> Result<Decision, Error> {
        let plan = Plan::all(&self.all, keys.len(), &take)?;
        let who = Who {
            name: self.name.as_str(),
            identity: Some(identity),
        };
        self.limits.decide(&plan, keys, who).await.map(|(d, _)| d)
    }

    /// Whether the server accepts these limiters; see
    /// [`crate::AllOf::check`].
    ///
    /// # Errors
    ///
    /// As [`crate::Limiter::check`].
    pub async fn check(&self) -> Result<(), Error> {
        let keys = call::check_keys_for(self.all.len());
        self.check_keys(&keys.iter().map(String::as_str).collect::<Vec<_>>())
            .await
    }

    /// [`AllOf::check`] on `keys`.
    ///
    /// # Errors
    ///
    /// As [`crate::Limiter::check`].
    pub async fn check_keys(&self, keys: &[&str]) -> Result<(), Error> {
        let plan = Plan::all(&self.all, keys.len(), &Take::one().peek())?;
        self.limits.check(&plan, keys).await
    }
}

/// Leases of work in flight (`RL.CONCURRENCY`), bound to an async client.
pub struct Concurrency<C: AsyncConnector> {
    limits: RateLimits<C>,
    limit: ConcurrencyLimit,
    name: Name,
}

impl<C: AsyncConnector> Concurrency<C> {
    /// The limit these leases count against.
    pub fn limit(&self) -> &ConcurrencyLimit {
        &self.limit
    }

    /// A lease of one unit, or a refusal.
    ///
    /// # Errors
    ///
    /// [`Error::ServerError`], [`Error::Unavailable`].
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
        let plan = Plan::acquire(&self.limit, n, false)?;
        let (decision, id) = self
            .limits
            .decide(&plan, &[key], Who::named(self.name.as_str()))
            .await?;
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
        let plan = Plan::acquire(&self.limit, n, true)?;
        self.limits
            .decide(&plan, &[key], Who::named(self.name.as_str()))
            .await
            .map(|(d, _)| d)
    }

    /// Whether the server accepts this limit; see
    /// [`crate::Concurrency::check`].
    ///
    /// # Errors
    ///
    /// As [`crate::Limiter::check`].
    pub async fn check(&self) -> Result<(), Error> {
        self.check_key(&call::check_keys_for(1)[0]).await
    }

    /// [`Concurrency::check`] on `key`.
    ///
    /// # Errors
    ///
    /// As [`crate::Limiter::check`].
    pub async fn check_key(&self, key: &str) -> Result<(), Error> {
        self.limits
            .check(&Plan::acquire(&self.limit, 1, true)?, &[key])
            .await
    }

    /// Release lease `id` of `key`: the units freed, 0 when it had ended.
    ///
    /// # Errors
    ///
    /// As [`Concurrency::acquire`].
    pub async fn release(&self, key: &str, id: u64) -> Result<u64, Error> {
        call::integer(&self.limits.run(&Plan::release(id)?, &[key]).await?)
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
pub struct Lease<C: AsyncConnector> {
    limits: RateLimits<C>,
    key: String,
    id: u64,
    decision: Decision,
    armed: bool,
}

impl<C: AsyncConnector> Lease<C> {
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
    /// [`Error::ServerError`], [`Error::Unavailable`], [`Error::InvalidParameter`].
    pub async fn renew(&self, timeout: Duration) -> Result<bool, Error> {
        let plan = Plan::renew(self.id, timeout)?;
        if self.id == 0 {
            // Failed open: no lease to renew.
            return Ok(false);
        }
        call::integer(&self.limits.run(&plan, &[&self.key]).await?).map(|n| n == 1)
    }

    /// Release now: the units freed (0 when the lease had already ended).
    /// If this future is dropped before it completes, the guard's drop
    /// releases the lease instead (releasing twice frees nothing twice).
    ///
    /// # Errors
    ///
    /// [`Error::ServerError`], [`Error::Unavailable`]; the lease then ends at its
    /// deadline.
    pub async fn release(mut self) -> Result<u64, Error> {
        if !self.armed {
            // Failed open: nothing held.
            return Ok(0);
        }
        let released = self.limits.run(&Plan::release(self.id)?, &[&self.key]).await;
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

impl<C: AsyncConnector> Drop for Lease<C> {
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
                if let Ok(plan) = Plan::release(id) {
                    let _ = limits.run(&plan, &[&key]).await;
                }
            });
        }
    }
}

crate::bound_impls!(AsyncConnector, Limiter { limits, limit });
crate::bound_impls!(AsyncConnector, AllOf { limits, all });
crate::bound_impls!(AsyncConnector, Concurrency { limits, limit });

impl<C: AsyncConnector> std::fmt::Debug for Lease<C> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("aio::Lease")
            .field("key", &self.key)
            .field("id", &self.id)
            .field("decision", &self.decision)
            .field("armed", &self.armed)
            .finish()
    }
}
