//! The blocking client.

use std::sync::{Arc, Condvar, Mutex, MutexGuard, OnceLock, PoisonError};
use std::time::{Duration, Instant};

use redis::{Cmd, Value};

use crate::backend::Backend;
use crate::call::{self, Name, Plan, Policy, Sender, Who};
use crate::conn::Connector;
use crate::error::{is_outage, reply_text};
use crate::limit::{ConcurrencyLimit, Limit, Take};
use crate::reading::{self, Inspection, LogEntry, TagUnits};
use crate::{params, Acquisition, Decision, Error};

struct Shared<C: Connector> {
    connector: C,
    /// Connections not in use: one per thread that called at once.
    idle: Mutex<Vec<C::Connection>>,
    backend: OnceLock<Backend>,
    /// One search at a time: concurrent first calls wait for it.
    search: Gate,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

/// A lock whose waiters give up at their deadline.
#[derive(Default)]
struct Gate {
    busy: Mutex<bool>,
    free: Condvar,
}

struct Passage<'g>(&'g Gate);

impl Gate {
    /// Through the gate by `deadline`, or `None`.
    fn enter(&self, deadline: Instant) -> Option<Passage<'_>> {
        let mut busy = lock(&self.busy);
        while *busy {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return None;
            }
            busy = self
                .free
                .wait_timeout(busy, left)
                .unwrap_or_else(PoisonError::into_inner)
                .0;
        }
        *busy = true;
        Some(Passage(self))
    }
}

impl Drop for Passage<'_> {
    fn drop(&mut self) {
        *lock(&self.0.busy) = false;
        self.0.free.notify_one();
    }
}

/// The blocking client: opens its connections from a [`redis::Client`]
/// (or a [`redis::cluster::ClusterClient`], or any [`Connector`]) when a
/// call needs one, and finds the backend on its first call.
///
/// Every call is bounded as a whole by [`timeout`](RateLimits::timeout)
/// (default 250 ms): connecting, the backend search, sending, the reply, a
/// reload and its one retry. When it passes, the call ends with
/// [`Error::Unavailable`] (`rate limiter unavailable: no answer within 250
/// ms`), or with an allowed decision marked
/// [`failed_open`](Decision::failed_open) if the client
/// [fails open](RateLimits::fail_open). A connection that failed or timed
/// out is dropped and the next call opens another, at once: after a
/// restart, the first call once the server answers goes through.
///
/// Cheap to clone (the clones share the connections, the backend and the
/// local memory; each has its own options), `Send` and `Sync`: threads
/// calling at once use one connection each.
///
/// ```no_run
/// use redis_ratelimit_client::{Limit, RateLimits};
/// use std::time::Duration;
///
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let limits = RateLimits::new(redis::Client::open("redis://127.0.0.1/")?)
///     .timeout(Duration::from_millis(100))?;
/// let api = limits.limiter(Limit::gcra_with_burst(10, Duration::from_secs(1), 20)?);
/// api.check()?; // at start-up: the server accepts this limiter
/// let decision = api.take("user:42")?;
/// if !decision.allowed {
///     println!("retry in {:?}", decision.retry_after);
/// }
/// # Ok(())
/// # }
/// ```
pub struct RateLimits<C: Connector> {
    shared: Arc<Shared<C>>,
    policy: Policy,
}

impl<C: Connector> Clone for RateLimits<C> {
    fn clone(&self) -> Self {
        RateLimits {
            shared: Arc::clone(&self.shared),
            policy: self.policy.clone(),
        }
    }
}

impl<C: Connector> std::fmt::Debug for RateLimits<C> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RateLimits")
            .field("backend", &self.shared.backend.get())
            .field("timeout", &self.policy.timeout)
            .field("fail_open", &self.policy.fail_open)
            .finish_non_exhaustive()
    }
}

/// One call's sender: a connection, bounded by the call's deadline.
struct SyncSender<C: Connector> {
    con: C::Connection,
    deadline: Instant,
    /// A transport error, or a reply that says the server cannot serve
    /// now: the connection is dropped, not reused.
    broken: bool,
    /// The deadline passed.
    timed_out: bool,
}

