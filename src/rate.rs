//! The pipeline of the rate commands: arguments in, one key read, one pure
//! decision, at most one write, the reply out. The five algorithms differ
//! only in their parameter table, core limiter and codec (`algorithms`).

use crate::args::{self, Options};
use crate::codec::frame::Frame;
use crate::codec::{ChangeOf, Codec, RefundOf, StateOf};
use crate::command::Command;
use crate::config;
use crate::error::{printable, CommandError};
use crate::options::{Accepts, Opt};
use crate::param::Param;
use crate::reply::Reply;
use crate::stats::Field;
use crate::store::{Content, Key, Keyspace, Write};
use rl_core::request::Joint;
use rl_core::{request, Decision, Effect, Giveback, Instant, Limiter, Mode, Overdrawn, RetryAfter};

/// What deciding one limit gives: the decision, and the write that stores
/// it (none for a query, `PEEK`, or a refusal that starts no block). Filled
/// in place by [`Rate::judge`]: a plan is large, and stays where it is made.
#[derive(Debug, Default)]
pub struct Judged {
    pub decision: Decision,
    /// For a request this limit allows (or a refund), its record; for one
    /// it refuses, the block it starts. With several limits, an allowed
    /// limit's record is written only if every limit allows.
    pub write: Option<Write>,
    /// Entries the write adds to a sliding log (for `INFO`).
    pub logged: u64,
    /// Units recorded: what a partial grant (`Mode::AtMost`) gives.
    pub granted: u64,
    /// The earliest instant this limit allows the request (a reservation: the one
    /// it is recorded at); `None`: never.
    pub earliest: Option<Instant>,
}

impl Judged {
    /// Write it to `key`, if there is anything to write, and count in `INFO`
    /// the sliding log's entries (in `algorithm`, its own command) and a
    /// block started (in `command`, the command called). Whether it wrote.
    pub fn store(&self, command: &Command, algorithm: &Command, key: &mut dyn Key) -> bool {
        let Some(write) = &self.write else {
            return false;
        };
        key.write(write);
        if self.logged > 0 {
            algorithm.stats.add(Field::EntriesWritten, self.logged);
        }
        if self.decision.blocked {
            command.stats.add(Field::Blocks, 1);
        }
        true
    }
}

/// A rate algorithm, whatever its parameters and state: what the registry,
/// the rate commands, alone or several at once, see of it.
pub trait Rate: Sync {
    fn params(&self) -> &[Param];

    /// Decide a request on `key` with the limiter `params` describe (exactly
    /// `params().len()` of them, durations in `options.unit`), and plan its
    /// write. Nothing is written: a caller judging several keys writes none
    /// unless every one allows. `joint`: what the other limits of the
    /// request decided, when they all allow it (see
    /// `rl_core::request::Joint`). The judgement goes in `judged`.
    fn judge(
        &self,
        params: &[&[u8]],
        options: &Options,
        joint: Joint,
        now: Instant,
        key: &mut dyn Key,
        judged: &mut Judged,
    ) -> Result<(), CommandError>;

    /// Whether `bytes` are a state of this algorithm: its own first byte
    /// and a valid shape.
    fn holds(&self, bytes: &[u8]) -> bool;

    /// Whether it can reserve a request for a later instant (`Mode::Wait`).
    fn reserves(&self) -> bool;

    /// The options its own command takes (`TAG` only where units are logged).
    fn accepts(&self) -> Accepts;

    /// The first bytes of its states (see `Codec::TAGS`).
    fn tags(&self) -> &'static [u8];

