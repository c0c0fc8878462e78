//! What the blocking and async clients share: each call's arguments (its
//! parameters checked), the backend search, the call with the reload of a
//! lost library or script, the reading of replies, the failure policy and
//! the local memory of refusals.
//!
//! The search and the call are written once, as async functions over a
//! [`Sender`]; the blocking client's sender answers at once, so
//! [`ready`] runs them to completion without a runtime.

#[cfg(feature = "prometheus")]
use std::borrow::Cow;
use std::future::Future;
use std::sync::{Arc, Mutex, PoisonError};
use std::task::{Context, Poll, Waker};
use std::time::{Duration, Instant};

use redis::{Cmd, RedisResult, Value};

use crate::backend::{self, Backend};
use crate::decision::{Decision, Shape};
use crate::error::reply_text;
use crate::limit::{Arg, Command, ConcurrencyLimit, Limit, Take};
use crate::memory::Memory;
use crate::{params, Error};

/// One call, before a backend is chosen: the command, its arguments after
/// the keys, and how to read its reply.
#[derive(Debug, Clone)]
pub(crate) struct Plan {
    pub(crate) command: Command,
    pub(crate) args: Vec<Arg>,
    pub(crate) shape: Option<Shape>,
    pub(crate) asked: u64,
    /// The `limit` of a decision of the failure policy: the limiter's, or
    /// the first limiter's for `all_of`.
    limit: u64,
    /// A refusal of this call may be remembered (a plain take).
    plain: bool,
    /// The metrics count this call: it takes units (not a peek, a query,
    /// a refund, a reading).
    #[cfg_attr(not(feature = "prometheus"), allow(dead_code))]
    counted: bool,
}

/// Every key non-empty.
pub(crate) fn check_keys(keys: &[&str]) -> Result<(), Error> {
    keys.iter().try_for_each(|k| params::key(k))
}

impl Plan {
    pub(crate) fn rate(limit: &Limit, take: &Take) -> Result<Plan, Error> {
        let mut params = Vec::with_capacity(3);
        limit.params(&mut params);
        let mut args: Vec<Arg> = params.into_iter().map(Arg::Int).collect();
        take.args(&mut args)?;
        Ok(Plan {
            command: limit.command(),
            args,
            shape: Some(Shape::Rate {
                at_most: take.is_at_most(),
            }),
            asked: take.units(),
            limit: limit.limit(),
            plain: take.is_plain(),
            counted: take.is_counted(),
        })
    }

    pub(crate) fn all(limits: &[Limit], keys: usize, take: &Take) -> Result<Plan, Error> {
        if keys != limits.len() {
            return Err(Error::invalid(
                "keys",
                format!("keys: {n} limiters need {n} keys, got {keys}", n = limits.len()),
            ));
        }
        let mut args = Vec::with_capacity(limits.len() * 4 + 6);
        let mut params = Vec::with_capacity(3);
        for limit in limits {
            args.push(Arg::Word(limit.all_name()));
            params.clear();
            limit.params(&mut params);
            args.extend(params.iter().map(|&p| Arg::Int(p)));
        }
        take.args(&mut args)?;
        Ok(Plan {
            command: Command::All,
            args,
            shape: Some(Shape::All {
                at_most: take.is_at_most(),
            }),
            asked: take.units(),
            limit: limits.first().map_or(0, Limit::limit),
            plain: take.is_plain(),
            counted: take.is_counted(),
        })
    }

    pub(crate) fn acquire(limit: &ConcurrencyLimit, n: u64, peek: bool) -> Result<Plan, Error> {
        let mut args = vec![
            Arg::Int(limit.limit),
            Arg::Int(limit.timeout_ms),
            Arg::Int(params::count("n", n, 0, params::COUNT_MAX)?),
            Arg::Word("MS"),
        ];
        if peek {
            args.push(Arg::Word("PEEK"));
        }
        Ok(Plan {
            command: Command::Concurrency,
            args,
            shape: Some(Shape::Lease),
            asked: n,
            limit: limit.limit,
            plain: false,
            counted: n > 0 && !peek,
        })
    }

    fn lease(lease: u64) -> Result<Arg, Error> {
        params::count("lease", lease, 1, params::LEASE_MAX).map(Arg::Int)
    }

    pub(crate) fn release(lease: u64) -> Result<Plan, Error> {
        Ok(Plan {
            command: Command::Release,
            args: vec![Plan::lease(lease)?],
            shape: None,
            asked: 0,
            limit: 0,
            plain: false,
            counted: false,
        })
    }

