use std::fmt;

/// Everything a call can fail with.
#[derive(Debug)]
#[non_exhaustive]
pub enum Error {
    /// A parameter or option that the client refuses before any call: it
    /// names the parameter (`rate`, `per`, `burst`, `max_wait`, ...).
    InvalidParameter {
        /// The parameter, as the constructor or option names it.
        name: &'static str,
        /// What is wrong with it.
        message: String,
    },
    /// An error reply from the server (bad arguments past the client's
    /// checks, a key of another algorithm or type, `CROSSSLOT`, ...): its
    /// code (`ERR`, `WRONGTYPE`, ...) and message, as sent.
    Server {
        /// The error's first word: `ERR`, `WRONGTYPE`, `CROSSSLOT`, ...
        code: String,
        /// The rest of the server's message.
        message: String,
    },
    /// The connection failed (I/O, timeout, a closed connection): the
    /// `redis` crate's error.
    Redis(redis::RedisError),
    /// A reply of a shape no backend sends.
    Reply(String),
}

impl Error {
    pub(crate) fn invalid(name: &'static str, message: String) -> Error {
        Error::InvalidParameter { name, message }
    }

    /// The server's message, for [`Error::Server`]: `ERR max_burst must
    /// be ...` (code and message, as `redis-cli` shows it).
    pub fn server_message(&self) -> Option<String> {
        match self {
            Error::Server { code, message } => Some(format!("{code} {message}")),
            _ => None,
        }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::InvalidParameter { name, message } => write!(f, "invalid parameter `{name}`: {message}"),
            Error::Server { code, message } => write!(f, "{code} {message}"),
            Error::Redis(e) => write!(f, "redis: {e}"),
            Error::Reply(m) => write!(f, "unexpected reply: {m}"),
        }
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Error::Redis(e) => Some(e),
            _ => None,
        }
    }
}

impl From<redis::RedisError> for Error {
    /// An error reply becomes [`Error::Server`]; anything else (I/O, a
    /// closed connection) stays [`Error::Redis`].
    fn from(e: redis::RedisError) -> Error {
        match (e.code(), e.kind()) {
            // Errors the client raises itself carry no code.
            (Some(code), _) if !e.is_io_error() => Error::Server {
                code: code.to_string(),
                message: e.detail().unwrap_or_default().to_string(),
            },
            _ => Error::Redis(e),
        }
    }
}

/// Whether the server answered an error (as opposed to the connection
/// failing).
pub(crate) fn is_server_error(e: &redis::RedisError) -> bool {
    e.code().is_some() && !e.is_io_error()
}
