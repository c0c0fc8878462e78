//! The answer every algorithm gives: redis-cell's five fields, kept exact (in
//! microseconds) until the reply picks its unit.

use crate::time::{Micros, TimeUnit};

/// When a refused request could be retried.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Default)]
pub enum RetryAfter {
    /// The request was allowed: nothing to wait for.
    #[default]
    Allowed,
    /// Refused; the same request succeeds once this much time has passed,
    /// if nothing else happens in between.
    After(Micros),
    /// Refused, and no amount of waiting helps (`quantity > limit`).
    Never,
}

/// One decision of a limiter.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Default)]
pub struct Decision {
    /// `false`: allowed and consumed; `true`: refused, nothing consumed.
    pub blocked: bool,
    /// Unit requests allowed at once from a fully rested state.
    pub limit: u64,
    /// Unit requests that would be allowed right after this decision.
    pub remaining: u64,
    pub retry_after: RetryAfter,
    /// Time until the limiter is fully rested (`remaining == limit`).
    pub reset: Micros,
}

impl Decision {
    /// The five integers of the reply, times rounded UP to `unit`.
    pub fn to_reply(&self, unit: TimeUnit) -> [i64; 5] {
        let retry_after = match self.retry_after {
            RetryAfter::Allowed | RetryAfter::Never => -1,
            RetryAfter::After(d) => unit.ceil(d),
        };
        [
            i64::from(self.blocked),
            i64::try_from(self.limit).unwrap_or(i64::MAX),
            i64::try_from(self.remaining).unwrap_or(i64::MAX),
            retry_after,
            unit.ceil(self.reset),
        ]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reply_rounds_times_up() {
        let d = Decision {
            blocked: true,
            limit: 16,
            remaining: 0,
            retry_after: RetryAfter::After(Micros(1_000_001)),
            reset: Micros(31_000_000),
        };
        assert_eq!(d.to_reply(TimeUnit::Seconds), [1, 16, 0, 2, 31]);
        assert_eq!(d.to_reply(TimeUnit::Millis), [1, 16, 0, 1_001, 31_000]);
        let never = Decision {
            retry_after: RetryAfter::Never,
            ..d
        };
        assert_eq!(never.to_reply(TimeUnit::Seconds)[3], -1);
    }
}