    pub(crate) fn renew(lease: u64, timeout: Duration) -> Result<Plan, Error> {
        Ok(Plan {
            command: Command::Renew,
            args: vec![
                Plan::lease(lease)?,
                Arg::Int(params::millis("timeout", timeout, 1, params::MS_MAX)?),
                Arg::Word("MS"),
            ],
            shape: None,
            asked: 0,
            limit: 0,
            plain: false,
            counted: false,
        })
    }

    /// `RL.LOG key window MS [BY TAG] [COUNT count]`.
    pub(crate) fn log(window: Duration, by_tag: bool, count: Option<u64>) -> Result<Plan, Error> {
        let mut args = vec![
            Arg::Int(params::millis("window", window, 1, params::MS_MAX)?),
            Arg::Word("MS"),
        ];
        if by_tag {
            args.extend([Arg::Word("BY"), Arg::Word("TAG")]);
        }
        if let Some(count) = count {
            args.push(Arg::Word("COUNT"));
            args.push(Arg::Int(params::count("count", count, 1, params::COUNT_MAX)?));
        }
        Ok(Plan::reading(Command::Log, args))
    }

    /// `RL.INSPECT key`.
    pub(crate) fn inspect() -> Plan {
        Plan::reading(Command::Inspect, Vec::new())
    }

    fn reading(command: Command, args: Vec<Arg>) -> Plan {
        Plan {
            command,
            args,
            shape: None,
            asked: 0,
            limit: 0,
            plain: false,
            counted: false,
        }
    }

    /// The command on `backend`.
    pub(crate) fn cmd(&self, backend: Backend, keys: &[&str]) -> Cmd {
        backend::build(backend, self.command, keys, &self.args)
    }

    /// The decision in a reply (and the lease of `RL.CONCURRENCY`).
    pub(crate) fn decision(&self, reply: &Value) -> Result<(Decision, i64), Error> {
        let shape = self
            .shape
            .ok_or_else(|| Error::Reply("not a decision".to_string()))?;
        Decision::parse(reply, shape, self.asked)
    }

    /// What the local memory knows this call by: its command as the
    /// module takes it (limiter, keys, units), whatever the backend.
    fn memory_key(&self, keys: &[&str]) -> Vec<u8> {
        self.cmd(Backend::Module, keys).get_packed_command()
    }
}

/// The names `check()` gives a limiter's keys when none are given:
/// `ratelimit:{check}:1`, `ratelimit:{check}:2`, ... (one hash tag, so
/// an `all_of`'s keys share a Cluster slot).
pub(crate) fn check_keys_for(n: usize) -> Vec<String> {
    (1..=n).map(|i| format!("ratelimit:{{check}}:{i}")).collect()
}

/// A client's options, per handle (a clone with other options shares the
/// connection, the backend and the memory).
#[derive(Clone)]
pub(crate) struct Policy {
    pub(crate) timeout: Duration,
    pub(crate) fail_open: bool,
    memory: Option<Arc<Mutex<Memory>>>,
    #[cfg(feature = "prometheus")]
    pub(crate) metrics: Option<crate::metrics::PrometheusMetrics>,
}

/// The default deadline of every call.
pub(crate) const DEFAULT_TIMEOUT: Duration = Duration::from_millis(250);

impl Default for Policy {
    fn default() -> Policy {
        Policy {
            timeout: DEFAULT_TIMEOUT,
            fail_open: false,
            memory: None,
            #[cfg(feature = "prometheus")]
            metrics: None,
        }
    }
}

impl Policy {
    pub(crate) fn timeout(mut self, timeout: Duration) -> Result<Policy, Error> {
        let ms = params::millis("timeout", timeout, 1, params::TIMEOUT_MAX_MS)?;
        self.timeout = Duration::from_millis(ms);
        Ok(self)
    }

    pub(crate) fn local_refusals(mut self, n: u64) -> Result<Policy, Error> {
        let n = params::count("local_refusals", n, 0, params::REMEMBERED_MAX)?;
        self.memory =
            (n > 0).then(|| Arc::new(Mutex::new(Memory::new(usize::try_from(n).unwrap_or(usize::MAX)))));
        Ok(self)
    }

