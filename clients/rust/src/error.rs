use std::fmt;
use std::sync::Arc;
use std::time::Duration;

/// The contract's base class (`RateLimitError` in every client): in Rust,
/// the [`Error`] enum itself, whose variants are the three classes.
pub type RateLimitError = Error;

/// Everything a call can fail with: the contract's three classes
/// (`InvalidParameter`, `ServerError`, `Unavailable`), and a reply of a
/// shape no backend sends.
///
/// Only [`Error::Unavailable`] is an outage: the failure policy
/// (`fail_open`) applies to it alone. The others are raised whatever the
/// policy.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub enum Error {
    /// A parameter refused before anything is sent: `message` names it
    /// (`rate must be an integer from 1 to 1000000000, got 0`).
    InvalidParameter {
        /// The parameter: `rate`, `per`, `burst`, `wait`, `key`, `timeout`...
        name: &'static str,
        /// What is wrong with it, in the contract's words.
        message: String,
    },
    /// The server refused the call: a misconfiguration (a cap, a range, a
    /// key of another type, an ACL), never an outage.
    ServerError {
        /// The reply's first word: `ERR`, `WRONGTYPE`, `NOPERM`, ...
        code: String,
        /// The reply as sent, code first (`ERR limit must be ...`).
        message: String,
    },
    /// No answer within the deadline, a transport error, or an error reply
    /// that says the server cannot serve now (`LOADING`, `BUSY`,
    /// `READONLY`, ...).
    Unavailable {
        /// The error reply's code, when the server answered one.
        code: Option<String>,
        /// What happened: `no answer within 250 ms`, the transport's error,
        /// or the reply as sent.
        cause: String,
        /// The `redis` crate's error, when there is one.
        source: Option<Arc<redis::RedisError>>,
    },
    /// A reply of a shape no backend sends.
    Reply(String),
}

/// The error replies that mean the server cannot serve now, not that the
/// call is wrong (clients/contract/errors.json's `unavailable_codes`).
const UNAVAILABLE_CODES: [&str; 9] = [
    "LOADING",
    "BUSY",
    "MASTERDOWN",
    "CLUSTERDOWN",
    "TRYAGAIN",
    "READONLY",
    "OOM",
    "MISCONF",
    "NOREPLICAS",
];

/// A cluster connection's `MOVED` or `ASK` (one built with no retries does
/// not follow them): the keys' slot is moving, which is an outage of a
/// moment, and the next connection reads the slots afresh. Made a transport
/// error here, so that it is [`Error::Unavailable`] and drops the
/// connection. From one server (a client of one node pointed at a
/// Cluster), the same reply stays a [`Error::ServerError`]: that is a
/// misconfiguration, which must be seen, not failed open.
pub(crate) fn slot_moving(e: redis::RedisError) -> redis::RedisError {
    match e.code() {
        Some("MOVED" | "ASK") if !e.is_io_error() => {
            let text = reply_text(&e).unwrap_or_default();
            redis::RedisError::from(std::io::Error::new(
                std::io::ErrorKind::ConnectionAborted,
                format!("the keys' slot is moving ({text})"),
            ))
        }
        _ => e,
    }
}

impl Error {
    pub(crate) fn invalid(name: &'static str, message: String) -> Error {
        Error::InvalidParameter { name, message }
    }

    /// The deadline passed.
    pub(crate) fn deadline(timeout: Duration) -> Error {
        Error::Unavailable {
            code: None,
            cause: format!("no answer within {} ms", timeout.as_millis()),
            source: None,
        }
    }

    /// Whether this is an outage (the failure policy applies), not a
    /// refusal of the call.
    pub fn is_unavailable(&self) -> bool {
        matches!(self, Error::Unavailable { .. })
    }

    /// The error reply's code (`ERR`, `WRONGTYPE`, `LOADING`...), when the
    /// server answered one.
    pub fn code(&self) -> Option<&str> {
        match self {
            Error::ServerError { code, .. } => Some(code),
            Error::Unavailable { code, .. } => code.as_deref(),
            _ => None,
        }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::InvalidParameter { message, .. } | Error::ServerError { message, .. } => {
                f.write_str(message)
            }
            Error::Unavailable { cause, .. } => write!(f, "rate limiter unavailable: {cause}"),
            Error::Reply(m) => write!(f, "unexpected reply: {m}"),
        }
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Error::Unavailable { source: Some(e), .. } => Some(e.as_ref()),
            _ => None,
        }
    }
}

/// The error reply a `redis` error carries, as sent (`code detail`), or
/// `None` when the connection failed instead.
pub(crate) fn reply_text(e: &redis::RedisError) -> Option<String> {
    // Errors the redis crate raises itself carry no code.
    let code = e.code().filter(|_| !e.is_io_error())?;
    Some(match e.detail() {
        Some(detail) => format!("{code} {detail}"),
        None => code.to_string(),
    })
}

/// Whether `e` says the connection cannot serve now (a transport error, or
/// a reply such as `LOADING` or `MOVED`): the clients then open another
/// one (a cluster client reads the slots afresh).
pub(crate) fn is_outage(e: &redis::RedisError) -> bool {
    e.code()
        .filter(|_| !e.is_io_error())
        .is_none_or(|code| UNAVAILABLE_CODES.contains(&code))
}

impl From<redis::RedisError> for Error {
    /// An error reply becomes [`Error::ServerError`], or
    /// [`Error::Unavailable`] when its code says the server cannot serve
    /// now; anything else (I/O, a closed connection) is
    /// [`Error::Unavailable`].
    fn from(e: redis::RedisError) -> Error {
        match reply_text(&e) {
            Some(message) => {
                let code = e.code().unwrap_or_default().to_string();
                if UNAVAILABLE_CODES.contains(&code.as_str()) {
                    Error::Unavailable {
                        code: Some(code),
                        cause: message,
                        source: Some(Arc::new(e)),
                    }
                } else {
                    Error::ServerError { code, message }
                }
            }
            None => Error::Unavailable {
                code: None,
                cause: e.to_string(),
                source: Some(Arc::new(e)),
            },
        }
    }
}
