//! Integer time: instants in microseconds since the Unix epoch, durations in
//! microseconds, and the two units a reply can be expressed in.
//!
//! All arithmetic is checked or saturating: a clock that jumps anywhere in the
//! `u64` range must never overflow.

/// A point in time: microseconds since the Unix epoch.
#[derive(Copy, Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Instant(u64);

impl Instant {
    pub const EPOCH: Instant = Instant(0);
    pub const MAX: Instant = Instant(u64::MAX);

    pub const fn from_micros(micros: u64) -> Self {
        Instant(micros)
    }

    pub const fn as_micros(self) -> u64 {
        self.0
    }

    /// `self + d`, saturating at [`Instant::MAX`].
    pub fn saturating_add(self, d: Micros) -> Instant {
        let sum = u128::from(self.0).saturating_add(d.0);
        Instant(u64::try_from(sum).unwrap_or(u64::MAX))
    }

    /// The duration from `earlier` to `self`, zero when `earlier` is later.
    pub fn saturating_since(self, earlier: Instant) -> Micros {
        Micros(u128::from(self.0.saturating_sub(earlier.0)))
    }

    /// This instant rounded up to a whole millisecond, as Redis expiries take it.
    pub fn ceil_millis(self) -> u64 {
        self.0.div_ceil(1000)
    }
}

/// A span of time in microseconds. Wide enough that `limit * period` fits.
#[derive(Copy, Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Micros(pub u128);

impl Micros {
    pub const ZERO: Micros = Micros(0);

    pub const fn get(self) -> u128 {
        self.0
    }
}

/// The unit of durations on the command line and in the reply.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, Default)]
pub enum TimeUnit {
    /// The default: whole seconds.
    #[default]
    Seconds,
    /// With the `MS` option: whole milliseconds.
    Millis,
}

impl TimeUnit {
    pub const fn micros_per_unit(self) -> u64 {
        match self {
            TimeUnit::Seconds => 1_000_000,
            TimeUnit::Millis => 1_000,
        }
    }

    /// A duration given in this unit, in microseconds (`None` on overflow).
    pub fn to_micros(self, amount: u64) -> Option<u64> {
        amount.checked_mul(self.micros_per_unit())
    }

    /// A duration in this unit, rounded UP, saturating at `i64::MAX`: a
    /// client that waits the reported time is never early.
    pub fn ceil(self, d: Micros) -> i64 {
        let units = div_ceil(d.0, self.micros_per_unit());
        i64::try_from(units).unwrap_or(i64::MAX)
    }
}

/// `n / d` for a divisor of at least 1. 128-bit division is a library call:
/// it is avoided when `n` fits in 64 bits, as it almost always does.
pub(crate) fn div(n: u128, d: u64) -> u128 {
    match u64::try_from(n) {
        Ok(n) => u128::from(n / d),
        Err(_) => n / u128::from(d),
    }
}

/// `n / d` rounded up, for a divisor of at least 1 (see [`div`]).
pub(crate) fn div_ceil(n: u128, d: u64) -> u128 {
    match u64::try_from(n) {
        Ok(n) => u128::from(n.div_ceil(d)),
        Err(_) => n.div_ceil(u128::from(d)),
    }
}

/// Which way [`rescale`] rounds an inexact result.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(crate) enum Round {
    Down,
    Up,
}

/// `n * to / from` (`from` at least 1), rounded as asked, computed so that no
/// product is larger than the result or than `from * to`: the whole multiples
/// of `from` and the remainder are scaled apart. Saturates at `u128::MAX`.
/// In 64-bit divisions whenever `n` fits (see [`div`]): a GCRA state read
/// in a limiter's own ticks is rescaled on every call.
pub(crate) fn rescale(n: u128, from: u64, to: u64, round: Round) -> u128 {
    let (whole, rest) = match u64::try_from(n) {
        Ok(n) => (u128::from(n / from), u128::from(n % from)),
        Err(_) => (n / u128::from(from), n % u128::from(from)),
    };
    // `rest < from`, so the product is below 2^128.
    let part = rest * u128::from(to);
    let part = match round {
        Round::Down => div(part, from),
        Round::Up => div_ceil(part, from),
    };
    whole.saturating_mul(u128::from(to)).saturating_add(part)
}

