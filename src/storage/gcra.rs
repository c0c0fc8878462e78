//! GCRA state as a string holding the TAT.
//!
//! The usual form is a plain decimal integer: the TAT in ticks of 1/840 µs
//! since the Unix epoch. 840 = 2^3·3·5·7 makes the TAT exact for any
//! `count` whose part not dividing the period is made of those factors (3,
//! 6, 7, 12, 15, 30, 60, ... per second or minute). Being an integer that fits
//! an i64, Redis can keep it in its compact integer encoding. Any other TAT is
//! stored exactly as the fraction `units/per_micro`.

use super::store::Access;
use super::{parse_canonical_decimal, push_decimal, Encoded, ValueCodec};
use rl_core::{Gcra, Tat};

pub struct GcraCodec;

/// Ticks per microsecond of the plain form.
const TICKS_PER_MICRO: u64 = 840;

impl ValueCodec for GcraCodec {
    type Value = Tat;
    type Limiter = Gcra;
    const ALGORITHM: &'static str = "RL.GCRA";
    // Through GET/SET so that Redis keeps the TAT integer-encoded: 56 bytes
    // per limiter instead of 88.
    const ACCESS: Access = Access::Command;

    fn decode(bytes: &[u8]) -> Result<Tat, &'static str> {
        const NOT_A_TAT: &str = "expected a decimal theoretical arrival time";
        let (units, per_micro) = match parse_canonical_decimal(bytes) {
            // The plain form, the common case: no search for a '/'.
            Some(units) => (units, TICKS_PER_MICRO),
            None => {
                let slash = bytes.iter().position(|&b| b == b'/').ok_or(NOT_A_TAT)?;
                let units = parse_canonical_decimal(&bytes[..slash]).ok_or(NOT_A_TAT)?;
                let per_micro = parse_canonical_decimal(&bytes[slash + 1..])
                    .and_then(|d| u64::try_from(d).ok())
                    .ok_or(NOT_A_TAT)?;
                (units, per_micro)
            }
        };
        Tat::new(units, per_micro).ok_or("theoretical arrival time out of range")
    }

    fn encode(tat: &Tat) -> Encoded {
        let mut out = Encoded::new();
        let per_micro = tat.per_micro();
        if TICKS_PER_MICRO % per_micro == 0 {
            let ticks = tat.units().checked_mul(u128::from(TICKS_PER_MICRO / per_micro));
            if let Some(ticks) = ticks.filter(|&t| t <= i64::MAX as u128) {
                push_decimal(&mut out, ticks);
                return out;
            }
        }
        push_decimal(&mut out, tat.units());
        out.push(b"/");
        push_decimal(&mut out, u128::from(per_micro));
        out
    }
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
    fn common_rates_are_plain_integers() {
        let now = 1_763_700_000_000_000u128;
        let (bytes, back) = round_trip(now * 3 + 1, 3);
        assert_eq!(bytes, ((now * 3 + 1) * 280).to_string().into_bytes());
        assert_eq!(back, Tat::new((now * 3 + 1) * 280, 840).unwrap());
        let (bytes, _) = round_trip(now, 1);
        assert_eq!(bytes, (now * 840).to_string().into_bytes());
    }

    #[test]
    fn other_rates_keep_the_exact_fraction() {
        let (bytes, back) = round_trip(17 * 1_763_700_000_000_000 + 5, 17);
        assert_eq!(bytes, b"29982900000000005/17".to_vec());
        assert_eq!(back, Tat::new(17 * 1_763_700_000_000_000 + 5, 17).unwrap());
    }

    #[test]
    fn a_tat_past_the_i64_range_keeps_the_fraction() {
        // A TAT 10^24 µs ahead (a long period, a large burst): allowed by
        // the model, stored exactly, read back as it was.
        let units = 1_763_700_000_000_000 + 10u128.pow(24);
        let (bytes, back) = round_trip(units, 1);
        assert_eq!(bytes, b"1000000001763700000000000/1".to_vec());
        assert_eq!(back, Tat::new(units, 1).unwrap());
        // The latest TAT a request can produce is accepted; one tick more is not.
        let last = u128::from(u64::MAX) + 10u128.pow(24);
        assert!(GcraCodec::decode(format!("{}/7", last * 7 + 6).as_bytes()).is_ok());
        assert!(GcraCodec::decode(format!("{}/7", last * 7 + 7).as_bytes()).is_err());
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
        ] {
            assert!(GcraCodec::decode(bad).is_err(), "{bad:?}");
        }
        // Zero itself is a number the codec writes (a rested limiter).
        assert_eq!(GcraCodec::decode(b"0"), Tat::new(0, 840).ok_or(""));
        assert_eq!(GcraCodec::decode(b"0/7"), Tat::new(0, 7).ok_or(""));
        // Beyond u64::MAX + 10^24 microseconds: no request makes that.
        assert!(GcraCodec::decode(b"99999999999999999999999999999").is_err());
    }
}