    /// The stored fields of the state `bytes` hold, named (`RL.INSPECT`), or
    /// why they hold none of its states.
    fn describe(&self, bytes: &[u8]) -> Result<Vec<(&'static str, crate::reply::Value)>, &'static str>;
}

/// A rate command, `rate`'s own (`command`): `args[0]` is its name,
/// `args[1]` the key, then the algorithm's parameters and the options.
pub fn command<S: Keyspace>(
    command: &Command,
    rate: &dyn Rate,
    args: &[&[u8]],
    now: Instant,
    keys: &S,
) -> Result<Reply, CommandError> {
    // Read with every option: the usual call asks nothing of the algorithm
    // here. A call with `TAG`, or one that does not parse, is read again
    // with the options its own command takes (see `own_options`).
    let (params, options) = match args::after_key(command.name, args, rate.params().len(), Accepts::RATE) {
        Ok(parsed) if !parsed.1.names(Opt::Tag) || rate.accepts() == Accepts::RATE => parsed,
        parsed => own_options(command, rate, args, parsed)?,
    };
    let mut key = keys.open(1)?;
    let mut judged = Judged::default();
    rate.judge(params, &options, Joint::Alone, now, &mut key, &mut judged)?;
    let mut reply = Reply::five(&judged.decision, options.unit);
    if options.names(Opt::AtMost) {
        reply = reply.and(i64::try_from(judged.granted).unwrap_or(i64::MAX));
    }
    Ok(settle(command, &options, reply, judged.granted, || {
        judged.store(command, command, &mut key)
    }))
}

/// `parsed` (the arguments read with every option), or, for a command
/// that does not take them all (`TAG` only where units are logged), the
/// arguments read with its own: the error its own grammar gives first.
#[cold]
#[inline(never)]
fn own_options<'a>(
    command: &Command,
    rate: &dyn Rate,
    args: &'a [&'a [u8]],
    parsed: Result<(&'a [&'a [u8]], args::Options<'a>), CommandError>,
) -> Result<(&'a [&'a [u8]], args::Options<'a>), CommandError> {
    match rate.accepts() {
        Accepts::RATE => parsed,
        own => args::after_key(command.name, args, rate.params().len(), own),
    }
}

/// What every rate command does once its limits are judged: store what
/// they decided (`store`, which says whether it wrote anything), unless the
/// request is refused under the shadow switch, which records nothing and
/// answers it as allowed; count the units a refund gave back.
pub fn settle(
    command: &Command,
    options: &Options,
    reply: Reply,
    granted: u64,
    store: impl FnOnce() -> bool,
) -> Reply {
    if reply.refused() && config::shadow() {
        return reply.shadowed();
    }
    let written = store();
    if options.plain() {
        return reply;
    }
    if !written {
        // A query, PEEK, a refusal, a refund that changed nothing.
        return match options.mode {
            Mode::Refund => reply.refund(),
            _ => reply,
        };
    }
    match options.mode {
        Mode::Refund => {
            command.stats.add(Field::Refunded, options.quantity);
            return reply.refund();
        }
        Mode::Force => command.stats.add(Field::Forced, options.quantity),
        // A reservation: allowed, with a wait before the work.
        Mode::Wait(_) if reply.fields().get(3).is_some_and(|&wait| wait > 0) => {
            command.stats.add(Field::Reserved, 1)
        }
        Mode::AtMost => command.stats.add(Field::Granted, granted),
        Mode::Take | Mode::Wait(_) => {}
    }
    reply
}

