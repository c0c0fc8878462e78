//! The pipeline of the rate commands: arguments in, one key read, one pure
//! decision, at most one write, the reply out. The five algorithms differ
//! only in their parameter table, core limiter and codec.

use crate::args::{self, Accepts, Options, Param};
use crate::codec::Codec;
use crate::error::CommandError;
use crate::registry::{self, Row};
use crate::reply::Reply;
use crate::stats::Field;
use crate::store::{Content, Key, Keyspace, Write};
use rl_core::{Decision, Giveback, Instant, Limiter, ParamError};

/// A rate algorithm as a command: its parameters, and how they build its
/// limiter (the builder takes exactly as many numbers as the table names:
/// another count does not compile).
pub struct Algorithm<C: Codec, const N: usize> {
    pub params: [Param; N],
    pub build: fn([u64; N]) -> Result<C::Limiter, ParamError>,
}

/// What deciding one limit gives: the decision, and the write that records
/// it (none for a refusal, a query or `PEEK`).
#[derive(Debug)]
pub struct Judged {
    pub decision: Decision,
    pub write: Option<Write>,
    /// Entries the write adds to a sliding log (for `INFO`).
    pub logged: u64,
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

/// `row.name key params... [quantity] [MS] [PEEK]`: `args[0]` is the
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
    if let Some(write) = &judged.write {
        key.write(write);
        if judged.logged > 0 {
            row.stats.add(Field::EntriesWritten, judged.logged);
        }
    }
    let reply = Reply::five(&judged.decision, options.unit);
    if options.refund {
        count_refund(row, &options, judged.write.is_some());
        return Ok(reply.refund());
    }
    Ok(reply)
}

/// Count a call with `REFUND` in `row`'s `INFO` fields: the call, and its
/// units when it gave them back (`written`).
pub fn count_refund(row: &Row, options: &Options, written: bool) {
    row.stats.add(Field::Refunds, 1);
    if written {
        row.stats.add(Field::Refunded, options.quantity);
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
        let state = match key.read() {
            Content::Empty => Ok(None),
            // Which algorithm's state it is instead, only on the error path.
            Content::String(bytes) => C::decode(bytes)
                .map(Some)
                .map_err(|problem| (problem, registry::holder_of(bytes))),
            Content::Other => return Err(CommandError::WrongType),
        };
        match state {
            Ok(state) if options.refund => {
                let refunded = limiter.refund(state.as_ref(), now, options.quantity);
                let write = match (refunded.giveback, &state) {
                    _ if options.peek => None,
                    (Giveback::Nothing, _) => None,
                    (Giveback::Rested, _) => Some(Write::Delete),
                    (Giveback::Store(update), Some(state)) => Some(C::plan_refund(
                        state,
                        &update.change,
                        update.expires_at.ceil_millis(),
                    )),
                    (Giveback::Store(_), None) => None,
                };
                return Ok(Judged {
                    decision: refunded.decision,
                    write,
                    logged: 0,
                });
            }
            Ok(state) => {
                let outcome = limiter.check(state.as_ref(), now, options.quantity);
                let (write, logged) = match outcome.update {
                    Some(update) if !options.peek => (
                        Some(C::plan(
                            state.as_ref(),
                            &update.change,
                            update.expires_at.ceil_millis(),
                        )),
                        C::entries_logged(&update.change),
                    ),
                    _ => (None, 0),
                };
                return Ok(Judged {
                    decision: outcome.decision,
                    write,
                    logged,
                });
            }
            Err(unreadable) => unreadable,
        }
    };
    Err(CommandError::state(key.name(), row.name, problem, holder))
}