    /// Start timing a call the metrics count; nothing (one `Option`
    /// check) without metrics.
    #[inline]
    pub(crate) fn watch(&self, plan: &Plan) -> Watch<'_> {
        #[cfg(feature = "prometheus")]
        {
            Watch(
                self.metrics
                    .as_ref()
                    .filter(|_| plan.counted)
                    .map(|m| (m, Instant::now())),
            )
        }
        #[cfg(not(feature = "prometheus"))]
        {
            let _ = plan;
            Watch(std::marker::PhantomData)
        }
    }

    fn memory(&self) -> Option<std::sync::MutexGuard<'_, Memory>> {
        self.memory
            .as_ref()
            .map(|m| m.lock().unwrap_or_else(PoisonError::into_inner))
    }

    /// A refusal remembered for this call, if it is a plain take.
    pub(crate) fn recall(&self, plan: &Plan, keys: &[&str]) -> Option<Decision> {
        if !plan.plain {
            return None;
        }
        let mut memory = self.memory()?;
        memory.recall(&plan.memory_key(keys), Instant::now())
    }

    /// A call's outcome as a decision: remembered when it is a refusal of
    /// a plain take; allowed and marked when the server was unavailable
    /// and the policy is to fail open.
    pub(crate) fn settle(
        &self,
        plan: &Plan,
        keys: &[&str],
        outcome: Result<Value, Error>,
    ) -> Result<(Decision, i64), Error> {
        match outcome {
            Ok(reply) => {
                let (decision, extra) = plan.decision(&reply)?;
                if plan.plain && !decision.allowed {
                    if let Some(mut memory) = self.memory() {
                        memory.remember(plan.memory_key(keys), decision, Instant::now());
                    }
                }
                Ok((decision, extra))
            }
            Err(e) if e.is_unavailable() && self.fail_open && plan.shape.is_some() => {
                Ok((Decision::by_policy(plan.limit, plan.asked), 0))
            }
            Err(e) => Err(e),
        }
    }
}

/// A limiter's name: its kind's unless given one (no allocation then).
#[derive(Clone)]
pub(crate) enum Name {
    Kind(&'static str),
    Given(Arc<str>),
}

impl Name {
    pub(crate) fn given(name: &str) -> Name {
        Name::Given(name.into())
    }

    pub(crate) fn as_str(&self) -> &str {
        match self {
            Name::Kind(name) => name,
            Name::Given(name) => name,
        }
    }
}

impl From<&'static str> for Name {
    fn from(name: &'static str) -> Name {
        Name::Kind(name)
    }
}

impl std::fmt::Debug for Name {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.as_str().fmt(f)
    }
}

/// Who a decision is for, as the metrics label it: the limiter's name, and
/// the identity (the layer's; else the key given, an `all_of`'s binding
/// key when it answered).
#[derive(Debug, Clone, Copy)]
#[cfg_attr(not(feature = "prometheus"), allow(dead_code))]
pub(crate) struct Who<'a> {
    pub(crate) name: &'a str,
    pub(crate) identity: Option<&'a str>,
}

impl<'a> Who<'a> {
    pub(crate) fn named(name: &'a str) -> Who<'a> {
        Who { name, identity: None }
    }
}

/// A call being timed for the metrics ([`Policy::watch`]).
#[cfg(feature = "prometheus")]
pub(crate) struct Watch<'p>(Option<(&'p crate::metrics::PrometheusMetrics, Instant)>);

/// Nothing to time without the metrics.
#[cfg(not(feature = "prometheus"))]
pub(crate) struct Watch<'p>(std::marker::PhantomData<&'p ()>);

impl Watch<'_> {
    /// Count the call's outcome, on `backend` (the one in use, if found;
    /// asked only with metrics).
    #[inline]
    pub(crate) fn end(
        self,
        plan: &Plan,
        keys: &[&str],
        who: Who<'_>,
        result: &Result<(Decision, i64), Error>,
        backend: impl FnOnce() -> Option<Backend>,
    ) {
        #[cfg(feature = "prometheus")]
        if let Some((metrics, start)) = self.0 {
            let identity = || match (who.identity, keys) {
                (Some(identity), _) => Cow::Borrowed(identity),
                (None, [key]) => Cow::Borrowed(*key),
                // The limit that decided (1-based), as the other clients count it.
                (None, keys) => match result {
                    Ok((decision, _)) if (1..=keys.len()).contains(&decision.binding) => {
                        Cow::Borrowed(keys[decision.binding - 1])
                    }
                    _ => Cow::Owned(keys.join(",")),
                },
            };
            let result = result.as_ref().map(|(d, _)| *d);
            metrics.record(start, who.name, identity, plan.asked, &result, backend());
        }
        #[cfg(not(feature = "prometheus"))]
        let _ = (self, plan, keys, who, result, backend);
    }
}

