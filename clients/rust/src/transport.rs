//! The blocking client's own connection to one server: a TCP or Unix
//! socket that speaks RESP2, the `redis` crate's parser reading its
//! replies. Its own, because a call must be bounded by the time left of its
//! deadline (connect, send, reply), and because a connection the server
//! closed while it was idle (a restart, `CLIENT KILL`) must be seen as
//! closed before a call is written to it: the first call once the server
//! answers again then goes through a new connection, and no call whose
//! answer might be lost is ever written to a dead one.

use std::io::{self, BufReader, Read, Write};
use std::net::{TcpStream, ToSocketAddrs};
#[cfg(unix)]
use std::os::unix::net::UnixStream;
use std::time::{Duration, Instant};

use redis::{Cmd, ConnectionAddr, ConnectionInfo, RedisResult, Value};

/// What a peek at a socket needs: its descriptor, on Unix.
#[cfg(unix)]
trait Handle: std::os::fd::AsFd {}
#[cfg(unix)]
impl<T: std::os::fd::AsFd> Handle for T {}
#[cfg(not(unix))]
trait Handle {}
#[cfg(not(unix))]
impl<T> Handle for T {}

/// A socket the wire can run over.
trait Socket: Read + Write + Handle + Sized {
    fn read_timeout(&self, d: Option<Duration>) -> io::Result<()>;
    fn write_timeout(&self, d: Option<Duration>) -> io::Result<()>;
    #[cfg(not(unix))]
    fn nonblocking(&self, on: bool) -> io::Result<()>;
    fn duplicate(&self) -> io::Result<Self>;
}

macro_rules! socket {
    ($t:ty) => {
        impl Socket for $t {
            fn read_timeout(&self, d: Option<Duration>) -> io::Result<()> {
                self.set_read_timeout(d)
            }
            fn write_timeout(&self, d: Option<Duration>) -> io::Result<()> {
                self.set_write_timeout(d)
            }
            #[cfg(not(unix))]
            fn nonblocking(&self, on: bool) -> io::Result<()> {
                self.set_nonblocking(on)
            }
            fn duplicate(&self) -> io::Result<Self> {
                self.try_clone()
            }
        }
    };
}
socket!(TcpStream);
#[cfg(unix)]
socket!(UnixStream);

/// Timeouts are set on the socket only when they must change: a call's
/// first read waits at most this much past its deadline, and saves two
/// system calls.
const SLACK: Duration = Duration::from_millis(1);

struct Wire<S> {
    writer: S,
    reader: BufReader<S>,
    parser: redis::Parser,
    read_timeout: Option<Duration>,
    write_timeout: Option<Duration>,
}

/// `current` must become at most `wanted`: whether to set it.
fn must_set(current: Option<Duration>, wanted: Duration) -> bool {
    current.is_none_or(|c| c < wanted || c > wanted + SLACK)
}

impl<S: Socket> Wire<S> {
    fn new(stream: S) -> io::Result<Wire<S>> {
        Ok(Wire {
            reader: BufReader::new(stream.duplicate()?),
            writer: stream,
            parser: redis::Parser::new(),
            read_timeout: None,
            write_timeout: None,
        })
    }

    fn send(&mut self, packed: &[u8], timeout: Duration) -> RedisResult<Value> {
        if must_set(self.write_timeout, timeout) {
            self.writer.write_timeout(Some(timeout))?;
            self.write_timeout = Some(timeout);
        }
        self.writer.write_all(packed)?;
        if must_set(self.read_timeout, timeout) {
            self.writer.read_timeout(Some(timeout))?;
            self.read_timeout = Some(timeout);
        }
        self.parser.parse_value(&mut self.reader)
    }

    /// Whether the server still holds this connection: nothing to read
    /// (a reply fully read leaves nothing behind), and not closed.
    #[cfg(unix)]
    fn is_open(&mut self) -> bool {
        if !self.reader.buffer().is_empty() {
            return false;
        }
        let mut byte = [std::mem::MaybeUninit::uninit()];
        let peeked = socket2::SockRef::from(&self.writer)
            .recv_with_flags(&mut byte, libc::MSG_PEEK | libc::MSG_DONTWAIT);
        matches!(peeked, Err(e) if e.kind() == io::ErrorKind::WouldBlock)
    }

