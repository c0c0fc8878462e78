//! Counters for `INFO ratelimit`: every command counts its calls and how
//! they ended; some count more (units refunded, log entries written, ...).
//! Each command's counters live in its `Command`, which its pipeline owns.

use crate::reply::Outcome;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

/// A counter every row has a slot for; a row reports those it names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Field {
    Calls,
    Allowed,
    Refused,
    Errors,
    /// Instants appended to sliding logs (one per allowed unit).
    EntriesWritten,
    /// Leases found past their deadline and dropped at a write.
    LeasesExpired,
    /// Leases released before their deadline.
    Released,
    /// Leases given a new deadline.
    Renewed,
    /// Calls with `REFUND` (answered: neither allowed nor refused).
    Refunds,
    /// Units given back by refunds that changed a limiter.
    Refunded,
    /// Blocks started by refusals.
    Blocks,
    /// Refusals answered as allowed: the shadow switch was on.
    ShadowRefused,
    /// Units recorded by forced requests.
    Forced,
    /// Requests reserved for a later instant.
    Reserved,
    /// Units granted by requests for as many as would pass.
    Granted,
}

const FIELDS: usize = 15;

pub struct Stats {
    /// The fields reported, each with its name in `INFO` (after the row's
    /// prefix).
    names: &'static [(Field, &'static str)],
    values: [AtomicU64; FIELDS],
}

/// The four fields of every rate command.
pub const CALLS: [(Field, &str); 4] = [
    (Field::Calls, "calls"),
    (Field::Allowed, "allowed"),
    (Field::Refused, "refused"),
    (Field::Errors, "errors"),
];

/// The fields of the commands that take the rate options and answer to the
/// shadow switch.
pub const RATE: [(Field, &str); 11] = [
    CALLS[0],
    CALLS[1],
    CALLS[2],
    CALLS[3],
    (Field::Refunds, "refunds"),
    (Field::Refunded, "refunded"),
    (Field::Blocks, "blocks"),
    (Field::ShadowRefused, "shadow_refused"),
    (Field::Forced, "forced"),
    (Field::Reserved, "reserved"),
    (Field::Granted, "granted"),
];

impl Stats {
    pub const fn new(names: &'static [(Field, &'static str)]) -> Stats {
        Stats {
            names,
            values: [const { AtomicU64::new(0) }; FIELDS],
        }
    }

    pub fn add(&self, field: Field, n: u64) {
        self.values[field as usize].fetch_add(n, Relaxed);
    }

    /// Count one call: how it ended when it replied with a decision, `None`
    /// for a reply without one (a call only), an error.
    pub fn record(&self, outcome: Result<Option<Outcome>, ()>) {
        self.add(Field::Calls, 1);
        match outcome {
            Ok(Some(Outcome::Allowed)) => self.add(Field::Allowed, 1),
            Ok(Some(Outcome::Refused)) => self.add(Field::Refused, 1),
            Ok(Some(Outcome::Refund)) => self.add(Field::Refunds, 1),
            Ok(Some(Outcome::ShadowRefused)) => self.add(Field::ShadowRefused, 1),
            Ok(None) => {}
            Err(()) => self.add(Field::Errors, 1),
        }
    }

    /// Each reported field as (name, value).
    pub fn fields(&self) -> impl Iterator<Item = (&'static str, u64)> + '_ {
        self.names
            .iter()
            .map(|&(field, name)| (name, self.values[field as usize].load(Relaxed)))
    }
}
