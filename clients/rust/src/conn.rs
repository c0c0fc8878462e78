//! Where the clients get their connections: what they open, send through,
//! and drop after a fault.

use std::time::Duration;

use redis::{Cmd, RedisResult, Value};

#[cfg(feature = "tokio")]
use redis::RedisFuture;

use crate::backend::key_slot;
pub use crate::transport::SyncConnection;

fn route(key: &str) -> redis::cluster_routing::RoutingInfo {
    use redis::cluster_routing::{Route, RoutingInfo, SingleNodeRoutingInfo, SlotAddr};
    RoutingInfo::SingleNode(SingleNodeRoutingInfo::SpecificNode(Route::new(
        key_slot(key.as_bytes()),
        SlotAddr::Master,
    )))
}

/// What a blocking [`RateLimits`](crate::RateLimits) opens its connections
/// from: a [`redis::Client`] (one server) or a
/// [`redis::cluster::ClusterClient`].
///
/// The client keeps the connections it opened (one per thread calling at
/// once), drops one after any fault (a timeout, a transport error, a reply
/// such as `LOADING` or `MOVED`) and
/// opens another on the next call, within that call's deadline.
pub trait Connector: Send + Sync + 'static {
    /// An open connection.
    type Connection: Send + 'static;

    /// Open a connection within `timeout`.
    ///
    /// # Errors
    ///
    /// The connection's error.
    fn connect(&self, timeout: Duration) -> RedisResult<Self::Connection>;

    /// Send `cmd` (whose first key is `key`, if it has one) and read its
    /// reply within `timeout`.
    ///
    /// # Errors
    ///
    /// The connection's error, or the server's error reply.
    fn send(
        con: &mut Self::Connection,
        cmd: &Cmd,
        key: Option<&str>,
        timeout: Duration,
    ) -> RedisResult<Value>;

    /// Whether an idle connection is still open (checked before each use).
    fn is_open(_con: &mut Self::Connection) -> bool {
        true
    }
}

/// One server, through the client's own connections (TCP or a Unix socket,
/// RESP2; TLS through the `redis` crate's connection): connected within
/// the call's deadline, each reply awaited no longer than the time left, a
/// connection the server closed while idle replaced before a call is
/// written to it.
impl Connector for redis::Client {
    type Connection = SyncConnection;

    fn connect(&self, timeout: Duration) -> RedisResult<SyncConnection> {
        SyncConnection::open(self, timeout)
    }

    fn send(
        con: &mut SyncConnection,
        cmd: &Cmd,
        _key: Option<&str>,
        timeout: Duration,
    ) -> RedisResult<Value> {
        con.send(cmd, timeout)
    }

    fn is_open(con: &mut SyncConnection) -> bool {
        con.is_open()
    }
}

/// A Redis Cluster: each call goes to the primary of its first key.
/// Build the client with `.retries(0)`: the cluster connection otherwise
/// sends a call again after a timeout (its answer lost, it may have run)
/// and waits past the deadline between its tries. A `MOVED` or `ASK`
/// answered while slots move is then [`Error::Unavailable`](crate::Error)
/// and drops the connection; the next call opens one that reads the slots
/// afresh.
impl Connector for redis::cluster::ClusterClient {
    type Connection = redis::cluster::ClusterConnection;

    fn connect(&self, timeout: Duration) -> RedisResult<Self::Connection> {
        self.get_connection_with_config(
            redis::cluster::ClusterConfig::new()
                .set_connection_timeout(timeout)
                .set_response_timeout(timeout),
        )
    }

    fn send(
        con: &mut Self::Connection,
        cmd: &Cmd,
        key: Option<&str>,
        timeout: Duration,
    ) -> RedisResult<Value> {
        con.set_write_timeout(Some(timeout))?;
        con.set_read_timeout(Some(timeout))?;
        match key {
            Some(key) => con.route_command(cmd, route(key)),
            None => redis::ConnectionLike::req_command(con, cmd),
        }
        .map_err(crate::error::slot_moving)
    }
}