    #[cfg(not(unix))]
    fn is_open(&mut self) -> bool {
        if !self.reader.buffer().is_empty() || self.writer.nonblocking(true).is_err() {
            return false;
        }
        let mut byte = [0u8];
        let open = matches!(self.writer.read(&mut byte), Err(e) if e.kind() == io::ErrorKind::WouldBlock);
        open && self.writer.nonblocking(false).is_ok()
    }
}

enum Inner {
    Tcp(Wire<TcpStream>),
    #[cfg(unix)]
    Unix(Wire<UnixStream>),
    /// TLS: the `redis` crate's connection, bounded the same way but not
    /// checked for a close while idle.
    Redis(redis::Connection),
}

/// A blocking connection the client opened from a [`redis::Client`].
pub struct SyncConnection(Inner);

impl std::fmt::Debug for SyncConnection {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self.0 {
            Inner::Tcp(_) => "SyncConnection(tcp)",
            #[cfg(unix)]
            Inner::Unix(_) => "SyncConnection(unix)",
            Inner::Redis(_) => "SyncConnection(redis)",
        })
    }
}

fn timed_out() -> io::Error {
    io::Error::new(io::ErrorKind::TimedOut, "connection timed out")
}

fn connect_tcp(host: &str, port: u16, deadline: Instant) -> io::Result<TcpStream> {
    let mut last = None;
    for address in (host, port).to_socket_addrs()? {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(timed_out());
        }
        match TcpStream::connect_timeout(&address, left) {
            Ok(stream) => {
                stream.set_nodelay(true)?;
                return Ok(stream);
            }
            Err(e) => last = Some(e),
        }
    }
    Err(last.unwrap_or_else(|| io::Error::new(io::ErrorKind::NotFound, "no address for the host")))
}

impl SyncConnection {
    /// Connect to `info` within `timeout`, authenticate and select the
    /// database it names.
    pub(crate) fn open(client: &redis::Client, timeout: Duration) -> RedisResult<SyncConnection> {
        let deadline = Instant::now() + timeout;
        let info: &ConnectionInfo = client.get_connection_info();
        let mut con = match &info.addr {
            ConnectionAddr::Tcp(host, port) => {
                SyncConnection(Inner::Tcp(Wire::new(connect_tcp(host, *port, deadline)?)?))
            }
            #[cfg(unix)]
            ConnectionAddr::Unix(path) => SyncConnection(Inner::Unix(Wire::new(UnixStream::connect(path)?)?)),
            _ => {
                return Ok(SyncConnection(Inner::Redis(
                    client.get_connection_with_timeout(timeout)?,
                )))
            }
        };
        let redis = &info.redis;
        if let Some(password) = &redis.password {
            let mut auth = redis::cmd("AUTH");
            if let Some(username) = &redis.username {
                auth.arg(username);
            }
            auth.arg(password);
            con.setup(&auth, deadline)?;
        }
        if redis.db != 0 {
            con.setup(redis::cmd("SELECT").arg(redis.db), deadline)?;
        }
        Ok(con)
    }

    fn setup(&mut self, cmd: &Cmd, deadline: Instant) -> RedisResult<()> {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(timed_out().into());
        }
        self.send(cmd, left)?.extract_error().map(drop)
    }

    /// Send `cmd` and read its reply, each within `timeout`.
    pub(crate) fn send(&mut self, cmd: &Cmd, timeout: Duration) -> RedisResult<Value> {
        match &mut self.0 {
            Inner::Tcp(wire) => wire.send(&cmd.get_packed_command(), timeout),
            #[cfg(unix)]
            Inner::Unix(wire) => wire.send(&cmd.get_packed_command(), timeout),
            Inner::Redis(con) => {
                con.set_write_timeout(Some(timeout))?;
                con.set_read_timeout(Some(timeout))?;
                redis::ConnectionLike::req_command(con, cmd)
            }
        }
    }

    pub(crate) fn is_open(&mut self) -> bool {
        match &mut self.0 {
            Inner::Tcp(wire) => wire.is_open(),
            #[cfg(unix)]
            Inner::Unix(wire) => wire.is_open(),
            Inner::Redis(con) => redis::ConnectionLike::is_open(con),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timeouts_change_only_when_they_must() {
        let ms = Duration::from_millis;
        assert!(must_set(None, ms(250)));
        // A little more than wanted: kept.
        assert!(!must_set(Some(ms(250)), Duration::from_micros(249_500)));
        assert!(must_set(Some(ms(250)), ms(248)));
        // Less than wanted would give up early.
        assert!(must_set(Some(ms(200)), ms(250)));
    }
}
