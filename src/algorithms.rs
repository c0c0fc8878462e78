//! The algorithms whose state a key holds, one row each: the five rate
//! algorithms (each its command, parameters and how they build its
//! limiter) and the leases. The registry makes a command of each rate
//! algorithm, `RL.ALL` finds them by name, and the errors about a key's
//! state or a wait name them from here.

use crate::args::{self, Options};
use crate::codec::{
    self, Codec, FixedWindowCodec, GcraCodec, SlidingCounterCodec, SlidingLogCodec, TokenBucketCodec,
};
use crate::command::Command;
use crate::config;
use crate::error::CommandError;
use crate::options::{sentence, Accepts, Opt};
use crate::param::{capped, duration, number, Param};
use crate::rate::{self, Judged, Rate};
use crate::reply::Value;
use crate::stats::{Field, Stats, RATE};
use crate::store::Key;
use rl_core::bounds::{MAX_BURST, MAX_LIMIT};
use rl_core::request::Joint;
use rl_core::{FixedWindow, Gcra, Instant, Limiter, ParamError, SlidingCounter, SlidingLog, TokenBucket};

/// A rate algorithm: its command, its parameters, and how they build its
/// limiter (the builder takes exactly as many numbers as the table names:
/// another count does not compile).
pub struct Algorithm<C: Codec, const N: usize> {
    pub command: Command,
    pub params: [Param; N],
    pub build: fn([u64; N]) -> Result<C::Limiter, ParamError>,
}

impl<C: Codec, const N: usize> Rate for Algorithm<C, N> {
    fn params(&self) -> &[Param] {
        &self.params
    }

    fn judge(
        &self,
        params: &[&[u8]],
        options: &Options,
        joint: Joint,
        now: Instant,
        key: &mut dyn Key,
        judged: &mut Judged,
    ) -> Result<(), CommandError> {
        let name = self.command.name;
        if !self.reserves() && options.names(Opt::Wait) {
            return Err(CommandError::CannotWait {
                command: name,
                takers: waiting(),
            });
        }
        let numbers = args::params(name, &self.params, params, options.unit)?;
        let limiter = (self.build)(numbers).map_err(|ParamError::OutOfRange { name, min, max }| {
            CommandError::BadNumber { name, min, max }
        })?;
        rate::judge::<C>(name, &limiter, options, joint, now, key, judged, holder_of)
    }

    fn holds(&self, bytes: &[u8]) -> bool {
        bytes.first().is_some_and(|tag| C::TAGS.contains(tag)) && C::decode(bytes).is_ok()
    }

    fn reserves(&self) -> bool {
        <C::Limiter as Limiter>::RESERVES
    }

    fn tags(&self) -> &'static [u8] {
        C::TAGS
    }

    fn describe(&self, bytes: &[u8]) -> Result<Vec<(&'static str, Value)>, &'static str> {
        C::decode(bytes).map(|state| C::describe(&state))
    }

    fn accepts(&self) -> Accepts {
        if C::LOGS {
            Accepts::RATE
        } else {
            Accepts::UNTAGGED
        }
    }
}

/// The counters of every rate algorithm's command.
const RATE_STATS: &[(Field, &str)] = &RATE;