/// What an async [`aio::RateLimits`](crate::aio::RateLimits) sends
/// through: a [`redis::Client`] (the client opens and replaces its own
/// multiplexed connection), a [`redis::cluster::ClusterClient`], or a
/// connection of your own ([`redis::aio::ConnectionManager`],
/// [`redis::aio::MultiplexedConnection`],
/// [`redis::cluster_async::ClusterConnection`]), cloned for each call.
#[cfg(feature = "tokio")]
pub trait AsyncConnector: Send + Sync + 'static {
    /// What one call sends through, cloned for it.
    type Connection: Clone + Send + Sync + 'static;

    /// Open a connection (on the first call, and after the client dropped
    /// one). The client bounds it by the call's deadline.
    fn connect(&self) -> impl std::future::Future<Output = RedisResult<Self::Connection>> + Send;

    /// Send `cmd`; `key` is its first key, if it has one.
    fn send<'a>(con: &'a mut Self::Connection, cmd: &'a Cmd, key: Option<&'a str>) -> RedisFuture<'a, Value>;

    /// Whether the connection is still open (checked before each call).
    fn is_open(_con: &Self::Connection) -> bool {
        true
    }
}

/// A multiplexed connection the client opened from a [`redis::Client`],
/// with the task that drives it (dropping the last clone ends the task,
/// and with it the commands abandoned at their deadline). Over TCP the
/// client also keeps a handle on the socket, to see a close by the server
/// before a call is sent (the kernel knows at once; the task only once it
/// has run). Over TLS or a Unix socket, the task's end tells.
#[cfg(feature = "tokio")]
#[derive(Clone)]
pub struct AsyncConnection {
    con: redis::aio::MultiplexedConnection,
    driver: std::sync::Arc<Driver>,
    socket: Option<std::sync::Arc<std::net::TcpStream>>,
}

#[cfg(feature = "tokio")]
impl std::fmt::Debug for AsyncConnection {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AsyncConnection")
            .field("open", &<redis::Client as AsyncConnector>::is_open(self))
            .finish()
    }
}

#[cfg(feature = "tokio")]
struct Driver(tokio::task::JoinHandle<()>);

#[cfg(feature = "tokio")]
impl Drop for Driver {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// Whether the server still holds a socket: nothing to read means open
/// (the socket is non-blocking: the task that drives it set it so), data
/// pending too (replies the task has not read yet); an end of stream or
/// an error, closed. A peek takes nothing from the task.
#[cfg(feature = "tokio")]
fn still_open(socket: &std::net::TcpStream) -> bool {
    match socket.peek(&mut [0u8]) {
        Ok(n) => n > 0,
        Err(e) => e.kind() == std::io::ErrorKind::WouldBlock,
    }
}

/// The same socket as `stream` (a second handle, not a second
/// connection), for [`still_open`].
#[cfg(all(feature = "tokio", unix))]
fn same_socket(stream: &tokio::net::TcpStream) -> std::io::Result<std::net::TcpStream> {
    Ok(std::os::fd::AsFd::as_fd(stream).try_clone_to_owned()?.into())
}

#[cfg(all(feature = "tokio", windows))]
fn same_socket(stream: &tokio::net::TcpStream) -> std::io::Result<std::net::TcpStream> {
    Ok(std::os::windows::io::AsSocket::as_socket(stream)
        .try_clone_to_owned()?
        .into())
}

#[cfg(feature = "tokio")]
impl AsyncConnector for redis::Client {
    type Connection = AsyncConnection;