/// Greatest common divisor (Euclid); `gcd(0, n) == n`. In 64 bits: its
/// inputs are parameters (at most 10^15), and 128-bit remainders are slow
/// library calls.
pub(crate) const fn gcd(mut a: u64, mut b: u64) -> u64 {
    while b != 0 {
        let t = a % b;
        a = b;
        b = t;
    }
    a
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ceil_rounds_up_and_saturates() {
        assert_eq!(TimeUnit::Seconds.ceil(Micros(0)), 0);
        assert_eq!(TimeUnit::Seconds.ceil(Micros(1)), 1);
        assert_eq!(TimeUnit::Seconds.ceil(Micros(1_000_000)), 1);
        assert_eq!(TimeUnit::Seconds.ceil(Micros(1_000_001)), 2);
        assert_eq!(TimeUnit::Millis.ceil(Micros(1_001)), 2);
        assert_eq!(TimeUnit::Millis.ceil(Micros(u128::MAX)), i64::MAX);
    }

    #[test]
    fn instant_arithmetic_saturates() {
        assert_eq!(Instant::MAX.saturating_add(Micros(5)), Instant::MAX);
        assert_eq!(
            Instant::from_micros(3).saturating_since(Instant::from_micros(9)),
            Micros::ZERO
        );
        assert_eq!(Instant::from_micros(1_000_001).ceil_millis(), 1_001);
        assert_eq!(Instant::MAX.ceil_millis(), u64::MAX.div_ceil(1000));
    }

    #[test]
    fn division_on_both_sides_of_64_bits() {
        let big = u128::from(u64::MAX);
        for n in [0, 1, 7, 999, big - 1, big, big + 1, big * 3 + 2, u128::MAX] {
            for d in [1u64, 2, 3, 840, 1_000_000, u64::MAX] {
                assert_eq!(div(n, d), n / u128::from(d), "{n} / {d}");
                assert_eq!(div_ceil(n, d), n.div_ceil(u128::from(d)), "{n} / {d}");
            }
        }
    }

    #[test]
    fn rescale_is_exact_where_the_plain_product_overflows() {
        // Where n * to fits, it equals the plain formula.
        // Both sides of 64 bits, where the 64-bit path ends.
        let edge = u128::from(u64::MAX);
        for n in [
            0u128,
            1,
            2,
            839,
            840,
            841,
            10u128.pow(20),
            edge - 1,
            edge,
            edge + 1,
            3 * edge + 5,
        ] {
            for (from, to) in [
                (1u64, 1u64),
                (840, 3),
                (3, 840),
                (7, 5),
                (10u64.pow(15), 10u64.pow(15) - 1),
            ] {
                let (f, t) = (u128::from(from), u128::from(to));
                assert_eq!(rescale(n, from, to, Round::Down), n * t / f, "{n} {from} {to}");
                assert_eq!(
                    rescale(n, from, to, Round::Up),
                    (n * t).div_ceil(f),
                    "{n} {from} {to}"
                );
            }
        }
        // 10^9 tokens of 5 * 10^14 grains, to tokens of 10^15: n * to is
        // about 2^158, the result 10^24 - 2 * 10^15.
        let n = 999_999_999 * 5 * 10u128.pow(14);
        assert_eq!(
            rescale(n, 5 * 10u64.pow(14), 10u64.pow(15), Round::Down),
            999_999_999 * 10u128.pow(15)
        );
        assert_eq!(
            rescale(n + 1, 5 * 10u64.pow(14), 10u64.pow(15), Round::Down),
            999_999_999 * 10u128.pow(15) + 2
        );
        assert_eq!(rescale(n + 1, 3, 1, Round::Up), (n + 1).div_ceil(3));
        assert_eq!(rescale(u128::MAX, 1, 2, Round::Down), u128::MAX);
    }

    #[test]
    fn gcd_basics() {
        assert_eq!(gcd(12, 18), 6);
        assert_eq!(gcd(0, 7), 7);
        assert_eq!(gcd(7, 0), 7);
        assert_eq!(gcd(1_000_000, 3), 1);
    }
}