/// The integer reply of `RL.RELEASE` and `RL.RENEW`.
pub(crate) fn integer(reply: &Value) -> Result<u64, Error> {
    match reply {
        Value::Int(n) if *n >= 0 => Ok(*n as u64),
        other => Err(Error::Reply(format!("not a count: {other:?}"))),
    }
}

/// A reply to come (the `redis` crate's `RedisFuture`, which exists only
/// with its async features).
pub(crate) type Reply<'a> = std::pin::Pin<Box<dyn Future<Output = RedisResult<Value>> + Send + 'a>>;

/// Where one call's commands go: a connection, bounded by the call's
/// deadline.
pub(crate) trait Sender {
    /// Send `cmd`, whose first key is `key`; error replies come back as
    /// errors.
    fn send<'a>(&'a mut self, cmd: &'a Cmd, key: Option<&'a str>) -> Reply<'a>;
}

/// A reply, with an error reply (which a connection may hand back as a
/// value) as an error.
pub(crate) fn checked(reply: RedisResult<Value>) -> RedisResult<Value> {
    reply.and_then(Value::extract_error)
}

/// One step of the backend search (SPEC 18, clients/contract/backends.json).
#[derive(Debug, Clone, Copy)]
enum Probe {
    /// `RL.GCRA` with no arguments: the module answers its wrong number of
    /// arguments.
    Module,
    /// `FCALL rl_version 0`: the library at this client's version.
    Version,
    /// `FUNCTION LOAD REPLACE <library>`: the client loads it.
    Load,
}

enum Next {
    Found(Backend),
    Probe(Probe),
}

impl Probe {
    fn cmd(self) -> Cmd {
        match self {
            Probe::Module => backend::probe_module(),
            Probe::Version => backend::probe_version(),
            Probe::Load => backend::load_library(),
        }
    }

    /// Where the search goes after `answer`. A transport error, or an
    /// error reply that says the server cannot serve now, ends it with
    /// nothing decided: the next call searches again.
    fn next(self, answer: RedisResult<Value>) -> Result<Next, Error> {
        let e = match answer {
            Ok(reply) => {
                return Ok(match self {
                    Probe::Version if backend::version_matches(&reply) => Next::Found(Backend::Functions),
                    // Another version: replaced.
                    Probe::Version => Next::Probe(Probe::Load),
                    Probe::Load => Next::Found(Backend::Functions),
                    // No module answers RL.GCRA without arguments.
                    Probe::Module => Next::Probe(Probe::Version),
                });
            }
            Err(e) => e,
        };
        let Some(refused) = reply_text(&e) else {
            return Err(e.into());
        };
        let error = Error::from(e);
        if error.is_unavailable() {
            return Err(error);
        }
        Ok(match self {
            Probe::Module if backend::module_found(&refused) => Next::Found(Backend::Module),
            // Unknown, or denied by an ACL: not the module.
            Probe::Module => Next::Probe(Probe::Version),
            Probe::Version if backend::function_missing(&refused) => Next::Probe(Probe::Load),
            // No Functions (Redis 6), FCALL or FUNCTION denied: the scripts.
            Probe::Version | Probe::Load => Next::Found(Backend::Scripts),
        })
    }
}

/// The backend search: the module; else the library at this client's
/// version; else the library loaded by the client; else the scripts.
pub(crate) async fn search<S: Sender>(sender: &mut S) -> Result<Backend, Error> {
    let mut probe = Probe::Module;
    loop {
        let cmd = probe.cmd();
        let answer = checked(sender.send(&cmd, None).await);
        match probe.next(answer)? {
            Next::Found(backend) => return Ok(backend),
            Next::Probe(next) => probe = next,
        }
    }
}

/// The reload that an error reply calls for: only a reply that proves the
/// call did not run (the library or the script is not there) is followed
/// by a reload and one more try.
fn reload(backend: Backend, command: Command, e: &redis::RedisError) -> Option<Cmd> {
    let text = reply_text(e)?;
    match backend {
        Backend::Functions if backend::function_missing(&text) => Some(backend::load_library()),
        Backend::Scripts if e.kind() == redis::ErrorKind::NoScriptError => {
            Some(backend::load_script(command))
        }
        _ => None,
    }
}

