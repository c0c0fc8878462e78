//! The typed value of a reply.

use std::time::Duration;

use crate::Error;

/// What the server decided for one call: the reply's integers, typed.
///
/// Times are durations (every call is sent with `MS`, so they are exact to
/// the millisecond, rounded up by the server).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub struct Decision {
    /// The request was allowed (`blocked` 0): its units were taken (or,
    /// with `WAIT`, reserved; with `REFUND`, given back).
    pub allowed: bool,
    /// The most units allowed at once from rest.
    pub limit: u64,
    /// Units that would be allowed right after this call.
    pub remaining: u64,
    /// Refused: the time after which the same request would be allowed if
    /// nothing else happens; `None` when it never can (more units than the
    /// limit). Allowed: `None`, except a `WAIT` reservation, whose delay
    /// this is (wait that long, then do the work).
    pub retry_after: Option<Duration>,
    /// The time until the limiter is fully rested if nothing else happens
    /// (zero when it is).
    pub reset: Duration,
    /// Units granted: the units asked for when allowed, 0 when refused; with
    /// `AT_MOST`, the units the server granted (possibly fewer).
    pub granted: u64,
    /// The binding limit's position among the limits of
    /// [`all_of`](crate::RateLimits::all_of), from 1; 1 for a single limit.
    pub binding: usize,
    /// Allowed by the failure policy, not by the server: the server did
    /// not answer (see [`RateLimits::fail_open`](crate::RateLimits::fail_open)).
    /// `limit` is then the limiter's, `remaining` 0, `reset` zero, and
    /// `granted` the units asked.
    pub failed_open: bool,
    raw: [i64; 7],
    raw_len: u8,
}

/// A reply field that must not be negative.
fn count(v: i64, field: &str) -> Result<u64, Error> {
    u64::try_from(v).map_err(|_| Error::Reply(format!("{field} is negative: {v}")))
}

fn duration(v: i64, field: &str) -> Result<Duration, Error> {
    count(v, field).map(Duration::from_millis)
}

fn millis_i64(d: Duration) -> i64 {
    i64::try_from(d.as_millis()).unwrap_or(i64::MAX)
}

/// What a reply holds besides the five integers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Shape {
    /// A rate command: five integers, six with `AT_MOST`.
    Rate { at_most: bool },
    /// `RL.ALL`: six integers (the binding position), seven with `AT_MOST`.
    All { at_most: bool },
    /// `RL.CONCURRENCY`: six integers (the lease).
    Lease,
}

impl Decision {
    /// The reply's integers as the server sent them (five, six or seven;
    /// none for a decision of the failure policy). A refusal remembered
    /// locally (`local_refusals`) shows its times shortened.
    pub fn raw(&self) -> &[i64] {
        &self.raw[..self.raw_len as usize]
    }

    /// The decision of the failure policy: allowed without the server's
    /// word, marked `failed_open`.
    pub(crate) fn by_policy(limit: u64, asked: u64) -> Decision {
        Decision {
            allowed: true,
            limit,
            remaining: 0,
            retry_after: None,
            reset: Duration::ZERO,
            granted: asked,
            binding: 1,
            failed_open: true,
            raw: [0; 7],
            raw_len: 0,
        }
    }

    /// This refusal as it stands `gone` after it was answered: its
    /// `retry_after` and `reset` shortened, rounded up to the millisecond
    /// (never earlier than the server said), `retry_after` at least 1 ms.
    pub(crate) fn shortened(&self, gone: Duration) -> Decision {
        let left = |d: Duration| {
            let micros = d.saturating_sub(gone).as_micros();
            Duration::from_millis(u64::try_from(micros.div_ceil(1000)).unwrap_or(u64::MAX))
        };
        let mut d = *self;
        d.retry_after = self.retry_after.map(|r| left(r).max(Duration::from_millis(1)));
        d.reset = left(self.reset);
        if d.raw_len >= 5 {
            d.raw[3] = d.retry_after.map_or(-1, millis_i64);
            d.raw[4] = millis_i64(d.reset);
        }
        d
    }

