//! Turning a command's result into a Redis reply, behind a panic guard.

use crate::error::CommandError;
use crate::stats::CommandStats;
use redis_module::{raw, Context};
use redis_module::{RedisError, RedisResult, RedisValue};
use std::panic::{catch_unwind, AssertUnwindSafe};

/// Reply with five integers straight into the client's buffer: no
/// intermediate values to allocate.
fn reply_five(ctx: &Context, fields: &[i64; 5]) {
    // SAFETY: the context is the running command's; the reply functions are
    // looked up before use.
    unsafe {
        let (Some(array), Some(integer)) = (
            raw::RedisModule_ReplyWithArray,
            raw::RedisModule_ReplyWithLongLong,
        ) else {
            return;
        };
        array(ctx.ctx, 5);
        for &v in fields {
            integer(ctx.ctx, v);
        }
    }
}

/// Run a command body; a panic becomes an error reply instead of taking the
/// server down. Every outcome is counted in `stats`.
pub fn guarded(
    ctx: &Context,
    stats: &CommandStats,
    body: impl FnOnce() -> Result<[i64; 5], CommandError>,
) -> RedisResult {
    let result = catch_unwind(AssertUnwindSafe(body));
    stats.record(match &result {
        Ok(Ok(fields)) => Some(fields[0] == 1),
        _ => None,
    });
    match result {
        Ok(Ok(fields)) => {
            reply_five(ctx, &fields);
            Ok(RedisValue::NoReply)
        }
        Ok(Err(CommandError::WrongType)) => Err(RedisError::WrongType),
        Ok(Err(e)) => Err(RedisError::String(e.to_string())),
        Err(_) => Err(RedisError::String(CommandError::Internal.to_string())),
    }
}
