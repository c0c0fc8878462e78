//! What sync and async clients share: the arguments of each call, the
//! backend's discovery, and the reading of replies.

use redis::{Cmd, RedisResult, Value};

use crate::backend::{self, Backend};
use crate::decision::{Decision, Shape};
use crate::error::is_server_error;
use crate::limit::{Arg, Command, ConcurrencyLimit, Limit, Take};
use crate::Error;

/// One call, before a backend is chosen: the command, its arguments after
/// the keys, and how to read its reply.
#[derive(Debug, Clone)]
pub(crate) struct Plan {
    pub(crate) command: Command,
    pub(crate) args: Vec<Arg>,
    pub(crate) shape: Option<Shape>,
    pub(crate) asked: u64,
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
        })
    }

    pub(crate) fn all(limits: &[Limit], keys: usize, take: &Take) -> Result<Plan, Error> {
        if keys != limits.len() {
            return Err(Error::invalid(
                "keys",
                format!("one key per limit: {} limits, {keys} keys", limits.len()),
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
        })
    }

    pub(crate) fn acquire(limit: &ConcurrencyLimit, n: u64, peek: bool) -> Plan {
        let mut args = vec![
            Arg::Int(limit.limit),
            Arg::Int(limit.timeout_ms),
            Arg::Int(n),
            Arg::Word("MS"),
        ];
        if peek {
            args.push(Arg::Word("PEEK"));
        }
        Plan {
            command: Command::Concurrency,
            args,
            shape: Some(Shape::Lease),
            asked: n,
        }
    }

    pub(crate) fn release(lease: u64) -> Plan {
        Plan {
            command: Command::Release,
            args: vec![Arg::Int(lease)],
            shape: None,
            asked: 0,
        }
    }

    pub(crate) fn renew(lease: u64, timeout: std::time::Duration) -> Result<Plan, Error> {
        Ok(Plan {
            command: Command::Renew,
            args: vec![
                Arg::Int(lease),
                Arg::Int(crate::limit::millis("timeout", timeout)?),
                Arg::Word("MS"),
            ],
            shape: None,
            asked: 0,
        })
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
}

/// A reply with its error replies (which a connection may hand back as
/// values) turned into errors.
pub(crate) fn checked(reply: RedisResult<Value>) -> RedisResult<Value> {
    reply.and_then(Value::extract_error)
}

/// The integer reply of `RL.RELEASE` and `RL.RENEW`.
pub(crate) fn integer(reply: &Value) -> Result<u64, Error> {
    match reply {
        Value::Int(n) if *n >= 0 => Ok(*n as u64),
        other => Err(Error::Reply(format!("not a count: {other:?}"))),
    }
}

/// What to do after an error: reload what the server lost and send again
/// (once), or give up.
pub(crate) fn recovery(backend: Backend, command: Command, e: &redis::RedisError) -> Option<Cmd> {
    match backend {
        Backend::Functions if backend::is_function_missing(e) => Some(backend::load_library()),
        Backend::Scripts if backend::is_noscript(e) => Some(backend::load_script(command)),
        _ => None,
    }
}

/// One step of the discovery of the backend (SPEC 18), in order: the
/// module's commands; the functions library at this client's version; the
/// library loaded by the client; the scripts.
pub(crate) struct Probe {
    pub(crate) cmd: Cmd,
    accept: fn(&Value) -> bool,
    backend: Backend,
}

pub(crate) fn probes() -> [Probe; 3] {
    [
        Probe {
            cmd: backend::probe_module(),
            accept: backend::module_found,
            backend: Backend::Module,
        },
        Probe {
            cmd: backend::probe_version(),
            accept: backend::version_matches,
            backend: Backend::Functions,
        },
        Probe {
            cmd: backend::load_library(),
            accept: |_| true,
            backend: Backend::Functions,
        },
    ]
}

/// Where the discovery stands after one probe's answer.
pub(crate) enum Found {
    /// This backend.
    Backend(Backend),
    /// Not this one: the next probe.
    Next,
}

impl Probe {
    /// A probe's answer: its backend, the next probe, or an error that is
    /// not the server's (the connection failed: nothing is decided).
    pub(crate) fn answer(&self, reply: RedisResult<Value>) -> Result<Found, Error> {
        match reply {
            Ok(v) if (self.accept)(&v) => Ok(Found::Backend(self.backend)),
            Ok(_) => Ok(Found::Next),
            Err(e) if is_server_error(&e) => Ok(Found::Next),
            Err(e) => Err(Error::Redis(e)),
        }
    }
}

/// The last resort, when no probe found a backend: the scripts, which
/// every server since Redis 2.6 runs.
pub(crate) const LAST_RESORT: Backend = Backend::Scripts;
