//! Turning a command's result into a Redis reply, behind a panic guard.

use crate::error::CommandError;
use crate::stats::CommandStats;
use redis_module::raw;
use std::ffi::CString;
use std::os::raw::c_int;
use std::panic::{catch_unwind, AssertUnwindSafe};

/// Reply with five integers straight into the client's buffer: no
/// intermediate values to allocate.
fn reply_five(ctx: *mut raw::RedisModuleCtx, fields: &[i64; 5]) {
    // SAFETY: the context is the running command's; the reply functions are
    // looked up before use.
    unsafe {
        let (Some(array), Some(integer)) = (
            raw::RedisModule_ReplyWithArray,
            raw::RedisModule_ReplyWithLongLong,
        ) else {
            return;
        };
        array(ctx, 5);
        for &v in fields {
            integer(ctx, v);
        }
    }
}

/// Reply with an error. The message is the error's text (which starts with
/// its code, `ERR` or `WRONGTYPE`).
fn reply_error(ctx: *mut raw::RedisModuleCtx, error: &CommandError) {
    // Messages quote input only through `printable`, which escapes NUL; the
    // fallback is for a message that would still hold one.
    let message = CString::new(error.to_string()).unwrap_or_else(|_| CString::from(c"ERR invalid request"));
    // SAFETY: the context is the running command's; the message is a
    // NUL-terminated string the server copies.
    unsafe {
        if let Some(reply) = raw::RedisModule_ReplyWithError {
            reply(ctx, message.as_ptr());
        }
    }
}

/// Run a command body and reply with its result; a panic becomes an error
/// reply instead of taking the server down. Every outcome is counted in
/// `stats`.
pub fn guarded(
    ctx: *mut raw::RedisModuleCtx,
    stats: &CommandStats,
    body: impl FnOnce() -> Result<[i64; 5], CommandError>,
) -> c_int {
    let result = catch_unwind(AssertUnwindSafe(body));
    stats.record(match &result {
        Ok(Ok(fields)) => Some(fields[0] == 1),
        _ => None,
    });
    match result {
        Ok(Ok(fields)) => reply_five(ctx, &fields),
        Ok(Err(error)) => reply_error(ctx, &error),
        Err(_) => reply_error(ctx, &CommandError::Internal),
    }
    raw::REDISMODULE_OK as c_int
}