    /// Parse a reply of `shape` to a request of `asked` units.
    pub(crate) fn parse(value: &redis::Value, shape: Shape, asked: u64) -> Result<(Decision, i64), Error> {
        let ints: Vec<i64> = redis::from_redis_value(value)
            .map_err(|_| Error::Reply(format!("not an array of integers: {value:?}")))?;
        let expected = match shape {
            Shape::Rate { at_most: false } => 5,
            Shape::Rate { at_most: true } | Shape::All { at_most: false } | Shape::Lease => 6,
            Shape::All { at_most: true } => 7,
        };
        if ints.len() != expected {
            return Err(Error::Reply(format!(
                "expected {expected} integers, got {ints:?}"
            )));
        }
        let allowed = match ints[0] {
            0 => true,
            1 => false,
            v => return Err(Error::Reply(format!("blocked is neither 0 nor 1: {v}"))),
        };
        let retry_after = match ints[3] {
            -1 => None,
            v => Some(duration(v, "retry_after")?),
        };
        let (binding, granted, extra) = match shape {
            Shape::Rate { at_most } => {
                let granted = if at_most {
                    count(ints[5], "granted")?
                } else if allowed {
                    asked
                } else {
                    0
                };
                (1, granted, 0)
            }
            Shape::All { at_most } => {
                let position = usize::try_from(ints[5])
                    .ok()
                    .filter(|p| *p >= 1)
                    .ok_or_else(|| Error::Reply(format!("bad binding position: {}", ints[5])))?;
                let granted = if at_most {
                    count(ints[6], "granted")?
                } else if allowed {
                    asked
                } else {
                    0
                };
                (position, granted, 0)
            }
            Shape::Lease => (1, if allowed { asked } else { 0 }, ints[5]),
        };
        let mut raw = [0; 7];
        raw[..ints.len()].copy_from_slice(&ints);
        Ok((
            Decision {
                allowed,
                limit: count(ints[1], "limit")?,
                remaining: count(ints[2], "remaining")?,
                retry_after,
                reset: duration(ints[4], "reset")?,
                granted,
                binding,
                failed_open: false,
                raw,
                raw_len: ints.len() as u8,
            },
            extra,
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use redis::Value;

    fn value(ints: &[i64]) -> Value {
        Value::Array(ints.iter().map(|&i| Value::Int(i)).collect())
    }

    #[test]
    fn allowed_and_refused() {
        let (d, _) =
            Decision::parse(&value(&[0, 10, 9, -1, 100]), Shape::Rate { at_most: false }, 1).unwrap();
        assert!(d.allowed);
        assert_eq!(
            (d.limit, d.remaining, d.retry_after, d.reset),
            (10, 9, None, Duration::from_millis(100))
        );
        assert_eq!((d.granted, d.binding), (1, 1));
        assert_eq!(d.raw(), [0, 10, 9, -1, 100]);
        let (d, _) =
            Decision::parse(&value(&[1, 10, 0, 250, 1000]), Shape::Rate { at_most: false }, 3).unwrap();
        assert!(!d.allowed);
        assert_eq!((d.retry_after, d.granted), (Some(Duration::from_millis(250)), 0));
    }

    #[test]
    fn at_most_all_and_leases() {
        let (d, _) =
            Decision::parse(&value(&[0, 10, 0, -1, 100, 4]), Shape::Rate { at_most: true }, 9).unwrap();
        assert_eq!(d.granted, 4);
        let (d, _) =
            Decision::parse(&value(&[1, 3, 0, 50, 60, 2, 0]), Shape::All { at_most: true }, 9).unwrap();
        assert_eq!((d.allowed, d.binding, d.granted), (false, 2, 0));
        let (d, lease) = Decision::parse(&value(&[0, 3, 2, -1, 60, 77]), Shape::Lease, 1).unwrap();
        assert_eq!((d.allowed, d.granted, lease), (true, 1, 77));
    }

    #[test]
    fn a_refusal_shortened_by_the_time_gone_by() {
        let (d, _) =
            Decision::parse(&value(&[1, 20, 0, 1500, 2000]), Shape::Rate { at_most: false }, 1).unwrap();
        let later = d.shortened(Duration::from_micros(400_300));
        assert_eq!(
            (later.retry_after, later.reset, later.raw()),
            (
                Some(Duration::from_millis(1100)),
                Duration::from_millis(1600),
                &[1, 20, 0, 1100, 1600][..]
            )
        );
        // Never below 1 ms while remembered; reset down to zero.
        let last = d.shortened(Duration::from_millis(2500));
        assert_eq!(
            (last.retry_after, last.reset, last.raw()),
            (
                Some(Duration::from_millis(1)),
                Duration::ZERO,
                &[1, 20, 0, 1, 0][..]
            )
        );
        assert_eq!(
            (last.allowed, last.limit, last.granted, last.failed_open),
            (false, 20, 0, false)
        );
    }

    #[test]
    fn malformed_replies() {
        let err = |v: Value, s| Decision::parse(&v, s, 1).unwrap_err().to_string();
        assert_eq!(
            err(value(&[0, 1, 2]), Shape::Rate { at_most: false }),
            "unexpected reply: expected 5 integers, got [0, 1, 2]"
        );
        assert_eq!(
            err(value(&[2, 1, 1, -1, 0]), Shape::Rate { at_most: false }),
            "unexpected reply: blocked is neither 0 nor 1: 2"
        );
        assert_eq!(
            err(value(&[0, 1, 1, -1, 0, 0]), Shape::All { at_most: false }),
            "unexpected reply: bad binding position: 0"
        );
        assert!(err(Value::Okay, Shape::Lease).starts_with("unexpected reply: not an array"));
    }
}
