//! `RL.ALL`: several limits, one decision.
//!
//! ```text
//! RL.ALL numkeys key [key ...] algorithm params [algorithm params ...] [quantity] [options]
//! ```
//!
//! (The options are the rate commands', from the options table.)
//!
//! Every limit is judged at one instant, each exactly as its own command
//! would judge it on its key; the request is allowed iff every limit allows
//! it, and only then is anything written (each key as its own command would
//! write it). The reply is the binding limit's five integers and its
//! position.

use crate::algorithms::{self, Rated, RATES};
use crate::args::{self, Options};
use crate::command::Command;
use crate::error::{printable, CommandError};
use crate::options::{sentence, Accepts, Opt};
use crate::param::number;
use crate::rate::{Judged, Rate};
use crate::reply::Reply;
use crate::stats::{Stats, RATE};
use crate::store::Keyspace;
use rl_core::request::Joint;
use rl_core::{Decision, Instant, Mode, RetryAfter};
use std::cell::RefCell;

/// The most keys one call may name.
pub const MAX_KEYS: u64 = 100;

pub static ALL: Command = Command {
    name: "rl.all",
    stats: Stats::new(&RATE),
};

/// One limit of the request: its algorithm and the arguments that
/// parameterise it.
#[derive(Clone, Copy)]
struct Limit<'a> {
    rate: &'static dyn Rate,
    command: &'static Command,
    params: &'a [&'a [u8]],
}

thread_local! {
    /// The judgements of the running call, kept from call to call so that
    /// deciding the usual few limits allocates nothing.
    static JUDGED: RefCell<Vec<Judged>> = const { RefCell::new(Vec::new()) };
}

/// `args[0]` is the command's name.
pub fn command<S: Keyspace>(
    command: &Command,
    args: &[&[u8]],
    now: Instant,
    keys: &S,
) -> Result<Reply, CommandError> {
    let mut limits = Few::new();
    let options = parse(command, args, &mut limits)?;
    JUDGED.with(|kept| match kept.try_borrow_mut() {
        Ok(mut judged) => decide(command, &limits, &options, now, keys, &mut judged),
        Err(_) => decide(command, &limits, &options, now, keys, &mut Vec::new()),
    })
}

