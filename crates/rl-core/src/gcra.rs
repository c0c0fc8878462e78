//! GCRA, the Generic Cell Rate Algorithm, as redis-cell's `CL.THROTTLE`, but
//! exact: all time is counted in "ticks" of `1/per_micro` microseconds, where
//! `per_micro` is the smallest denominator that makes the emission interval
//! `period / count` a whole number of ticks.

use crate::bounds::{MAX_BURST, MAX_HELD, MAX_LIMIT, MAX_PERIOD_MICROS, MAX_WAIT_MICROS};
use crate::decision::{Decision, RetryAfter};
use crate::error::{in_range, ParamError};
use crate::limiter::{refunded, After, Limiter, Outcome, Overdrawn, Refunded, Update};
use crate::time::{div, div_ceil, gcd, rescale, Instant, Micros, Round};

/// Validated GCRA parameters.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Gcra {
    /// `max_burst + 1`.
    limit: u64,
    /// Ticks per microsecond.
    per_micro: u64,
    /// The emission interval `T = period / count`, in ticks (at most the
    /// period in microseconds, 10^15).
    emission_interval: u64,
}

/// The theoretical arrival time, an exact rational instant:
/// `units / per_micro` microseconds since the epoch.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Tat {
    units: u128,
    per_micro: u64,
}

/// The latest TAT any request can produce, in microseconds: the latest clock
/// reading plus the most units a limiter holds, debt included
/// ([`MAX_HELD`] emission intervals of at most `10^15` µs), plus the longest
/// wait a reservation may ask. A TAT may lie beyond the last instant a
/// key's expiry can name: a long period with a large burst and quantity
/// reaches past the year 586,000, and such a request is still allowed as
/// the model says. (Times `10^9`, the largest denominator, it stays below
/// 2^112: the state's 14 bytes.)
const MAX_TAT_MICROS: u128 =
    u64::MAX as u128 + MAX_HELD as u128 * MAX_PERIOD_MICROS as u128 + MAX_WAIT_MICROS as u128;

impl Tat {
    /// `None` unless `1 <= per_micro <= 10^9` and the instant is at most
    /// `u64::MAX + 4 * 10^24 + 10^15` microseconds (below 2^82).
    pub fn new(units: u128, per_micro: u64) -> Option<Tat> {
        if !(1..=MAX_LIMIT).contains(&per_micro) {
            return None;
        }
        // `units / per_micro > MAX_TAT_MICROS`, without a 128-bit division
        // (a library call on every read of a state): the product is below
        // 2^112.
        if units >= (MAX_TAT_MICROS + 1) * u128::from(per_micro) {
            return None;
        }
        Some(Tat { units, per_micro })
    }

    pub fn units(&self) -> u128 {
        self.units
    }

    pub fn per_micro(&self) -> u64 {
        self.per_micro
    }

    /// This instant in ticks of `1/per_micro` µs, rounded up (later), which
    /// never admits more when the denominators differ (parameters changed).
    fn ticks(&self, per_micro: u64) -> u128 {
        if per_micro == self.per_micro {
            return self.units;
        }
        rescale(self.units, self.per_micro, per_micro, Round::Up)
    }
}

impl Gcra {
    /// `max_burst` 0 ..= 10^9 - 1, `count` 1 ..= 10^9, `period_micros`
    /// 1 ..= 10^15.
    pub fn new(max_burst: u64, count: u64, period_micros: u64) -> Result<Gcra, ParamError> {
        let max_burst = in_range("max_burst", max_burst, 0, MAX_BURST)?;
        let count = in_range("count", count, 1, MAX_LIMIT)?;
        let period = in_range("period", period_micros, 1, MAX_PERIOD_MICROS)?;
        // Both are at least 1, so their gcd is too.
        let g = gcd(period, count).max(1);
        Ok(Gcra {
            limit: max_burst + 1,
            per_micro: count / g,
            emission_interval: period / g,
        })
    }

    /// The delay variation tolerance `tau = T * (max_burst + 1)`, in ticks.
    fn tolerance(&self) -> u128 {
        u128::from(self.emission_interval) * u128::from(self.limit)
    }

    fn micros(&self, ticks: u128) -> Micros {
        Micros(div_ceil(ticks, self.per_micro))
    }

    /// The stored TAT in this limiter's ticks, no earlier than `at` (ticks).
    fn tat_from(&self, state: Option<&Tat>, at: u128) -> u128 {
        state.map_or(at, |s| s.ticks(self.per_micro)).max(at)
    }

