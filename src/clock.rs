//! The one place that reads server time.

use redis_module::raw;
use rl_core::Instant;
use std::time::{SystemTime, UNIX_EPOCH};

/// The server's current time in microseconds.
///
/// `RedisModule_CachedMicroseconds` (Redis 7.2+, Valkey) gives one instant per
/// command, script or transaction, as Redis's own expiry logic sees it. Older
/// servers lack it: then `RedisModule_Microseconds`, then the process clock.
pub fn now() -> Instant {
    // SAFETY: the API table is filled in by RedisModule_Init before any
    // command runs; each entry is an Option checked before the call.
    let micros = unsafe {
        if let Some(cached) = raw::RedisModule_CachedMicroseconds {
            Some(cached())
        } else {
            raw::RedisModule_Microseconds.map(|f| f())
        }
    };
    match micros {
        Some(us) => Instant::from_micros(u64::try_from(us).unwrap_or(0)),
        None => wall_clock(),
    }
}

fn wall_clock() -> Instant {
    let us = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| u64::try_from(d.as_micros()).unwrap_or(u64::MAX))
        .unwrap_or(0);
    Instant::from_micros(us)
}

/// The current wall-clock time in milliseconds, for servers that cannot set
/// an absolute expiry.
pub fn now_millis() -> u64 {
    wall_clock().as_micros() / 1000
}
