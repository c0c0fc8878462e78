//! One codec per algorithm between its core state and a native Redis value.

mod gcra;
pub mod store;
mod token_bucket;

pub use gcra::GcraCodec;
pub use token_bucket::TokenBucketCodec;

use crate::error::CommandError;
use store::{Access, Store};

/// A small inline buffer for an encoded state (no allocation per call).
pub struct Encoded {
    bytes: [u8; 48],
    len: usize,
}

impl Encoded {
    pub fn new() -> Self {
        Encoded {
            bytes: [0; 48],
            len: 0,
        }
    }

    pub fn push(&mut self, data: &[u8]) {
        let end = (self.len + data.len()).min(self.bytes.len());
        let n = end - self.len;
        self.bytes[self.len..end].copy_from_slice(&data[..n]);
        self.len = end;
    }

    pub fn as_slice(&self) -> &[u8] {
        &self.bytes[..self.len]
    }
}

impl Default for Encoded {
    fn default() -> Self {
        Self::new()
    }
}

/// How one algorithm's state lives in Redis.
pub trait Codec {
    type State;
    /// The algorithm's name in error messages.
    const ALGORITHM: &'static str;
    /// How its values are read and written.
    const ACCESS: Access = Access::Direct;

    /// Parse a stored string value. Stored bytes are untrusted input.
    fn decode(bytes: &[u8]) -> Result<Self::State, &'static str>;

    /// Serialize a state as a string value.
    fn encode(state: &Self::State) -> Encoded;

    /// Write the new state with its absolute expiry, and replicate the effect.
    fn store(store: &mut Store, state: &Self::State, expire_at_ms: u64) -> Result<(), CommandError> {
        store.write(Self::encode(state).as_slice(), expire_at_ms)
    }
}

/// Append the decimal digits of `v`.
pub(crate) fn push_decimal(out: &mut Encoded, mut v: u128) {
    let mut digits = [0u8; 39];
    let mut i = digits.len();
    loop {
        i -= 1;
        digits[i] = b'0' + (v % 10) as u8;
        v /= 10;
        if v == 0 {
            break;
        }
    }
    out.push(&digits[i..]);
}

/// Parse a non-empty run of ASCII digits that fits in a u128.
pub(crate) fn parse_decimal(bytes: &[u8]) -> Option<u128> {
    if bytes.is_empty() || bytes.len() > 39 {
        return None;
    }
    bytes.iter().try_fold(0u128, |acc, &b| {
        if !b.is_ascii_digit() {
            return None;
        }
        acc.checked_mul(10)?.checked_add(u128::from(b - b'0'))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decimal_round_trip() {
        for v in [0u128, 7, 10, 1_763_700_000_000_000_000, u128::MAX] {
            let mut e = Encoded::new();
            push_decimal(&mut e, v);
            assert_eq!(parse_decimal(e.as_slice()), Some(v));
        }
        assert_eq!(parse_decimal(b""), None);
        assert_eq!(parse_decimal(b"12a"), None);
        assert_eq!(parse_decimal(b"-1"), None);
        assert_eq!(parse_decimal(b"340282366920938463463374607431768211456"), None);
    }
}
