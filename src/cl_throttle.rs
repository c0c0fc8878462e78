//! redis-cell's `CL.THROTTLE` (registered when the module is loaded with
//! `cl_throttle yes`): `RL.GCRA` with redis-cell's grammar, the same
//! limiter, state and messages, and no options.

use crate::algorithms::GCRA;
use crate::command::Command;
use crate::error::{printable, CommandError};
use crate::options::Accepts;
use crate::rate;
use crate::reply::Reply;
use crate::stats::{Field, Stats, CALLS};
use crate::store::Keyspace;
use rl_core::Instant;

pub static CL_THROTTLE: Command = Command {
    name: "cl.throttle",
    stats: Stats::new(&[
        CALLS[0],
        CALLS[1],
        CALLS[2],
        CALLS[3],
        (Field::ShadowRefused, "shadow_refused"),
    ]),
};

/// `CL.THROTTLE key max_burst count period [quantity]`, exactly. An option
/// where `quantity` or after it stands is named in the error, whatever the
/// argument count.
pub fn command<S: Keyspace>(
    command: &Command,
    args: &[&[u8]],
    now: Instant,
    keys: &S,
) -> Result<Reply, CommandError> {
    let arity = CommandError::WrongArity {
        command: command.name,
    };
    if args.len() < 5 {
        return Err(arity);
    }
    if let Some(option) = args[5..]
        .iter()
        .find(|a| a.first().is_some_and(u8::is_ascii_alphabetic))
    {
        return Err(CommandError::NoOptions {
            command: command.name,
            token: printable(option),
            instead: GCRA.command.name,
            accepts: Accepts::UNTAGGED,
        });
    }
    if args.len() > 6 {
        return Err(arity);
    }
    rate::command(&GCRA.command, &GCRA, args, now, keys)
}
