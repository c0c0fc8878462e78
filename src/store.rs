//! What a command may do to a key, independent of the server: read its
//! content, then at most one [`Write`]. The server's keys (`server::key`)
//! and the unit tests' in-memory keys implement [`Key`]; the pipelines are
//! written against it.
//!
//! A write cannot fail: every error (arguments, a corrupt state, another
//! type) is found while reading and deciding, before the first write of a
//! command, so no error reply can follow a partial write.

/// What a key holds, as far as the limiters care.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Content<'k> {
    Empty,
    String(&'k [u8]),
    /// Another type (a list, a hash, ...).
    Other,
}

/// One key of the running command.
pub trait Key {
    /// The key's name, for error messages.
    fn name(&self) -> &[u8];

    /// The key's content, borrowed until the next call on the key.
    fn read(&mut self) -> Content<'_>;

    /// Apply `write` and replicate its effect (see [`Write`]).
    fn write(&mut self, write: &Write);

    /// Milliseconds until the key expires, as `PTTL` answers them (-1: no
    /// expiry; read for a key that holds something).
    fn pttl(&mut self) -> i64;
}

/// The keys of the running command, by their position in its arguments.
pub trait Keyspace {
    type Key<'s>: Key
    where
        Self: 's;

    /// The key named by argument `arg` (`args[arg]`); several may be open at
    /// once.
    fn open(&self, arg: usize) -> Result<Self::Key<'_>, crate::error::CommandError>;
}

/// A change to one key, decided before anything is written. Each variant
/// says what the key holds afterwards and what replicas and the AOF receive:
/// the effect, never the command.
#[derive(Debug, PartialEq, Eq)]
pub enum Write {
    /// The value becomes `value`, expiring at `expire_at_ms` (absolute Unix
    /// milliseconds). Replicated as `SET key value PXAT ms`. With `share`,
    /// the value object may be one that other new keys hold too (see the
    /// server's kept values).
    Set {
        value: Bytes,
        expire_at_ms: u64,
        share: bool,
    },
    /// The string value grows to `new_len` bytes (zero-filled) if shorter,
    /// the `patches` overwrite it in place, and it expires at
    /// `expire_at_ms`; with `compact` it is then reallocated at its exact
    /// size. Replicated as `SET .. PXAT` of the whole value when it is at
    /// most [`WHOLE_VALUE_MAX`] bytes, else as one `SETRANGE` per patch and
    /// a `PEXPIREAT` (see [`Write::replicated_whole`]).
    Patch {
        new_len: usize,
        patches: Patches,
        compact: bool,
        expire_at_ms: u64,
    },
    /// The key is removed (nothing in it matters any more). Replicated as
    /// `DEL key`.
    Delete,
}

/// The largest value a [`Write::Patch`] replicates whole, as one `SET ..
/// PXAT`, rather than as its patches. Up to this size the `SET` is never
/// longer on the replication stream than the `MULTI`, `SETRANGE`,
/// `PEXPIREAT`, `EXEC` it replaces (those add about 50 bytes plus the key
/// name again), and it is one replicated command instead of a transaction.
pub const WHOLE_VALUE_MAX: usize = 64;

impl Write {
    /// Apply the write to `value`, as the server does to the key's string
    /// (a deleted key is left empty).
    #[cfg(test)]
    pub fn apply_to(&self, value: &mut Vec<u8>) {
        match self {
            Write::Set { value: v, .. } => *value = v.as_slice().to_vec(),
            Write::Patch { new_len, patches, .. } => {
                value.resize((*new_len).max(value.len()), 0);
                patches.apply(value);
            }
            Write::Delete => value.clear(),
        }
    }

    /// Whether a patched value of `len` bytes is replicated whole.
    pub fn replicated_whole(len: usize) -> bool {
        len <= WHOLE_VALUE_MAX
    }
}

/// Bytes of a write: inline while they fit (no allocation for the common
/// short write), on the heap beyond. Growing never truncates.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Bytes {
    Inline { bytes: [u8; Bytes::INLINE], len: u8 },
    Heap(Vec<u8>),
}

impl Bytes {
    /// The most bytes kept inline.
    pub const INLINE: usize = 64;

    pub const fn new() -> Bytes {
        Bytes::Inline {
            bytes: [0; Bytes::INLINE],
            len: 0,
        }
    }

    /// A fixed-size state. A state larger than the inline buffer does not
    /// compile.
    pub fn from_array<const N: usize>(array: [u8; N]) -> Bytes {
        const { assert!(N <= Bytes::INLINE, "a fixed-size state must fit inline") };
        let mut bytes = [0; Bytes::INLINE];
        bytes[..N].copy_from_slice(&array);
        Bytes::Inline { bytes, len: N as u8 }
    }

    /// Room for `len` bytes: inline when they fit.
    pub fn with_capacity(len: usize) -> Bytes {
        if len <= Bytes::INLINE {
            Bytes::new()
        } else {
            Bytes::Heap(Vec::with_capacity(len))
        }
    }

    pub fn push(&mut self, data: &[u8]) {
        match self {
            Bytes::Inline { bytes, len } => {
                let at = usize::from(*len);
                match bytes.get_mut(at..at + data.len()) {
                    Some(target) => {
                        target.copy_from_slice(data);
                        // At most INLINE (64): fits a u8.
                        *len = (at + data.len()) as u8;
                    }
                    None => {
                        let mut heap = Vec::with_capacity(at + data.len());
                        heap.extend_from_slice(&bytes[..at]);
                        heap.extend_from_slice(data);
                        *self = Bytes::Heap(heap);
                    }
                }
            }
            Bytes::Heap(v) => v.extend_from_slice(data),
        }
    }

