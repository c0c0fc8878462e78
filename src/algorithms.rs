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
use crate::options::sentence;
use crate::param::{capped, duration, number, Param};
use crate::rate::{self, Judged, Rate};
use crate::stats::{Field, Stats, RATE};
use crate::store::Key;
use rl_core::bounds::{MAX_BURST, MAX_LIMIT};
use rl_core::request::Joint;
use rl_core::{
    FixedWindow, Gcra, Instant, Limiter, Mode, ParamError, SlidingCounter, SlidingLog, TokenBucket,
};

/// A rate algorithm: its command, its parameters, and how they build its
/// limiter (the builder takes exactly as many numbers as the table names:
/// another count does not compile).
pub struct Algorithm<C: Codec, const N: usize> {
    pub command: Command,
    pub params: [Param; N],
    pub build: fn([u64; N]) -> Result<C::Limiter, ParamError>,
}

impl<C: Codec, const N: usize> Rate for Algorithm<C, N> {
    fn command(&self) -> &Command {
        &self.command
    }

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
        if matches!(options.mode, Mode::Wait(_)) && !self.reserves() {
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
        capped(number("limit", 1, MAX_LIMIT), config::SLIDING_LOG_CAP),
        duration("window"),
    ],
    build: |[limit, window]| SlidingLog::new(limit, window),
};

pub static SLIDING_COUNTER: Algorithm<SlidingCounterCodec, 2> = Algorithm {
    command: rate_command("rl.sliding_counter", RATE_STATS),
    params: [number("limit", 1, MAX_LIMIT), duration("window")],
    build: |[limit, window]| SlidingCounter::new(limit, window),
};

/// The rate algorithms, in the order `COMMAND`, `INFO` and the errors
/// list them.
pub static RATES: [&'static dyn Rate; 5] = [&GCRA, &TOKEN_BUCKET, &FIXED, &SLIDING_LOG, &SLIDING_COUNTER];

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
pub fn word(rate: &dyn Rate) -> &'static str {
    let name = rate.command().name;
    name.strip_prefix("rl.").unwrap_or(name)
}

/// The rate algorithm `token` names among `RL.ALL`'s limits, in any case.
pub fn named(token: &[u8]) -> Option<&'static dyn Rate> {
    RATES.iter().copied().find(|rate| {
        let name = word(*rate).as_bytes();
        // The length first: it rules out all but one or two. The names are
        // lower-case letters and `_`: a token byte matches its own value
        // or, for a letter, its upper case.
        name.len() == token.len()
            && name
                .iter()
                .zip(token)
                .all(|(&n, &t)| t == n || (n.is_ascii_lowercase() && t == n - 32))
    })
}

/// The command whose algorithm's state `bytes` hold, as their first byte
/// (each algorithm's own) and their shape tell: for the error of another
/// command on that key.
pub fn holder_of(bytes: &[u8]) -> Option<&'static str> {
    match RATES.iter().find(|rate| rate.holds(bytes)) {
        Some(rate) => Some(rate.command().name),
        None => codec::concurrency::holds(bytes).then_some(LEASES.name),
    }
}

/// The commands whose algorithm can reserve a request for later (`WAIT`):
/// `RL.GCRA, RL.TOKEN_BUCKET and RL.SLIDING_LOG`.
fn waiting() -> String {
    let names: Vec<String> = RATES
        .iter()
        .filter(|rate| rate.reserves())
        .map(|rate| rate.command().name.to_ascii_uppercase())
        .collect();
    sentence(&names, "and")
}
