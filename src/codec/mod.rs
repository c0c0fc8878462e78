//! One codec per algorithm, between its core state and the bytes of a Redis
//! string. Stored bytes are untrusted input: decoding checks every field.

pub mod concurrency;
mod fixed_window;
pub mod frame;
mod gcra;
mod sliding_counter;
mod sliding_log;
pub mod tagged_log;
mod token_bucket;

pub use fixed_window::FixedWindowCodec;
pub use gcra::GcraCodec;
pub use sliding_counter::SlidingCounterCodec;
pub use sliding_log::SlidingLogCodec;
pub use token_bucket::TokenBucketCodec;

use crate::reply::Value;
use crate::store::{Bytes, Write};
use rl_core::Limiter;

/// The state of `C`'s limiter as read.
pub type StateOf<'a, C> = <<C as Codec>::Limiter as Limiter>::State<'a>;
/// The change `C`'s limiter asks to store.
pub type ChangeOf<C> = <<C as Codec>::Limiter as Limiter>::Change;
/// What a refund of `C`'s limiter asks to store.
pub type RefundOf<C> = <<C as Codec>::Limiter as Limiter>::Refund;

/// How one algorithm's state lives in a Redis string.
pub trait Codec: 'static {
    type Limiter: Limiter;
    /// The first bytes this algorithm's states start with, and no other
    /// algorithm's do: they tell a key's algorithm apart.
    const TAGS: &'static [u8];
    /// Whether it logs units, which a call may tag (`TAG`).
    const LOGS: bool = false;

    /// Parse a stored value.
    fn decode(bytes: &[u8]) -> Result<StateOf<'_, Self>, &'static str>;

    /// The write that stores `change`, computed from the old state while the
    /// stored bytes are still borrowed.
    fn plan(state: Option<&StateOf<'_, Self>>, change: &ChangeOf<Self>, expire_at_ms: u64) -> Write;

    /// [`Codec::plan`] for a call that tags what it logs (`TAG`): only the
    /// sliding log keeps tags; the others write what they always do.
    #[inline(always)]
    fn plan_tagged(
        state: Option<&StateOf<'_, Self>>,
        change: &ChangeOf<Self>,
        expire_at_ms: u64,
        _tag: Option<&[u8]>,
    ) -> Write {
        Self::plan(state, change, expire_at_ms)
    }

    /// The write that stores what a refund changes in `state` (there is
    /// one: a refund changes nothing without a state).
    fn plan_refund(state: &StateOf<'_, Self>, refund: &RefundOf<Self>, expire_at_ms: u64) -> Write;

    /// The stored fields of `state`, named, for `RL.INSPECT`: instants in
    /// µs since the Unix epoch, counts in units.
    fn describe(state: &StateOf<'_, Self>) -> Vec<(&'static str, Value)>;

    /// Entries this change adds to a log (for `INFO`); 0 but for the sliding log.
    fn entries_logged(_change: &ChangeOf<Self>) -> u64 {
        0
    }

    /// Entries the log holds once `change` is stored; 0 but for the
    /// sliding log.
    fn entries_after(_state: Option<&StateOf<'_, Self>>, _change: &ChangeOf<Self>) -> u64 {
        0
    }
}

/// A codec that stores the whole state as one small value.
pub trait ValueCodec: 'static {
    type Value;
    /// See [`Codec::TAGS`].
    const TAGS: &'static [u8];
    type Limiter: for<'a> Limiter<State<'a> = Self::Value, Change = Self::Value, Refund = Self::Value>;
    /// Whether new limiters start from equal values often enough to share
    /// one object: true for the window counters, whose first state depends
    /// only on the window.
    const SHARE_NEW: bool = false;

    fn decode(bytes: &[u8]) -> Result<Self::Value, &'static str>;
    fn encode(value: &Self::Value) -> Bytes;
    /// See [`Codec::describe`].
    fn describe(value: &Self::Value) -> Vec<(&'static str, Value)>;
}

impl<T: ValueCodec> Codec for T {
    type Limiter = T::Limiter;
    const TAGS: &'static [u8] = T::TAGS;

    fn decode(bytes: &[u8]) -> Result<T::Value, &'static str> {
        <T as ValueCodec>::decode(bytes)
    }

    fn plan(_: Option<&T::Value>, change: &T::Value, expire_at_ms: u64) -> Write {
        Write::Set {
            value: T::encode(change),
            expire_at_ms,
            share: T::SHARE_NEW,
        }
    }

    fn describe(value: &T::Value) -> Vec<(&'static str, Value)> {
        <T as ValueCodec>::describe(value)
    }

    fn plan_refund(_: &T::Value, refunded: &T::Value, expire_at_ms: u64) -> Write {
        Write::Set {
            value: T::encode(refunded),
            expire_at_ms,
            share: false,
        }
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
        let (head, rest) = self.0.split_at(width.min(16).min(self.0.len()));
        self.0 = rest;
        let mut raw = [0u8; 16];
        raw[..head.len()].copy_from_slice(head);
        u128::from_le_bytes(raw)
    }

    pub(crate) fn take_u64(&mut self, width: usize) -> u64 {
        u64::try_from(self.take(width.min(8))).unwrap_or(u64::MAX)
    }
}

/// Writes fixed-width little-endian fields into a value of `N` bytes; the
/// widths are checked against `N` as they are written.
pub(crate) struct Encoder<const N: usize> {
    bytes: [u8; N],
    at: usize,
}

impl<const N: usize> Encoder<N> {
    pub(crate) fn tagged(tag: u8) -> Self {
        let mut bytes = [0; N];
        bytes[0] = tag;
        Encoder { bytes, at: 1 }
    }

    /// The low `width` bytes of `v`. Past the end of the value nothing is
    /// written, which the codecs' round-trip tests would show.
    pub(crate) fn put(mut self, v: u128, width: usize) -> Self {
        let le = v.to_le_bytes();
        let end = (self.at + width).min(N);
        let n = end.saturating_sub(self.at).min(16);
        if let (Some(target), Some(source)) = (self.bytes.get_mut(self.at..self.at + n), le.get(..n)) {
            target.copy_from_slice(source);
        }
        self.at += width;
        self
    }

    /// The value, once exactly `N` bytes were written.
    pub(crate) fn done(self) -> Bytes {
        debug_assert_eq!(self.at, N, "fields do not fill the value");
        Bytes::from_array(self.bytes)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fields_read_what_fill_writes() {
        let value = Encoder::<12>::tagged(b'X')
            .put(0x0001_0203_0405_0607, 7)
            .put(42, 4)
            .done();
        let mut f = Fields::tagged(value.as_slice(), b'X', 12).unwrap();
        assert_eq!(f.take_u64(7), 0x0001_0203_0405_0607);
        assert_eq!(f.take_u64(4), 42);
        assert!(Fields::tagged(value.as_slice(), b'Y', 12).is_none());
        assert!(Fields::tagged(value.as_slice(), b'X', 13).is_none());
        assert!(Fields::tagged(b"", b'X', 0).is_none());
    }
}