impl<C: Connector> Sender for SyncSender<C> {
    fn send<'a>(&'a mut self, cmd: &'a Cmd, key: Option<&'a str>) -> call::Reply<'a> {
        let left = self.deadline.saturating_duration_since(Instant::now());
        let reply = if left.is_zero() {
            self.timed_out = true;
            Err(std::io::Error::from(std::io::ErrorKind::TimedOut).into())
        } else {
            let reply = call::checked(C::send(&mut self.con, cmd, key, left));
            if let Err(e) = &reply {
                self.broken |= is_outage(e);
                self.timed_out |= reply_text(e).is_none() && e.is_timeout();
            }
            reply
        };
        Box::pin(std::future::ready(reply))
    }
}

impl<C: Connector> RateLimits<C> {
    /// A client over `connector`. Nothing is sent (no connection is
    /// opened) until the first call.
    pub fn new(connector: C) -> RateLimits<C> {
        RateLimits {
            shared: Arc::new(Shared {
                connector,
                idle: Mutex::new(Vec::new()),
                backend: OnceLock::new(),
                search: Gate::default(),
            }),
            policy: Policy::default(),
        }
    }

    crate::call::policy_options!();

    /// The backend, found now if no call has found it yet.
    ///
    /// # Errors
    ///
    /// [`Error::Unavailable`] when the server does not answer in time.
    pub fn backend(&self) -> Result<Backend, Error> {
        self.with_sender(|limits, sender| limits.backend_with(sender))
    }

