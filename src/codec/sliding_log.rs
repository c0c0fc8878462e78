//! Sliding-log state as one string: the tag `L`, the ring slot of the oldest
//! entry (u32), then the logged instants (µs, 8 bytes each), little-endian.
//!
//! The log grows by appending until it holds `limit` entries, then wraps
//! around as a ring of exactly `limit` slots: 8 bytes per logged unit. An
//! allowed request of `q` units rewrites only the `8*q` bytes it changes (and
//! the 4-byte header when the ring turns), in place, and replicates exactly
//! those bytes: replication traffic is O(q) whatever the limit (see
//! [`Write::Patch`]).

use super::tagged_log;
use super::{ChangeOf, Codec, StateOf};
use crate::reply::Value;
use crate::store::{Bytes, Fill, Patches, Write};
use rl_core::sliding_log::ENTRY_BYTES;
use rl_core::{Append, LogView, Shed, SlidingLog};

pub struct SlidingLogCodec;

pub(super) const TAG: u8 = b'L';
pub(super) const HEADER: usize = 5;

fn header(oldest: usize) -> [u8; HEADER] {
    let oldest = u32::try_from(oldest).unwrap_or(u32::MAX).to_le_bytes();
    [TAG, oldest[0], oldest[1], oldest[2], oldest[3]]
}

/// Append `count` copies of the instant `at`.
fn push_entries(bytes: &mut Bytes, at: u64, count: usize) {
    let at = at.to_le_bytes();
    for _ in 0..count {
        bytes.push(&at);
    }
}

/// `count` copies of the instant `at`.
fn entries(at: u64, count: usize) -> Fill {
    Fill::Words {
        word: at.to_le_bytes(),
        count,
    }
}

fn slot(i: usize) -> usize {
    HEADER + i * ENTRY_BYTES
}

/// Every entry of `log` in order, then `count` more at `at`, keeping the
/// newest `keep`: a linear log (oldest in slot 0).
fn rebuild(log: Option<&LogView<'_>>, append: &Append, keep: usize) -> Bytes {
    let old = log.map_or(0, LogView::len);
    let count = usize::try_from(append.count).unwrap_or(usize::MAX);
    let total = old.saturating_add(count);
    let skip = total.saturating_sub(keep);
    let mut value = Bytes::with_capacity(HEADER + total.min(keep) * ENTRY_BYTES);
    value.push(&header(0));
    if let Some(log) = log {
        for i in skip.min(old)..old {
            value.push(&log.get(i).to_le_bytes());
        }
    }
    push_entries(
        &mut value,
        append.at.as_micros(),
        count - skip.saturating_sub(old),
    );
    value
}

/// [`rebuild`] when the newest `later` entries of `log` are later than the
/// new ones (a reservation pending, or a clock that stepped back): the new
/// entries go before them, and they stay the newest.
#[cold]
fn rebuild_among(log: &LogView<'_>, append: &Append, keep: usize, later: usize) -> Bytes {
    let old = log.len();
    let count = usize::try_from(append.count).unwrap_or(usize::MAX);
    let total = old.saturating_add(count);
    let before = old - later.min(old);
    let mut value = Bytes::with_capacity(HEADER + total.min(keep) * ENTRY_BYTES);
    value.push(&header(0));
    // The oldest `total - keep` go: first of those before the new entries,
    // then of the new ones, then of the later ones.
    let skip = total.saturating_sub(keep);
    for i in skip.min(before)..before {
        value.push(&log.get(i).to_le_bytes());
    }
    let skipped = skip.saturating_sub(before);
    push_entries(&mut value, append.at.as_micros(), count.saturating_sub(skipped));
    let skipped = skipped.saturating_sub(count);
    for i in before + skipped.min(later)..old {
        value.push(&log.get(i).to_le_bytes());
    }
    value
}

