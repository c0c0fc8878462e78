//! Counters for `INFO ratelimit`: per command, calls, allowed, refused and
//! errors; and the sliding-log entries written.

use redis_module::InfoContext;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

pub struct CommandStats {
    name: &'static str,
    calls: AtomicU64,
    allowed: AtomicU64,
    refused: AtomicU64,
    errors: AtomicU64,
}

impl CommandStats {
    const fn new(name: &'static str) -> Self {
        CommandStats {
            name,
            calls: AtomicU64::new(0),
            allowed: AtomicU64::new(0),
            refused: AtomicU64::new(0),
            errors: AtomicU64::new(0),
        }
    }

    /// Count one call: `Some(blocked)` when it replied, `None` on an error.
    pub fn record(&self, blocked: Option<bool>) {
        self.calls.fetch_add(1, Relaxed);
        match blocked {
            Some(false) => &self.allowed,
            Some(true) => &self.refused,
            None => &self.errors,
        }
        .fetch_add(1, Relaxed);
    }
}

pub static GCRA: CommandStats = CommandStats::new("gcra");
pub static TOKEN_BUCKET: CommandStats = CommandStats::new("token_bucket");
pub static FIXED: CommandStats = CommandStats::new("fixed");
pub static SLIDING_LOG: CommandStats = CommandStats::new("sliding_log");
pub static SLIDING_COUNTER: CommandStats = CommandStats::new("sliding_counter");
pub static CL_THROTTLE: CommandStats = CommandStats::new("cl_throttle");

/// Instants appended to sliding logs (one per allowed unit).
pub static SLIDING_LOG_ENTRIES: AtomicU64 = AtomicU64::new(0);

const ALL: [&CommandStats; 6] = [
    &GCRA,
    &TOKEN_BUCKET,
    &FIXED,
    &SLIDING_LOG,
    &SLIDING_COUNTER,
    &CL_THROTTLE,
];

/// The `ratelimit` section of `INFO` (and `INFO modules`, `INFO ratelimit`).
#[allow(deprecated)] // the builder API cannot name the section after the module alone
pub fn report(ctx: &InfoContext) {
    ctx.add_info_section(None);
    let as_i64 = |v: &AtomicU64| i64::try_from(v.load(Relaxed)).unwrap_or(i64::MAX);
    for s in ALL {
        ctx.add_info_field_long_long(&format!("{}_calls", s.name), as_i64(&s.calls));
        ctx.add_info_field_long_long(&format!("{}_allowed", s.name), as_i64(&s.allowed));
        ctx.add_info_field_long_long(&format!("{}_refused", s.name), as_i64(&s.refused));
        ctx.add_info_field_long_long(&format!("{}_errors", s.name), as_i64(&s.errors));
    }
    ctx.add_info_field_long_long("sliding_log_entries_written", as_i64(&SLIDING_LOG_ENTRIES));
}
