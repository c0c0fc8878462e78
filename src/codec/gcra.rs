//! GCRA state as a string holding the theoretical arrival time (TAT), an
//! exact rational instant `units / per_micro` µs since the Unix epoch.
//!
//! - `G` and 8 bytes: the TAT in ticks of 1/840 µs, little-endian (9 bytes,
//!   the usual form). 840 = 2^3·3·5·7 makes the TAT exact for any `count`
//!   whose part not dividing the period is made of those factors (3, 6, 7,
//!   12, 15, 30, 60, ... per second or minute).
//! - `g`, `per_micro` (4 bytes) and `units` (14 bytes): any other TAT
//!   (19 bytes).
//!
//! States written by earlier releases through `SET` are read too, so an
//! upgrade under load resets no limiter: the TAT in 1/840 µs ticks as a
//! plain decimal integer, or the decimal fraction `units/per_micro`. They are
//! rewritten in the binary form at their next write.

use super::{Encoder, Fields, ValueCodec};
use crate::decimal;
use crate::reply::Value;
use crate::store::Bytes;
use rl_core::{Gcra, Tat};

pub struct GcraCodec;

/// Ticks per microsecond of the usual form.
const TICKS_PER_MICRO: u64 = 840;
const TICKS: u8 = b'G';
const TICKS_LEN: usize = 9;
const FRACTION: u8 = b'g';
const FRACTION_LEN: usize = 19;
const OUT_OF_RANGE: &str = "theoretical arrival time out of range";

impl ValueCodec for GcraCodec {
    type Value = Tat;
    type Limiter = Gcra;
    const TAGS: &'static [u8] = &[TICKS, FRACTION];

    fn decode(bytes: &[u8]) -> Result<Tat, &'static str> {
        if let Some(mut f) = Fields::tagged(bytes, TICKS, TICKS_LEN) {
            let ticks = f.take_u64(8);
            return Tat::new(u128::from(ticks), TICKS_PER_MICRO).ok_or(OUT_OF_RANGE);
        }
        if let Some(mut f) = Fields::tagged(bytes, FRACTION, FRACTION_LEN) {
            let per_micro = f.take_u64(4);
            let units = f.take(14);
            return Tat::new(units, per_micro).ok_or(OUT_OF_RANGE);
        }
        decode_released(bytes)
    }

    /// The TAT rounded up to a whole µs.
    fn describe(tat: &Tat) -> Vec<(&'static str, Value)> {
        let per_micro = u128::from(tat.per_micro().max(1));
        let micros = tat.units().div_ceil(per_micro);
        vec![("tat_us", Value::int(u64::try_from(micros).unwrap_or(u64::MAX)))]
    }

    fn encode(tat: &Tat) -> Bytes {
        let per_micro = tat.per_micro();
        if TICKS_PER_MICRO.is_multiple_of(per_micro) {
            let ticks = tat.units().checked_mul(u128::from(TICKS_PER_MICRO / per_micro));
            if let Some(ticks) = ticks.and_then(|t| u64::try_from(t).ok()) {
                return Encoder::<TICKS_LEN>::tagged(TICKS)
                    .put(u128::from(ticks), 8)
                    .done();
            }
        }
        // per_micro is at most 10^9 < 2^32, units below 2^110 (Tat::new).
        Encoder::<FRACTION_LEN>::tagged(FRACTION)
            .put(u128::from(per_micro), 4)
            .put(tat.units(), 14)
            .done()
    }
}

