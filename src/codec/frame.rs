//! The block header, once for every algorithm: a key under a block holds
//! `B`, the block's end (µs since the Unix epoch, 7 bytes little-endian),
//! then the algorithm's own state, unchanged (nothing, for a limiter that is
//! rested). A key that is not blocked holds the state alone, as before
//! blocks existed: a limiter's memory does not grow unless it is blocked.
//!
//! The codecs plan their writes on the state alone; [`Frame::wrap`] puts
//! the header in front of them while the block is in force, and drops it at
//! the first write after it has ended.

use crate::store::{Bytes, Fill, Patches, Write};
use rl_core::{Instant, MAX_WINDOW_START};

const TAG: u8 = b'B';
/// The header's length: the tag and 7 bytes of instant.
pub const HEADER: usize = 8;

/// A stored value: its block header, if any, and the state after it.
#[derive(Clone, Copy, Debug)]
pub struct Frame<'a> {
    /// The end of the key's block, in force or not.
    pub block: Option<Instant>,
    /// The algorithm's state (empty: none).
    pub state: &'a [u8],
}

impl<'a> Frame<'a> {
    /// An absent key: no block, no state.
    pub const EMPTY: Frame<'static> = Frame {
        block: None,
        state: &[],
    };

    /// Whether a stored value starts with a block header (ended or not).
    #[inline(always)]
    pub fn framed_value(bytes: &[u8]) -> bool {
        bytes.first() == Some(&TAG)
    }

    /// Split a stored value. A value that does not start with the header's
    /// tag is a state alone (no algorithm's state starts with it).
    #[inline]
    pub fn read(bytes: &'a [u8]) -> Result<Frame<'a>, &'static str> {
        match bytes {
            [TAG, ..] => {
                let (header, state) = bytes
                    .split_at_checked(HEADER)
                    .ok_or("expected 'B' and a 7-byte instant before the state")?;
                let mut until = [0u8; 8];
                until[..HEADER - 1].copy_from_slice(&header[1..]);
                Ok(Frame {
                    block: Some(Instant::from_micros(u64::from_le_bytes(until))),
                    state,
                })
            }
            _ => Ok(Frame {
                block: None,
                state: bytes,
            }),
        }
    }

    /// The write that stores the state `write` leaves (planned on the state
    /// alone), with the header while `block` (in force) lasts: the
    /// header's length added to a patch's offsets, its end to the expiry.
    /// A header whose block has ended goes: a patch becomes the whole
    /// patched state.
    #[inline]
    pub fn wrap(&self, write: &mut Write, block: Option<Instant>) {
        if block.is_some() || self.block.is_some() {
            let planned = std::mem::replace(write, Write::Delete);
            *write = self.framed(planned, block);
        }
    }

    /// [`Frame::wrap`] of a value with a header, or under a block.
    #[cold]
    fn framed(&self, write: Write, block: Option<Instant>) -> Write {
        match (block, self.block) {
            (Some(until), _) => {
                let header = header(until);
                let until_ms = until.ceil_millis();
                match write {
                    Write::Set {
                        value, expire_at_ms, ..
                    } => {
                        let mut framed = Bytes::with_capacity(HEADER + value.as_slice().len());
                        framed.push(&header);
                        framed.push(value.as_slice());
                        Write::Set {
                            value: framed,
                            expire_at_ms: expire_at_ms.max(until_ms),
                            share: false,
                        }
                    }
                    Write::Patch {
                        new_len,
                        patches,
                        compact,
                        expire_at_ms,
                    } if self.block.is_some() => Write::Patch {
                        new_len: new_len + HEADER,
                        patches: patches.shifted(HEADER),
                        compact,
                        expire_at_ms: expire_at_ms.max(until_ms),
                    },
                    // A patch on a value without a header (a block never
                    // starts on a write): the whole value.
                    Write::Patch {
                        new_len,
                        patches,
                        expire_at_ms,
                        ..
                    } => self.framed(
                        Write::Set {
                            value: patched(self.state, new_len, &patches),
                            expire_at_ms,
                            share: false,
                        },
                        block,
                    ),
                    // The limiter is rested; the block stays, alone.
                    Write::Delete => Write::Set {
                        value: Bytes::from(&header[..]),
                        expire_at_ms: until_ms,
                        share: false,
                    },
                }
            }
            (None, Some(_)) => match write {
                Write::Patch {
                    new_len,
                    patches,
                    expire_at_ms,
                    ..
                } => Write::Set {
                    value: patched(self.state, new_len, &patches),
                    expire_at_ms,
                    share: false,
                },
                other => other,
            },
            (None, None) => write,
        }
    }

    /// The write that blocks the key until `until`, its state unchanged,
    /// the key expiring at `expire_at_ms`: the header written in place of
    /// an old one, or put in front of the state.
    pub fn block(&self, until: Instant, expire_at_ms: u64) -> Write {
        let header = header(until);
        if self.block.is_some() {
            let mut patches = Patches::default();
            // One patch: it always fits.
            let _ = patches.push(0, Fill::bytes(header));
            return Write::Patch {
                new_len: HEADER + self.state.len(),
                patches,
                compact: false,
                expire_at_ms,
            };
        }
        let mut value = Bytes::with_capacity(HEADER + self.state.len());
        value.push(&header);
        value.push(self.state);
        Write::Set {
            value,
            expire_at_ms,
            share: false,
        }
    }
}

