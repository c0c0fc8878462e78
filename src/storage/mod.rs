//! One codec per algorithm between its core state and a native Redis value.

mod fixed_window;
mod gcra;
pub mod shared;
mod sliding_counter;
mod sliding_log;
pub mod store;
mod token_bucket;

pub use fixed_window::FixedWindowCodec;
pub use gcra::GcraCodec;
pub use sliding_counter::SlidingCounterCodec;
pub use sliding_log::SlidingLogCodec;
pub use token_bucket::TokenBucketCodec;

use crate::error::CommandError;
use rl_core::Limiter;
use store::{Access, Store};

/// The state of `C`'s limiter as read.
pub type StateOf<'a, C> = <<C as Codec>::Limiter as Limiter>::State<'a>;
/// The change `C`'s limiter asks to store.
pub type ChangeOf<C> = <<C as Codec>::Limiter as Limiter>::Change;

/// How one algorithm's state lives in Redis.
pub trait Codec {
    type Limiter: Limiter;
    /// What to write, computed from the old state and the change while the
    /// stored bytes are still borrowed.
    type Plan;
    /// The algorithm's name in error messages.
    const ALGORITHM: &'static str;
    /// How its values are read and written.
    const ACCESS: Access = Access::Direct;

    /// Parse a stored string value. Stored bytes are untrusted input.
    fn decode(bytes: &[u8]) -> Result<StateOf<'_, Self>, &'static str>;

    fn plan(state: Option<&StateOf<'_, Self>>, change: &ChangeOf<Self>) -> Self::Plan;

    /// Entries this change adds to a log (for `INFO`); 0 but for the sliding log.
    fn entries_logged(_change: &ChangeOf<Self>) -> u64 {
        0
    }

    /// Apply the plan with its absolute expiry, and replicate the effect.
    fn write(store: &mut Store, plan: Self::Plan, expire_at_ms: u64) -> Result<(), CommandError>;
}

/// A codec that stores the whole state as one small value.
pub trait ValueCodec {
    type Value;
    type Limiter: for<'a> Limiter<State<'a> = Self::Value, Change = Self::Value>;
    const ALGORITHM: &'static str;
    const ACCESS: Access = Access::Direct;
    /// Whether new limiters start from equal values often enough to share
    /// one object (see [`shared::value`]): true for the window counters,
    /// whose first state depends only on the window.
    const SHARE_NEW: bool = false;

    fn decode(bytes: &[u8]) -> Result<Self::Value, &'static str>;
    fn encode(value: &Self::Value) -> Encoded;
}

impl<T: ValueCodec> Codec for T {
    type Limiter = T::Limiter;
    type Plan = Encoded;
    const ALGORITHM: &'static str = T::ALGORITHM;
    const ACCESS: Access = T::ACCESS;

    fn decode(bytes: &[u8]) -> Result<T::Value, &'static str> {
        <T as ValueCodec>::decode(bytes)
    }

    fn plan(_: Option<&T::Value>, change: &T::Value) -> Encoded {
        T::encode(change)
    }

    fn write(store: &mut Store, plan: Encoded, expire_at_ms: u64) -> Result<(), CommandError> {
        store.write(plan.as_slice(), expire_at_ms, T::SHARE_NEW)
    }
}

/// A small inline buffer for an encoded state (no allocation per call).
#[derive(Debug, PartialEq, Eq)]
pub struct Encoded {
    bytes: [u8; Encoded::CAPACITY],
    len: usize,
}

impl Encoded {
    pub const CAPACITY: usize = 64;

    pub fn new() -> Self {
        Encoded {
            bytes: [0; Encoded::CAPACITY],
            len: 0,
        }
    }

    pub fn push(&mut self, data: &[u8]) {
        let end = (self.len + data.len()).min(self.bytes.len());
        let n = end - self.len;
        self.bytes[self.len..end].copy_from_slice(&data[..n]);
        self.len = end;
    }

