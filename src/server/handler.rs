//! The commands' entry points: the server calls `handle::<I>` for the
//! registry's row `I`. Each reads its arguments in place, runs the row
//! behind a panic guard, counts the outcome and writes the reply.

use super::api::Api;
use super::clock;
use super::key::{string_bytes, ServerKeys};
use crate::error::CommandError;
use crate::registry::{self, Keys, Row, COMMANDS};
use crate::reply::{Reply, Value};
use redis_module::raw;
use std::ffi::CString;
use std::mem::MaybeUninit;
use std::os::raw::{c_int, c_long};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, Ordering};

/// The signature of a command handler as the server calls it.
pub type Handler = extern "C" fn(*mut raw::RedisModuleCtx, *mut *mut raw::RedisModuleString, c_int) -> c_int;

/// The handler of the registry's row `I`. (The server's command table holds
/// one function per command; these are the functions, one per row index.)
extern "C" fn handle<const I: usize>(
    ctx: *mut raw::RedisModuleCtx,
    argv: *mut *mut raw::RedisModuleString,
    argc: c_int,
) -> c_int {
    if let (Some(row), Some(api)) = (COMMANDS.get(I), Api::get()) {
        // SAFETY: the server passes this command's context and arguments,
        // valid for the whole call.
        unsafe { run(row, api, ctx, argv, argc) };
    }
    raw::REDISMODULE_OK as c_int
}

/// Room for the rows of the registry; `handlers` checks it suffices.
pub const HANDLERS: [Handler; 16] = [
    handle::<0>,
    handle::<1>,
    handle::<2>,
    handle::<3>,
    handle::<4>,
    handle::<5>,
    handle::<6>,
    handle::<7>,
    handle::<8>,
    handle::<9>,
    handle::<10>,
    handle::<11>,
    handle::<12>,
    handle::<13>,
    handle::<14>,
    handle::<15>,
];
const _: () = assert!(COMMANDS.len() <= HANDLERS.len(), "add handlers for the new rows");

/// Whether the handlers check each command's arity themselves: on a server
/// that does not from the commands' documentation (Redis 6.x has no
/// `RedisModule_SetCommandInfo`), so that too few arguments get the same
/// error on every server. Set when the module loads.
static CHECK_ARITY: AtomicBool = AtomicBool::new(false);

pub fn check_arity(check: bool) {
    CHECK_ARITY.store(check, Ordering::Relaxed);
}

/// Whether `argc` arguments (the name included) fit `arity`, as the server
/// reads it: exactly `arity`, or at least `-arity` when negative.
fn arity_fits(arity: i32, argc: c_int) -> bool {
    if arity < 0 {
        argc >= -arity
    } else {
        argc == arity
    }
}

/// Arguments read in place without allocating, up to this many.
const INLINE_ARGS: usize = 16;

/// Run `row` on the command's arguments and reply.
///
/// # Safety
/// `ctx`, `argv` and `argc` are the running command's.
unsafe fn run(
    row: &Row,
    api: &'static Api,
    ctx: *mut raw::RedisModuleCtx,
    argv: *mut *mut raw::RedisModuleString,
    argc: c_int,
) {
    let result = catch_unwind(AssertUnwindSafe(|| {
        if CHECK_ARITY.load(Ordering::Relaxed) && !arity_fits(row.arity(), argc) {
            let command = row.command.name;
            answer(row, api, ctx, Err(CommandError::WrongArity { command }));
            return;
        }
        let argv: &[*mut raw::RedisModuleString] = match usize::try_from(argc) {
            // SAFETY: argv holds argc string pointers for the whole command.
            Ok(len) if len > 0 && !argv.is_null() => unsafe { std::slice::from_raw_parts(argv, len) },
            _ => &[],
        };
        // SAFETY: the arguments are live and unchanged for the whole command,
        // which outlives every use of their bytes.
        let bytes_of = |s: &*mut raw::RedisModuleString| unsafe { string_bytes(api, *s) };
        let mut inline = [const { MaybeUninit::<&[u8]>::uninit() }; INLINE_ARGS];
        let heap: Vec<&[u8]>;
        let args: &[&[u8]] = match argv.split_first() {
            Some((_, rest)) if argv.len() <= INLINE_ARGS => {
                // The command's name is the row's (the server matched it).
                inline[0].write(row.command.name.as_bytes());
                for (slot, s) in inline[1..].iter_mut().zip(rest) {
                    slot.write(bytes_of(s));
                }
                // SAFETY: the first `argv.len()` slots were written just above.
                unsafe { std::slice::from_raw_parts(inline.as_ptr().cast::<&[u8]>(), argv.len()) }
            }
            _ => {
                heap = argv.iter().map(bytes_of).collect();
                &heap
            }
        };
        if row.keys == Keys::Counted && keys_position_request(api, ctx) {
            // The server only asks where the keys are (Cluster routing, ACL
            // key patterns, COMMAND GETKEYS): it expects no reply.
            tell_key_positions(api, ctx, registry::key_positions(row, args));
            return;
        }
        // SAFETY: the context and arguments are the running command's, and
        // the keyspace lives only for this call.
        let keys = unsafe { ServerKeys::new(ctx, argv, api) };
        let result = registry::run(row, args, clock::now(api), &keys);
        // Answered here, where the reply is: it is not carried out of the
        // guard. (Writing it calls the server only: nothing there panics.)
        answer(row, api, ctx, result);
    }));
    if result.is_err() {
        answer(row, api, ctx, Err(CommandError::Internal));
    }
}

