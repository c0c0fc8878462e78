//! Turning a command's result into a Redis reply, behind a panic guard.

use crate::error::CommandError;
use crate::stats::CommandStats;
use redis_module::{RedisError, RedisResult, RedisValue};
use std::panic::{catch_unwind, AssertUnwindSafe};

/// Run a command body; a panic becomes an error reply instead of taking the
/// server down. Every outcome is counted in `stats`.
pub fn guarded(stats: &CommandStats, body: impl FnOnce() -> Result<[i64; 5], CommandError>) -> RedisResult {
    let result = catch_unwind(AssertUnwindSafe(body));
    stats.record(match &result {
        Ok(Ok(fields)) => Some(fields[0] == 1),
        _ => None,
    });
    match result {
        Ok(Ok(fields)) => Ok(RedisValue::Array(
            fields.iter().map(|&v| RedisValue::Integer(v)).collect(),
        )),
        Ok(Err(CommandError::WrongType)) => Err(RedisError::WrongType),
        Ok(Err(e)) => Err(RedisError::String(e.to_string())),
        Err(_) => Err(RedisError::String(CommandError::Internal.to_string())),
    }
}