/// Send `plan` over `keys` on `backend`; reload a lost library or script
/// and send again, once. A call whose answer is lost is never sent again.
pub(crate) async fn exchange<S: Sender>(
    sender: &mut S,
    backend: Backend,
    plan: &Plan,
    keys: &[&str],
) -> Result<Value, Error> {
    let cmd = plan.cmd(backend, keys);
    let key = keys.first().copied();
    let e = match checked(sender.send(&cmd, key).await) {
        Ok(reply) => return Ok(reply),
        Err(e) => e,
    };
    let Some(reload) = reload(backend, plan.command, &e) else {
        return Err(e.into());
    };
    checked(sender.send(&reload, None).await)?;
    Ok(checked(sender.send(&cmd, key).await)?)
}

/// The output of a future that is ready at its first poll: the blocking
/// client's [`Sender`] answers before it returns, so the search and the
/// call, written once as async functions, complete without a runtime.
pub(crate) fn ready<F: Future>(future: F) -> F::Output {
    let mut future = std::pin::pin!(future);
    match future.as_mut().poll(&mut Context::from_waker(Waker::noop())) {
        Poll::Ready(output) => output,
        Poll::Pending => unreachable!("a blocking sender's future is always ready"),
    }
}

/// The options of a client, written once for the blocking and the async
/// one (each keeps its [`Policy`] in `policy`).
macro_rules! policy_options {
    () => {
        /// The deadline of every call, from 1 ms to 60 s, whole
        /// milliseconds (default 250 ms): connecting, the backend search,
        /// sending, the reply, a reload and its one retry, and the Redis
        /// client's own work, as a whole. Past it, the call ends with
        /// [`Error::Unavailable`](crate::Error::Unavailable) (`rate limiter
        /// unavailable: no answer within 250 ms`), or fails open.
        ///
        /// # Errors
        ///
        /// [`Error::InvalidParameter`](crate::Error::InvalidParameter)
        /// (`timeout`) out of that range.
        pub fn timeout(mut self, timeout: std::time::Duration) -> Result<Self, crate::Error> {
            self.policy = self.policy.timeout(timeout)?;
            Ok(self)
        }

        /// The failure policy (default `false`: fail closed). With `true`,
        /// a call that answers a decision (a take, a peek, a query, a
        /// refund, an acquire) and meets
        /// [`Error::Unavailable`](crate::Error::Unavailable) answers an
        /// allowed decision instead, marked
        /// [`failed_open`](crate::Decision::failed_open) (`limit` the
        /// limiter's, `remaining` 0, no `retry_after`, `reset` zero,
        /// `granted` the units asked, no lease). A server's refusal
        /// ([`Error::ServerError`](crate::Error::ServerError)) is raised
        /// whatever the policy; `release`, `renew` and `check` always
        /// raise.
        pub fn fail_open(mut self, fail_open: bool) -> Self {
            self.policy.fail_open = fail_open;
            self
        }

        /// Whether this client fails open.
        pub fn fails_open(&self) -> bool {
            self.policy.fail_open
        }

        /// Remember up to `n` refused calls (0, the default, is off; at
        /// most 1,000,000): a plain take (units taken, no peek, refund,
        /// force, wait or at most) refused until an instant is refused
        /// in-process until then, for the same limiter, keys and units,
        /// with the same decision (its `retry_after` and `reset` shortened
        /// by the time gone by, `retry_after` at least 1 ms), without a
        /// round trip. Past `n`, the refusal nearest its end is forgotten
        /// first. A refund or a block made by another process is not seen
        /// until that instant: the trade-off of not asking. Clones made
        /// after share the memory.
        ///
        /// # Errors
        ///
        /// [`Error::InvalidParameter`](crate::Error::InvalidParameter)
        /// (`local_refusals`) past 1,000,000.
        pub fn local_refusals(mut self, n: u64) -> Result<Self, crate::Error> {
            self.policy = self.policy.local_refusals(n)?;
            Ok(self)
        }

        /// Count this client's decisions in `metrics` (feature
        /// `prometheus`): each call that takes units (a take, a force, a
        /// wait, an at most, an acquire; not a peek, a query, a refund or
        /// a reading) by its limiter's name and outcome, its units and
        /// its time, the backend in use, and the top refused identities.
        /// Clones made after share them. Without metrics, a call costs one
        /// `Option` check more.
        #[cfg(feature = "prometheus")]
        pub fn metrics(mut self, metrics: crate::metrics::PrometheusMetrics) -> Self {
            self.policy.metrics = Some(metrics);
            self
        }
    };
}
pub(crate) use policy_options;
