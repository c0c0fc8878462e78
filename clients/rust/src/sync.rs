//! The blocking client.

use std::sync::{Arc, Mutex, MutexGuard, OnceLock, PoisonError};
use std::time::Duration;

use redis::Value;

use crate::backend::Backend;
use crate::call::{self, Found, Plan};
use crate::conn::SyncConnection;
use crate::limit::{ConcurrencyLimit, Limit, Take};
use crate::{Acquisition, Decision, Error};

struct Shared<C> {
    conn: Mutex<C>,
    backend: OnceLock<Backend>,
}

/// The blocking client: wraps one connection ([`redis::Connection`],
/// [`redis::cluster::ClusterConnection`], or any [`SyncConnection`]) and the
/// backend found on its first call.
///
/// Cheap to clone (the clones share the connection, behind a mutex, and
/// the backend), `Send` and `Sync` when the connection is `Send`: share
/// one across threads, or open one per thread for calls in parallel.
///
/// ```no_run
/// use redis_ratelimit_client::{Limit, RateLimits};
/// use std::time::Duration;
///
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let con = redis::Client::open("redis://127.0.0.1/")?.get_connection()?;
/// let limits = RateLimits::new(con);
/// let api = limits.limiter(Limit::gcra_with_burst(10, Duration::from_secs(1), 20)?);
/// let decision = api.take("user:42")?;
/// if !decision.allowed {
///     println!("retry in {:?}", decision.retry_after);
/// }
/// # Ok(())
/// # }
/// ```
pub struct RateLimits<C> {
    shared: Arc<Shared<C>>,
}

impl<C> Clone for RateLimits<C> {
    fn clone(&self) -> Self {
        RateLimits {
            shared: Arc::clone(&self.shared),
        }
    }
}

impl<C> std::fmt::Debug for RateLimits<C> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RateLimits")
            .field("backend", &self.shared.backend.get())
            .finish_non_exhaustive()
    }
}

impl<C: SyncConnection> RateLimits<C> {
    /// A client over `conn`. Nothing is sent until the first call.
    pub fn new(conn: C) -> RateLimits<C> {
        RateLimits {
            shared: Arc::new(Shared {
                conn: Mutex::new(conn),
                backend: OnceLock::new(),
            }),
        }
    }

    /// The backend, found now if no call has found it yet.
    ///
    /// # Errors
    ///
    /// [`Error::Redis`] when the connection fails.
    pub fn backend(&self) -> Result<Backend, Error> {
        let mut conn = self.lock();
        self.backend_with(&mut conn)
    }

    /// A limiter of `limit`, bound to this client.
    pub fn limiter(&self, limit: Limit) -> Limiter<C> {
        Limiter {
            limits: self.clone(),
            limit,
        }
    }

    /// Several limits decided at once (`RL.ALL`): a request is allowed
    /// only if every limit allows it, and then counts against each.
    ///
    /// In a Redis Cluster the keys of one call must share a slot: give them
    /// one hash tag (`{user:42}:burst`, `{user:42}:hourly`).
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

    fn lock(&self) -> MutexGuard<'_, C> {
        self.shared.conn.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn backend_with(&self, conn: &mut C) -> Result<Backend, Error> {
        if let Some(b) = self.shared.backend.get() {
            return Ok(*b);
        }
        let mut found = call::LAST_RESORT;
        for probe in call::probes() {
            if let Found::Backend(b) = probe.answer(call::checked(conn.send(&probe.cmd, None)))? {
                found = b;
                break;
            }
        }
        Ok(*self.shared.backend.get_or_init(|| found))
    }

