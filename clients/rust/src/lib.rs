//! Rate limits, leases and an axum layer over redis-ratelimit: rate
//! limiting as Redis commands
//! (`RL.GCRA`, `RL.TOKEN_BUCKET`, `RL.FIXED`, `RL.SLIDING_LOG`,
//! `RL.SLIDING_COUNTER`, `RL.ALL`, `RL.CONCURRENCY`), served by the module
//! where it is loaded and by its Redis Functions library or Lua scripts
//! everywhere else. Every decision is the server's; this crate turns words
//! into arguments and replies into typed values.
//!
//! # Quick start
//!
//! ```no_run
//! use redis_ratelimit_client::{Limit, RateLimits};
//! use std::time::Duration;
//!
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let limits = RateLimits::new(redis::Client::open("redis://127.0.0.1/")?);
//! // 10 requests per second, 20 at once from rest.
//! let api = limits.limiter(Limit::gcra_with_burst(10, Duration::from_secs(1), 20)?);
//! api.check()?; // at start-up: the server accepts it
//! let d = api.take("user:42")?;
//! println!("allowed {} remaining {} retry after {:?}", d.allowed, d.remaining, d.retry_after);
//! # Ok(())
//! # }
//! ```
//!
//! # Clients
//!
//! - [`RateLimits`]: blocking, over connections it opens from a
//!   [`redis::Client`] or a [`redis::cluster::ClusterClient`].
//! - [`aio::RateLimits`] (feature `tokio`, default): async, over a
//!   multiplexed connection it opens from a [`redis::Client`], an async
//!   cluster connection from a [`redis::cluster::ClusterClient`], or a
//!   connection of your own ([`redis::aio::ConnectionManager`],
//!   [`redis::aio::MultiplexedConnection`],
//!   [`redis::cluster_async::ClusterConnection`]).
//! - [`layer::RateLimitLayer`] (feature `axum`, default): a tower layer for
//!   axum, keyed by client IP or any function of the request.
//! - `metrics::PrometheusMetrics` (feature `prometheus`, off by default):
//!   the decisions by limit and outcome, their units and time, the backend
//!   and the most refused identities ([`TopK`]), in a Prometheus registry
//!   of yours.
//!
//! A client binds [`Limit`]s ([`RateLimits::limiter`]), several limits
//! decided as one ([`RateLimits::all_of`]) and leases of work in flight
//! ([`RateLimits::concurrency`]). Every call is sent with `MS`, so durations
//! are whole milliseconds; every parameter is checked against its range
//! (upper bounds included) before anything is sent.
//!
//! # Deadline, failure policy, recovery
//!
//! Every call is bounded as a whole by the client's `timeout` (default
//! 250 ms): connecting, the backend search, sending, the reply, a reload
//! and its one retry. Past it, the call is [`Error::Unavailable`]; with
//! `fail_open(true)`, a call that answers a decision answers an allowed one
//! instead, marked [`Decision::failed_open`]. A server's refusal
//! ([`Error::ServerError`]) is never failed open. A call whose answer is
//! lost is never sent again. After a restart or a dropped connection, the
//! first call once the server answers goes through a new connection.
//!
//! # Backends
//!
//! Found on a client's first call, then kept for its life:
//!
//! 1. the module, when `RL.GCRA` without arguments answers its wrong number
//!    of arguments: `RL.*`;
//! 2. else the functions library `ratelimit` when `FCALL rl_version 0`
//!    answers this client's version: `FCALL rl_<name> ...`;
//! 3. else the client loads the library it ships (`FUNCTION LOAD REPLACE`,
//!    on every primary of a Cluster), then as 2;
//! 4. else (Redis 6, or a service that denies `FUNCTION`) the scripts it
//!    ships, through `EVALSHA`, loaded with `SCRIPT LOAD` on `NOSCRIPT`.
//!
//! A library the server lost (`ERR Function not found`: a failover to a
//! replica that never got it, a `FUNCTION FLUSH`) is loaded again and the
//! call sent again, once; a script the same on `NOSCRIPT`. The calls answer
//! the same on every backend.
//!
//! # Redis Cluster
//!
//! Each call goes to the primary of its (first) key; build the
//! [`redis::cluster::ClusterClient`] with `.retries(0)` (see [`Connector`]).
//! The keys of one
//! [`AllOf`] call must share a slot: give them one hash tag
//! (`{user:42}:burst`, `{user:42}:hourly`); otherwise the server answers
//! `CROSSSLOT`.
//!
//! # Errors
//!
//! The contract's three classes (clients/contract/errors.json), as the
//! variants of [`Error`] ([`RateLimitError`]): [`Error::InvalidParameter`]
//! (refused before sending), [`Error::ServerError`] (the server refused
//! the call: its code and words), [`Error::Unavailable`] (no answer in
//! time, a transport error, or an error reply such as `LOADING` that says
//! the server cannot serve now).
#![warn(missing_docs)]