    async fn connect(&self) -> RedisResult<AsyncConnection> {
        let info = self.get_connection_info();
        let (con, driver, socket) = match &info.addr {
            redis::ConnectionAddr::Tcp(host, port) => {
                let stream = tokio::net::TcpStream::connect((host.as_str(), *port)).await?;
                stream.set_nodelay(true)?;
                let socket = same_socket(&stream)?;
                let (con, driver) = redis::aio::MultiplexedConnection::new_with_config(
                    &info.redis,
                    stream,
                    redis::AsyncConnectionConfig::new(),
                )
                .await?;
                (con, tokio::spawn(driver), Some(std::sync::Arc::new(socket)))
            }
            _ => {
                let (con, driver) = self.create_multiplexed_tokio_connection().await?;
                (con, tokio::spawn(driver), None)
            }
        };
        Ok(AsyncConnection {
            con,
            driver: std::sync::Arc::new(Driver(driver)),
            socket,
        })
    }

    fn send<'a>(con: &'a mut AsyncConnection, cmd: &'a Cmd, _key: Option<&'a str>) -> RedisFuture<'a, Value> {
        redis::aio::ConnectionLike::req_packed_command(&mut con.con, cmd)
    }

    fn is_open(con: &AsyncConnection) -> bool {
        !con.driver.0.is_finished() && con.socket.as_deref().is_none_or(still_open)
    }
}

/// A Redis Cluster, through an async cluster connection the client opens
/// (and opens again after a fault). Build the client with `.retries(0)`,
/// for the reason given for the blocking client.
#[cfg(feature = "tokio")]
impl AsyncConnector for redis::cluster::ClusterClient {
    type Connection = redis::cluster_async::ClusterConnection;

    async fn connect(&self) -> RedisResult<Self::Connection> {
        self.get_async_connection().await
    }

    fn send<'a>(con: &'a mut Self::Connection, cmd: &'a Cmd, key: Option<&'a str>) -> RedisFuture<'a, Value> {
        send_cluster(con, cmd, key)
    }
}

#[cfg(feature = "tokio")]
fn send_cluster<'a>(
    con: &'a mut redis::cluster_async::ClusterConnection,
    cmd: &'a Cmd,
    key: Option<&'a str>,
) -> RedisFuture<'a, Value> {
    Box::pin(async move {
        match key {
            Some(key) => con.route_command(cmd, route(key)).await,
            None => redis::aio::ConnectionLike::req_packed_command(con, cmd).await,
        }
        .map_err(crate::error::slot_moving)
    })
}

/// Connections of your own, cloned for each call: the client bounds each
/// call by its deadline, and the connection recovers (or not) as it does
/// by itself.
#[cfg(feature = "tokio")]
macro_rules! own_connection {
    ($t:ty, |$con:ident, $cmd:ident, $key:pat_param| $send:expr) => {
        impl AsyncConnector for $t {
            type Connection = $t;

            async fn connect(&self) -> RedisResult<$t> {
                Ok(self.clone())
            }

            fn send<'a>(con: &'a mut $t, cmd: &'a Cmd, key: Option<&'a str>) -> RedisFuture<'a, Value> {
                let ($con, $cmd, $key) = (con, cmd, key);
                $send
            }
        }
    };
}

#[cfg(feature = "tokio")]
own_connection!(redis::aio::MultiplexedConnection, |con, cmd, _key| {
    redis::aio::ConnectionLike::req_packed_command(con, cmd)
});

#[cfg(feature = "tokio")]
own_connection!(redis::cluster_async::ClusterConnection, |con, cmd, key| {
    send_cluster(con, cmd, key)
});

// A ConnectionManager reconnects when a call fails. A call that meets its
// failed reconnection (the connection refused: nothing was sent) is sent
// once more, within its deadline, over the reconnection that failure
// started; so once the server is back, the first call goes through.
#[cfg(feature = "tokio")]
own_connection!(redis::aio::ConnectionManager, |con, cmd, _key| {
    Box::pin(async move {
        match redis::aio::ConnectionLike::req_packed_command(con, cmd).await {
            Err(e) if e.is_connection_refusal() => {
                redis::aio::ConnectionLike::req_packed_command(con, cmd).await
            }
            other => other,
        }
    })
});
