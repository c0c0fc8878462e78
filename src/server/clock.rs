//! The one place that reads server time.

use super::api::Api;
use rl_core::Instant;
use std::os::raw::{c_int, c_long};

/// The server's current time in microseconds.
///
/// `RedisModule_CachedMicroseconds` (Redis 7.2+, Valkey) gives one instant per
/// command, script or transaction, as the server's own expiry logic sees it.
/// Older servers lack it: then `RedisModule_Microseconds`, then the process
/// clock.
pub fn now(api: &Api) -> Instant {
    // SAFETY: both are plain reads of the server's clock, callable from a
    // command.
    let micros = unsafe {
        match (api.cached_microseconds, api.microseconds) {
            (Some(cached), _) => Some(cached()),
            (None, Some(micros)) => Some(micros()),
            (None, None) => None,
        }
    };
    match micros {
        Some(us) => Instant::from_micros(u64::try_from(us).unwrap_or(0)),
        None => wall_clock(),
    }
}

/// `struct timespec` of the C library: `time_t` and `long` are both `long`
/// on the platforms Redis runs on (LP64, and the classic 32-bit ABIs).
#[repr(C)]
struct Timespec {
    tv_sec: c_long,
    tv_nsec: c_long,
}

extern "C" {
    fn clock_gettime(clock: c_int, now: *mut Timespec) -> c_int;
}

/// `CLOCK_REALTIME`, the wall clock Redis itself reads (0 on Linux and macOS).
const CLOCK_REALTIME: c_int = 0;

/// The wall clock in microseconds since the Unix epoch, read straight from
/// the C library (`SystemTime` adds checked conversions on every call, a
/// visible share of a command this cheap). A clock before 1970 or a failed
/// read gives 0, which the limiters treat as a clock that stepped back.
fn wall_clock() -> Instant {
    let mut now = Timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `now` is a valid, writable timespec for the call.
    let ok = unsafe { clock_gettime(CLOCK_REALTIME, &mut now) } == 0;
    let micros = match (ok, u64::try_from(now.tv_sec), u64::try_from(now.tv_nsec)) {
        (true, Ok(secs), Ok(nanos)) => secs.saturating_mul(1_000_000).saturating_add(nanos / 1_000),
        _ => 0,
    };
    Instant::from_micros(micros)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::{SystemTime, UNIX_EPOCH};

    #[test]
    fn the_wall_clock_agrees_with_the_standard_library() {
        let before = SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_micros() as u64;
        let ours = wall_clock().as_micros();
        let after = SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_micros() as u64;
        assert!(before <= ours && ours <= after, "{before} <= {ours} <= {after}");
    }
}
