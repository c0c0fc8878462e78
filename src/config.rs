//! Module settings: `CONFIG GET/SET ratelimit.<name>`, or `loadmodule` arguments.

use std::sync::atomic::{AtomicBool, AtomicI64, Ordering};

/// Default of `ratelimit.sliding_log_max_limit`.
pub const SLIDING_LOG_MAX_LIMIT_DEFAULT: i64 = 10_000;
/// Largest value it may be set to (8 MB per limiter at most).
pub const SLIDING_LOG_MAX_LIMIT_MAX: i64 = 1_000_000;

/// The largest `limit` `RL.SLIDING_LOG` accepts: each logged unit costs
/// 8 bytes, so this bounds the memory of one limiter.
pub static SLIDING_LOG_MAX_LIMIT: AtomicI64 = AtomicI64::new(SLIDING_LOG_MAX_LIMIT_DEFAULT);

pub fn sliding_log_max_limit() -> u64 {
    u64::try_from(SLIDING_LOG_MAX_LIMIT.load(Ordering::Relaxed))
        .unwrap_or(1)
        .max(1)
}

/// `ratelimit.cl_throttle`: also register redis-cell's `CL.THROTTLE` (set at
/// load time only: `loadmodule ... cl_throttle yes`).
pub static CL_THROTTLE: AtomicBool = AtomicBool::new(false);

pub fn cl_throttle_enabled() -> bool {
    CL_THROTTLE.load(Ordering::Relaxed)
}
