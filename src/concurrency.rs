//! The pipelines of the concurrency commands: a lease is taken
//! (`RL.CONCURRENCY`), released (`RL.RELEASE`) or renewed (`RL.RENEW`), each
//! on one key, decided by `rl-core` at the server's instant.
//!
//! ```text
//! RL.CONCURRENCY key limit timeout [quantity] [MS] [PEEK]
//! RL.RELEASE     key lease
//! RL.RENEW       key lease timeout [MS]
//! ```

use crate::algorithms::{holder_of, LEASES};
use crate::args;
use crate::codec::concurrency::{decode, plan, LeaseView};
use crate::command::Command;
use crate::config;
use crate::error::CommandError;
use crate::options::Accepts;
use crate::param::{capped, duration, number, Param};
use crate::reply::Reply;
use crate::stats::{Field, Stats};
use crate::store::{Content, Key, Keyspace, Write};
use rl_core::bounds::MAX_LIMIT;
use rl_core::concurrency::{release as release_lease, renew as renew_lease, MAX_TIMEOUT_MICROS};
use rl_core::{Concurrency, Instant, LeaseUpdate, NoLeases, ParamError, TimeUnit};

/// A lease id: a positive 64-bit integer.
const LEASE: Param = number("lease", 1, i64::MAX as u64);
/// A timeout: 1 to 10^9 s (10^12 ms with `MS`).
const TIMEOUT: Param = duration("timeout");

const _: () = assert!(TIMEOUT.max == MAX_TIMEOUT_MICROS);

/// `RL.CONCURRENCY`'s parameters. Memory grows with the leases held: the
/// limit is capped by a module setting.
pub const PARAMS: [Param; 2] = [
    capped(number("limit", 1, MAX_LIMIT), config::CONCURRENCY_CAP),
    TIMEOUT,
];

pub static RELEASE: Command = Command {
    name: "rl.release",
    stats: Stats::new(&[
        (Field::Calls, "calls"),
        (Field::Released, "released"),
        (Field::Errors, "errors"),
    ]),
};

pub static RENEW: Command = Command {
    name: "rl.renew",
    stats: Stats::new(&[
        (Field::Calls, "calls"),
        (Field::Renewed, "renewed"),
        (Field::Errors, "errors"),
    ]),
};

/// Read the key's leases and decide with `decide`, which returns what to
/// answer and the update to store; the write is planned while the value is
/// still borrowed.
fn with_leases<K: Key + ?Sized, T>(
    key: &mut K,
    decide: impl FnOnce(Option<&LeaseView<'_>>) -> (T, Option<LeaseUpdate>),
) -> Result<(T, Option<(Write, u64)>), CommandError> {
    let (problem, holder) = {
        let state = match key.read() {
            Content::Empty => Ok(None),
            Content::String(bytes) => decode(bytes)
                .map(Some)
                .map_err(|problem| (problem, holder_of(bytes))),
            Content::Other => return Err(CommandError::WrongType),
        };
        match state {
            Ok(state) => {
                let (answer, update) = decide(state.as_ref());
                let write = update.map(|u| (plan(state.as_ref(), &u), u.expired));
                return Ok((answer, write));
            }
            Err(unreadable) => unreadable,
        }
    };
    Err(CommandError::state(key.name(), LEASES.name, problem, holder))
}

/// Write the planned update, and count the leases it found expired.
fn store<K: Key + ?Sized>(key: &mut K, write: Option<(Write, u64)>) -> bool {
    let Some((write, expired)) = write else {
        return false;
    };
    key.write(&write);
    if expired > 0 {
        LEASES.stats.add(Field::LeasesExpired, expired);
    }
    true
}

/// `RL.CONCURRENCY key limit timeout [quantity] [MS] [PEEK]`: the five
/// integers, then the lease (0 when none is taken: refused, a query, PEEK).
pub fn acquire<S: Keyspace>(
    command: &Command,
    args: &[&[u8]],
    now: Instant,
    keys: &S,
) -> Result<Reply, CommandError> {
    let (numbers, options) = args::after_key(command.name, args, PARAMS.len(), Accepts::LEASE)?;
    let [limit, timeout] = args::params(command.name, &PARAMS, numbers, options.unit)?;
    let limiter = Concurrency::new(limit, timeout)
        .map_err(|ParamError::OutOfRange { name, min, max }| CommandError::BadNumber { name, min, max })?;
    let mut key = keys.open(1)?;
    let (acquired, write) = with_leases(&mut key, |state| {
        let acquired = match state {
            Some(view) => limiter.acquire(view, now, options.quantity),
            None => limiter.acquire(&NoLeases, now, options.quantity),
        };
        let update = acquired.update.filter(|_| !options.peek);
        (acquired, update)
    })?;
    let lease = if store(&mut key, write) {
        acquired.lease.map_or(0, |l| l.id)
    } else {
        0
    };
    Ok(Reply::five(&acquired.decision, options.unit).and(i64::try_from(lease).unwrap_or(0)))
}

/// `RL.RELEASE key lease`: the units the lease held, or 0 for a lease that
/// is unknown, already released or past its deadline.
pub fn release<S: Keyspace>(
    command: &Command,
    args: &[&[u8]],
    now: Instant,
    keys: &S,
) -> Result<Reply, CommandError> {
    let [_, _, lease] = args else {
        return Err(CommandError::WrongArity {
            command: command.name,
        });
    };
    let id = LEASE.parse(lease, TimeUnit::Seconds)?;
    let mut key = keys.open(1)?;
    let (units, write) = with_leases(&mut key, |state| {
        match state.and_then(|view| release_lease(view, now, id)) {
            Some((units, update)) => (units, Some(update)),
            None => (0, None),
        }
    })?;
    if store(&mut key, write) {
        command.stats.add(Field::Released, 1);
    }
    Ok(Reply::Integer(i64::try_from(units).unwrap_or(i64::MAX)))
}

/// `RL.RENEW key lease timeout [MS]`: 1 when the live lease now ends at
/// `now + timeout`, else 0 (and nothing changes).
pub fn renew<S: Keyspace>(
    command: &Command,
    args: &[&[u8]],
    now: Instant,
    keys: &S,
) -> Result<Reply, CommandError> {
    let [_, _, lease, timeout, options @ ..] = args else {
        return Err(CommandError::WrongArity {
            command: command.name,
        });
    };
    let unit = args::unit_only(command.name, options)?;
    let id = LEASE.parse(lease, TimeUnit::Seconds)?;
    let timeout = TIMEOUT.parse(timeout, unit)?;
    let mut key = keys.open(1)?;
    let ((), write) = with_leases(&mut key, |state| {
        ((), state.and_then(|view| renew_lease(view, now, id, timeout)))
    })?;
    let renewed = store(&mut key, write);
    if renewed {
        command.stats.add(Field::Renewed, 1);
    }
    Ok(Reply::Integer(i64::from(renewed)))
}
