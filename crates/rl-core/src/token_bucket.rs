//! The token bucket: `capacity` tokens, full at first, refilled continuously
//! at `refill_count` per `refill_period`.
//!
//! Tokens are counted exactly in "grains": one token is `grains_per_token`
//! grains and every microsecond adds `grains_per_micro` grains, both reduced
//! by their gcd so that any rate is a whole number of grains per microsecond.
//! Its decisions equal GCRA's with `max_burst = capacity - 1` and the same
//! rate, for any sequence of requests and instants.

use crate::bounds::{MAX_LIMIT, MAX_PERIOD_MICROS};
use crate::decision::{Decision, RetryAfter};
use crate::error::{in_range, ParamError};
use crate::limiter::{refunded, After, Limiter, Outcome, Refunded, Update};
use crate::time::{div, div_ceil, gcd, rescale, Instant, Micros, Round};

/// Validated token-bucket parameters.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct TokenBucket {
    capacity: u64,
    grains_per_token: u64,
    grains_per_micro: u64,
}

/// The bucket's content at `updated_at`: `level / grains_per_token` tokens.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Tokens {
    level: u128,
    grains_per_token: u64,
    updated_at: Instant,
}

impl Tokens {
    /// `None` unless `1 <= grains_per_token <= 10^15` and the level is at
    /// most `10^9` tokens.
    pub fn new(level: u128, grains_per_token: u64, updated_at: Instant) -> Option<Tokens> {
        if !(1..=MAX_PERIOD_MICROS).contains(&grains_per_token) {
            return None;
        }
        if level > u128::from(MAX_LIMIT) * u128::from(grains_per_token) {
            return None;
        }
        Some(Tokens {
            level,
            grains_per_token,
            updated_at,
        })
    }

    pub fn level(&self) -> u128 {
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

    fn full(&self) -> u128 {
        u128::from(self.capacity) * u128::from(self.grains_per_token)
    }

    /// Grains in the bucket at `now`. Negative when the clock went back
    /// behind `updated_at` far enough: the refill that "has not happened
    /// yet" is owed, exactly as GCRA's TAT stays put when time goes back.
    fn level_at(&self, state: Option<&Tokens>, now: Instant) -> i128 {
        let full = self.full();
        let Some(s) = state else {
            return full as i128;
        };
        let stored = if s.grains_per_token == self.grains_per_token {
            s.level
        } else {
            // Parameters changed: round down, never granting a grain more.
            // (level * new can pass 2^128 for a large bucket: rescaled in
            // parts, as the result, at most 10^9 tokens of `new` grains, is
            // at most 10^24.)
            rescale(s.level, s.grains_per_token, self.grains_per_token, Round::Down)
        }
        .min(full);
        let rate = u128::from(self.grains_per_micro);
        // All terms are below 2^100: level <= 10^24, elapsed * rate < 2^94.
        if now >= s.updated_at {
            let refill = u128::from(now.as_micros() - s.updated_at.as_micros()) * rate;
            stored.saturating_add(refill).min(full) as i128
        } else {
            let owed = u128::from(s.updated_at.as_micros() - now.as_micros()) * rate;
            stored as i128 - owed as i128
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

    fn limit(&self) -> u64 {
        self.capacity
    }

    fn check(&self, state: Option<&Tokens>, now: Instant, quantity: u64) -> Outcome<Tokens> {
        let full = self.full() as i128;
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
        let left = level - cost;
        let reset = self.time_for(full - left);
        Outcome {
            decision: Decision {
                remaining: self.remaining(left),
                reset,
                ..decision
            },
            update: Some(Update {
                change: Tokens {
                    level: left as u128,
                    grains_per_token: self.grains_per_token,
                    updated_at: now,
                },
                expires_at: now.saturating_add(reset),
            }),
        }
    }

    /// The level after refill, plus `quantity` tokens, capped at
    /// `capacity`. After the clock stepped back behind the last update, the
    /// tokens are added at that update's instant (the refill "owed" until
    /// then stays owed).
    fn refund(&self, state: Option<&Tokens>, now: Instant, quantity: u64) -> Refunded<Tokens> {
        let full = self.full();
        let after = match state {
            Some(s) if quantity > 0 => {
                let at = now.max(s.updated_at);
                // Not negative at or after the last update.
                let level = u128::try_from(self.level_at(state, at)).unwrap_or(0);
                // At most 10^24 + 2^64 * 10^15 grains: no overflow.
                let added = level + u128::from(quantity) * u128::from(self.grains_per_token);
                match added.min(full) {
                    _ if level >= full => After::Same,
                    l if l == full && at == now => After::Rested,
                    l => After::State(Tokens {
                        level: l,
                        grains_per_token: self.grains_per_token,
                        updated_at: at,
                    }),
                }
            }
            _ => After::Same,
        };
        refunded(self, state, now, after)
    }
}
