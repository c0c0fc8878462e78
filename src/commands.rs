//! The one pipeline every command runs through:
//! parse -> now -> load -> core check -> store -> replicate -> reply.
//! The five commands differ only in their argument table, core limiter and
//! storage codec.

use crate::args::{self, Arg, AsBytes, Positional};
use crate::clock;
use crate::config;
use crate::error::{printable, CommandError};
use crate::stats;
use crate::storage::store::{Content, Store};
use crate::storage::{
    Codec, FixedWindowCodec, GcraCodec, SlidingCounterCodec, SlidingLogCodec, TokenBucketCodec,
};
use redis_module::raw;
use rl_core::bounds::{MAX_BURST, MAX_LIMIT, MAX_PERIOD_MICROS};
use rl_core::{FixedWindow, Gcra, Limiter, ParamError, SlidingCounter, SlidingLog, TokenBucket};
use std::sync::atomic::Ordering;

/// A command: its name, positional arguments, and how they build a limiter.
pub struct Command<L> {
    pub name: &'static str,
    pub positional: &'static [Positional],
    pub build: fn(&[u64]) -> Result<L, ParamError>,
}

const fn number(name: &'static str, min: u64, max: u64) -> Positional {
    Positional {
        name,
        min,
        max,
        cap: None,
        is_duration: false,
    }
}

const fn duration(name: &'static str) -> Positional {
    Positional {
        name,
        min: 1,
        max: MAX_PERIOD_MICROS,
        cap: None,
        is_duration: true,
    }
}

pub const GCRA: Command<Gcra> = Command {
    name: "rl.gcra",
    positional: &[
        number("max_burst", 0, MAX_BURST),
        number("count", 1, MAX_LIMIT),
        duration("period"),
    ],
    build: |n| Gcra::new(n[0], n[1], n[2]),
};

pub const TOKEN_BUCKET: Command<TokenBucket> = Command {
    name: "rl.token_bucket",
    positional: &[
        number("capacity", 1, MAX_LIMIT),
        number("refill_count", 1, MAX_LIMIT),
        duration("refill_period"),
    ],
    build: |n| TokenBucket::new(n[0], n[1], n[2]),
};

pub const FIXED: Command<FixedWindow> = Command {
    name: "rl.fixed",
    positional: &[number("limit", 1, MAX_LIMIT), duration("window")],
    build: |n| FixedWindow::new(n[0], n[1]),
};

pub const SLIDING_LOG: Command<SlidingLog> = Command {
    name: "rl.sliding_log",
    positional: &[
        Positional {
            // Memory grows with the limit: capped by a module setting.
            cap: Some(config::sliding_log_max_limit),
            ..number("limit", 1, MAX_LIMIT)
        },
        duration("window"),
    ],
    build: |n| SlidingLog::new(n[0], n[1]),
};

pub const SLIDING_COUNTER: Command<SlidingCounter> = Command {
    name: "rl.sliding_counter",
    positional: &[number("limit", 1, MAX_LIMIT), duration("window")],
    build: |n| SlidingCounter::new(n[0], n[1]),
};

/// redis-cell's `CL.THROTTLE`, for drop-in use: the same limiter and state
/// as `RL.GCRA`, with redis-cell's grammar (no `MS`, no `PEEK`).
pub const CL_THROTTLE: Command<Gcra> = Command {
    name: "cl.throttle",
    positional: GCRA.positional,
    build: GCRA.build,
};

/// Run `command` on `args` (`args[0]` is the command name, `args[1]` the key).
pub fn run<C: Codec>(
    command: &Command<C::Limiter>,
    ctx: *mut raw::RedisModuleCtx,
    args: &[Arg],
) -> Result<[i64; 5], CommandError> {
    let [_, key_name, rest @ ..] = args else {
        return Err(CommandError::WrongArity {
            command: command.name,
        });
    };
    let request = args::parse(command.name, command.positional, rest)?;
    let limiter = (command.build)(&request.numbers)
        .map_err(|ParamError::OutOfRange { name, min, max }| CommandError::BadNumber { name, min, max })?;
    let now = clock::now();
    // SAFETY: the context and the key argument belong to the running command.
    let mut store = unsafe { Store::open(ctx, key_name.as_ptr(), C::ACCESS)? };
    let (decision, write) = {
        let state = match store.read()? {
            Content::Empty => None,
            Content::String(bytes) => {
                Some(C::decode(bytes).map_err(|problem| CommandError::CorruptState {
                    key: printable(key_name.bytes()),
                    algorithm: C::ALGORITHM,
                    problem,
                })?)
            }
            Content::Other => return Err(CommandError::WrongType),
        };
        let outcome = limiter.check(state.as_ref(), now, request.quantity);
        let write = match outcome.update {
            Some(update) if !request.peek => Some((
                C::plan(state.as_ref(), &update.change),
                update.expires_at.ceil_millis(),
                C::entries_logged(&update.change),
            )),
            _ => None,
        };
        (outcome.decision, write)
    };
    if let Some((plan, expire_at_ms, logged)) = write {
        C::write(&mut store, plan, expire_at_ms)?;
        stats::SLIDING_LOG_ENTRIES.fetch_add(logged, Ordering::Relaxed);
    }
    Ok(decision.to_reply(request.unit))
}

pub fn gcra(ctx: *mut raw::RedisModuleCtx, args: &[Arg]) -> Result<[i64; 5], CommandError> {
    run::<GcraCodec>(&GCRA, ctx, args)
}

pub fn token_bucket(ctx: *mut raw::RedisModuleCtx, args: &[Arg]) -> Result<[i64; 5], CommandError> {
    run::<TokenBucketCodec>(&TOKEN_BUCKET, ctx, args)
}

pub fn fixed(ctx: *mut raw::RedisModuleCtx, args: &[Arg]) -> Result<[i64; 5], CommandError> {
    run::<FixedWindowCodec>(&FIXED, ctx, args)
}

pub fn sliding_log(ctx: *mut raw::RedisModuleCtx, args: &[Arg]) -> Result<[i64; 5], CommandError> {
    run::<SlidingLogCodec>(&SLIDING_LOG, ctx, args)
}

pub fn sliding_counter(ctx: *mut raw::RedisModuleCtx, args: &[Arg]) -> Result<[i64; 5], CommandError> {
    run::<SlidingCounterCodec>(&SLIDING_COUNTER, ctx, args)
}

/// `CL.THROTTLE key max_burst count period [quantity]`, exactly. An option
/// where `quantity` or after it stands is named in the error, whatever the
/// argument count.
pub fn cl_throttle(ctx: *mut raw::RedisModuleCtx, args: &[Arg]) -> Result<[i64; 5], CommandError> {
    let arity = CommandError::WrongArity {
        command: CL_THROTTLE.name,
    };
    if args.len() < 5 {
        return Err(arity);
    }
    if let Some(option) = args[5..]
        .iter()
        .find(|a| a.bytes().first().is_some_and(u8::is_ascii_alphabetic))
    {
        return Err(CommandError::NoOptions {
            command: CL_THROTTLE.name,
            token: printable(option.bytes()),
        });
    }
    if args.len() > 6 {
        return Err(arity);
    }
    run::<GcraCodec>(&CL_THROTTLE, ctx, args)
}