/// A state in the decimal forms of earlier releases: ticks of 1/840 µs, or
/// `units/per_micro`, each without sign or leading zero.
fn decode_released(bytes: &[u8]) -> Result<Tat, &'static str> {
    const NOT_A_TAT: &str = "expected a theoretical arrival time";
    let (units, per_micro) = match decimal::parse_canonical(bytes) {
        Some(ticks) => (ticks, TICKS_PER_MICRO),
        None => {
            let slash = bytes.iter().position(|&b| b == b'/').ok_or(NOT_A_TAT)?;
            let units = decimal::parse_canonical(&bytes[..slash]).ok_or(NOT_A_TAT)?;
            let per_micro = decimal::parse_canonical(&bytes[slash + 1..])
                .and_then(|d| u64::try_from(d).ok())
                .ok_or(NOT_A_TAT)?;
            (units, per_micro)
        }
    };
    Tat::new(units, per_micro).ok_or(OUT_OF_RANGE)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn round_trip(units: u128, per_micro: u64) -> (Vec<u8>, Tat) {
        let tat = Tat::new(units, per_micro).unwrap();
        let bytes = GcraCodec::encode(&tat).as_slice().to_vec();
        (bytes.clone(), GcraCodec::decode(&bytes).unwrap())
    }

    #[test]
    fn common_rates_are_nine_bytes_of_ticks() {
        let now = 1_763_700_000_000_000u128;
        let (bytes, back) = round_trip(now * 3 + 1, 3);
        let ticks = ((now * 3 + 1) * 280) as u64;
        assert_eq!(bytes, [&[b'G'][..], &ticks.to_le_bytes()].concat());
        assert_eq!(back, Tat::new((now * 3 + 1) * 280, 840).unwrap());
        let (bytes, _) = round_trip(now, 1);
        assert_eq!(bytes.len(), 9);
    }

    #[test]
    fn other_rates_keep_the_exact_fraction() {
        let units = 17 * 1_763_700_000_000_000 + 5;
        let (bytes, back) = round_trip(units, 17);
        assert_eq!(bytes.len(), 19);
        assert_eq!((bytes[0], &bytes[1..5]), (b'g', &17u32.to_le_bytes()[..]));
        assert_eq!(back, Tat::new(units, 17).unwrap());
    }

    #[test]
    fn a_tat_past_the_u64_range_keeps_the_fraction() {
        // A TAT 10^24 µs ahead (a long period, a large burst): allowed by
        // the model, stored exactly, read back as it was.
        let units = 1_763_700_000_000_000 + 10u128.pow(24);
        let (bytes, back) = round_trip(units, 1);
        assert_eq!(bytes[0], b'g');
        assert_eq!(back, Tat::new(units, 1).unwrap());
        // The latest TAT a request can produce, with the largest denominator.
        let last = (u128::from(u64::MAX) + 10u128.pow(24)) * 1_000_000_000 + 999_999_999;
        let (_, back) = round_trip(last, 1_000_000_000);
        assert_eq!(back.units(), last);
    }

    #[test]
    fn states_of_earlier_releases_are_read() {
        // The plain decimal TAT in 1/840 µs ticks (Redis kept it as an
        // integer), and the decimal fraction.
        assert_eq!(
            GcraCodec::decode(b"1481508000000000000"),
            Ok(Tat::new(1_481_508_000_000_000_000, 840).unwrap())
        );
        assert_eq!(
            GcraCodec::decode(b"29982900000000005/17"),
            Ok(Tat::new(29_982_900_000_000_005, 17).unwrap())
        );
        assert_eq!(
            GcraCodec::decode(b"1000000001763700000000000/1"),
            Ok(Tat::new(1_000_000_001_763_700_000_000_000, 1).unwrap())
        );
        assert_eq!(GcraCodec::decode(b"0"), Tat::new(0, 840).ok_or(""));
        // Beyond u64::MAX + 10^24 microseconds: no request makes that.
        assert_eq!(
            GcraCodec::decode(b"99999999999999999999999999999"),
            Err(OUT_OF_RANGE)
        );
    }

    #[test]
    fn garbage_is_rejected() {
        for bad in [
            &b""[..],
            b"abc",
            b"-5",
            b"1/0",
            b"1/",
            b"/3",
            b"12 ",
            b"1/2/3",
            b"1.5",
            b"\x00",
            b"0123",
            b"05/3",
            b"5/03",
            b"00",
            b"G",
            b"G12345678x",
            b"g\x00\x00\x00\x00",
        ] {
            assert!(GcraCodec::decode(bad).is_err(), "{bad:?}");
        }
        // A denominator of 0, or past 10^9.
        let mut zero = vec![b'g'];
        zero.extend_from_slice(&[0; 18]);
        assert_eq!(GcraCodec::decode(&zero), Err(OUT_OF_RANGE));
        let mut big = vec![b'g'];
        big.extend_from_slice(&1_000_000_001u32.to_le_bytes());
        big.extend_from_slice(&[0; 14]);
        assert_eq!(GcraCodec::decode(&big), Err(OUT_OF_RANGE));
    }
}