/// Decide a request on `key` with `limiter`, and plan its write.
/// `command`: the algorithm's own, for messages; `holder_of`: which
/// command's state a value is that this algorithm cannot read.
#[allow(clippy::too_many_arguments)]
pub fn judge<C: Codec>(
    command: &'static str,
    limiter: &C::Limiter,
    options: &Options,
    joint: Joint,
    now: Instant,
    key: &mut dyn Key,
    judged: &mut Judged,
    holder_of: fn(&[u8]) -> Option<&'static str>,
) -> Result<(), CommandError> {
    // The usual call (a request taken now, or one that waits or takes what
    // it can and is allowed now, on a key without a block): the algorithm
    // alone decides and records it, in one step. Anything else, or a state
    // it cannot read, takes the general path.
    if options.allowed_at_once() && matches!(joint, Joint::Alone) {
        let taken = match key.read() {
            Content::Empty => take_at_once::<C>(limiter, None, options, now, judged),
            Content::String(bytes) if !Frame::framed_value(bytes) => C::decode(bytes)
                .ok()
                .and_then(|state| take_at_once::<C>(limiter, Some(&state), options, now, judged)),
            Content::String(bytes) if options.taken_now() => {
                refuse_while_blocked::<C>(limiter, bytes, options.quantity, now, judged)
            }
            _ => None,
        };
        if let Some(taken) = taken {
            return taken.map_err(|fault| fault.error(key.name(), command));
        }
    }
    let fault = {
        let read = match key.read() {
            Content::Empty => Ok((Frame::EMPTY, None)),
            Content::String(bytes) => match Frame::read(bytes) {
                // A block alone: the limiter under it is rested.
                Ok(frame) if frame.block.is_some() && frame.state.is_empty() => Ok((frame, None)),
                Ok(frame) => C::decode(frame.state)
                    .map(|state| (frame, Some(state)))
                    // Which algorithm's state it is instead, only on the
                    // error path.
                    .map_err(|problem| Fault::Unreadable(problem, holder_of(frame.state))),
                Err(problem) => Err(Fault::Unreadable(problem, None)),
            },
            Content::Other => return Err(CommandError::WrongType),
        };
        match read {
            Ok((frame, state)) => {
                let request = options.request();
                match request::judge(limiter, state.as_ref(), frame.block, now, &request, joint) {
                    Ok(verdict) => {
                        judged.decision = verdict.decision;
                        judged.granted = verdict.granted;
                        judged.earliest = verdict.earliest;
                        judged.logged = 0;
                        match plan::<C>(judged, &frame, state.as_ref(), verdict.effect, options, now) {
                            None => return Ok(()),
                            Some(fault) => fault,
                        }
                    }
                    Err(Overdrawn) => Fault::Overdrawn,
                }
            }
            Err(fault) => fault,
        }
    };
    Err(fault.error(key.name(), command))
}

/// A request on a key without a block that the algorithm alone decides
/// (see [`Options::allowed_at_once`]): its decision and, but with `PEEK`,
/// its record planned (what the general path does for it, without the
/// options' steps). `None`: a refusal the options decide (a wait, a smaller
/// grant, a block). `Err`: a request the state cannot take.
#[inline(always)]
fn take_at_once<C: Codec>(
    limiter: &C::Limiter,
    state: Option<&StateOf<'_, C>>,
    options: &Options,
    now: Instant,
    judged: &mut Judged,
) -> Option<Result<(), Fault>> {
    let quantity = options.quantity;
    // A forced request is recorded whatever the limit says (a query, with
    // `FORCE` or not, is a query).
    let outcome = if options.names(Opt::Force) && quantity > 0 {
        match limiter.force(state, now, quantity) {
            Ok(forced) => forced,
            Err(Overdrawn) => return Some(Err(Fault::Overdrawn)),
        }
    } else {
        limiter.check(state, now, quantity)
    };
    let Some(update) = outcome.update else {
        if outcome.decision.blocked && !options.refused_at_once() {
            return None;
        }
        judged.decision = outcome.decision;
        judged.granted = 0;
        judged.earliest = match outcome.decision.retry_after {
            RetryAfter::Allowed => Some(now),
            RetryAfter::After(wait) => Some(now.saturating_add(wait)),
            RetryAfter::Never => None,
        };
        judged.logged = 0;
        judged.write = None;
        return Some(Ok(()));
    };
    judged.decision = outcome.decision;
    judged.granted = quantity;
    judged.earliest = Some(now);
    let logged = C::entries_logged(&update.change);
    if logged > 0 {
        let entries = C::entries_after(state, &update.change);
        if entries > config::sliding_log_max_limit() {
            return Some(Err(Fault::TooLong(entries)));
        }
    }
    judged.logged = logged;
    if options.peek {
        judged.write = None;
    } else if options.tag.is_none() {
        judged.write = Some(C::plan(state, &update.change, update.expires_at.ceil_millis()));
    } else {
        plan_tagged::<C>(
            judged,
            state,
            &update.change,
            update.expires_at.ceil_millis(),
            options.tag,
        );
    }
    Some(Ok(()))
}

/// [`Codec::plan_tagged`] into `judged` (kept out of the usual call's
/// path: a tagged call's write is planned apart).
#[cold]
#[inline(never)]
fn plan_tagged<C: Codec>(
    judged: &mut Judged,
    state: Option<&StateOf<'_, C>>,
    change: &ChangeOf<C>,
    expire_at_ms: u64,
    tag: Option<&[u8]>,
) {
    judged.write = Some(C::plan_tagged(state, change, expire_at_ms, tag));
}

