//! The token bucket: `capacity` tokens, full at first, refilled continuously
//! at `refill_count` per `refill_period`.
//!
//! Tokens are counted exactly in "grains": one token is `grains_per_token`
//! grains and every microsecond adds `grains_per_micro` grains, both reduced
//! by their gcd so that any rate is a whole number of grains per microsecond.
//! Its decisions equal GCRA's with `max_burst = capacity - 1` and the same
//! rate, for any sequence of requests and instants.

use crate::bounds::{MAX_HELD, MAX_LIMIT, MAX_PERIOD_MICROS};
use crate::decision::{Decision, RetryAfter};
use crate::error::{in_range, ParamError};
use crate::limiter::{refunded, After, Limiter, Outcome, Overdrawn, Refunded, Update};
use crate::time::{div, div_ceil, gcd, rescale, Instant, Micros, Round};

/// Validated token-bucket parameters.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct TokenBucket {
    capacity: u64,
    grains_per_token: u64,
    grains_per_micro: u64,
}

/// The bucket's content at `updated_at`: `level / grains_per_token` tokens.
/// Below zero, a debt (`FORCE`), refilled at the same rate.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Tokens {
    level: i128,
    grains_per_token: u64,
    updated_at: Instant,
}

impl Tokens {
    /// `None` unless `1 <= grains_per_token <= 10^15` and the level is from
    /// `-4 * 10^9` (a debt: [`MAX_HELD`]) to `10^9` tokens.
    pub fn new(level: i128, grains_per_token: u64, updated_at: Instant) -> Option<Tokens> {
        if !(1..=MAX_PERIOD_MICROS).contains(&grains_per_token) {
            return None;
        }
        let token = i128::from(grains_per_token);
        if level > i128::from(MAX_LIMIT) * token || level < -i128::from(MAX_HELD) * token {
            return None;
        }
        Some(Tokens {
            level,
            grains_per_token,
            updated_at,
        })
    }

    pub fn level(&self) -> i128 {
        self.level
    }

    pub fn grains_per_token(&self) -> u64 {
        self.grains_per_token
    }

    pub fn updated_at(&self) -> Instant {
        self.updated_at
    }
}

impl TokenBucket {
    /// `capacity` and `refill_count` 1 ..= 10^9, `refill_period_micros`
    /// 1 ..= 10^15.
    pub fn new(
        capacity: u64,
        refill_count: u64,
        refill_period_micros: u64,
    ) -> Result<TokenBucket, ParamError> {
        let capacity = in_range("capacity", capacity, 1, MAX_LIMIT)?;
        let refill_count = in_range("refill_count", refill_count, 1, MAX_LIMIT)?;
        let period = in_range("refill_period", refill_period_micros, 1, MAX_PERIOD_MICROS)?;
        // Both are at least 1, so their gcd is too.
        let g = gcd(refill_count, period).max(1);
        Ok(TokenBucket {
            capacity,
            grains_per_token: period / g,
            grains_per_micro: refill_count / g,
        })
    }

    fn full(&self) -> i128 {
        i128::from(self.capacity) * i128::from(self.grains_per_token)
    }

    /// Grains in the bucket at `now`. Negative in debt (`FORCE`), and when
    /// `updated_at` is later than `now` (a reservation, or a clock that went
    /// back) by more than the level: the refill that "has not happened yet"
    /// is owed, exactly as GCRA's TAT stays put when time goes back.
    fn level_at(&self, state: Option<&Tokens>, now: Instant) -> i128 {
        let full = self.full();
        let Some(s) = state else {
            return full;
        };
        let stored = if s.grains_per_token == self.grains_per_token {
            s.level
        } else {
            // Parameters changed: round toward less, never granting a grain
            // more (a debt grows). (level * new can pass 2^128 for a large
            // bucket: rescaled in parts, as the result, at most 4 * 10^9
            // tokens of `new` grains, is at most 4 * 10^24.)
            let magnitude = s.level.unsigned_abs();
            let (from, to) = (s.grains_per_token, self.grains_per_token);
            match s.level {
                l if l >= 0 => rescale(magnitude, from, to, Round::Down) as i128,
                _ => -(rescale(magnitude, from, to, Round::Up) as i128),
            }
        }
        .min(full);
        let rate = i128::from(self.grains_per_micro);
        // All terms are below 2^100: |level| <= 4 * 10^24, elapsed * rate < 2^94.
        if now >= s.updated_at {
            let refill = i128::from(now.as_micros() - s.updated_at.as_micros()) * rate;
            (stored + refill).min(full)
        } else {
            let owed = i128::from(s.updated_at.as_micros() - now.as_micros()) * rate;
            stored - owed
        }
    }

    /// The answer at `now` for a bucket left at `left` grains as of `at`
    /// (no earlier than `now`), and its update.
    #[inline(always)]
    fn recorded(&self, now: Instant, at: Instant, left: i128) -> Outcome<Tokens> {
        let stored = Tokens {
            level: left,
            grains_per_token: self.grains_per_token,
            updated_at: at,
        };
        let level = if at == now {
            left
        } else {
            self.level_at(Some(&stored), now)
        };
        let reset = self.time_for(self.full() - level);
        Outcome {
            decision: Decision {
                blocked: false,
                limit: self.capacity,
                remaining: self.remaining(level),
                retry_after: RetryAfter::Allowed,
                reset,
            },
            update: Some(Update {
                change: stored,
                expires_at: now.saturating_add(reset),
            }),
        }
    }