/// Patch `log` in place for `append`: `None` when it must be rebuilt (a new
/// log, or the limit changed since it was written).
fn patch(log: &LogView<'_>, append: &Append, keep: usize, expire_at_ms: u64) -> Option<Write> {
    let q = usize::try_from(append.count).ok()?;
    let at = append.at.as_micros();
    let (n, oldest) = (log.len(), log.oldest_slot());
    if n > keep || (n < keep && oldest != 0) || q > keep {
        return None;
    }
    let mut patches = Patches::default();
    let (new_len, compact, planned) = if n < keep {
        // Still growing: append, and wrap to the front for the rest.
        let grow = q.min(keep - n);
        let rest = q - grow;
        let planned = patches.push(slot(n), entries(at, grow))
            && (rest == 0
                || (patches.push(slot(0), entries(at, rest))
                    && patches.push(0, Fill::bytes(header(rest % keep)))));
        (slot(n + grow), n + grow == keep, planned)
    } else {
        // A full ring: overwrite the q oldest slots.
        let first = q.min(n - oldest);
        let planned = patches.push(slot(oldest), entries(at, first))
            && (q == first || patches.push(slot(0), entries(at, q - first)))
            && patches.push(0, Fill::bytes(header((oldest + q) % n)));
        (slot(n), false, planned)
    };
    (planned && patches.fit(new_len)).then_some(Write::Patch {
        new_len,
        patches,
        compact,
        expire_at_ms,
    })
}

/// The log without its `shed.newest` newest entries. Past 64 bytes it is
/// patched in place, at its length: the freed slots take an instant out of
/// the window (no later than the oldest entry, so the log stays in order)
/// and the ring starts at them, so they are its oldest entries and replace
/// nothing that counts. Else, or without such an instant, it is rebuilt
/// without them.
fn shed(log: &LogView<'_>, shed: &Shed, expire_at_ms: u64) -> Write {
    let n = log.len();
    let k = usize::try_from(shed.newest).unwrap_or(n).min(n);
    let left = n - k;
    let filler = shed.horizon.map(|h| h.as_micros().min(log.get(0)));
    if let Some(filler) = filler.filter(|_| !Write::replicated_whole(slot(n))) {
        // Logical positions left..n, physically from ring slot `start` on.
        let start = (log.oldest_slot() + left) % n;
        let first = k.min(n - start);
        let mut patches = Patches::default();
        let planned = patches.push(slot(start), entries(filler, first))
            && (k == first || patches.push(slot(0), entries(filler, k - first)))
            && patches.push(0, Fill::bytes(header(start)));
        if planned && patches.fit(slot(n)) {
            return Write::Patch {
                new_len: slot(n),
                patches,
                compact: false,
                expire_at_ms,
            };
        }
    }
    let mut value = Bytes::with_capacity(slot(left));
    value.push(&header(0));
    for i in 0..left {
        value.push(&log.get(i).to_le_bytes());
    }
    Write::Set {
        value,
        expire_at_ms,
        share: false,
    }
}

/// The write of a tagged call, or of any call on a tagged log: the log
/// rewritten whole (kept out of the untagged path).
#[cold]
#[inline(never)]
fn tagged(log: Option<&LogView<'_>>, append: &Append, expire_at_ms: u64, tag: Option<&[u8]>) -> Write {
    Write::Set {
        value: tagged_log::appended(log, append, tag),
        expire_at_ms,
        share: false,
    }
}

impl SlidingLogCodec {
    /// An untagged log (`L`).
    pub(super) fn decode_log(bytes: &[u8]) -> Result<LogView<'_>, &'static str> {
        const SHAPE: &str = "expected 'L', a 4-byte ring position and 8-byte instants";
        if bytes.len() < HEADER || bytes[0] != TAG || !(bytes.len() - HEADER).is_multiple_of(ENTRY_BYTES) {
            return Err(SHAPE);
        }
        let mut oldest = [0u8; 4];
        oldest.copy_from_slice(&bytes[1..HEADER]);
        let oldest = usize::try_from(u32::from_le_bytes(oldest)).map_err(|_| SHAPE)?;
        LogView::new(&bytes[HEADER..], oldest).ok_or("ring position or order of instants out of range")
    }
}

