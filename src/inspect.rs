//! The read commands: what a sliding log holds, unit by unit or summed per
//! tag (`RL.LOG`), and what any limiter's key holds, decoded (`RL.INSPECT`).
//! Neither writes: both run on read-only replicas.
//!
//! ```text
//! RL.LOG     key window [MS] [BY TAG] [COUNT count]
//! RL.INSPECT key
//! ```

use crate::algorithms::{self, holder_of, LEASES, RATES, SLIDING_LOG};
use crate::codec::concurrency;
use crate::codec::frame::Frame;
use crate::codec::{tagged_log, Codec, SlidingLogCodec};
use crate::command::Command;
use crate::error::{printable, CommandError};
use crate::param::{duration, Param};
use crate::reply::{Reply, Value};
use crate::stats::{Field, Stats};
use crate::store::{Content, Key, Keyspace};
use rl_core::bounds::MAX_LIMIT;
use rl_core::{Instant, Leases, LogView, TimeUnit};
use std::collections::HashMap;

pub static LOG: Command = Command {
    name: "rl.log",
    stats: Stats::new(&[(Field::Calls, "calls"), (Field::Errors, "errors")]),
};

pub static INSPECT: Command = Command {
    name: "rl.inspect",
    stats: Stats::new(&[(Field::Calls, "calls"), (Field::Errors, "errors")]),
};

/// `RL.LOG`'s window: what a rate command's window is.
pub const WINDOW: Param = duration("window");

/// `COUNT count`: at most this many entries (or tags) answered; past the
/// largest limit a log may have, it would never matter.
pub const COUNT: Param = Param {
    name: "COUNT count",
    min: 1,
    max: MAX_LIMIT,
    cap: None,
    duration: false,
};

/// What `RL.LOG`'s options ask for.
struct LogOptions {
    unit: TimeUnit,
    by_tag: bool,
    count: u64,
}

/// `[MS] [BY TAG] [COUNT count]`, in any order, each once.
fn log_options(args: &[&[u8]]) -> Result<LogOptions, CommandError> {
    let mut options = LogOptions {
        unit: TimeUnit::Seconds,
        by_tag: false,
        count: u64::MAX,
    };
    let (mut ms, mut count) = (false, None);
    let mut tokens = args.iter();
    let twice = |option| Err(CommandError::OptionTwice { option });
    while let Some(token) = tokens.next() {
        if token.eq_ignore_ascii_case(b"MS") {
            if ms {
                return twice("MS");
            }
            ms = true;
            options.unit = TimeUnit::Millis;
        } else if token.eq_ignore_ascii_case(b"BY") {
            if options.by_tag {
                return twice("BY TAG");
            }
            match tokens.next() {
                Some(what) if what.eq_ignore_ascii_case(b"TAG") => options.by_tag = true,
                Some(what) => {
                    return Err(CommandError::ByWhat {
                        token: printable(what),
                    })
                }
                None => {
                    return Err(CommandError::OptionWithoutValue {
                        option: "BY",
                        value: "TAG",
                    })
                }
            }
        } else if token.eq_ignore_ascii_case(b"COUNT") {
            if count.is_some() {
                return twice("COUNT");
            }
            let Some(value) = tokens.next() else {
                return Err(CommandError::OptionWithoutValue {
                    option: "COUNT",
                    value: COUNT.name,
                });
            };
            count = Some(value);
        } else {
            return Err(CommandError::UnknownLogOption {
                token: printable(token),
            });
        }
    }
    if let Some(value) = count {
        options.count = COUNT.parse(value, TimeUnit::Seconds)?;
    }
    Ok(options)
}

/// The sliding log `key` holds, read through its block header; `None`: no
/// log (no key, or a block alone). `f` gets it.
fn read_log<K: Key, T>(key: &mut K, f: impl FnOnce(&LogView<'_>) -> T) -> Result<Option<T>, CommandError> {
    let name = SLIDING_LOG.command.name;
    let fault = |key: &[u8], problem, holder| CommandError::state(key, name, problem, holder);
    let name_bytes = key.name().to_vec();
    match key.read() {
        Content::Empty => Ok(None),
        Content::Other => Err(CommandError::WrongType),
        Content::String(bytes) => {
            let frame = Frame::read(bytes).map_err(|problem| fault(&name_bytes, problem, None))?;
            if frame.state.is_empty() && frame.block.is_some() {
                return Ok(None);
            }
            let log = SlidingLogCodec::decode(frame.state)
                .map_err(|problem| fault(&name_bytes, problem, holder_of(frame.state)))?;
            Ok(Some(f(&log)))
        }
    }
}

/// `RL.LOG key window [MS] [BY TAG] [COUNT count]`. (Kept out of the
/// handler that the rate commands share, as `inspect`.)
#[inline(never)]
pub fn log<S: Keyspace>(
    command: &Command,
    args: &[&[u8]],
    now: Instant,
    keys: &S,
) -> Result<Reply, CommandError> {
    let [_, _, window, rest @ ..] = args else {
        return Err(CommandError::WrongArity {
            command: command.name,
        });
    };
    let options = log_options(rest)?;
    let window = WINDOW.parse(window, options.unit)?;
    let mut key = keys.open(1)?;
    let items = read_log(&mut key, |log| {
        let n = log.len();
        let counted = match now.as_micros().checked_sub(window) {
            Some(horizon) => log.count_later_than(u128::from(horizon)),
            None => n,
        };
        let tags = tagged_log::tags_of_if_any(log);
        let tag = |i: usize| tags.as_ref().and_then(|tags| tags[i]);
        let newest_first = (n - counted..n).rev().map(|i| (log.get(i), tag(i)));
        let limit = usize::try_from(options.count).unwrap_or(usize::MAX);
        if options.by_tag {
            by_tag(newest_first, limit)
        } else {
            entries(newest_first, limit)
        }
    })?;
    Ok(Reply::Value(Box::new(Value::Array(items.unwrap_or_default()))))
}

/// One item per instant and tag, newest first: an entry adds a unit to the
/// item of its instant and tag, or starts one (an instant's items in the
/// order first met). Whole instants are read until `limit` items are made;
/// the first `limit` are answered.
fn entries<'a>(newest_first: impl Iterator<Item = (u64, Option<&'a [u8]>)>, limit: usize) -> Vec<Value> {
    let mut items: Vec<(u64, Option<&[u8]>, u64)> = Vec::new();
    // The items of the instant being read, by tag.
    let mut current: HashMap<Option<&[u8]>, usize> = HashMap::new();
    let mut instant = None;
    for (at, tag) in newest_first {
        if instant != Some(at) {
            if items.len() >= limit {
                break;
            }
            instant = Some(at);
            current.clear();
        }
        match current.get(&tag) {
            Some(&i) => items[i].2 += 1,
            None => {
                current.insert(tag, items.len());
                items.push((at, tag, 1));
            }
        }
    }
    items.truncate(limit);
    items
        .into_iter()
        .map(|(at, tag, units)| {
            Value::Array(vec![Value::int(at), Value::int(units), Value::bulk_or_nil(tag)])
        })
        .collect()
}

