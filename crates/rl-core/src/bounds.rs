//! Upper bounds of every parameter, chosen so that no arithmetic in any
//! algorithm can overflow (all intermediate products fit in `u128`).

/// `count`, `capacity`, `refill_count`, `limit`: 1 ..= 10^9.
pub const MAX_LIMIT: u64 = 1_000_000_000;
/// `max_burst`: 0 ..= 10^9 - 1, so that `max_burst + 1 <= MAX_LIMIT`.
pub const MAX_BURST: u64 = MAX_LIMIT - 1;
/// `quantity`: 0 ..= 10^9.
pub const MAX_QUANTITY: u64 = 1_000_000_000;
/// `period`, `window`, `refill_period`: at most 10^15 microseconds (about
/// 31.7 years): 10^9 seconds, or 10^12 milliseconds with `MS`.
pub const MAX_PERIOD_MICROS: u64 = 1_000_000_000_000_000;
/// `BLOCK duration`: 1 ..= 10^15 microseconds, as a period (10^9 seconds,
/// or 10^12 milliseconds with `MS`).
pub const MAX_BLOCK_MICROS: u64 = MAX_PERIOD_MICROS;
/// The most units a limiter may hold at once, debt included (`FORCE`
/// records past the limit): 4 × 10^9. A forced request that would hold
/// more is an error that records nothing. Every count fits 4 bytes, and a
/// GCRA TAT stays within what its state can store.
pub const MAX_HELD: u64 = 4 * MAX_LIMIT;
/// `WAIT max_wait`: 0 ..= 10^15 microseconds (10^9 seconds, or 10^12
/// milliseconds with `MS`).
pub const MAX_WAIT_MICROS: u64 = MAX_PERIOD_MICROS;