    /// Send `plan` over `keys` on the backend; reload a lost library or
    /// script and send again, once.
    fn run(&self, plan: &Plan, keys: &[&str]) -> Result<Value, Error> {
        let mut conn = self.lock();
        let backend = self.backend_with(&mut conn)?;
        let cmd = plan.cmd(backend, keys);
        let key = keys.first().copied();
        match call::checked(conn.send(&cmd, key)) {
            Ok(v) => Ok(v),
            Err(e) => match call::recovery(backend, plan.command, &e) {
                Some(reload) => {
                    call::checked(conn.send(&reload, None))?;
                    Ok(call::checked(conn.send(&cmd, key))?)
                }
                None => Err(e.into()),
            },
        }
    }

    fn decide(&self, plan: &Plan, keys: &[&str]) -> Result<(Decision, i64), Error> {
        plan.decision(&self.run(plan, keys)?)
    }
}

/// A [`Limit`] bound to a client: every call takes the key of the limiter
/// it counts against (one key per user, per API key, per route...).
///
/// Each call is one command, sent with `MS`; its reply is a [`Decision`].
pub struct Limiter<C> {
    limits: RateLimits<C>,
    limit: Limit,
}

impl<C: SyncConnection> Limiter<C> {
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
    pub fn take(&self, key: &str) -> Result<Decision, Error> {
        self.call(key, Take::one())
    }

    /// Take `n` units at once (all or none).
    ///
    /// # Errors
    ///
    /// As [`Limiter::take`].
    pub fn take_n(&self, key: &str, n: u64) -> Result<Decision, Error> {
        self.call(key, Take::n(n))
    }

    /// What taking one unit would answer, taking nothing (`PEEK`).
    ///
    /// # Errors
    ///
    /// As [`Limiter::take`].
    pub fn peek(&self, key: &str) -> Result<Decision, Error> {
        self.call(key, Take::one().peek())
    }

    /// The current state (a request of 0 units), changing nothing.
    ///
    /// # Errors
    ///
    /// As [`Limiter::take`].
    pub fn query(&self, key: &str) -> Result<Decision, Error> {
        self.call(key, Take::query())
    }

    /// Give `n` units back (`REFUND`): work admitted and not done.
    ///
    /// # Errors
    ///
    /// As [`Limiter::take`].
    pub fn refund(&self, key: &str, n: u64) -> Result<Decision, Error> {
        self.call(key, Take::n(n).refund())
    }

    /// Take `n` units even past the limit (`FORCE`): always allowed, a
    /// debt that later requests wait out.
    ///
    /// # Errors
    ///
    /// As [`Limiter::take`].
    pub fn force(&self, key: &str, n: u64) -> Result<Decision, Error> {
        self.call(key, Take::n(n).force())
    }

    /// Reserve one unit at the earliest instant within `max_wait`
    /// (`WAIT`): allowed, wait [`Decision::retry_after`] (if any) before
    /// the work.
    ///
    /// # Errors
    ///
    /// As [`Limiter::take`]; [`Error::InvalidParameter`] (`max_wait`) for a
    /// duration that is not whole milliseconds.
    pub fn wait(&self, key: &str, max_wait: Duration) -> Result<Decision, Error> {
        self.call(key, Take::one().wait(max_wait))
    }

    /// Take as many of `n` units as are left (`AT_MOST`):
    /// [`Decision::granted`] tells how many.
    ///
    /// # Errors
    ///
    /// As [`Limiter::take`].
    pub fn at_most(&self, key: &str, n: u64) -> Result<Decision, Error> {
        self.call(key, Take::n(n).at_most())
    }

    /// A call with any options.
    ///
    /// # Errors
    ///
    /// As [`Limiter::take`]; [`Error::InvalidParameter`] for a `WAIT` or
    /// `BLOCK` duration that is not whole milliseconds.
    pub fn call(&self, key: &str, take: Take) -> Result<Decision, Error> {
        let plan = Plan::rate(&self.limit, &take)?;
        self.limits.decide(&plan, &[key]).map(|(d, _)| d)
    }