mod backend;
mod call;
mod conn;
mod decision;
mod error;
pub mod headers;
mod limit;
mod memory;
#[cfg(feature = "prometheus")]
pub mod metrics;
mod params;
mod reading;
mod scripts;
mod sync;
mod topk;
mod transport;

#[cfg(feature = "tokio")]
pub mod aio;
#[cfg(feature = "axum")]
pub mod layer;

pub use backend::{library_source, Backend, VERSION};
#[cfg(feature = "tokio")]
pub use conn::{AsyncConnection, AsyncConnector};
pub use conn::{Connector, SyncConnection};
pub use decision::Decision;
pub use error::{Error, RateLimitError};
pub use limit::{ConcurrencyLimit, Limit, Take};
pub use reading::{Inspection, LogEntry, TagUnits};
pub use scripts::scripts_from_library;
pub use sync::{AllOf, Concurrency, Lease, Limiter, Prepared, RateLimits};
pub use topk::{Counted, TopK};

/// The answer to a lease request: the lease, or the refusal.
#[derive(Debug)]
pub enum Acquisition<L> {
    /// Granted: the lease ([`Lease`] or [`aio::Lease`]).
    Granted(L),
    /// Refused: [`Decision::retry_after`] says when enough leases end.
    Refused(Decision),
}

impl<L> Acquisition<L> {
    /// The lease, if granted.
    pub fn lease(self) -> Option<L> {
        match self {
            Acquisition::Granted(lease) => Some(lease),
            Acquisition::Refused(_) => None,
        }
    }

    /// Whether a lease was granted.
    pub fn is_granted(&self) -> bool {
        matches!(self, Acquisition::Granted(_))
    }
}

/// `Clone`, `Debug` and the name of the types bound to a client, whatever
/// the connection's own traits.
macro_rules! bound_impls {
    ($bound:path, $name:ident { $limits:ident, $field:ident }) => {
        impl<C: $bound> Clone for $name<C> {
            fn clone(&self) -> Self {
                $name {
                    $limits: self.$limits.clone(),
                    $field: self.$field.clone(),
                    name: self.name.clone(),
                }
            }
        }

        impl<C: $bound> std::fmt::Debug for $name<C> {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.debug_struct(stringify!($name))
                    .field(stringify!($field), &self.$field)
                    .field("name", &self.name)
                    .finish_non_exhaustive()
            }
        }

        impl<C: $bound> $name<C> {
            /// The same, named `name`: the `limit` label of its metrics
            /// (feature `prometheus`). Unnamed, a limiter is named after
            /// its algorithm (`gcra`, `token_bucket`, `fixed_window`,
            /// `sliding_log`, `sliding_counter`), several as one
            /// `all_of`, leases `concurrency`; the layer names them as it
            /// does its limits (several: joined by `+`). The name changes
            /// no key and nothing sent.
            ///
            /// # Errors
            ///
            /// [`Error::InvalidParameter`](crate::Error::InvalidParameter)
            /// (`name`) for an empty name, or one with anything but
            /// printable ASCII, or `"`, `\`, `{` or `}`.
            pub fn named(mut self, name: &str) -> Result<Self, crate::Error> {
                crate::params::name(name)?;
                self.name = crate::call::Name::given(name);
                Ok(self)
            }

            /// Its name (see [`named`](Self::named)).
            pub fn name(&self) -> &str {
                self.name.as_str()
            }
        }
    };
}
pub(crate) use bound_impls;