/// Judge every limit before writing any; then write them all, or none.
fn decide<S: Keyspace>(
    command: &Command,
    limits: &Few<Limit<'_>>,
    options: &Options,
    now: Instant,
    keys: &S,
    judged: &mut Vec<Judged>,
) -> Result<Reply, CommandError> {
    // The keys stay open until written: the usual few in place.
    let mut open: [Option<S::Key<'_>>; INLINE_LIMITS] = [const { None }; INLINE_LIMITS];
    let mut more = Vec::new();
    // One judgement per limit. A slot kept from an earlier call is written
    // over whole by its limit's judgement (the usual few are never copied in
    // afresh).
    judged.resize_with(limits.len(), Judged::default);
    for (i, limit) in limits.iter().enumerate() {
        let mut key = keys.open(2 + i)?;
        let Some(slot) = judged.get_mut(i) else {
            return Err(CommandError::Internal);
        };
        limit
            .rate
            .judge(limit.params, options, Joint::Alone, now, &mut key, slot)
            .map_err(|error| in_limit(i + 1, &limit, error))?;
        match open.get_mut(i) {
            Some(slot) => *slot = Some(key),
            None => more.push(key),
        }
    }
    let refused = judged.iter().any(|j| j.decision.blocked);
    // Every limit allows the request: a reservation is recorded by all at the
    // latest of their earliest instants (the binding limit is the first
    // whose instant that is); a partial grant, by all for the least of their
    // grants. A limit whose own answer differs is judged again with it.
    let joint = match options.mode {
        Mode::Wait(_) if !refused => judged.iter().filter_map(|j| j.earliest).max().map(Joint::At),
        Mode::AtMost if !refused => judged.iter().map(|j| j.granted).min().map(Joint::Grant),
        _ => None,
    };
    let mut waits_for = None;
    if let Some(joint) = joint {
        if let Joint::At(at) = joint {
            waits_for = judged
                .iter()
                .position(|j| j.earliest == Some(at))
                .filter(|_| at > now);
        }
        let keys = open.iter_mut().flatten().chain(&mut more);
        for (i, ((key, judged), limit)) in keys.zip(judged.iter_mut()).zip(limits.iter()).enumerate() {
            let differs = match joint {
                Joint::At(at) => judged.earliest != Some(at),
                Joint::Grant(granted) => judged.granted != granted,
                Joint::Alone => false,
            };
            if differs {
                limit
                    .rate
                    .judge(limit.params, options, joint, now, key, judged)
                    .map_err(|error| in_limit(i + 1, &limit, error))?;
            }
        }
    }
    let binding = waits_for.unwrap_or_else(|| binding(judged.iter().map(|j| &j.decision)));
    let Some((decision, granted)) = judged.get(binding).map(|j| (j.decision, j.granted)) else {
        return Err(CommandError::Internal);
    };
    let mut reply = Reply::five(&decision, options.unit).and(binding as i64 + 1);
    if options.names(Opt::AtMost) {
        reply = reply.and(i64::try_from(granted).unwrap_or(i64::MAX));
    }
    Ok(crate::rate::settle(command, options, reply, granted, || {
        // Allowed: every limit's record. Refused: nothing is counted
        // anywhere, and only the limits that refuse by themselves write
        // (the blocks they start).
        let mut written = false;
        for (i, (judged, limit)) in judged.iter().zip(limits.iter()).enumerate() {
            let key = match open.get_mut(i) {
                Some(slot) => slot.as_mut(),
                None => more.get_mut(i - INLINE_LIMITS),
            };
            if let Some(key) = key.filter(|_| !refused || judged.decision.blocked) {
                written |= judged.store(command, limit.command, key);
            }
        }
        written
    }))
}

/// Where the keys are: `numkeys` of them after `numkeys`, as many as there
/// are when it names more, none when it is not a number.
pub fn key_positions(args: &[&[u8]]) -> std::ops::Range<usize> {
    let numkeys = args
        .get(1)
        .and_then(|n| numkeys(n).ok())
        .map_or(0, |n| n as usize);
    2..(2 + numkeys).min(args.len()).max(2)
}

/// The `numkeys` argument: 1 to [`MAX_KEYS`].
fn numkeys(arg: &[u8]) -> Result<u64, CommandError> {
    number("numkeys", 1, MAX_KEYS).parse(arg, rl_core::TimeUnit::Seconds)
}

/// The keys' limits (into `limits`) and the options, checked before any key
/// is read.
fn parse<'a>(
    command: &Command,
    args: &'a [&'a [u8]],
    limits: &mut Few<Limit<'a>>,
) -> Result<Options<'a>, CommandError> {
    let Some(first) = args.get(1) else {
        return Err(CommandError::WrongArity {
            command: command.name,
        });
    };
    let numkeys = numkeys(first)?;
    let too_few = || miscounted(args, numkeys).unwrap_or(CommandError::TooFewLimits { numkeys });
    // At most 100: fits.
    let n = numkeys as usize;
    let names = args.get(2..2 + n).ok_or_else(too_few)?;
    for (i, name) in names.iter().enumerate() {
        if names[..i].iter().any(|other| same_key(other, name)) {
            return Err(CommandError::DuplicateKey { key: printable(name) });
        }
    }
    let mut at = 2 + n;
    for position in 1..=n {
        let token = args.get(at).ok_or_else(too_few)?;
        let Rated { command, rate } = algorithms::named(token).ok_or_else(|| {
            miscounted(args, numkeys).unwrap_or_else(|| CommandError::UnknownAlgorithm {
                position,
                token: printable(token),
                expected: expected(),
            })
        })?;
        let count = rate.params().len();
        let params = args.get(at + 1..at + 1 + count).ok_or_else(too_few)?;
        limits.push(Limit {
            rate,
            command,
            params,
        });
        at += 1 + count;
    }
    args::options(command.name, &args[at..], Accepts::RATE)
}

/// When the limits do not parse: whether `numkeys` is what went wrong,
/// because the first algorithm name stands after another number of keys
/// (`RL.ALL 3 a FIXED 5 60`: one key, then a limit).
#[cold]
fn miscounted(args: &[&[u8]], numkeys: u64) -> Option<CommandError> {
    let keys = args.get(2..)?;
    let given = keys.iter().position(|token| algorithms::named(token).is_some())?;
    (given >= 1 && given as u64 != numkeys).then(|| CommandError::KeysMiscounted {
        numkeys,
        given,
        first: printable(keys[given]),
    })
}