    /// A limiter of `limit`, bound to this client.
    pub fn limiter(&self, limit: Limit) -> Limiter<C> {
        Limiter {
            limits: self.clone(),
            limit,
            name: limit.kind().into(),
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
    /// [`Error::InvalidParameter`] (`limiters`) for none, or more than 100.
    pub fn all_of<I>(&self, limits: I) -> Result<AllOf<C>, Error>
    where
        I: IntoIterator,
        I::Item: AsRef<Limit>,
    {
        let all = all_of(limits)?;
        Ok(AllOf {
            limits: self.clone(),
            name: all_of_name(&all),
            all,
        })
    }

    /// Leases of `limit` units of work in flight, bound to this client.
    pub fn concurrency(&self, limit: ConcurrencyLimit) -> Concurrency<C> {
        Concurrency {
            limits: self.clone(),
            limit,
            name: CONCURRENCY.into(),
        }
    }

    /// Who used the sliding log on `key` within the last `window`
    /// (reservations, in the future, included), changing nothing
    /// (`RL.LOG`): its entries, newest first, one per instant and tag; at
    /// most `count` (1 to 1,000,000,000) when given. A missing key answers
    /// none.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidParameter`] (`key`, `window`, `count`);
    /// [`Error::ServerError`] for a key of another limiter;
    /// [`Error::Unavailable`] (a reading is never failed open).
    pub fn log(&self, key: &str, window: Duration, count: Option<u64>) -> Result<Vec<LogEntry>, Error> {
        reading::entries(&self.run(&Plan::log(window, false, count)?, &[key])?)
    }

    /// As [`RateLimits::log`], the units summed per tag (`BY TAG`), most
    /// first, ties by the tag's bytes; `tag` `None` for the untagged.
    ///
    /// # Errors
    ///
    /// As [`RateLimits::log`].
    pub fn log_by_tag(
        &self,
        key: &str,
        window: Duration,
        count: Option<u64>,
    ) -> Result<Vec<TagUnits>, Error> {
        reading::totals(&self.run(&Plan::log(window, true, count)?, &[key])?)
    }

    /// The state the limiter on `key` keeps, changing nothing
    /// (`RL.INSPECT`); `None` for a missing key. The module's RESP3 map
    /// and the flat array read alike.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidParameter`] (`key`); [`Error::ServerError`] for a
    /// value that is no limiter's; [`Error::Unavailable`].
    pub fn inspect(&self, key: &str) -> Result<Option<Inspection>, Error> {
        reading::inspection(&self.run(&Plan::inspect(), &[key])?)
    }

    /// An open connection: an idle one still open, or a new one within
    /// the time left.
    fn checkout(&self, deadline: Instant) -> Result<C::Connection, Error> {
        loop {
            let idle = lock(&self.shared.idle).pop();
            let Some(mut con) = idle else { break };
            if C::is_open(&mut con) {
                return Ok(con);
            }
        }
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(Error::deadline(self.policy.timeout));
        }
        self.shared.connector.connect(left).map_err(|e| {
            if e.is_timeout() {
                Error::deadline(self.policy.timeout)
            } else {
                e.into()
            }
        })
    }

    /// Run `f` over a connection, within the deadline of one call; the
    /// connection is kept for the next call unless it failed.
    fn with_sender<T>(
        &self,
        f: impl FnOnce(&Self, &mut SyncSender<C>) -> Result<T, Error>,
    ) -> Result<T, Error> {
        let deadline = Instant::now() + self.policy.timeout;
        let mut sender = SyncSender::<C> {
            con: self.checkout(deadline)?,
            deadline,
            broken: false,
            timed_out: false,
        };
        let result = f(self, &mut sender);
        if !sender.broken {
            lock(&self.shared.idle).push(sender.con);
        }
        match result {
            Err(e) if sender.timed_out && e.is_unavailable() => Err(Error::deadline(self.policy.timeout)),
            other => other,
        }
    }

    fn backend_with(&self, sender: &mut SyncSender<C>) -> Result<Backend, Error> {
        if let Some(b) = self.shared.backend.get() {
            return Ok(*b);
        }
        let Some(_one_search) = self.shared.search.enter(sender.deadline) else {
            return Err(Error::deadline(self.policy.timeout));
        };
        if let Some(b) = self.shared.backend.get() {
            return Ok(*b);
        }
        let found = call::ready(call::search(sender))?;
        Ok(*self.shared.backend.get_or_init(|| found))
    }

    /// Send `plan` over `keys` on the backend (found first if need be).
    fn run(&self, plan: &Plan, keys: &[&str]) -> Result<Value, Error> {
        call::check_keys(keys)?;
        self.with_sender(|limits, sender| {
            let backend = limits.backend_with(sender)?;
            call::ready(call::exchange(sender, backend, plan, keys))
        })
    }

    /// A decision: remembered locally, or the server's, or the failure
    /// policy's.
    fn decide(&self, plan: &Plan, keys: &[&str], who: Who<'_>) -> Result<(Decision, i64), Error> {
        call::check_keys(keys)?;
        let watch = self.policy.watch(plan);
        let result = match self.policy.recall(plan, keys) {
            Some(d) => Ok((d, 0)),
            None => self.policy.settle(plan, keys, self.run(plan, keys)),
        };
        watch.end(plan, keys, who, &result, || self.shared.backend.get().copied());
        result
    }

    /// One PEEK of one unit: what the server refuses (a cap, a range, a
    /// key of another type) is raised.
    fn check(&self, plan: &Plan, keys: &[&str]) -> Result<(), Error> {
        plan.decision(&self.run(plan, keys)?).map(drop)
    }
}

/// The name of an `all_of` unless given one (the metrics' `limit` label):
/// its limits' kinds joined by `+` (`gcra+fixed_window`), as the Python and
/// Node.js clients join their limiters' names.
pub(crate) fn all_of_name(all: &[Limit]) -> Name {
    let kinds: Vec<&str> = all.iter().map(Limit::kind).collect();
    Name::given(&kinds.join("+"))
}

/// The name of leases unless given one.
pub(crate) const CONCURRENCY: &str = "concurrency";

/// The limits of an `all_of`: 1 to 100.
pub(crate) fn all_of<I>(limits: I) -> Result<Vec<Limit>, Error>
where
    I: IntoIterator,
    I::Item: AsRef<Limit>,
{
    let limits: Vec<Limit> = limits.into_iter().map(|l| *l.as_ref()).collect();
    if limits.is_empty() || limits.len() > params::ALL_OF_MAX {
        return Err(Error::invalid(
            "limiters",
            format!(
                "all_of needs 1 to {} limiters, got {}",
                params::ALL_OF_MAX,
                limits.len()
            ),
        ));
    }
    Ok(limits)
}

/// A [`Limit`] bound to a client: every call takes the key of the limiter
/// it counts against (one key per user, per API key, per route...).
///
/// Each call is one command, sent with `MS`; its reply is a [`Decision`].
pub struct Limiter<C: Connector> {
    limits: RateLimits<C>,
    limit: Limit,
    name: Name,
}

impl<C: Connector> Limiter<C> {
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
        self.limits
            .decide(&plan, &[key], Who::named(self.name.as_str()))
            .map(|(d, _)| d)
    }

