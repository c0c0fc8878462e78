//! The pipeline of the rate commands: arguments in, one key read, one pure
//! decision, at most one write, the reply out. The five algorithms differ
//! only in their parameter table, core limiter and codec.

use crate::args::{self, Options, Param};
use crate::codec::Codec;
use crate::error::{printable, CommandError};
use crate::registry::Row;
use crate::reply::Reply;
use crate::server::ServerKeys;
use crate::stats::Field;
use crate::store::{Content, Key, Keyspace, Write};
use rl_core::{Decision, Instant, Limiter, ParamError};

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

/// A rate algorithm, whatever its parameters and state: what the registry
/// and `RL.ALL` see of it.
pub trait Rate: Sync {
    fn params(&self) -> &[Param];

    /// `row.name key params... [quantity] [MS] [PEEK]` on the server.
    fn command(
        &self,
        row: &Row,
        args: &[&[u8]],
        now: Instant,
        keys: &ServerKeys<'_>,
    ) -> Result<Reply, CommandError>;

    /// The same, on the unit tests' in-memory keys.
    #[cfg(test)]
    fn in_memory(
        &self,
        row: &Row,
        args: &[&[u8]],
        now: Instant,
        keys: &crate::memory::Memory,
    ) -> Result<Reply, CommandError>;
}

impl<C: Codec, const N: usize> Rate for Algorithm<C, N> {
    fn params(&self) -> &[Param] {
        &self.params
    }

    fn command(
        &self,
        row: &Row,
        args: &[&[u8]],
        now: Instant,
        keys: &ServerKeys<'_>,
    ) -> Result<Reply, CommandError> {
        self.run(row, args, now, keys)
    }

    #[cfg(test)]
    fn in_memory(
        &self,
        row: &Row,
        args: &[&[u8]],
        now: Instant,
        keys: &crate::memory::Memory,
    ) -> Result<Reply, CommandError> {
        self.run(row, args, now, keys)
    }
}

impl<C: Codec, const N: usize> Algorithm<C, N> {
    /// `args[0]` is the command's name, `args[1]` the key.
    #[inline(always)]
    pub fn run<S: Keyspace>(
        &self,
        row: &Row,
        args: &[&[u8]],
        now: Instant,
        keys: &S,
    ) -> Result<Reply, CommandError> {
        let [_, _, rest @ ..] = args else {
            return Err(CommandError::WrongArity { command: row.name });
        };
        let (numbers, options) = args::parse(row.name, &self.params, rest)?;
        let limiter = self.limiter(numbers)?;
        let mut key = keys.open(1)?;
        let judged = judge::<C, _>(row, &limiter, &options, now, &mut key)?;
        if let Some(write) = &judged.write {
            key.write(write);
            if judged.logged > 0 {
                row.stats.add(Field::EntriesWritten, judged.logged);
            }
        }
        Ok(Reply::five(&judged.decision, options.unit))
    }

    fn limiter(&self, numbers: [u64; N]) -> Result<C::Limiter, CommandError> {
        (self.build)(numbers)
            .map_err(|ParamError::OutOfRange { name, min, max }| CommandError::BadNumber { name, min, max })
    }
}

/// Decide a request on `key` with `limiter`, and plan its write. Nothing is
/// written here: a caller judging several keys writes none of them unless
/// every one is allowed.
#[inline(always)]
pub fn judge<C: Codec, K: Key + ?Sized>(
    row: &Row,
    limiter: &C::Limiter,
    options: &Options,
    now: Instant,
    key: &mut K,
) -> Result<Judged, CommandError> {
    let problem = {
        let state = match key.read() {
            Content::Empty => Ok(None),
            Content::String(bytes) => C::decode(bytes).map(Some),
            Content::Other => return Err(CommandError::WrongType),
        };
        match state {
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
            Err(problem) => problem,
        }
    };
    Err(CommandError::CorruptState {
        key: printable(key.name()),
        command: row.name,
        problem,
    })
}