/// Count the call in `row`'s `INFO` fields and write its reply.
#[inline(always)]
fn answer(row: &Row, api: &Api, ctx: *mut raw::RedisModuleCtx, result: Result<Reply, CommandError>) {
    row.command
        .stats
        .record(result.as_ref().map(Reply::outcome).map_err(|_| ()));
    // SAFETY: the context is the running command's (every caller passes
    // the one the server called the handler with).
    unsafe { reply(api, ctx, result) };
}

/// Whether the server calls the command only to learn where its keys are.
fn keys_position_request(api: &Api, ctx: *mut raw::RedisModuleCtx) -> bool {
    // SAFETY: the context is the running command's; the call only reads it.
    api.is_keys_position_request
        .is_some_and(|is_request| unsafe { is_request(ctx) } != 0)
}

/// Tell the server the positions of the keys.
fn tell_key_positions(api: &Api, ctx: *mut raw::RedisModuleCtx, positions: std::ops::Range<usize>) {
    let Some(key_at) = api.key_at_pos else {
        return;
    };
    for position in positions {
        if let Ok(position) = c_int::try_from(position) {
            // SAFETY: the context is the running command's, which is a keys
            // position request; the position is within its arguments.
            unsafe { key_at(ctx, position) };
        }
    }
}

/// Write the reply into the client's buffer.
///
/// # Safety
/// `ctx` is the running command's context.
#[inline(always)]
unsafe fn reply(api: &Api, ctx: *mut raw::RedisModuleCtx, result: Result<Reply, CommandError>) {
    match result {
        // SAFETY: the caller's contract.
        // Five integers, then up to two more: written without a loop (a
        // decision always has the five).
        Ok(Reply::Decision { fields, len, .. }) => unsafe {
            let len = len.max(5);
            let [blocked, limit, remaining, retry_after, reset, sixth, seventh] = fields;
            (api.reply_with_array)(ctx, c_long::from(len));
            for v in [blocked, limit, remaining, retry_after, reset] {
                (api.reply_with_long_long)(ctx, v);
            }
            if len > 5 {
                (api.reply_with_long_long)(ctx, sixth);
            }
            if len > 6 {
                (api.reply_with_long_long)(ctx, seventh);
            }
        },
        // SAFETY: the caller's contract.
        Ok(Reply::Integer(v)) => unsafe {
            (api.reply_with_long_long)(ctx, v);
        },
        // SAFETY: the caller's contract.
        Ok(Reply::Value(value)) => unsafe { reply_value(api, ctx, &value) },
        // SAFETY: the caller's contract.
        Err(error) => unsafe { reply_error(api, ctx, &error) },
    }
}

/// Write a reply of any shape (a map as a map where the server has maps,
/// which it writes as a flat array to a RESP2 client; else as that array).
///
/// # Safety
/// `ctx` is the running command's context.
#[cold]
#[inline(never)]
unsafe fn reply_value(api: &Api, ctx: *mut raw::RedisModuleCtx, value: &Value) {
    let len = |n: usize| c_long::try_from(n).unwrap_or(c_long::MAX);
    match value {
        // SAFETY: the caller's contract; the server copies what it is given.
        Value::Integer(v) => unsafe {
            (api.reply_with_long_long)(ctx, *v);
        },
        // SAFETY: the caller's contract; the server copies what it is given.
        Value::Bulk(bytes) => unsafe {
            (api.reply_with_string_buffer)(ctx, bytes.as_ptr().cast(), bytes.len());
        },
        // SAFETY: the caller's contract; the server copies what it is given.
        Value::Nil => unsafe {
            (api.reply_with_null)(ctx);
        },
        // SAFETY: the caller's contract; the server copies what it is given.
        Value::Array(items) => unsafe {
            (api.reply_with_array)(ctx, len(items.len()));
            for item in items {
                reply_value(api, ctx, item);
            }
        },
        // SAFETY: the caller's contract; the server copies what it is given.
        Value::Map(pairs) => unsafe {
            match api.reply_with_map {
                Some(map) => map(ctx, len(pairs.len())),
                None => (api.reply_with_array)(ctx, len(2 * pairs.len())),
            };
            for (name, item) in pairs {
                (api.reply_with_string_buffer)(ctx, name.as_ptr().cast(), name.len());
                reply_value(api, ctx, item);
            }
        },
    }
}

/// Write an error reply.
///
/// # Safety
/// `ctx` is the running command's context.
#[cold]
#[inline(never)]
unsafe fn reply_error(api: &Api, ctx: *mut raw::RedisModuleCtx, error: &CommandError) {
    // Messages quote input only through `printable`, which escapes NUL; the
    // fallback is for a message that would still hold one.
    let message = CString::new(error.to_string()).unwrap_or_else(|_| CString::from(c"ERR invalid request"));
    // SAFETY: the caller's contract; the server copies the message.
    unsafe { (api.reply_with_error)(ctx, message.as_ptr()) };
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arity_is_read_as_the_server_reads_it() {
        // At least five (CL.THROTTLE's -5), exactly three (RL.RELEASE's 3).
        assert!(!arity_fits(-5, 4));
        assert!(arity_fits(-5, 5));
        assert!(arity_fits(-5, 9));
        assert!(!arity_fits(3, 2));
        assert!(arity_fits(3, 3));
        assert!(!arity_fits(3, 4));
    }
}