    /// Whether the server accepts this limiter: one `PEEK` of one unit on
    /// `ratelimit:{check}:1`. Run it at start-up.
    ///
    /// # Errors
    ///
    /// [`Error::ServerError`] with the server's words for a limiter it
    /// refuses (its `sliding_log_max_limit`, the functions edition's
    /// narrower ranges); [`Error::Unavailable`] (never failed open).
    pub fn check(&self) -> Result<(), Error> {
        self.check_key(&call::check_keys_for(1)[0])
    }

    /// [`Limiter::check`] on `key` (an ACL on a prefix applies; a key of
    /// another type is refused).
    ///
    /// # Errors
    ///
    /// As [`Limiter::check`].
    pub fn check_key(&self, key: &str) -> Result<(), Error> {
        let plan = Plan::rate(&self.limit, &Take::one().peek())?;
        self.limits.check(&plan, &[key])
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
        call::check_keys(&[key])?;
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
    /// [`Error::ServerError`] when the reply is an error; [`Error::Reply`] for a
    /// reply of another shape.
    pub fn decision(&self, reply: &Value) -> Result<Decision, Error> {
        let reply = call::checked(Ok(reply.clone()))?;
        self.plan.decision(&reply).map(|(d, _)| d)
    }
}

/// Several limits decided as one (`RL.ALL`), bound to a client.
pub struct AllOf<C: Connector> {
    limits: RateLimits<C>,
    all: Vec<Limit>,
    name: Name,
}

impl<C: Connector> AllOf<C> {
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
    /// limit; [`Error::ServerError`] (`CROSSSLOT` in a Cluster when the keys do
    /// not share a slot), [`Error::Unavailable`].
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
        self.limits
            .decide(&plan, keys, Who::named(self.name.as_str()))
            .map(|(d, _)| d)
    }

    /// Whether the server accepts these limiters: one `PEEK` of one unit
    /// on `ratelimit:{check}:1`, `ratelimit:{check}:2`, ...
    ///
    /// # Errors
    ///
    /// As [`Limiter::check`].
    pub fn check(&self) -> Result<(), Error> {
        let keys = call::check_keys_for(self.all.len());
        self.check_keys(&keys.iter().map(String::as_str).collect::<Vec<_>>())
    }

    /// [`AllOf::check`] on `keys`.
    ///
    /// # Errors
    ///
    /// As [`Limiter::check`].
    pub fn check_keys(&self, keys: &[&str]) -> Result<(), Error> {
        let plan = Plan::all(&self.all, keys.len(), &Take::one().peek())?;
        self.limits.check(&plan, keys)
    }
}

/// Leases of work in flight (`RL.CONCURRENCY`), bound to a client.
pub struct Concurrency<C: Connector> {
    limits: RateLimits<C>,
    limit: ConcurrencyLimit,
    name: Name,
}

impl<C: Connector> Concurrency<C> {
    /// The limit these leases count against.
    pub fn limit(&self) -> &ConcurrencyLimit {
        &self.limit
    }