/// A rate command's identity: `name` and the rate counters (`more`: any it
/// counts besides).
const fn rate_command(name: &'static str, more: &'static [(Field, &'static str)]) -> Command {
    Command {
        name,
        stats: Stats::new(more),
    }
}

pub static GCRA: Algorithm<GcraCodec, 3> = Algorithm {
    command: rate_command("rl.gcra", RATE_STATS),
    params: [
        number("max_burst", 0, MAX_BURST),
        number("count", 1, MAX_LIMIT),
        duration("period"),
    ],
    build: |[max_burst, count, period]| Gcra::new(max_burst, count, period),
};

pub static TOKEN_BUCKET: Algorithm<TokenBucketCodec, 3> = Algorithm {
    command: rate_command("rl.token_bucket", RATE_STATS),
    params: [
        number("capacity", 1, MAX_LIMIT),
        number("refill_count", 1, MAX_LIMIT),
        duration("refill_period"),
    ],
    build: |[capacity, count, period]| TokenBucket::new(capacity, count, period),
};

pub static FIXED: Algorithm<FixedWindowCodec, 2> = Algorithm {
    command: rate_command("rl.fixed", RATE_STATS),
    params: [number("limit", 1, MAX_LIMIT), duration("window")],
    build: |[limit, window]| FixedWindow::new(limit, window),
};

pub static SLIDING_LOG: Algorithm<SlidingLogCodec, 2> = Algorithm {
    command: rate_command(
        "rl.sliding_log",
        &[
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
        ],
    ),
    // Memory grows with the limit: capped by a module setting.
    params: [
        capped(number("limit", 1, MAX_LIMIT), &config::SLIDING_LOG_CAP),
        duration("window"),
    ],
    build: |[limit, window]| SlidingLog::new(limit, window),
};

pub static SLIDING_COUNTER: Algorithm<SlidingCounterCodec, 2> = Algorithm {
    command: rate_command("rl.sliding_counter", RATE_STATS),
    params: [number("limit", 1, MAX_LIMIT), duration("window")],
    build: |[limit, window]| SlidingCounter::new(limit, window),
};

/// A rate algorithm as the tables see it: its command (read without a call
/// through the trait: `RL.ALL` looks names up on every call) and the
/// algorithm.
#[derive(Clone, Copy)]
pub struct Rated {
    pub command: &'static Command,
    pub rate: &'static dyn Rate,
}

const fn rated<C: Codec, const N: usize>(algorithm: &'static Algorithm<C, N>) -> Rated {
    Rated {
        command: &algorithm.command,
        rate: algorithm,
    }
}

/// The rate algorithms, in the order `COMMAND`, `INFO` and the errors
/// list them.
pub static RATES: [Rated; 5] = [
    rated(&GCRA),
    rated(&TOKEN_BUCKET),
    rated(&FIXED),
    rated(&SLIDING_LOG),
    rated(&SLIDING_COUNTER),
];

/// The leases (`RL.CONCURRENCY`): their command, whose name the errors
/// about a lease state use and whose `INFO` counts every lease expiry.
pub static LEASES: Command = Command {
    name: "rl.concurrency",
    stats: Stats::new(&[
        (Field::Calls, "calls"),
        (Field::Allowed, "acquired"),
        (Field::Refused, "refused"),
        (Field::Errors, "errors"),
        (Field::LeasesExpired, "expired"),
    ]),
};

/// A rate algorithm's name among `RL.ALL`'s limits: its command's, without
/// `rl.`.
pub fn word(command: &Command) -> &'static str {
    command.name.strip_prefix("rl.").unwrap_or(command.name)
}

/// The rate algorithm `token` names among `RL.ALL`'s limits, in any case.
pub fn named(token: &[u8]) -> Option<Rated> {
    RATES.iter().copied().find(|rated| {
        // The length first: it rules out all but one or two. The names are
        // `rl.`, then lower-case letters and `_`: a token byte matches once
        // an upper-case letter is made lower-case.
        let name = rated.command.name.as_bytes();
        name.len() == token.len() + 3
            && name[3..]
                .iter()
                .zip(token)
                .all(|(&n, &t)| n == t | (u8::from(t.is_ascii_uppercase()) << 5))
    })
}

/// The command whose algorithm's state `bytes` hold, as their first byte
/// (each algorithm's own) and their shape tell: for the error of another
/// command on that key.
pub fn holder_of(bytes: &[u8]) -> Option<&'static str> {
    match RATES.iter().find(|rated| rated.rate.holds(bytes)) {
        Some(rated) => Some(rated.command.name),
        None => codec::concurrency::holds(bytes).then_some(LEASES.name),
    }
}

/// The commands whose algorithm can reserve a request for later (`WAIT`):
/// `RL.GCRA, RL.TOKEN_BUCKET and RL.SLIDING_LOG`.
fn waiting() -> String {
    let names: Vec<String> = RATES
        .iter()
        .filter(|rated| rated.rate.reserves())
        .map(|rated| rated.command.name.to_ascii_uppercase())
        .collect();
    sentence(&names, "and")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn algorithm_names_are_found_in_any_case_and_nothing_else() {
        for rated in RATES {
            let word = word(rated.command);
            for token in [word.to_string(), word.to_ascii_uppercase(), {
                let mut mixed = word.to_string();
                mixed.replace_range(..1, &word[..1].to_ascii_uppercase());
                mixed
            }] {
                let found = named(token.as_bytes()).map(|r| r.command.name);
                assert_eq!(found, Some(rated.command.name), "{token}");
            }
            // Each byte changed to its other case bit, or to a neighbour: no
            // algorithm (a `_` is not a letter: its case bit gives DEL).
            for i in 0..word.len() {
                for flip in [0x20u8, 0x01] {
                    let mut bytes = word.as_bytes().to_vec();
                    bytes[i] ^= flip;
                    let is_other_case = flip == 0x20 && bytes[i].is_ascii_alphabetic();
                    if !is_other_case {
                        assert!(named(&bytes).is_none(), "{:?}", String::from_utf8_lossy(&bytes));
                    }
                }
            }
        }
        assert!(named(b"").is_none());
        assert!(named(b"rl.gcra").is_none());
        assert!(named(b"GCRA ").is_none());
    }
}