impl Codec for SlidingLogCodec {
    type Limiter = SlidingLog;
    const TAGS: &'static [u8] = &[TAG, tagged_log::TAG];
    const LOGS: bool = true;

    #[inline]
    fn decode(bytes: &[u8]) -> Result<LogView<'_>, &'static str> {
        match bytes.first() {
            Some(&tagged_log::TAG) => tagged_log::decode(bytes),
            _ => SlidingLogCodec::decode_log(bytes),
        }
    }

    /// A tagged call, or any call on a tagged log, rewrites the log whole
    /// (see `tagged_log`); an untagged call on an untagged log writes what
    /// it always did.
    #[inline(always)]
    fn plan_tagged(
        state: Option<&StateOf<'_, Self>>,
        append: &ChangeOf<Self>,
        expire_at_ms: u64,
        tag: Option<&[u8]>,
    ) -> Write {
        if tag.is_none() {
            return Self::plan(state, append, expire_at_ms);
        }
        Write::Set {
            value: tagged_log::appended(state, append, tag),
            expire_at_ms,
            share: false,
        }
    }

    fn plan(state: Option<&StateOf<'_, Self>>, append: &ChangeOf<Self>, expire_at_ms: u64) -> Write {
        if state.is_some_and(|log| log.tags().is_some()) {
            return tagged(state, append, expire_at_ms, None);
        }
        let keep = usize::try_from(append.keep).unwrap_or(usize::MAX);
        let at = append.at.as_micros();
        let value = match state {
            // Entries later than the new ones (a reservation's) stay the
            // newest: they move, so the log is written whole.
            Some(log)
                if log
                    .len()
                    .checked_sub(1)
                    .is_some_and(|newest| log.get(newest) > at) =>
            {
                rebuild_among(log, append, keep, log.count_later_than(u128::from(at)))
            }
            Some(log) => match patch(log, append, keep, expire_at_ms) {
                Some(write) => return write,
                None => rebuild(state, append, keep),
            },
            None => rebuild(None, append, keep),
        };
        Write::Set {
            value,
            expire_at_ms,
            share: false,
        }
    }

    fn plan_refund(log: &LogView<'_>, refund: &Shed, expire_at_ms: u64) -> Write {
        if log.tags().is_some() {
            return Write::Set {
                value: tagged_log::shed(log, usize::try_from(refund.newest).unwrap_or(usize::MAX)),
                expire_at_ms,
                share: false,
            };
        }
        shed(log, refund, expire_at_ms)
    }

    fn describe(log: &LogView<'_>) -> Vec<(&'static str, Value)> {
        let n = log.len();
        let tagged = tagged_log::tags_of_if_any(log).map_or(0, |tags| tags.iter().flatten().count());
        let at = |i: Option<usize>| i.map_or(Value::Nil, |i| Value::int(log.get(i)));
        vec![
            ("entries", Value::int(n as u64)),
            ("tagged", Value::int(tagged as u64)),
            ("oldest_us", at((n > 0).then_some(0))),
            ("newest_us", at(n.checked_sub(1))),
        ]
    }

    fn entries_logged(append: &Append) -> u64 {
        append.count
    }

