//! Token-bucket state as a 28-byte string: the tag `T`, updated_at (µs,
//! 8 bytes), grains per token (7 bytes), level in grains (12 bytes, two's
//! complement: below zero in debt), all little-endian. 28 bytes keeps the
//! value in Redis 7's 48-byte allocation class. States written before debts
//! existed have a level below 2^80, whose top bit is clear: they read as
//! they were.

use super::{Encoder, Fields, ValueCodec};
use crate::reply::Value;
use crate::store::Bytes;
use rl_core::{Instant, TokenBucket, Tokens};

pub struct TokenBucketCodec;

const TAG: u8 = b'T';
const LEN: usize = 28;

impl ValueCodec for TokenBucketCodec {
    type Value = Tokens;
    type Limiter = TokenBucket;
    const TAGS: &'static [u8] = &[TAG];

    fn decode(bytes: &[u8]) -> Result<Tokens, &'static str> {
        let mut f = Fields::tagged(bytes, TAG, LEN).ok_or("expected 28 bytes starting with 'T'")?;
        let updated_at = Instant::from_micros(f.take_u64(8));
        let grains_per_token = f.take_u64(7);
        let level = signed(f.take(12));
        Tokens::new(level, grains_per_token, updated_at).ok_or("token level or refill unit out of range")
    }

    /// Whole tokens (rounded down: below zero in debt) and the instant
    /// they were counted at.
    fn describe(tokens: &Tokens) -> Vec<(&'static str, Value)> {
        let per_token = i128::from(tokens.grains_per_token().max(1));
        let whole = tokens.level().div_euclid(per_token);
        vec![
            ("tokens", Value::Integer(i64::try_from(whole).unwrap_or(i64::MAX))),
            ("updated_us", Value::int(tokens.updated_at().as_micros())),
        ]
    }

    fn encode(tokens: &Tokens) -> Bytes {
        // Grains per token at most 10^15 < 2^56, the level's magnitude at
        // most 4 * 10^24 < 2^95: its low 96 bits say it all.
        Encoder::<LEN>::tagged(TAG)
            .put(u128::from(tokens.updated_at().as_micros()), 8)
            .put(u128::from(tokens.grains_per_token()), 7)
            .put(tokens.level() as u128, 12)
            .done()
    }
}

/// A 96-bit two's complement value, sign-extended.
fn signed(low: u128) -> i128 {
    const SIGN: u128 = 1 << 95;
    const HIGH: u128 = !((1 << 96) - 1);
    if low & SIGN == 0 {
        low as i128
    } else {
        (low | HIGH) as i128
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip() {
        let t = Tokens::new(
            123_456_789_012_345_678_901,
            1_000_000_000_000_000,
            Instant::from_micros(1_763_700_000_000_001),
        )
        .unwrap();
        let bytes = TokenBucketCodec::encode(&t);
        assert_eq!(bytes.as_slice().len(), 28);
        assert_eq!(bytes.as_slice()[0], b'T');
        assert_eq!(TokenBucketCodec::decode(bytes.as_slice()), Ok(t));
        // A debt: a level below zero, as deep as a limiter may go.
        for level in [
            -1,
            -123_456_789_012_345_678_901,
            -4_000_000_000 * 1_000_000_000_000_000,
        ] {
            let debt = Tokens::new(level, 1_000_000_000_000_000, Instant::from_micros(7)).unwrap();
            let bytes = TokenBucketCodec::encode(&debt);
            assert_eq!(TokenBucketCodec::decode(bytes.as_slice()), Ok(debt));
        }
        // Deeper than that: out of range.
        let mut deep = TokenBucketCodec::encode(&Tokens::new(-1, 1, Instant::from_micros(7)).unwrap())
            .as_slice()
            .to_vec();
        deep[16..28].copy_from_slice(&(-4_000_000_001i128 as u128).to_le_bytes()[..12]);
        assert_eq!(
            TokenBucketCodec::decode(&deep),
            Err("token level or refill unit out of range")
        );
    }

    #[test]
    fn wrong_shape_or_range_is_rejected() {
        assert!(TokenBucketCodec::decode(b"").is_err());
        assert!(TokenBucketCodec::decode(&[b'T'; 27]).is_err());
        assert!(TokenBucketCodec::decode(&[b'T'; 29]).is_err());
        let mut zero = [0u8; 28];
        zero[0] = b'T';
        assert_eq!(
            TokenBucketCodec::decode(&zero),
            Err("token level or refill unit out of range")
        );
        // A GCRA-style decimal of the same length is not a bucket.
        assert!(TokenBucketCodec::decode(b"1481508000000000000000000000").is_err());
    }
}
