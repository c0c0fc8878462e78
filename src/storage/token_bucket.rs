//! Token-bucket state as a 28-byte string: updated_at (µs, u64 LE), grains
//! per token (u64 LE), level in grains (96-bit LE). 28 bytes is the largest
//! value that still fits Redis 7's smallest string allocation class for
//! this size (88 bytes per limiter in `MEMORY USAGE`).

use super::{Codec, Encoded};
use rl_core::{Instant, Tokens};

pub struct TokenBucketCodec;

const LEN: usize = 28;

impl Codec for TokenBucketCodec {
    type State = Tokens;
    const ALGORITHM: &'static str = "RL.TOKEN_BUCKET";

    fn decode(bytes: &[u8]) -> Result<Tokens, &'static str> {
        let bytes: &[u8; LEN] = bytes.try_into().map_err(|_| "expected 28 bytes")?;
        let mut u64_at = [0u8; 8];
        u64_at.copy_from_slice(&bytes[0..8]);
        let updated_at = Instant::from_micros(u64::from_le_bytes(u64_at));
        u64_at.copy_from_slice(&bytes[8..16]);
        let grains_per_token = u64::from_le_bytes(u64_at);
        let mut level = [0u8; 16];
        level[..12].copy_from_slice(&bytes[16..28]);
        let level = u128::from_le_bytes(level);
        Tokens::new(level, grains_per_token, updated_at).ok_or("token level or refill unit out of range")
    }

    fn encode(tokens: &Tokens) -> Encoded {
        let mut out = Encoded::new();
        out.push(&tokens.updated_at().as_micros().to_le_bytes());
        out.push(&tokens.grains_per_token().to_le_bytes());
        // The level is at most 10^9 * 10^15 < 2^96.
        out.push(&tokens.level().to_le_bytes()[..12]);
        out
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
        assert_eq!(TokenBucketCodec::decode(bytes.as_slice()), Ok(t));
    }

    #[test]
    fn wrong_length_or_range_is_rejected() {
        assert!(TokenBucketCodec::decode(b"").is_err());
        assert!(TokenBucketCodec::decode(&[0u8; 27]).is_err());
        assert!(TokenBucketCodec::decode(&[0u8; 29]).is_err());
        // grains_per_token 0.
        assert!(TokenBucketCodec::decode(&[0u8; 28]).is_err());
        // A GCRA-style decimal of the same length is not a bucket.
        assert!(TokenBucketCodec::decode(b"1481508000000000000000000000").is_err());
    }
}
