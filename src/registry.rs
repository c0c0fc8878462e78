//! The module's commands: one row each. Registration, `COMMAND DOCS`, ACL
//! categories and `INFO` all iterate this table.
//!
//! A rate algorithm is one core file, one codec file and one row here.

use crate::all;
use crate::args::{capped, Accepts, Param};
use crate::args::{duration, number};
use crate::codec::{FixedWindowCodec, GcraCodec, SlidingCounterCodec, SlidingLogCodec, TokenBucketCodec};
use crate::concurrency;
use crate::config;
use crate::docs::{self, DocArg};
use crate::error::{printable, CommandError};
use crate::rate::{self, Algorithm, Rate};
use crate::reply::Reply;
use crate::stats::{Field, Stats, CALLS, RATE};
use crate::store::Keyspace;
use rl_core::bounds::{MAX_BURST, MAX_LIMIT};
use rl_core::{FixedWindow, Gcra, Instant, SlidingCounter, SlidingLog, TokenBucket};

/// One command.
pub struct Row {
    /// Lower case, as `COMMAND` lists it.
    pub name: &'static str,
    pub summary: &'static str,
    pub complexity: &'static str,
    /// `RedisModule_CreateCommand`'s flags.
    pub flags: &'static str,
    /// ACL categories, where the server lets modules set them.
    pub categories: &'static str,
    pub keys: Keys,
    pub kind: Kind,
    /// Its `INFO ratelimit` fields are named `<info>_<field>`.
    pub info: &'static str,
    pub stats: Stats,
    /// Whether the command is registered (`CL.THROTTLE` only when asked for).
    pub enabled: fn() -> bool,
}

/// Where a command's keys are.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Keys {
    /// The first argument, alone.
    First,
    /// `numkeys` at the first argument, then that many keys.
    Counted,
}