    /// An allowed request's answer at `now` (ticks: `now_t`) for the TAT it
    /// leaves, and its update.
    #[inline(always)]
    fn recorded(&self, now_t: u128, new_tat: u128) -> Outcome<Tat> {
        let horizon = now_t + self.tolerance();
        let free = div(horizon.saturating_sub(new_tat), self.emission_interval);
        // A TAT past the last instant an expiry can name keeps the latest one.
        let expires_at = u64::try_from(div_ceil(new_tat, self.per_micro)).unwrap_or(u64::MAX);
        Outcome {
            decision: Decision {
                blocked: false,
                limit: self.limit,
                remaining: u64::try_from(free).unwrap_or(u64::MAX).min(self.limit),
                retry_after: RetryAfter::Allowed,
                reset: self.micros(new_tat.saturating_sub(now_t)),
            },
            update: Some(Update {
                change: Tat {
                    units: new_tat,
                    per_micro: self.per_micro,
                },
                expires_at: Instant::from_micros(expires_at),
            }),
        }
    }
}

impl Limiter for Gcra {
    type State<'a> = Tat;
    type Change = Tat;
    type Refund = Tat;

    const RESERVES: bool = true;

    fn limit(&self) -> u64 {
        self.limit
    }

    /// `TAT = max(TAT, now) + quantity * T`, however far ahead.
    fn force(&self, state: Option<&Tat>, now: Instant, quantity: u64) -> Result<Outcome<Tat>, Overdrawn> {
        let now_t = u128::from(now.as_micros()) * u128::from(self.per_micro);
        let interval = u128::from(self.emission_interval);
        let new_tat = self.tat_from(state, now_t) + u128::from(quantity) * interval;
        if new_tat - now_t > u128::from(MAX_HELD) * interval {
            return Err(Overdrawn);
        }
        Ok(self.recorded(now_t, new_tat))
    }

    /// `TAT = max(TAT, at) + quantity * T`.
    fn reserve(&self, state: Option<&Tat>, now: Instant, at: Instant, quantity: u64) -> Option<Outcome<Tat>> {
        let d = u128::from(self.per_micro);
        let now_t = u128::from(now.as_micros()) * d;
        let at_t = u128::from(at.as_micros().max(now.as_micros())) * d;
        let new_tat = self.tat_from(state, at_t) + u128::from(quantity) * u128::from(self.emission_interval);
        Some(self.recorded(now_t, new_tat))
    }

    fn check(&self, state: Option<&Tat>, now: Instant, quantity: u64) -> Outcome<Tat> {
        let d = u128::from(self.per_micro);
        let now_t = u128::from(now.as_micros()) * d;
        let tat = state.map_or(now_t, |s| s.ticks(self.per_micro)).max(now_t);
        // A TAT later than this refuses every request.
        let horizon = now_t + self.tolerance();
        let remaining_at = |tat: u128| {
            let free = div(horizon.saturating_sub(tat), self.emission_interval);
            u64::try_from(free).unwrap_or(u64::MAX).min(self.limit)
        };
        let mut decision = Decision {
            blocked: false,
            limit: self.limit,
            remaining: remaining_at(tat),
            retry_after: RetryAfter::Allowed,
            reset: self.micros(tat - now_t),
        };
        if let Some(done) = Outcome::settled(decision, quantity) {
            return done;
        }
        // At most 2^82 * 10^9 + 10^24 ticks: no overflow.
        let new_tat = tat + u128::from(quantity) * u128::from(self.emission_interval);
        if new_tat > horizon {
            decision.blocked = true;
            decision.retry_after = RetryAfter::After(self.micros(new_tat - horizon));
            return Outcome::unchanged(decision);
        }
        self.recorded(now_t, new_tat)
    }

    /// The TAT, in microseconds rounded up (a query's `reset` from `now`).
    fn rested_at(&self, state: Option<&Tat>, now: Instant) -> Instant {
        let tat = state.map_or(0, |s| div_ceil(s.ticks(self.per_micro), self.per_micro));
        Instant::from_micros(u64::try_from(tat).unwrap_or(u64::MAX)).max(now)
    }

    /// `TAT = max(TAT - quantity * T, now)`.
    fn refund(&self, state: Option<&Tat>, now: Instant, quantity: u64) -> Refunded<Tat> {
        let now_t = u128::from(now.as_micros()) * u128::from(self.per_micro);
        let after = match state.map(|s| s.ticks(self.per_micro)) {
            Some(tat) if tat > now_t && quantity > 0 => {
                // At most 2^64 * 10^15 ticks back: no overflow.
                let back = u128::from(quantity) * u128::from(self.emission_interval);
                match tat.saturating_sub(back) {
                    t if t <= now_t => After::Rested,
                    t => After::State(Tat {
                        units: t,
                        per_micro: self.per_micro,
                    }),
                }
            }
            _ => After::Same,
        };
        refunded(self, state, now, after)
    }
}