/// A request taken now on a key whose block is in force, when the limiter
/// rests before the block ends: refused by the block alone, nothing
/// written (what the general path answers). `None`: anything else.
#[inline(always)]
fn refuse_while_blocked<C: Codec>(
    limiter: &C::Limiter,
    bytes: &[u8],
    quantity: u64,
    now: Instant,
    judged: &mut Judged,
) -> Option<Result<(), Fault>> {
    let frame = Frame::read(bytes).ok()?;
    let until = request::in_force(frame.block, now)?;
    let state = match frame.state {
        [] => None,
        state => Some(C::decode(state).ok()?),
    };
    let decision = request::refused_by_block(limiter, state.as_ref(), until, now, quantity)?;
    judged.decision = decision;
    judged.granted = 0;
    judged.earliest = match decision.retry_after {
        RetryAfter::After(_) => Some(until),
        _ => None,
    };
    judged.logged = 0;
    judged.write = None;
    Some(Ok(()))
}

/// Why a judgement found nothing to write: the stored bytes, or a request
/// the state cannot take.
enum Fault {
    Unreadable(&'static str, Option<&'static str>),
    Overdrawn,
    /// A sliding log that would hold this many entries, past its setting.
    TooLong(u64),
}

impl Fault {
    /// Its error, for the command `command` on the key `key`.
    #[cold]
    fn error(self, key: &[u8], command: &'static str) -> CommandError {
        match self {
            Fault::Unreadable(problem, holder) => CommandError::state(key, command, problem, holder),
            Fault::Overdrawn => CommandError::Overdrawn { key: printable(key) },
            Fault::TooLong(entries) => CommandError::LogTooLong {
                key: printable(key),
                entries,
                max: config::sliding_log_max_limit(),
                setting: config::SLIDING_LOG_CAP.setting,
            },
        }
    }
}

/// Plan the write of a verdict's `effect` into `judged` (none with `PEEK`),
/// and count the sliding log entries it adds; a fault when the state cannot
/// take it.
#[inline(always)]
fn plan<C: Codec>(
    judged: &mut Judged,
    frame: &Frame<'_>,
    state: Option<&StateOf<'_, C>>,
    effect: Effect<ChangeOf<C>, RefundOf<C>>,
    options: &Options,
    now: Instant,
) -> Option<Fault> {
    judged.write = None;
    // A forced request or a reservation may leave a log holding more
    // entries than the limit: never more than the setting allows (a PEEK of
    // such a call answers the same error). Nothing to check for an
    // algorithm that logs none.
    if let Effect::Record(update) = &effect {
        judged.logged = C::entries_logged(&update.change);
        if judged.logged > 0 {
            let entries = C::entries_after(state, &update.change);
            if entries > config::sliding_log_max_limit() {
                return Some(Fault::TooLong(entries));
            }
        }
    }
    if options.peek {
        return None;
    }
    let block = request::in_force(frame.block, now);
    let write = match effect {
        Effect::Nothing | Effect::Refund(Giveback::Nothing) => return None,
        Effect::Record(update) => {
            let ms = update.expires_at.ceil_millis();
            let write = match options.tag {
                None => judged.write.insert(C::plan(state, &update.change, ms)),
                tag => judged
                    .write
                    .insert(C::plan_tagged(state, &update.change, ms, tag)),
            };
            // The usual write, as planned: no block, no header.
            if block.is_none() && frame.block.is_none() {
                return None;
            }
            write
        }
        Effect::Refund(Giveback::Rested) => judged.write.insert(Write::Delete),
        // A refund changes nothing without a state.
        Effect::Refund(Giveback::Store(update)) => match state {
            Some(state) => {
                let ms = update.expires_at.ceil_millis();
                judged.write.insert(C::plan_refund(state, &update.change, ms))
            }
            None => return None,
        },
        Effect::Block { until, expires_at } => {
            judged.write = Some(frame.block(until, expires_at.ceil_millis()));
            return None;
        }
    };
    frame.wrap(write, block);
    None
}