/// How a command runs.
pub enum Kind {
    /// `name key params... [quantity] [MS] [PEEK] [REFUND]` with a rate
    /// algorithm.
    Rate(&'static dyn Rate),
    /// redis-cell's `CL.THROTTLE`: `RL.GCRA` with redis-cell's grammar.
    ClThrottle,
    /// `RL.ALL`: several rate limits, one decision.
    All,
    /// `name key limit timeout [quantity] [MS] [PEEK]`: a lease on work in
    /// flight.
    Concurrency(&'static [Param; 2]),
    /// `name key lease`: a lease given back.
    Release,
    /// `name key lease timeout [MS]`: a lease given a new deadline.
    Renew,
}

impl Row {
    /// The arity declared to the server (negative: at least that many
    /// arguments, the command's name included).
    pub fn arity(&self) -> i32 {
        match &self.kind {
            Kind::Rate(rate) => -(2 + rate.params().len() as i32),
            Kind::ClThrottle => -5,
            // The name, numkeys, a key, an algorithm and its parameters.
            Kind::All => -6,
            Kind::Concurrency(params) => -(2 + params.len() as i32),
            Kind::Release => 3,
            Kind::Renew => -4,
        }
    }

    pub fn doc_args(&self) -> Vec<DocArg> {
        match &self.kind {
            Kind::Rate(rate) => docs::rate(rate.params(), Accepts::RATE),
            // No options: the key, the parameters, the quantity.
            Kind::ClThrottle => docs::rate(&GCRA.params, Accepts(&[])),
            Kind::All => {
                let algorithms = rates()
                    .map(|(row, rate)| {
                        let name = all::algorithm(row);
                        let token = Some(name.to_ascii_uppercase());
                        docs::block(name, token, docs::params(rate.params()).collect())
                    })
                    .collect();
                [
                    DocArg::integer("numkeys"),
                    DocArg::key("key").multiple(),
                    docs::one_of("limit", algorithms).multiple(),
                ]
                .into_iter()
                .chain(docs::options(Accepts::RATE))
                .collect()
            }
            Kind::Concurrency(params) => docs::rate(params.as_slice(), Accepts::LEASE),
            Kind::Release => vec![DocArg::key("key"), DocArg::integer("lease")],
            Kind::Renew => [
                DocArg::key("key"),
                DocArg::integer("lease"),
                DocArg::integer("timeout"),
            ]
            .into_iter()
            .chain(Accepts::UNIT.options().map(docs::option))
            .collect(),
        }
    }
}

/// Where `row`'s keys are in `args` (`args[0]` is the command's name), as
/// far as the arguments say: the server asks a command declared with
/// `getkeys-api` (Cluster slots, ACL key patterns, `COMMAND GETKEYS`).
pub fn key_positions(row: &Row, args: &[&[u8]]) -> std::ops::Range<usize> {
    match row.keys {
        Keys::First => 1..args.len().min(2),
        Keys::Counted => all::key_positions(args),
    }
}

/// Run `row` on `args` (`args[0]` is the command's name) at `now`.
pub fn run<S: Keyspace>(row: &Row, args: &[&[u8]], now: Instant, keys: &S) -> Result<Reply, CommandError> {
    match row.kind {
        Kind::Rate(rate) => rate::command(row, rate, args, now, keys),
        Kind::ClThrottle => cl_throttle(row, args, now, keys),
        Kind::All => all::command(row, args, now, keys),
        Kind::Concurrency(params) => concurrency::acquire(row, params, args, now, keys),
        Kind::Release => concurrency::release(row, args, now, keys),
        Kind::Renew => concurrency::renew(row, args, now, keys),
    }
}

const WRITE: &str = "write deny-oom fast";
const CATEGORIES: &str = "write fast ratelimit";
const RATE_STATS: &[(Field, &str)] = &RATE;
const fn always() -> bool {
    true
}

const GCRA: Algorithm<GcraCodec, 3> = Algorithm {
    params: [
        number("max_burst", 0, MAX_BURST),
        number("count", 1, MAX_LIMIT),
        duration("period"),
    ],
    build: |[max_burst, count, period]| Gcra::new(max_burst, count, period),
};

pub static COMMANDS: [Row; 10] = [
    Row {
        name: "rl.gcra",
        summary: "Rate limit with GCRA (as redis-cell): count per period, bursts of max_burst + 1",
        complexity: "O(1)",
        flags: WRITE,
        categories: CATEGORIES,
        keys: Keys::First,
        kind: Kind::Rate(&GCRA),
        info: "gcra",
        stats: Stats::new(RATE_STATS),
        enabled: always,
    },
    Row {
        name: "rl.token_bucket",
        summary: "Rate limit with a token bucket of capacity tokens, refill_count per refill_period",
        complexity: "O(1)",
        flags: WRITE,
        categories: CATEGORIES,
        keys: Keys::First,
        kind: Kind::Rate(&Algorithm::<TokenBucketCodec, 3> {
            params: [
                number("capacity", 1, MAX_LIMIT),
                number("refill_count", 1, MAX_LIMIT),
                duration("refill_period"),
            ],
            build: |[capacity, count, period]| TokenBucket::new(capacity, count, period),
        }),
        info: "token_bucket",
        stats: Stats::new(RATE_STATS),
        enabled: always,
    },
    Row {
        name: "rl.fixed",
        summary: "Rate limit with a fixed window: at most limit units per epoch-aligned window",
        complexity: "O(1)",
        flags: WRITE,
        categories: CATEGORIES,
        keys: Keys::First,
        kind: Kind::Rate(&Algorithm::<FixedWindowCodec, 2> {
            params: [number("limit", 1, MAX_LIMIT), duration("window")],
            build: |[limit, window]| FixedWindow::new(limit, window),
        }),
        info: "fixed",
        stats: Stats::new(RATE_STATS),
        enabled: always,
    },
    Row {
        name: "rl.sliding_log",
        summary: "Rate limit with a sliding log: at most limit units in any window, exactly",
        complexity: "O(log N) where N is the limit; O(Q) to record Q units",
        flags: WRITE,
        categories: CATEGORIES,
        keys: Keys::First,
        kind: Kind::Rate(&Algorithm::<SlidingLogCodec, 2> {
            // Memory grows with the limit: capped by a module setting.
            params: [
                capped(number("limit", 1, MAX_LIMIT), config::SLIDING_LOG_CAP),
                duration("window"),
            ],
            build: |[limit, window]| SlidingLog::new(limit, window),
        }),
        info: "sliding_log",
        stats: Stats::new(&[
            RATE[0],
            RATE[1],
            RATE[2],
            RATE[3],
            RATE[4],
            RATE[5],
            RATE[6],
            RATE[7],
            RATE[8],
            RATE[9],
            RATE[10],
            (Field::EntriesWritten, "entries_written"),
        ]),
        enabled: always,
    },
    Row {
        name: "rl.sliding_counter",
        summary: "Rate limit with a sliding counter: the two-window estimate of a sliding window",
        complexity: "O(1)",
        flags: WRITE,
        categories: CATEGORIES,
        keys: Keys::First,
        kind: Kind::Rate(&Algorithm::<SlidingCounterCodec, 2> {
            params: [number("limit", 1, MAX_LIMIT), duration("window")],
            build: |[limit, window]| SlidingCounter::new(limit, window),
        }),
        info: "sliding_counter",
        stats: Stats::new(RATE_STATS),
        enabled: always,
    },
    Row {
        name: "rl.all",
        summary:
            "Decide several rate limits at once: allowed only if every limit allows, and only then counted",
        complexity: "O(N) where N is the number of keys, plus each limit's own",
        flags: "write deny-oom",
        categories: "write ratelimit",
        keys: Keys::Counted,
        kind: Kind::All,
        info: "all",
        stats: Stats::new(RATE_STATS),
        enabled: always,
    },
    Row {
        name: "rl.concurrency",
        summary: "Take a lease of quantity units of work in flight, held until released or for timeout: at most limit units at once",
        complexity: "O(N) where N is the number of leases held",
        flags: WRITE,
        categories: CATEGORIES,
        keys: Keys::First,
        kind: Kind::Concurrency(&[
            // Memory grows with the leases held: capped by a module setting.
            capped(number("limit", 1, MAX_LIMIT), config::CONCURRENCY_CAP),
            duration("timeout"),
        ]),
        info: "concurrency",
        stats: Stats::new(&[
            (Field::Calls, "calls"),
            (Field::Allowed, "acquired"),
            (Field::Refused, "refused"),
            (Field::Errors, "errors"),
            (Field::LeasesExpired, "expired"),
        ]),
        enabled: always,
    },
    Row {
        name: "rl.release",
        summary: "Release a lease taken with RL.CONCURRENCY: the units it held, 0 if it had ended",
        complexity: "O(N) where N is the number of leases held",
        flags: WRITE,
        categories: CATEGORIES,
        keys: Keys::First,
        kind: Kind::Release,
        info: "release",
        stats: Stats::new(&[
            (Field::Calls, "calls"),
            (Field::Released, "released"),
            (Field::Errors, "errors"),
        ]),
        enabled: always,
    },
    Row {
        name: "rl.renew",
        summary: "Move a live lease's deadline to timeout from now: 1, or 0 if it had ended",
        complexity: "O(N) where N is the number of leases held",
        flags: WRITE,
        categories: CATEGORIES,
        keys: Keys::First,
        kind: Kind::Renew,
        info: "renew",
        stats: Stats::new(&[
            (Field::Calls, "calls"),
            (Field::Renewed, "renewed"),
            (Field::Errors, "errors"),
        ]),
        enabled: always,
    },
    Row {
        name: "cl.throttle",
        summary: "redis-cell's command: RL.GCRA with redis-cell's grammar (no options)",
        complexity: "O(1)",
        flags: WRITE,
        categories: CATEGORIES,
        keys: Keys::First,
        kind: Kind::ClThrottle,
        info: "cl_throttle",
        stats: Stats::new(&[
            CALLS[0],
            CALLS[1],
            CALLS[2],
            CALLS[3],
            (Field::ShadowRefused, "shadow_refused"),
        ]),
        enabled: config::cl_throttle_enabled,
    },
];

/// The rows of the rate algorithms: (row, algorithm).
pub fn rates() -> impl Iterator<Item = (&'static Row, &'static dyn Rate)> {
    COMMANDS.iter().filter_map(|row| match row.kind {
        Kind::Rate(rate) => Some((row, rate)),
        _ => None,
    })
}

/// The command whose algorithm's state `bytes` hold, as their first byte
/// (each algorithm's own) and their shape tell: for the error of another
/// command on that key.
pub fn holder_of(bytes: &[u8]) -> Option<&'static str> {
    COMMANDS.iter().find_map(|row| {
        let holds = match row.kind {
            Kind::Rate(rate) => rate.holds(bytes),
            Kind::Concurrency(_) => crate::codec::concurrency::holds(bytes),
            _ => false,
        };
        holds.then_some(row.name)
    })
}

/// The row of `RL.CONCURRENCY`, whose `INFO` counts every lease expiry
/// and whose name the leases' errors use.
pub fn leases_row() -> Option<&'static Row> {
    COMMANDS
        .iter()
        .find(|row| matches!(row.kind, Kind::Concurrency(_)))
}

/// `CL.THROTTLE key max_burst count period [quantity]`, exactly: `RL.GCRA`
/// with redis-cell's grammar. An option where `quantity` or after it stands
/// is named in the error, whatever the argument count.
fn cl_throttle<S: Keyspace>(
    row: &Row,
    args: &[&[u8]],
    now: Instant,
    keys: &S,
) -> Result<Reply, CommandError> {
    let arity = CommandError::WrongArity { command: row.name };
    if args.len() < 5 {
        return Err(arity);
    }
    // The same limiter, state and messages as RL.GCRA.
    let (gcra, _) = rates()
        .find(|(r, _)| r.name == "rl.gcra")
        .ok_or(CommandError::Internal)?;
    if let Some(option) = args[5..]
        .iter()
        .find(|a| a.first().is_some_and(u8::is_ascii_alphabetic))
    {
        return Err(CommandError::NoOptions {
            command: row.name,
            token: printable(option),
            instead: gcra.name,
            accepts: Accepts::RATE,
        });
    }
    if args.len() > 6 {
        return Err(arity);
    }
    rate::command(gcra, &GCRA, args, now, keys)
}