    fn entries_after(log: Option<&LogView<'_>>, append: &Append) -> u64 {
        let held = log.map_or(0, |log| u64::try_from(log.len()).unwrap_or(u64::MAX));
        held.saturating_add(append.count).min(append.keep)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rl_core::Instant;

    fn append(at: u64, count: u64, keep: u64) -> Append {
        Append {
            at: Instant::from_micros(at),
            count,
            keep,
        }
    }

    fn instants(value: &[u8]) -> Vec<u64> {
        let view = SlidingLogCodec::decode(value).unwrap();
        (0..view.len()).map(|i| view.get(i)).collect()
    }

    fn step(value: &mut Vec<u8>, a: Append) {
        let write = if value.is_empty() {
            SlidingLogCodec::plan(None, &a, 0)
        } else {
            SlidingLogCodec::plan(Some(&SlidingLogCodec::decode(value).unwrap()), &a, 0)
        };
        write.apply_to(value);
    }

    #[test]
    fn grows_then_wraps_as_a_ring() {
        let mut v = Vec::new();
        step(&mut v, append(10, 2, 4));
        assert_eq!(instants(&v), vec![10, 10]);
        step(&mut v, append(20, 1, 4));
        assert_eq!(instants(&v), vec![10, 10, 20]);
        // Fills the last slot and wraps to overwrite two of the oldest.
        step(&mut v, append(30, 3, 4));
        assert_eq!(instants(&v), vec![20, 30, 30, 30]);
        assert_eq!(v.len(), HEADER + 4 * 8);
        step(&mut v, append(40, 3, 4));
        assert_eq!(instants(&v), vec![30, 40, 40, 40]);
        step(&mut v, append(50, 4, 4));
        assert_eq!(instants(&v), vec![50, 50, 50, 50]);
    }

    #[test]
    fn a_patch_touches_only_the_changed_bytes() {
        let mut v = Vec::new();
        step(&mut v, append(1, 1000, 1000));
        let log = SlidingLogCodec::decode(&v).unwrap();
        let Write::Patch { patches, compact, .. } = SlidingLogCodec::plan(Some(&log), &append(2, 3, 1000), 0)
        else {
            panic!("expected a patch");
        };
        assert!(!compact);
        let written: usize = patches.ranges().map(|r| r.len()).sum();
        assert_eq!(written, 3 * 8 + HEADER);
    }

    #[test]
    fn a_changed_limit_rebuilds_keeping_the_newest() {
        let mut v = Vec::new();
        step(&mut v, append(1, 3, 5));
        step(&mut v, append(2, 2, 5));
        step(&mut v, append(3, 1, 5)); // ring turned: oldest no longer slot 0
        step(&mut v, append(4, 1, 3)); // limit now 3
        assert_eq!(instants(&v), vec![2, 3, 4]);
        step(&mut v, append(5, 1, 10)); // limit now 10, ring not linear
        assert_eq!(instants(&v), vec![2, 3, 4, 5]);
    }

    #[test]
    fn entries_from_the_future_stay_the_newest() {
        let mut v = Vec::new();
        step(&mut v, append(10, 2, 4));
        step(&mut v, append(50, 1, 4)); // a reservation
        step(&mut v, append(20, 1, 4));
        assert_eq!(instants(&v), vec![10, 10, 20, 50]);
        // A full ring whose oldest slot is not the first: rewritten in
        // order, the oldest dropped.
        step(&mut v, append(60, 1, 4));
        step(&mut v, append(30, 2, 4));
        assert_eq!(instants(&v), vec![30, 30, 50, 60]);
        assert_eq!(v[1..HEADER], [0, 0, 0, 0]);
        // Kept past the limit: nothing dropped.
        step(&mut v, append(40, 1, 5));
        assert_eq!(instants(&v), vec![30, 30, 40, 50, 60]);
        // At the instant of the newest entry: written in place.
        step(&mut v, append(60, 1, 5));
        assert_eq!(instants(&v), vec![30, 40, 50, 60, 60]);
    }

    #[test]
    fn malformed_values_are_rejected() {
        for bad in [
            &b""[..],
            b"L",
            b"Lxxxx",
            b"X\0\0\0\0",
            b"L\0\0\0\0\0\0\0",
            b"L\x05\0\0\0\0\0\0\0\0\0\0\0",
        ] {
            assert!(SlidingLogCodec::decode(bad).is_err(), "{bad:?}");
        }
        assert!(SlidingLogCodec::decode(b"L\0\0\0\0").is_ok());
    }
}