    pub fn as_slice(&self) -> &[u8] {
        match self {
            Bytes::Inline { bytes, len } => &bytes[..usize::from(*len)],
            Bytes::Heap(v) => v,
        }
    }
}

impl Default for Bytes {
    fn default() -> Self {
        Bytes::new()
    }
}

impl From<&[u8]> for Bytes {
    fn from(data: &[u8]) -> Self {
        let mut bytes = Bytes::with_capacity(data.len());
        bytes.push(data);
        bytes
    }
}

/// What one range of a [`Write::Patch`] holds: `count` copies of an 8-byte
/// word (log entries), or a few bytes (a header, a record).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fill {
    Words { word: [u8; 8], count: usize },
    Bytes { bytes: [u8; Fill::SHORT], len: u8 },
}

impl Fill {
    /// The most bytes of a [`Fill::Bytes`].
    pub const SHORT: usize = 24;

    /// `data`, which must be at most [`Fill::SHORT`] bytes: a longer one does
    /// not compile.
    pub fn bytes<const N: usize>(data: [u8; N]) -> Fill {
        const { assert!(N <= Fill::SHORT, "a short fill holds at most 24 bytes") };
        let mut bytes = [0; Fill::SHORT];
        bytes[..N].copy_from_slice(&data);
        Fill::Bytes { bytes, len: N as u8 }
    }

    /// Its length in bytes (`None` past `usize`).
    pub fn len(&self) -> Option<usize> {
        match self {
            Fill::Words { count, .. } => count.checked_mul(8),
            Fill::Bytes { len, .. } => Some(usize::from(*len)),
        }
    }

    /// Write it over `target`, which is exactly [`Fill::len`] bytes.
    pub fn write_to(&self, target: &mut [u8]) {
        match self {
            Fill::Words { word, .. } => {
                for slot in target.chunks_exact_mut(8) {
                    slot.copy_from_slice(word);
                }
            }
            Fill::Bytes { bytes, len } => {
                if let Some(source) = bytes.get(..usize::from(*len)) {
                    target.copy_from_slice(source);
                }
            }
        }
    }
}

/// The ranges of a [`Write::Patch`]: at most [`Patches::MAX`], each an
/// offset and a [`Fill`], applied in order.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Patches {
    items: [(usize, Option<Fill>); Patches::MAX],
    len: usize,
}

impl Patches {
    pub const MAX: usize = 3;

    /// Add a range; `false` when there are [`Patches::MAX`] already. A
    /// plan is never written in part: its codec writes the whole value
    /// instead.
    #[must_use]
    pub fn push(&mut self, offset: usize, fill: Fill) -> bool {
        match self.items.get_mut(self.len) {
            Some(item) => {
                *item = (offset, Some(fill));
                self.len += 1;
                true
            }
            None => false,
        }
    }

    pub fn iter(&self) -> impl Iterator<Item = (usize, &Fill)> + Clone {
        self.items[..self.len]
            .iter()
            .filter_map(|(offset, fill)| fill.as_ref().map(|f| (*offset, f)))
    }

    /// The same ranges, `by` bytes further into the value.
    pub fn shifted(mut self, by: usize) -> Patches {
        for (offset, _) in self.items.iter_mut().take(self.len) {
            *offset = offset.saturating_add(by);
        }
        self
    }

    /// Whether every range lies within `len` bytes.
    pub fn fit(&self, len: usize) -> bool {
        self.iter().all(|(offset, fill)| {
            fill.len()
                .and_then(|n| offset.checked_add(n))
                .is_some_and(|end| end <= len)
        })
    }

    /// Apply every range to `value` (ranges outside it are skipped: `fit`
    /// was checked when the patch was planned).
    pub fn apply(&self, value: &mut [u8]) {
        for (offset, fill) in self.iter() {
            let end = fill.len().and_then(|n| offset.checked_add(n));
            if let Some(target) = end.and_then(|end| value.get_mut(offset..end)) {
                fill.write_to(target);
            }
        }
    }

    /// The byte ranges, as they lie in the patched value.
    pub fn ranges(&self) -> impl Iterator<Item = std::ops::Range<usize>> + '_ {
        self.iter()
            .filter_map(|(offset, fill)| Some(offset..offset.checked_add(fill.len()?)?))
    }
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
            assert_eq!(matches!(b, Bytes::Inline { .. }), expected.len() <= Bytes::INLINE);
        }
        assert!(matches!(Bytes::with_capacity(65), Bytes::Heap(_)));
        assert_eq!(Bytes::from(&b"abc"[..]).as_slice(), b"abc");
        assert_eq!(Bytes::from_array([1u8, 2, 3]).as_slice(), &[1, 2, 3]);
        assert_eq!(Bytes::from_array([7u8; 64]).as_slice(), &[7; 64][..]);
    }

    #[test]
    fn patches_know_whether_they_fit_and_apply() {
        let mut p = Patches::default();
        assert!(p.push(0, Fill::bytes(*b"ab")));
        assert!(p.push(
            4,
            Fill::Words {
                word: *b"12345678",
                count: 2
            }
        ));
        assert!(p.fit(20));
        assert!(!p.fit(19));
        let mut value = vec![b'.'; 20];
        p.apply(&mut value);
        assert_eq!(&value, b"ab..1234567812345678");
        assert_eq!(p.ranges().collect::<Vec<_>>(), vec![0..2, 4..20]);
        assert!(p.push(usize::MAX, Fill::bytes([1])));
        assert!(!p.fit(usize::MAX));
        assert!(!p.push(0, Fill::bytes([])), "a fourth range is refused");
        assert_eq!(p.iter().count(), 3);
        let huge = Fill::Words {
            word: [0; 8],
            count: usize::MAX,
        };
        assert_eq!(huge.len(), None);
    }
}