    /// Append the low `width` bytes of `v`, little-endian.
    pub fn push_le(&mut self, v: u128, width: usize) {
        self.push(&v.to_le_bytes()[..width]);
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

/// Bytes of a planned write: inline while they fit an [`Encoded`] (no
/// allocation for the common short write), on the heap beyond.
#[derive(Debug, PartialEq, Eq)]
pub enum Bytes {
    Inline(Encoded),
    Heap(Vec<u8>),
}

impl Bytes {
    pub fn with_capacity(len: usize) -> Bytes {
        if len <= Encoded::CAPACITY {
            Bytes::Inline(Encoded::new())
        } else {
            Bytes::Heap(Vec::with_capacity(len))
        }
    }

    pub fn push(&mut self, data: &[u8]) {
        match self {
            Bytes::Inline(e) if e.len + data.len() <= Encoded::CAPACITY => e.push(data),
            Bytes::Inline(e) => {
                let mut heap = Vec::with_capacity(e.len + data.len());
                heap.extend_from_slice(e.as_slice());
                heap.extend_from_slice(data);
                *self = Bytes::Heap(heap);
            }
            Bytes::Heap(v) => v.extend_from_slice(data),
        }
    }

    pub fn as_slice(&self) -> &[u8] {
        match self {
            Bytes::Inline(e) => e.as_slice(),
            Bytes::Heap(v) => v,
        }
    }
}

impl Default for Bytes {
    fn default() -> Self {
        Bytes::Inline(Encoded::new())
    }
}

impl From<&[u8]> for Bytes {
    fn from(data: &[u8]) -> Self {
        let mut bytes = Bytes::with_capacity(data.len());
        bytes.push(data);
        bytes
    }
}

/// Reads fixed-width little-endian fields from a binary value.
pub(crate) struct Fields<'a>(&'a [u8]);

impl<'a> Fields<'a> {
    /// The value after its one-byte `tag`, if it has that tag and exactly
    /// `len` bytes in all.
    pub(crate) fn tagged(bytes: &'a [u8], tag: u8, len: usize) -> Option<Fields<'a>> {
        match bytes {
            [first, rest @ ..] if *first == tag && bytes.len() == len => Some(Fields(rest)),
            _ => None,
        }
    }

    /// The next `width` (<= 16) bytes as an unsigned integer.
    pub(crate) fn take(&mut self, width: usize) -> u128 {
        let (head, rest) = self.0.split_at(width.min(self.0.len()));
        self.0 = rest;
        let mut raw = [0u8; 16];
        raw[..head.len()].copy_from_slice(head);
        u128::from_le_bytes(raw)
    }

    pub(crate) fn take_u64(&mut self, width: usize) -> u64 {
        u64::try_from(self.take(width.min(8))).unwrap_or(u64::MAX)
    }
}

/// "00", "01", ..., "99": two digits per division.
const DIGIT_PAIRS: [u8; 200] = {
    let mut pairs = [0u8; 200];
    let mut i = 0;
    while i < 100 {
        pairs[2 * i] = b'0' + (i / 10) as u8;
        pairs[2 * i + 1] = b'0' + (i % 10) as u8;
        i += 1;
    }
    pairs
};

/// Append the decimal digits of `v`. A value that fits 64 bits (every
/// value the module writes but a far GCRA fraction) is cut into three
/// 8-digit chunks written at fixed places, two digits per step: a TAT's 19
/// digits take about 100 instructions instead of 240 for a digit pair per
/// loop turn. Larger values divide in 128 bits down to 64 first.
pub(crate) fn push_decimal(out: &mut Encoded, v: u128) {
    let Ok(small) = u64::try_from(v) else {
        let mut digits = [0u8; 40];
        let mut i = digits.len();
        let mut big = v;
        while big > u128::from(u64::MAX) {
            i -= 1;
            digits[i] = b'0' + (big % 10) as u8;
            big /= 10;
        }
        // The rest fits 64 bits and is written first.
        push_decimal(out, big);
        out.push(&digits[i..]);
        return;
    };
    const CHUNK: u64 = 100_000_000;
    let mut digits = [b'0'; 24];
    let (high, low) = digits.split_at_mut(16);
    let (top, middle) = high.split_at_mut(8);
    push_eight(low, (small % CHUNK) as u32);
    push_eight(middle, (small / CHUNK % CHUNK) as u32);
    // At most 1,844: u64::MAX has 20 digits.
    push_eight(top, (small / CHUNK / CHUNK) as u32);
    // No leading zeros, but one digit for 0.
    let first = digits[..23].iter().position(|&d| d != b'0').unwrap_or(23);
    out.push(&digits[first..]);
}

/// Write `n` (< 10^8) as exactly eight digits, zero-padded.
fn push_eight(out: &mut [u8], n: u32) {
    let (high, low) = (n / 10_000, n % 10_000);
    for (slot, pair) in out
        .chunks_exact_mut(2)
        .zip([high / 100, high % 100, low / 100, low % 100])
    {
        let at = (pair % 100) as usize * 2;
        slot.copy_from_slice(&DIGIT_PAIRS[at..at + 2]);
    }
}

/// [`parse_decimal`] of a number written as the module and Redis write one:
/// no leading zero (the value `0` aside).
pub(crate) fn parse_canonical_decimal(bytes: &[u8]) -> Option<u128> {
    if bytes.len() > 1 && bytes[0] == b'0' {
        return None;
    }
    parse_decimal(bytes)
}

/// Parse a non-empty run of ASCII digits that fits in a u128.
pub(crate) fn parse_decimal(bytes: &[u8]) -> Option<u128> {
    if bytes.is_empty() || bytes.len() > 39 {
        return None;
    }
    // Any 19 digits fit a u64: those are summed in 64 bits (a 128-bit
    // multiplication costs several times more, and a TAT has 19 digits),
    // only the rest in 128 bits with overflow checks.
    let (head, tail) = bytes.split_at(bytes.len().min(19));
    let mut small = 0u64;
    for &b in head {
        let digit = b.wrapping_sub(b'0');
        if digit > 9 {
            return None;
        }
        small = small * 10 + u64::from(digit);
    }
    tail.iter().try_fold(u128::from(small), |acc, &b| {
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
    fn bytes_move_to_the_heap_when_they_outgrow_the_inline_buffer() {
        let mut b = Bytes::with_capacity(8);
        let mut expected = Vec::new();
        for i in 0..20u64 {
            b.push(&i.to_le_bytes());
            expected.extend_from_slice(&i.to_le_bytes());
            assert_eq!(b.as_slice(), &expected[..]);
            assert_eq!(matches!(b, Bytes::Inline(_)), expected.len() <= Encoded::CAPACITY);
        }
        assert!(matches!(Bytes::with_capacity(65), Bytes::Heap(_)));
        assert_eq!(Bytes::from(&b"abc"[..]).as_slice(), b"abc");
    }

    #[test]
    fn decimal_round_trip() {
        for v in [
            0u128,
            7,
            10,
            1_763_700_000_000_000_000,
            u128::from(u64::MAX),
            u128::from(u64::MAX) + 1,
            u128::MAX,
        ] {
            let mut e = Encoded::new();
            push_decimal(&mut e, v);
            assert_eq!(parse_decimal(e.as_slice()), Some(v));
        }
        // Every digit count, and both sides of every power of ten.
        let powers = (0..39).map(|k| 10u128.pow(k));
        let edges = powers.flat_map(|p| [p - 1, p, p + 1, p.saturating_mul(5).saturating_add(3)]);
        for v in (0..2_000u128)
            .chain(edges)
            .chain([u128::MAX, u128::from(u64::MAX)])
        {
            let mut e = Encoded::new();
            push_decimal(&mut e, v);
            assert_eq!(e.as_slice(), v.to_string().as_bytes(), "{v}");
            assert_eq!(parse_decimal(e.as_slice()), Some(v), "{v}");
        }
        assert_eq!(parse_decimal(b""), None);
        assert_eq!(parse_decimal(b"12a"), None);
        assert_eq!(parse_decimal(b"1234567890123456789012a"), None);
        assert_eq!(parse_decimal(b"12/3"), None);
        assert_eq!(parse_decimal(b"-1"), None);
        assert_eq!(parse_decimal(b"340282366920938463463374607431768211456"), None);
    }

    #[test]
    fn fields_read_tagged_little_endian_values() {
        let mut e = Encoded::new();
        e.push(b"X");
        e.push_le(0x0001_0203_0405_0607, 7);
        e.push_le(42, 4);
        let mut f = Fields::tagged(e.as_slice(), b'X', 12).unwrap();
        assert_eq!(f.take_u64(7), 0x0001_0203_0405_0607);
        assert_eq!(f.take_u64(4), 42);
        assert!(Fields::tagged(e.as_slice(), b'Y', 12).is_none());
        assert!(Fields::tagged(e.as_slice(), b'X', 13).is_none());
        assert!(Fields::tagged(b"", b'X', 0).is_none());
    }
}