    /// The command of a call, for a pipeline or a `MULTI` of your own
    /// (with a read of the key, say): send [`Prepared::cmd`], then read its
    /// reply with [`Prepared::decision`]. The backend is found first if no
    /// call has found it. Inside your pipeline the client cannot load a
    /// lost library or script and send again: the reply is then an error.
    ///
    /// # Errors
    ///
    /// As [`Limiter::call`].
    pub fn prepare(&self, key: &str, take: Take) -> Result<Prepared, Error> {
        let plan = Plan::rate(&self.limit, &take)?;
        let backend = self.limits.backend()?;
        Ok(Prepared::new(plan.cmd(backend, &[key]), plan))
    }
}

/// A call's command, to send in a pipeline or transaction of your own
/// ([`Limiter::prepare`]), and how to read its reply.
#[derive(Clone)]
pub struct Prepared {
    cmd: redis::Cmd,
    plan: Plan,
}

impl std::fmt::Debug for Prepared {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Prepared")
            .field("plan", &self.plan)
            .finish_non_exhaustive()
    }
}

impl Prepared {
    pub(crate) fn new(cmd: redis::Cmd, plan: Plan) -> Prepared {
        Prepared { cmd, plan }
    }

    /// The command to send (`RL.GCRA ...`, `FCALL rl_gcra ...` or
    /// `EVALSHA ...`, as the backend takes it).
    pub fn cmd(&self) -> &redis::Cmd {
        &self.cmd
    }

    /// The decision in the command's reply.
    ///
    /// # Errors
    ///
    /// [`Error::Server`] when the reply is an error; [`Error::Reply`] for a
    /// reply of another shape.
    pub fn decision(&self, reply: &Value) -> Result<Decision, Error> {
        let reply = call::checked(Ok(reply.clone()))?;
        self.plan.decision(&reply).map(|(d, _)| d)
    }
}

/// Several limits decided as one (`RL.ALL`), bound to a client.
pub struct AllOf<C> {
    limits: RateLimits<C>,
    all: Vec<Limit>,
}

impl<C: SyncConnection> AllOf<C> {
    /// The limits, in the order of the keys.
    pub fn limits(&self) -> &[Limit] {
        &self.all
    }

    /// Take one unit from every limit, or from none. `keys[i]` is the key
    /// of the i-th limit.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidParameter`] (`keys`) when there is not one key per
    /// limit; [`Error::Server`] (`CROSSSLOT` in a Cluster when the keys do
    /// not share a slot), [`Error::Redis`].
    pub fn take(&self, keys: &[&str]) -> Result<Decision, Error> {
        self.call(keys, Take::one())
    }

    /// A call with any options (see [`Take`]).
    ///
    /// # Errors
    ///
    /// As [`AllOf::take`].
    pub fn call(&self, keys: &[&str], take: Take) -> Result<Decision, Error> {
        let plan = Plan::all(&self.all, keys.len(), &take)?;
        self.limits.decide(&plan, keys).map(|(d, _)| d)
    }
}

/// Leases of work in flight (`RL.CONCURRENCY`), bound to a client.
pub struct Concurrency<C> {
    limits: RateLimits<C>,
    limit: ConcurrencyLimit,
}

impl<C: SyncConnection> Concurrency<C> {
    /// The limit these leases count against.
    pub fn limit(&self) -> &ConcurrencyLimit {
        &self.limit
    }

    /// A lease of one unit, or a refusal (with when to retry).
    ///
    /// # Errors
    ///
    /// [`Error::Server`], [`Error::Redis`].
    pub fn acquire(&self, key: &str) -> Result<Acquisition<Lease<C>>, Error> {
        self.acquire_n(key, 1)
    }

