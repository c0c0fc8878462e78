//! Counters for `INFO ratelimit`: every command counts its calls and how
//! they ended; some count more (units refunded, log entries written, ...).
//! Each command's counters live in its registry row.

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
}

const FIELDS: usize = 10;

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

/// The fields of the commands that take `REFUND`.
pub const WITH_REFUNDS: [(Field, &str); 6] = [
    CALLS[0],
    CALLS[1],
    CALLS[2],
    CALLS[3],
    (Field::Refunds, "refunds"),
    (Field::Refunded, "refunded"),
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

    /// Count one call: `Some(blocked)` when it replied with a decision,
    /// `None` on an error; a reply without a decision counts as a call only.
    pub fn record(&self, outcome: Result<Option<bool>, ()>) {
        self.add(Field::Calls, 1);
        match outcome {
            Ok(Some(false)) => self.add(Field::Allowed, 1),
            Ok(Some(true)) => self.add(Field::Refused, 1),
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
