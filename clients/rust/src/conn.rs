//! The connections a client wraps.

use redis::{Cmd, RedisResult, Value};

#[cfg(feature = "tokio")]
use redis::RedisFuture;

use crate::backend::key_slot;

fn route(key: &str) -> redis::cluster_routing::RoutingInfo {
    use redis::cluster_routing::{Route, RoutingInfo, SingleNodeRoutingInfo, SlotAddr};
    RoutingInfo::SingleNode(SingleNodeRoutingInfo::SpecificNode(Route::new(
        key_slot(key.as_bytes()),
        SlotAddr::Master,
    )))
}

/// A blocking connection a [`RateLimits`](crate::RateLimits) can send
/// through: implemented for [`redis::Connection`],
/// [`redis::cluster::ClusterConnection`] and `&mut` either.
///
/// Implement it for another connection type (a pooled connection, say) by
/// sending `cmd`; a cluster connection sends a command that has a `key` to
/// the primary that owns that key's slot (`RL.ALL`'s first argument is
/// `numkeys`, which a cluster client would take for its key).
pub trait SyncConnection {
    /// Send `cmd`; `key` is its first key, if it has one.
    ///
    /// # Errors
    ///
    /// The connection's or the server's error.
    fn send(&mut self, cmd: &Cmd, key: Option<&str>) -> RedisResult<Value>;
}

impl SyncConnection for redis::Connection {
    fn send(&mut self, cmd: &Cmd, _key: Option<&str>) -> RedisResult<Value> {
        redis::ConnectionLike::req_command(self, cmd)
    }
}

impl SyncConnection for redis::cluster::ClusterConnection {
    fn send(&mut self, cmd: &Cmd, key: Option<&str>) -> RedisResult<Value> {
        match key {
            Some(key) => self.route_command(cmd, route(key)),
            None => redis::ConnectionLike::req_command(self, cmd),
        }
    }
}

impl<C: SyncConnection + ?Sized> SyncConnection for &mut C {
    fn send(&mut self, cmd: &Cmd, key: Option<&str>) -> RedisResult<Value> {
        (**self).send(cmd, key)
    }
}

/// An async connection an [`aio::RateLimits`](crate::aio::RateLimits) can
/// send through, cloned for each call: implemented for
/// [`redis::aio::MultiplexedConnection`],
/// [`redis::aio::ConnectionManager`] (reconnects by itself) and
/// [`redis::cluster_async::ClusterConnection`].
#[cfg(feature = "tokio")]
pub trait AsyncConnection: Clone + Send + Sync + 'static {
    /// Send `cmd`; `key` is its first key, if it has one.
    fn send<'a>(&'a mut self, cmd: &'a Cmd, key: Option<&'a str>) -> RedisFuture<'a, Value>;
}

#[cfg(feature = "tokio")]
impl AsyncConnection for redis::aio::MultiplexedConnection {
    fn send<'a>(&'a mut self, cmd: &'a Cmd, _key: Option<&'a str>) -> RedisFuture<'a, Value> {
        redis::aio::ConnectionLike::req_packed_command(self, cmd)
    }
}

#[cfg(feature = "tokio")]
impl AsyncConnection for redis::aio::ConnectionManager {
    fn send<'a>(&'a mut self, cmd: &'a Cmd, _key: Option<&'a str>) -> RedisFuture<'a, Value> {
        redis::aio::ConnectionLike::req_packed_command(self, cmd)
    }
}

#[cfg(feature = "tokio")]
impl AsyncConnection for redis::cluster_async::ClusterConnection {
    fn send<'a>(&'a mut self, cmd: &'a Cmd, key: Option<&'a str>) -> RedisFuture<'a, Value> {
        match key {
            Some(key) => Box::pin(self.route_command(cmd, route(key))),
            None => redis::aio::ConnectionLike::req_packed_command(self, cmd),
        }
    }
}
