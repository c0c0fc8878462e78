//! Turning a command's result into a Redis reply, behind a panic guard.

use crate::error::CommandError;
use redis_module::{RedisError, RedisResult, RedisValue};
use std::panic::{catch_unwind, AssertUnwindSafe};

/// Run a command body; a panic becomes an error reply instead of taking the
/// server down.
pub fn guarded(body: impl FnOnce() -> Result<[i64; 5], CommandError>) -> RedisResult {
    match catch_unwind(AssertUnwindSafe(body)) {
        Ok(Ok(fields)) => Ok(RedisValue::Array(
            fields.iter().map(|&v| RedisValue::Integer(v)).collect(),
        )),
        Ok(Err(CommandError::WrongType)) => Err(RedisError::WrongType),
        Ok(Err(e)) => Err(RedisError::String(e.to_string())),
        Err(_) => Err(RedisError::String(CommandError::Internal.to_string())),
    }
}