    /// The bucket at `level` grains (below `full`) as of `now`, stored as of
    /// `now` when the level is in the state's range. A deeper level (the
    /// refill owed before a reservation's instant, or a clock stepped back,
    /// once a faster rate counts it) is stored as of the later instant at
    /// which the same refill brings it within one microsecond's refill of
    /// full: the same level at `now` and after, so the same decisions, in a
    /// state that reads back. (One microsecond refills at most 10^9 tokens,
    /// within the `MAX_HELD` range.)
    fn owing(&self, now: Instant, level: i128) -> Tokens {
        let token = i128::from(self.grains_per_token);
        if level >= -i128::from(MAX_HELD) * token {
            return Tokens {
                level,
                grains_per_token: self.grains_per_token,
                updated_at: now,
            };
        }
        let rate = i128::from(self.grains_per_micro);
        // full - level > 0: at most full, the deepest stored debt and 2^64 µs
        // of owed refill at 10^9 grains each, below 2^100.
        let ahead = (self.full() - level) / rate;
        // The owed refill came from an instant at most that far ahead: a
        // stored one, a u64 of µs.
        let micros = u64::try_from(ahead).unwrap_or(u64::MAX);
        Tokens {
            level: level + i128::from(micros) * rate,
            grains_per_token: self.grains_per_token,
            updated_at: Instant::from_micros(now.as_micros().saturating_add(micros)),
        }
    }

    /// Time until `grains` more have dripped in, rounded up to the µs.
    fn time_for(&self, grains: i128) -> Micros {
        let grains = u128::try_from(grains).unwrap_or(0);
        Micros(div_ceil(grains, self.grains_per_micro))
    }

    fn remaining(&self, level: i128) -> u64 {
        let tokens = div(u128::try_from(level).unwrap_or(0), self.grains_per_token);
        u64::try_from(tokens).unwrap_or(u64::MAX).min(self.capacity)
    }
}

impl Limiter for TokenBucket {
    type State<'a> = Tokens;
    type Change = Tokens;
    type Refund = Tokens;

    const RESERVES: bool = true;

    fn limit(&self) -> u64 {
        self.capacity
    }

    /// The level at `now` less `quantity`, below zero if need be.
    fn force(
        &self,
        state: Option<&Tokens>,
        now: Instant,
        quantity: u64,
    ) -> Result<Outcome<Tokens>, Overdrawn> {
        let token = i128::from(self.grains_per_token);
        let left = self.level_at(state, now) - i128::from(quantity) * token;
        if self.full() - left > i128::from(MAX_HELD) * token {
            return Err(Overdrawn);
        }
        Ok(self.recorded(now, now, left))
    }

    /// The level at `at` less `quantity`, as of `at`.
    fn reserve(
        &self,
        state: Option<&Tokens>,
        now: Instant,
        at: Instant,
        quantity: u64,
    ) -> Option<Outcome<Tokens>> {
        let at = at.max(now);
        let left = self.level_at(state, at) - i128::from(quantity) * i128::from(self.grains_per_token);
        Some(self.recorded(now, at, left))
    }

    fn check(&self, state: Option<&Tokens>, now: Instant, quantity: u64) -> Outcome<Tokens> {
        let full = self.full();
        let level = self.level_at(state, now);
        let mut decision = Decision {
            blocked: false,
            limit: self.capacity,
            remaining: self.remaining(level),
            retry_after: RetryAfter::Allowed,
            reset: self.time_for(full - level),
        };
        if let Some(done) = Outcome::settled(decision, quantity) {
            return done;
        }
        let cost = i128::from(quantity) * i128::from(self.grains_per_token);
        if level < cost {
            decision.blocked = true;
            decision.retry_after = RetryAfter::After(self.time_for(cost - level));
            return Outcome::unchanged(decision);
        }
        self.recorded(now, now, level - cost)
    }

    /// The level at `now`, plus `quantity` tokens, capped at `capacity`:
    /// GCRA's `TAT = max(TAT - quantity * T, now)`. The level may be below
    /// zero (a debt, or the refill owed after the clock stepped back behind
    /// the last update, or before a reservation's instant).
    fn refund(&self, state: Option<&Tokens>, now: Instant, quantity: u64) -> Refunded<Tokens> {
        let full = self.full();
        let after = match state {
            Some(_) if quantity > 0 => {
                let level = self.level_at(state, now);
                // At most 10^24 + 2^64 * 10^15 grains: no overflow.
                let added = level + i128::from(quantity) * i128::from(self.grains_per_token);
                match added {
                    _ if level >= full => After::Same,
                    l if l >= full => After::Rested,
                    l => After::State(self.owing(now, l)),
                }
            }
            _ => After::Same,
        };
        refunded(self, state, now, after)
    }
}
