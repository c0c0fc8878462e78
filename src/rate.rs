//! The pipeline of the rate commands: arguments in, one key read, one pure
//! decision, at most one write, the reply out. The five algorithms differ
//! only in their parameter table, core limiter and codec.

use crate::args::{self, Accepts, Options, Param};
use crate::codec::frame::Frame;
use crate::codec::Codec;
use crate::config;
use crate::error::CommandError;
use crate::registry::{self, Row};
use crate::reply::Reply;
use crate::stats::Field;
use crate::store::{Content, Key, Keyspace, Write};
use rl_core::{request, Decision, Effect, Giveback, Instant, Mode, ParamError};

/// A rate algorithm as a command: its parameters, and how they build its
/// limiter (the builder takes exactly as many numbers as the table names:
/// another count does not compile).
pub struct Algorithm<C: Codec, const N: usize> {
    pub params: [Param; N],
    pub build: fn([u64; N]) -> Result<C::Limiter, ParamError>,
}

/// What deciding one limit gives: the decision, and the write that stores
/// it (none for a query, `PEEK`, or a refusal that starts no block).
#[derive(Debug)]
pub struct Judged {
    pub decision: Decision,
    /// For a request this limit allows (or a refund), its record; for one
    /// it refuses, the block it starts. With several limits, an allowed
    /// limit's record is written only if every limit allows.
    pub write: Option<Write>,
    /// Entries the write adds to a sliding log (for `INFO`).
    pub logged: u64,
}

impl Judged {
    /// Write it to `key`, if there is anything to write, and count in `INFO`
    /// the sliding log's entries (in `log_row`, the algorithm's own) and a
    /// block started (in `row`, the command's). Whether it wrote.
    pub fn store(&self, row: &Row, log_row: &Row, key: &mut dyn Key) -> bool {
        let Some(write) = &self.write else {
            return false;
        };
        key.write(write);
        if self.logged > 0 {
            log_row.stats.add(Field::EntriesWritten, self.logged);
        }
        if self.decision.blocked {
            row.stats.add(Field::Blocks, 1);
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
    /// unless every one allows. `row` is the algorithm's own command, for
    /// messages.
    fn judge(
        &self,
        row: &Row,
        params: &[&[u8]],
        options: &Options,
        now: Instant,
        key: &mut dyn Key,
    ) -> Result<Judged, CommandError>;

    /// Whether `bytes` are a state of this algorithm: its own first byte
    /// and a valid shape.
    fn holds(&self, bytes: &[u8]) -> bool;
}

impl<C: Codec, const N: usize> Rate for Algorithm<C, N> {
    fn params(&self) -> &[Param] {
        &self.params
    }

    fn judge(
        &self,
        row: &Row,
        params: &[&[u8]],
        options: &Options,
        now: Instant,
        key: &mut dyn Key,
    ) -> Result<Judged, CommandError> {
        let numbers = args::params(row.name, &self.params, params, options.unit)?;
        let limiter = (self.build)(numbers).map_err(|ParamError::OutOfRange { name, min, max }| {
            CommandError::BadNumber { name, min, max }
        })?;
        judge::<C>(row, &limiter, options, now, key)
    }

    fn holds(&self, bytes: &[u8]) -> bool {
        bytes.first().is_some_and(|tag| C::TAGS.contains(tag)) && C::decode(bytes).is_ok()
    }
}

/// `row.name key params... [quantity] [options]`: `args[0]` is the
/// command's name, `args[1]` the key.
pub fn command<S: Keyspace>(
    row: &Row,
    rate: &dyn Rate,
    args: &[&[u8]],
    now: Instant,
    keys: &S,
) -> Result<Reply, CommandError> {
    let (params, options) = args::after_key(row.name, args, rate.params().len(), Accepts::RATE)?;
    let mut key = keys.open(1)?;
    let judged = rate.judge(row, params, &options, now, &mut key)?;
    let reply = Reply::five(&judged.decision, options.unit);
    Ok(settle(row, &options, reply, || judged.store(row, row, &mut key)))
}

/// What every rate command does once its limits are judged: store what
/// they decided (`store`, which says whether it wrote anything), unless the
/// request is refused under the shadow switch, which records nothing and
/// answers it as allowed; count the units a refund gave back.
pub fn settle(row: &Row, options: &Options, reply: Reply, store: impl FnOnce() -> bool) -> Reply {
    if reply.refused() && config::shadow() {
        return reply.shadowed();
    }
    let written = store();
    match options.mode {
        Mode::Refund => {
            if written {
                row.stats.add(Field::Refunded, options.quantity);
            }
            reply.refund()
        }
        Mode::Take => reply,
    }
}

/// Decide a request on `key` with `limiter`, and plan its write.
fn judge<C: Codec>(
    row: &Row,
    limiter: &C::Limiter,
    options: &Options,
    now: Instant,
    key: &mut dyn Key,
) -> Result<Judged, CommandError> {
    let (problem, holder) = {
        let read = match key.read() {
            Content::Empty => Ok((Frame::EMPTY, None)),
            Content::String(bytes) => match Frame::read(bytes) {
                // A block alone: the limiter under it is rested.
                Ok(frame) if frame.block.is_some() && frame.state.is_empty() => Ok((frame, None)),
                Ok(frame) => C::decode(frame.state)
                    .map(|state| (frame, Some(state)))
                    // Which algorithm's state it is instead, only on the
                    // error path.
                    .map_err(|problem| (problem, registry::holder_of(frame.state))),
                Err(problem) => Err((problem, None)),
            },
            Content::Other => return Err(CommandError::WrongType),
        };
        match read {
            Ok((frame, state)) => {
                let request = options.request();
                let verdict = request::judge(limiter, state.as_ref(), frame.block, now, &request);
                let block = request::in_force(frame.block, now);
                let (write, logged) = match verdict.effect {
                    _ if options.peek => (None, 0),
                    Effect::Nothing | Effect::Refund(Giveback::Nothing) => (None, 0),
                    Effect::Record(update) => {
                        let logged = C::entries_logged(&update.change);
                        let ms = update.expires_at.ceil_millis();
                        (
                            Some(frame.wrap(C::plan(state.as_ref(), &update.change, ms), block)),
                            logged,
                        )
                    }
                    Effect::Refund(Giveback::Rested) => (Some(frame.wrap(Write::Delete, block)), 0),
                    Effect::Refund(Giveback::Store(update)) => {
                        // A refund changes nothing without a state.
                        let write = state.as_ref().map(|state| {
                            let ms = update.expires_at.ceil_millis();
                            frame.wrap(C::plan_refund(state, &update.change, ms), block)
                        });
                        (write, 0)
                    }
                    Effect::Block { until, expires_at } => {
                        (Some(frame.block(until, expires_at.ceil_millis())), 0)
                    }
                };
                return Ok(Judged {
                    decision: verdict.decision,
                    write,
                    logged,
                });
            }
            Err(unreadable) => unreadable,
        }
    };
    Err(CommandError::state(key.name(), row.name, problem, holder))
}
