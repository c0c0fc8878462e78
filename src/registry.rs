//! The module's commands: one row each. Registration, `COMMAND DOCS`, ACL
//! categories and `INFO` all iterate this table.
//!
//! A rate algorithm is one core file, one codec file and one row of
//! `algorithms`; its command's row here follows from it.

use crate::algorithms::{self, Rated, LEASES, RATES};
use crate::all;
use crate::cl_throttle;
use crate::command::Command;
use crate::concurrency;
use crate::config;
use crate::docs::{self, DocArg};
use crate::error::CommandError;
use crate::inspect;
use crate::options::{Accepts, Opt};
use crate::rate::{self, Rate};
use crate::reply::Reply;
use crate::store::Keyspace;
use rl_core::Instant;

/// One command.
pub struct Row {
    /// Its name and `INFO` counters, which its pipeline owns.
    pub command: &'static Command,
    pub summary: &'static str,
    pub complexity: &'static str,
    /// The release that added it (`COMMAND DOCS`).
    pub since: &'static str,
    /// `RedisModule_CreateCommand`'s flags.
    pub flags: &'static str,
    /// ACL categories, where the server lets modules set them.
    pub categories: &'static str,
    pub keys: Keys,
    pub kind: Kind,
    /// Its `INFO ratelimit` fields are named `<info>_<field>`.
    pub info: &'static str,
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
    /// `name key params... [quantity] [options]` with a rate algorithm.
    Rate(&'static dyn Rate),
    /// redis-cell's `CL.THROTTLE`: `RL.GCRA` with redis-cell's grammar.
    ClThrottle,
    /// `RL.ALL`: several rate limits, one decision.
    All,
    /// A lease on work in flight, taken.
    Concurrency,
    /// A lease given back.
    Release,
    /// A lease given a new deadline.
    Renew,
    /// What a sliding log holds (`RL.LOG`).
    Log,
    /// What a limiter's key holds (`RL.INSPECT`).
    Inspect,
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
            Kind::Concurrency => -(2 + concurrency::PARAMS.len() as i32),
            Kind::Release => 3,
            Kind::Renew => -4,
            Kind::Log => -3,
            Kind::Inspect => 2,
        }
    }

    /// Whether it writes nothing (a read-only replica runs it).
    pub fn reads_only(&self) -> bool {
        self.flags.split(' ').any(|flag| flag == "readonly")
    }

    pub fn doc_args(&self) -> Vec<DocArg> {
        match &self.kind {
            Kind::Rate(rate) => docs::rate(rate.params(), rate.accepts()),
            // No options: the key, the parameters, the quantity.
            Kind::ClThrottle => docs::rate(&algorithms::GCRA.params, Accepts(&[])),
            Kind::All => {
                let algorithms = RATES
                    .iter()
                    .map(|&Rated { command, rate }| {
                        let name = algorithms::word(command);
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
            Kind::Concurrency => docs::rate(&concurrency::PARAMS, Accepts::LEASE),
            Kind::Release => vec![DocArg::key("key"), DocArg::integer("lease")],
            Kind::Renew => [
                DocArg::key("key"),
                DocArg::integer("lease"),
                DocArg::integer("timeout"),
            ]
            .into_iter()
            .chain(Accepts::UNIT.options().map(docs::option))
            .collect(),
            Kind::Log => vec![
                DocArg::key("key"),
                DocArg::integer("window"),
                docs::option(Opt::Ms),
                docs::block(
                    "by",
                    Some("BY".to_string()),
                    vec![DocArg {
                        optional: false,
                        ..DocArg::option("TAG", "tag")
                    }],
                )
                .optional(),
                DocArg {
                    token: Some("COUNT".to_string()),
                    ..DocArg::integer("count").optional()
                },
            ],
            Kind::Inspect => vec![DocArg::key("key")],
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
    let command = row.command;
    match row.kind {
        Kind::Rate(rate) => rate::command(command, rate, args, now, keys),
        Kind::ClThrottle => cl_throttle::command(command, args, now, keys),
        Kind::All => all::command(command, args, now, keys),
        Kind::Concurrency => concurrency::acquire(command, args, now, keys),
        Kind::Release => concurrency::release(command, args, now, keys),
        Kind::Renew => concurrency::renew(command, args, now, keys),
        Kind::Log => inspect::log(command, args, now, keys),
        Kind::Inspect => inspect::inspect(command, args, now, keys),
    }
}

/// The first release, and the one that added tags and the read commands.
const FIRST: &str = "0.1.0";
const TAGS: &str = "0.2.0";
const WRITE: &str = "write deny-oom fast";
const CATEGORIES: &str = "write fast ratelimit";
const fn always() -> bool {
    true
}

/// The row of a rate algorithm's own command.
const fn rate_row(
    rate: &'static dyn Rate,
    command: &'static Command,
    info: &'static str,
    summary: &'static str,
    complexity: &'static str,
) -> Row {
    Row {
        command,
        summary,
        complexity,
        since: FIRST,
        flags: WRITE,
        categories: CATEGORIES,
        keys: Keys::First,
        kind: Kind::Rate(rate),
        info,
        enabled: always,
    }
}

const READ: &str = "readonly";
const READ_CATEGORIES: &str = "read ratelimit";

pub static COMMANDS: [Row; 12] = [
    rate_row(
        &algorithms::GCRA,
        &algorithms::GCRA.command,
        "gcra",
        "Rate limit with GCRA (as redis-cell): count per period, bursts of max_burst + 1",
        "O(1)",
    ),
    rate_row(
        &algorithms::TOKEN_BUCKET,
        &algorithms::TOKEN_BUCKET.command,
        "token_bucket",
        "Rate limit with a token bucket of capacity tokens, refill_count per refill_period",
        "O(1)",
    ),
    rate_row(
        &algorithms::FIXED,
        &algorithms::FIXED.command,
        "fixed",
        "Rate limit with a fixed window: at most limit units per epoch-aligned window",
        "O(1)",
    ),
    rate_row(
        &algorithms::SLIDING_LOG,
        &algorithms::SLIDING_LOG.command,
        "sliding_log",
        "Rate limit with a sliding log: at most limit units in any window, exactly",
        "O(log N) where N is the limit; O(Q) to record Q units",
    ),
    rate_row(
        &algorithms::SLIDING_COUNTER,
        &algorithms::SLIDING_COUNTER.command,
        "sliding_counter",
        "Rate limit with a sliding counter: the two-window estimate of a sliding window",
        "O(1)",
    ),
    Row {
        command: &all::ALL,
        summary:
            "Decide several rate limits at once: allowed only if every limit allows, and only then counted",
        complexity: "O(N) where N is the number of keys, plus each limit's own",
        since: FIRST,
        flags: "write deny-oom",
        categories: "write ratelimit",
        keys: Keys::Counted,
        kind: Kind::All,
        info: "all",
        enabled: always,
    },
    Row {
        command: &LEASES,
        summary: "Take a lease of quantity units of work in flight, held until released or for timeout: at most limit units at once",
        complexity: "O(N) where N is the number of leases held",
        since: FIRST,
        flags: WRITE,
        categories: CATEGORIES,
        keys: Keys::First,
        kind: Kind::Concurrency,
        info: "concurrency",
        enabled: always,
    },
    Row {
        command: &concurrency::RELEASE,
        summary: "Release a lease taken with RL.CONCURRENCY: the units it held, 0 if it had ended",
        complexity: "O(N) where N is the number of leases held",
        since: FIRST,
        flags: WRITE,
        categories: CATEGORIES,
        keys: Keys::First,
        kind: Kind::Release,
        info: "release",
        enabled: always,
    },
    Row {
        command: &concurrency::RENEW,
        summary: "Move a live lease's deadline to timeout from now: 1, or 0 if it had ended",
        complexity: "O(N) where N is the number of leases held",
        since: FIRST,
        flags: WRITE,
        categories: CATEGORIES,
        keys: Keys::First,
        kind: Kind::Renew,
        info: "renew",
        enabled: always,
    },
    Row {
        command: &cl_throttle::CL_THROTTLE,
        summary: "redis-cell's command: RL.GCRA with redis-cell's grammar (no options)",
        complexity: "O(1)",
        since: FIRST,
        flags: WRITE,
        categories: CATEGORIES,
        keys: Keys::First,
        kind: Kind::ClThrottle,
        info: "cl_throttle",
        enabled: config::cl_throttle_enabled,
    },
    Row {
        command: &inspect::LOG,
        summary: "What a sliding log holds: the units counted in the last window, newest first, by instant and tag, or summed per tag",
        complexity: "O(N) where N is the number of units counted",
        since: TAGS,
        flags: READ,
        categories: READ_CATEGORIES,
        keys: Keys::First,
        kind: Kind::Log,
        info: "log",
        enabled: always,
    },
    Row {
        command: &inspect::INSPECT,
        summary: "What a limiter's key holds, decoded: its kind, its stored fields, its block and its PTTL",
        complexity: "O(1) for the counters; O(N) for a tagged log's entries or a lease set's leases",
        since: TAGS,
        flags: READ,
        categories: READ_CATEGORIES,
        keys: Keys::First,
        kind: Kind::Inspect,
        info: "inspect",
        enabled: always,
    },
];