/// The header of a block that ends at `until` (past the last instant 7
/// bytes hold, about the year 4253: that one).
fn header(until: Instant) -> [u8; HEADER] {
    let micros = until.as_micros().min(MAX_WINDOW_START).to_le_bytes();
    let mut header = [TAG; HEADER];
    header[1..].copy_from_slice(&micros[..HEADER - 1]);
    header
}

/// `state` grown to `new_len` bytes (zero-filled) and patched.
fn patched(state: &[u8], new_len: usize, patches: &Patches) -> Bytes {
    let mut value = state.to_vec();
    value.resize(new_len.max(state.len()), 0);
    patches.apply(&mut value);
    Bytes::from(&value[..])
}

#[cfg(test)]
mod tests {
    use super::*;

    const T: u64 = 1_763_700_000_000_000;

    #[test]
    fn a_value_without_the_tag_is_a_state_alone() {
        let frame = Frame::read(b"G12345678").unwrap();
        assert_eq!((frame.block, frame.state), (None, &b"G12345678"[..]));
        let mut blocked = header(Instant::from_micros(T)).to_vec();
        let frame = Frame::read(&blocked).unwrap();
        assert_eq!(
            (frame.block, frame.state),
            (Some(Instant::from_micros(T)), &b""[..])
        );
        blocked.extend_from_slice(b"F01234567890");
        assert_eq!(Frame::read(&blocked).unwrap().state, b"F01234567890");
        assert!(Frame::read(b"B123").is_err());
    }

    /// [`Frame::wrap`] of `write`, as a new write.
    fn wrapped(frame: &Frame<'_>, mut write: Write, block: Option<Instant>) -> Write {
        frame.wrap(&mut write, block);
        write
    }

    fn set(value: &[u8], at: u64) -> Write {
        Write::Set {
            value: Bytes::from(value),
            expire_at_ms: at,
            share: true,
        }
    }

    #[test]
    fn the_header_stays_while_the_block_lasts_and_goes_after() {
        let until = Instant::from_micros(T + 1_000_500);
        let mut stored = header(until).to_vec();
        stored.extend_from_slice(b"abc");
        let frame = Frame::read(&stored).unwrap();
        // In force: in front of a new value, the later expiry kept.
        let Write::Set {
            value,
            expire_at_ms,
            share,
        } = wrapped(&frame, set(b"xyz", 5), Some(until))
        else {
            panic!("a set");
        };
        assert_eq!(&value.as_slice()[HEADER..], b"xyz");
        assert_eq!((expire_at_ms, share), (until.ceil_millis(), false));
        // A patch moves past the header.
        let mut patches = Patches::default();
        assert!(patches.push(1, Fill::bytes(*b"Q")));
        let patch = Write::Patch {
            new_len: 4,
            patches,
            compact: false,
            expire_at_ms: u64::MAX,
        };
        let mut value = stored.clone();
        wrapped(&frame, patch, Some(until)).apply_to(&mut value);
        assert_eq!(&value[HEADER..], b"aQc\0");
        assert_eq!(&value[..HEADER], &header(until));
        // Rested under the block: the header alone.
        let mut value = stored.clone();
        wrapped(&frame, Write::Delete, Some(until)).apply_to(&mut value);
        assert_eq!(value, header(until));
        // Ended: the header goes, a patch becomes the patched state.
        let mut patches = Patches::default();
        assert!(patches.push(0, Fill::bytes(*b"Z")));
        let Write::Set { value, .. } = wrapped(
            &frame,
            Write::Patch {
                new_len: 3,
                patches,
                compact: false,
                expire_at_ms: 9,
            },
            None,
        ) else {
            panic!("a set");
        };
        assert_eq!(value.as_slice(), b"Zbc");
        assert_eq!(wrapped(&frame, Write::Delete, None), Write::Delete);
        // No header, no block: as planned.
        let plain = Frame::read(b"abc").unwrap();
        assert_eq!(wrapped(&plain, set(b"xyz", 5), None), set(b"xyz", 5));
    }

    #[test]
    fn a_block_goes_in_front_of_the_state_or_over_the_old_header() {
        let until = Instant::from_micros(T);
        let plain = Frame::read(b"F01234567890").unwrap();
        let mut value = b"F01234567890".to_vec();
        plain.block(until, 7).apply_to(&mut value);
        assert_eq!(Frame::read(&value).unwrap().block, Some(until));
        assert_eq!(Frame::read(&value).unwrap().state, b"F01234567890");
        let stale = value.clone();
        let later = Instant::from_micros(T + 5);
        let write = Frame::read(&stale).unwrap().block(later, 8);
        assert!(matches!(write, Write::Patch { new_len: 20, .. }));
        write.apply_to(&mut value);
        assert_eq!(Frame::read(&value).unwrap().block, Some(later));
        assert_eq!(Frame::read(&value).unwrap().state, b"F01234567890");
    }
}