/// Whether two key names are the same. Keys of one request often share a
/// prefix and differ at the end: the length and the last byte first.
fn same_key(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.last() == b.last() && a == b
}

/// The algorithms `RL.ALL` knows, for the error that names another.
fn expected() -> String {
    let names: Vec<String> = RATES
        .iter()
        .map(|rated| algorithms::word(rated.command).to_ascii_uppercase())
        .collect();
    sentence(&names, "or")
}

/// A parameter's error names the limit it belongs to; a key's (another
/// type, a corrupt state) names the key already.
fn in_limit(position: usize, limit: &Limit<'_>, error: CommandError) -> CommandError {
    match error {
        CommandError::BadNumber { .. }
        | CommandError::OverCap { .. }
        | CommandError::WrongArity { .. }
        | CommandError::CannotWait { .. } => CommandError::InLimit {
            position,
            algorithm: algorithms::word(limit.command),
            error: Box::new(error),
        },
        other => other,
    }
}

/// The limit whose answer the reply carries (its index). Refused: the
/// refusing limit that asks to wait longest (never counts as longest), so
/// that a client that waits its `retry_after` finds every limit willing.
/// Allowed, or a query: the one with the fewest `remaining`. Ties: the
/// first.
fn binding<'d>(decisions: impl Iterator<Item = &'d Decision> + Clone) -> usize {
    let wait = |d: &Decision| match d.retry_after {
        RetryAfter::Never => None,
        RetryAfter::After(t) => Some(t),
        RetryAfter::Allowed => Some(rl_core::Micros::ZERO),
    };
    let longer = |a: &Decision, b: &Decision| match (wait(a), wait(b)) {
        (None, Some(_)) => true,
        (Some(a), Some(b)) => a > b,
        _ => false,
    };
    let refused = decisions.clone().any(|d| d.blocked);
    let mut best: Option<(usize, &Decision)> = None;
    for (i, d) in decisions.enumerate() {
        let better = match best {
            None => true,
            Some((_, current)) if refused => d.blocked && (!current.blocked || longer(d, current)),
            Some((_, current)) => d.remaining < current.remaining,
        };
        if better {
            best = Some((i, d));
        }
    }
    best.map_or(0, |(i, _)| i)
}

/// The limits a request names inline, up to this many; more go on the
/// heap.
const INLINE_LIMITS: usize = 8;

/// A short list of small `Copy` items that does not allocate for the usual
/// few limits.
struct Few<T: Copy> {
    inline: [Option<T>; INLINE_LIMITS],
    len: usize,
    heap: Vec<T>,
}

impl<T: Copy> Few<T> {
    fn len(&self) -> usize {
        self.len
    }

    fn new() -> Self {
        Few {
            inline: [None; INLINE_LIMITS],
            len: 0,
            heap: Vec::new(),
        }
    }

    fn push(&mut self, item: T) {
        match self.inline.get_mut(self.len) {
            Some(slot) => *slot = Some(item),
            None => self.heap.push(item),
        }
        self.len += 1;
    }

    fn iter(&self) -> impl Iterator<Item = T> + '_ {
        let inline = &self.inline[..self.len.min(INLINE_LIMITS)];
        inline.iter().flatten().chain(&self.heap).copied()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rl_core::Micros;

    fn d(blocked: bool, remaining: u64, retry_after: RetryAfter) -> Decision {
        Decision {
            blocked,
            limit: 10,
            remaining,
            retry_after,
            reset: Micros::ZERO,
        }
    }

    #[test]
    fn the_binding_limit() {
        let allowed = |remaining| d(false, remaining, RetryAfter::Allowed);
        let refused = |micros| d(true, 0, RetryAfter::After(Micros(micros)));
        let never = d(true, 0, RetryAfter::Never);
        let pick = |ds: &[Decision]| binding(ds.iter());
        assert_eq!(pick(&[allowed(5)]), 0);
        assert_eq!(pick(&[allowed(5), allowed(3), allowed(3)]), 1);
        assert_eq!(pick(&[allowed(0), refused(10)]), 1);
        assert_eq!(pick(&[refused(10), refused(30), refused(30), allowed(0)]), 1);
        assert_eq!(pick(&[refused(10), never, refused(30), never]), 1);
        assert_eq!(pick(&[never, refused(10)]), 0);
    }
}
