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
//! let con = redis::Client::open("redis://127.0.0.1/")?.get_connection()?;
//! let limits = RateLimits::new(con);
//! // 10 requests per second, 20 at once from rest.
//! let api = limits.limiter(Limit::gcra_with_burst(10, Duration::from_secs(1), 20)?);
//! let d = api.take("user:42")?;
//! println!("allowed {} remaining {} retry after {:?}", d.allowed, d.remaining, d.retry_after);
//! # Ok(())
//! # }
//! ```
//!
//! # Clients
//!
//! - [`RateLimits`]: blocking, over [`redis::Connection`] or
//!   [`redis::cluster::ClusterConnection`].
//! - [`aio::RateLimits`] (feature `tokio`, default): async, over
//!   [`redis::aio::ConnectionManager`], [`redis::aio::MultiplexedConnection`]
//!   or [`redis::cluster_async::ClusterConnection`].
//! - [`layer::RateLimitLayer`] (feature `axum`, default): a tower layer for
//!   axum, keyed by client IP or any function of the request.
//!
//! A client binds [`Limit`]s ([`RateLimits::limiter`]), several limits
//! decided as one ([`RateLimits::all_of`]) and leases of work in flight
//! ([`RateLimits::concurrency`]). Every call is sent with `MS`, so durations
//! are whole milliseconds (at least 1 ms); parameters are checked when a
//! limit is built, before any call.
//!
//! # Backends
//!
//! Found on a client's first call, then kept for its life:
//!
//! 1. the module, when `COMMAND INFO rl.gcra` knows the command: `RL.*`;
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
//! Each call goes to the primary of its (first) key. The keys of one
//! [`AllOf`] call must share a slot: give them one hash tag
//! (`{user:42}:burst`, `{user:42}:hourly`); otherwise the server answers
//! `CROSSSLOT`.
//!
//! # Errors
//!
//! A server's error reply (a bad argument, a key of another algorithm) is
//! [`Error::Server`] with the server's code and message; a failed
//! connection is [`Error::Redis`].
#![warn(missing_docs)]

mod backend;
mod call;
mod conn;
mod decision;
mod error;
pub mod headers;
mod limit;
mod sync;

#[cfg(feature = "tokio")]
pub mod aio;
#[cfg(feature = "axum")]
pub mod layer;

pub use backend::{library_source, Backend, VERSION};
#[cfg(feature = "tokio")]
pub use conn::AsyncConnection;
pub use conn::SyncConnection;
pub use decision::Decision;
pub use error::Error;
pub use limit::{ConcurrencyLimit, Limit, Take};
pub use sync::{AllOf, Concurrency, Lease, Limiter, Prepared, RateLimits};

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

/// `Clone` and `Debug` for the types bound to a client, whatever the
/// connection's own traits.
macro_rules! bound_impls {
    ($name:ident { $limits:ident, $field:ident }) => {
        impl<C> Clone for $name<C>
        where
            RateLimits<C>: Clone,
        {
            fn clone(&self) -> Self {
                $name {
                    $limits: self.$limits.clone(),
                    $field: self.$field.clone(),
                }
            }
        }

        impl<C> std::fmt::Debug for $name<C> {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.debug_struct(stringify!($name))
                    .field(stringify!($field), &self.$field)
                    .finish_non_exhaustive()
            }
        }
    };
}
pub(crate) use bound_impls;