    /// A lease of `n` units: released when the [`Lease`] drops, or by
    /// [`Lease::release`]; it ends by itself after the limit's timeout.
    ///
    /// # Errors
    ///
    /// As [`Concurrency::acquire`].
    pub fn acquire_n(&self, key: &str, n: u64) -> Result<Acquisition<Lease<C>>, Error> {
        let plan = Plan::acquire(&self.limit, n, false);
        let (decision, id) = self.limits.decide(&plan, &[key])?;
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

    /// What acquiring `n` units would answer, taking nothing (`PEEK`; `n`
    /// 0 for the current state).
    ///
    /// # Errors
    ///
    /// As [`Concurrency::acquire`].
    pub fn peek(&self, key: &str, n: u64) -> Result<Decision, Error> {
        let plan = Plan::acquire(&self.limit, n, true);
        self.limits.decide(&plan, &[key]).map(|(d, _)| d)
    }

    /// Release lease `id` of `key` (`RL.RELEASE`): the units freed, 0 when
    /// it had already ended or been released.
    ///
    /// # Errors
    ///
    /// As [`Concurrency::acquire`].
    pub fn release(&self, key: &str, id: u64) -> Result<u64, Error> {
        call::integer(&self.limits.run(&Plan::release(id), &[key])?)
    }

    /// Move lease `id`'s deadline to `timeout` from now (`RL.RENEW`): true
    /// when renewed, false when it had already ended.
    ///
    /// # Errors
    ///
    /// As [`Concurrency::acquire`]; [`Error::InvalidParameter`]
    /// (`timeout`).
    pub fn renew(&self, key: &str, id: u64, timeout: Duration) -> Result<bool, Error> {
        call::integer(&self.limits.run(&Plan::renew(id, timeout)?, &[key])?).map(|n| n == 1)
    }
}

/// A lease held: released when dropped (on every path, early returns and
/// panics included), so its units are free at once rather than at its
/// deadline. [`Lease::release`] releases it explicitly and tells the units
/// freed; [`Lease::forget`] keeps it held until its deadline.
pub struct Lease<C: SyncConnection> {
    limits: RateLimits<C>,
    key: String,
    id: u64,
    decision: Decision,
    armed: bool,
}

impl<C: SyncConnection> Lease<C> {
    /// The lease's id (the server's, never reused for its key).
    pub fn id(&self) -> u64 {
        self.id
    }

    /// The key the lease counts against.
    pub fn key(&self) -> &str {
        &self.key
    }

    /// The decision that granted it (`remaining`: units still free).
    pub fn decision(&self) -> &Decision {
        &self.decision
    }

    /// Move the deadline to `timeout` from now: true when renewed, false
    /// when the lease had already ended.
    ///
    /// # Errors
    ///
    /// [`Error::Server`], [`Error::Redis`], [`Error::InvalidParameter`].
    pub fn renew(&self, timeout: Duration) -> Result<bool, Error> {
        let plan = Plan::renew(self.id, timeout)?;
        call::integer(&self.limits.run(&plan, &[&self.key])?).map(|n| n == 1)
    }

    /// Release now: the units freed (0 when the lease had already ended).
    ///
    /// # Errors
    ///
    /// [`Error::Server`], [`Error::Redis`]; the lease then ends at its
    /// deadline.
    pub fn release(mut self) -> Result<u64, Error> {
        self.armed = false;
        call::integer(&self.limits.run(&Plan::release(self.id), &[&self.key])?)
    }

    /// Keep the lease held (until its deadline, or a release by id) and
    /// return its id: dropping it no longer releases it.
    pub fn forget(mut self) -> u64 {
        self.armed = false;
        self.id
    }
}

impl<C: SyncConnection> Drop for Lease<C> {
    fn drop(&mut self) {
        if self.armed {
            // Nothing to do with an error here: the lease ends at its
            // deadline all the same.
            let _ = self.limits.run(&Plan::release(self.id), &[&self.key]);
        }
    }
}

crate::bound_impls!(Limiter { limits, limit });
crate::bound_impls!(AllOf { limits, all });
crate::bound_impls!(Concurrency { limits, limit });

impl<C: SyncConnection> std::fmt::Debug for Lease<C> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Lease")
            .field("key", &self.key)
            .field("id", &self.id)
            .field("decision", &self.decision)
            .field("armed", &self.armed)
            .finish()
    }
}