/// The units per tag, most first, ties by the tag's bytes (the untagged
/// first); the first `limit`.
fn by_tag<'a>(newest_first: impl Iterator<Item = (u64, Option<&'a [u8]>)>, limit: usize) -> Vec<Value> {
    let mut units: HashMap<Option<&[u8]>, u64> = HashMap::new();
    for (_, tag) in newest_first {
        *units.entry(tag).or_default() += 1;
    }
    let mut totals: Vec<(Option<&[u8]>, u64)> = units.into_iter().collect();
    // `None` orders before any `Some`: the untagged before every tag.
    totals.sort_unstable_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
    totals.truncate(limit);
    totals
        .into_iter()
        .map(|(tag, units)| Value::Array(vec![Value::bulk_or_nil(tag), Value::int(units)]))
        .collect()
}

/// `RL.INSPECT key`.
#[inline(never)]
pub fn inspect<S: Keyspace>(
    command: &Command,
    args: &[&[u8]],
    _now: Instant,
    keys: &S,
) -> Result<Reply, CommandError> {
    if args.len() != 2 {
        return Err(CommandError::WrongArity {
            command: command.name,
        });
    }
    let mut key = keys.open(1)?;
    let name = key.name().to_vec();
    let not_a_limiter = |problem| CommandError::NotALimiter {
        key: printable(&name),
        problem,
    };
    let mut fields = match key.read() {
        Content::Empty => return Ok(Reply::Value(Box::new(Value::Nil))),
        Content::Other => return Err(CommandError::WrongType),
        Content::String(bytes) => {
            let frame = Frame::read(bytes).map_err(not_a_limiter)?;
            let mut fields = match frame.state.first() {
                None if frame.block.is_some() => vec![("kind", Value::Nil)],
                None => return Err(not_a_limiter(NO_LIMITER)),
                Some(first) => describe(frame.state, *first).map_err(|error| match error {
                    Undecoded::Corrupt(command, problem) => {
                        CommandError::state(&name, command, problem, None)
                    }
                    Undecoded::Unknown => not_a_limiter(NO_LIMITER),
                })?,
            };
            if let Some(until) = frame.block {
                fields.push(("blocked_until_us", Value::int(until.as_micros())));
            }
            fields
        }
    };
    fields.push(("pttl", Value::Integer(key.pttl())));
    Ok(Reply::Value(Box::new(Value::Map(fields))))
}

const NO_LIMITER: &str = "its first byte is no limiter's";

/// Why a state was not described.
enum Undecoded {
    /// It starts as `command`'s algorithm's states do, but is not one.
    Corrupt(&'static str, &'static str),
    /// No algorithm's state starts with its first byte.
    Unknown,
}

/// The kind and fields of `state`, whose first byte is `first`.
fn describe(state: &[u8], first: u8) -> Result<Vec<(&'static str, Value)>, Undecoded> {
    if let Some(rated) = RATES.iter().find(|rated| rated.rate.tags().contains(&first)) {
        let kind = (
            "kind",
            Value::Bulk(algorithms::word(rated.command).as_bytes().to_vec()),
        );
        let fields = rated
            .rate
            .describe(state)
            .map_err(|problem| Undecoded::Corrupt(rated.command.name, problem))?;
        return Ok(std::iter::once(kind).chain(fields).collect());
    }
    if concurrency::holds_first(first) {
        let leases =
            concurrency::decode(state).map_err(|problem| Undecoded::Corrupt(LEASES.name, problem))?;
        let (mut held, mut units, mut next) = (0u64, 0u64, None::<u64>);
        for lease in leases.leases() {
            held += 1;
            units = units.saturating_add(lease.units);
            let deadline = lease.deadline.as_micros();
            next = Some(next.map_or(deadline, |n| n.min(deadline)));
        }
        return Ok(vec![
            ("kind", Value::Bulk(b"concurrency".to_vec())),
            ("leases", Value::int(held)),
            ("units", Value::int(units)),
            ("next_deadline_us", next.map_or(Value::Nil, Value::int)),
            ("last_id", Value::int(leases.last_id())),
        ]);
    }
    Err(Undecoded::Unknown)
}
