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
}

/// The largest value a [`Write::Patch`] replicates whole, as one `SET ..
/// PXAT`, rather than as its patches. Up to this size the `SET` is never
/// longer on the replication stream than the `MULTI`, `SETRANGE`,
/// `PEXPIREAT`, `EXEC` it replaces (those add about 50 bytes plus the key
/// name again), and it is one replicated command instead of a transaction.
pub const WHOLE_VALUE_MAX: usize = 64;

impl Write {
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

/// The (offset, bytes) ranges of a [`Write::Patch`]: at most
/// [`Patches::MAX`], in the order they are applied.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Patches {
    items: [(usize, Bytes); Patches::MAX],
    len: usize,
}

impl Patches {
    pub const MAX: usize = 3;

    /// Add a range; `false` when there are [`Patches::MAX`] already. A
    /// plan is never written in part: its codec writes the whole value
    /// instead.
    #[must_use]
    pub fn push(&mut self, offset: usize, bytes: Bytes) -> bool {
        match self.items.get_mut(self.len) {
            Some(item) => {
                *item = (offset, bytes);
                self.len += 1;
                true
            }
            None => false,
        }
    }

    pub fn iter(&self) -> impl Iterator<Item = (usize, &[u8])> + Clone {
        self.items[..self.len]
            .iter()
            .map(|(offset, bytes)| (*offset, bytes.as_slice()))
    }

    /// Whether every range lies within `len` bytes.
    pub fn fit(&self, len: usize) -> bool {
        self.iter()
            .all(|(offset, bytes)| offset.checked_add(bytes.len()).is_some_and(|end| end <= len))
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
    fn patches_know_whether_they_fit() {
        let mut p = Patches::default();
        assert!(p.push(0, Bytes::from(&b"ab"[..])));
        assert!(p.push(4, Bytes::from(&b"cd"[..])));
        assert!(p.fit(6));
        assert!(!p.fit(5));
        assert_eq!(
            p.iter().collect::<Vec<_>>(),
            vec![(0, &b"ab"[..]), (4, &b"cd"[..])]
        );
        assert!(p.push(usize::MAX, Bytes::from(&b"x"[..])));
        assert!(!p.fit(usize::MAX));
        assert!(!p.push(0, Bytes::new()), "a fourth range is refused");
        assert_eq!(p.iter().count(), 3);
    }
}