    /// A lease of one unit, or a refusal (with when to retry).
    ///
    /// # Errors
    ///
    /// [`Error::ServerError`], [`Error::Unavailable`].
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
        let plan = Plan::acquire(&self.limit, n, false)?;
        let (decision, id) = self
            .limits
            .decide(&plan, &[key], Who::named(self.name.as_str()))?;
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
        let plan = Plan::acquire(&self.limit, n, true)?;
        self.limits
            .decide(&plan, &[key], Who::named(self.name.as_str()))
            .map(|(d, _)| d)
    }

    /// Whether the server accepts this limit: one `PEEK` of one unit on
    /// `ratelimit:{check}:1`.
    ///
    /// # Errors
    ///
    /// As [`Limiter::check`].
    pub fn check(&self) -> Result<(), Error> {
        self.check_key(&call::check_keys_for(1)[0])
    }

    /// [`Concurrency::check`] on `key`.
    ///
    /// # Errors
    ///
    /// As [`Limiter::check`].
    pub fn check_key(&self, key: &str) -> Result<(), Error> {
        self.limits.check(&Plan::acquire(&self.limit, 1, true)?, &[key])
    }

    /// Release lease `id` of `key` (`RL.RELEASE`): the units freed, 0 when
    /// it had already ended or been released.
    ///
    /// # Errors
    ///
    /// As [`Concurrency::acquire`].
    pub fn release(&self, key: &str, id: u64) -> Result<u64, Error> {
        call::integer(&self.limits.run(&Plan::release(id)?, &[key])?)
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
pub struct Lease<C: Connector> {
    limits: RateLimits<C>,
    key: String,
    id: u64,
    decision: Decision,
    armed: bool,
}

impl<C: Connector> Lease<C> {
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
    /// [`Error::ServerError`], [`Error::Unavailable`], [`Error::InvalidParameter`].
    pub fn renew(&self, timeout: Duration) -> Result<bool, Error> {
        let plan = Plan::renew(self.id, timeout)?;
        if self.id == 0 {
            // Failed open: no lease to renew.
            return Ok(false);
        }
        call::integer(&self.limits.run(&plan, &[&self.key])?).map(|n| n == 1)
    }

    /// Release now: the units freed (0 when the lease had already ended).
    ///
    /// # Errors
    ///
    /// [`Error::ServerError`], [`Error::Unavailable`]; the lease then ends at its
    /// deadline.
    pub fn release(mut self) -> Result<u64, Error> {
        if !std::mem::take(&mut self.armed) {
            // Failed open, or released: nothing held.
            return Ok(0);
        }
        call::integer(&self.limits.run(&Plan::release(self.id)?, &[&self.key])?)
    }

    /// Keep the lease held (until its deadline, or a release by id) and
    /// return its id: dropping it no longer releases it.
    pub fn forget(mut self) -> u64 {
        self.armed = false;
        self.id
    }
}

impl<C: Connector> Drop for Lease<C> {
    fn drop(&mut self) {
        if self.armed {
            // Nothing to do with an error here: the lease ends at its
            // deadline all the same.
            if let Ok(plan) = Plan::release(self.id) {
                let _ = self.limits.run(&plan, &[&self.key]);
            }
        }
    }
}

crate::bound_impls!(Connector, Limiter { limits, limit });
crate::bound_impls!(Connector, AllOf { limits, all });
crate::bound_impls!(Connector, Concurrency { limits, limit });

impl<C: Connector> std::fmt::Debug for Lease<C> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Lease")
            .field("key", &self.key)
            .field("id", &self.id)
            .field("decision", &self.decision)
            .field("armed", &self.armed)
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_gate_lets_one_through_and_its_waiters_give_up_at_their_deadline() {
        let gate = Gate::default();
        let ms = Duration::from_millis;
        let held = gate.enter(Instant::now()).expect("a free gate");
        let start = Instant::now();
        assert!(gate.enter(start + ms(20)).is_none());
        assert!(start.elapsed() >= ms(20));
        std::thread::scope(|s| {
            let waiter = s.spawn(|| gate.enter(Instant::now() + ms(5000)).is_some());
            std::thread::sleep(ms(10));
            drop(held);
            assert!(waiter.join().unwrap(), "through once it is free");
        });
        assert!(gate.enter(Instant::now()).is_some(), "free again");
    }
}
