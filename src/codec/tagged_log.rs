//! The tagged sliding log (`TAG`): the tag `l`, the number of entries `n`
//! (u32), the `n` instants (µs, 8 bytes each, oldest first), then `n` tag
//! records in the same order, each its length (u16, 0: untagged) and its
//! bytes; all little-endian. No ring: every write of a tagged log rewrites
//! it whole, in order, and a log left with no tag is written back as the
//! untagged `L` log, linear, in exactly the bytes an untagged log has: a log
//! that holds no tag is read by every release.
//!
//! No release before tags read `l` as a state: they refuse it with the
//! corrupt-state error, and never misread it.

use crate::store::Bytes;
use rl_core::sliding_log::ENTRY_BYTES;
use rl_core::{Append, LogView};

pub const TAG: u8 = b'l';
/// The tag and the entry count.
pub const HEADER: usize = 5;
/// The longest tag a record may hold (the `tag_max_bytes` setting's ceiling).
pub const MAX_TAG: usize = 1024;

const SHAPE: &str = "expected 'l', an entry count, its 8-byte instants and as many tags";

/// A tagged log's view: its instants, carrying its records.
pub fn decode(bytes: &[u8]) -> Result<LogView<'_>, &'static str> {
    let count = bytes.get(1..HEADER).ok_or(SHAPE)?;
    let n =
        usize::try_from(u32::from_le_bytes([count[0], count[1], count[2], count[3]])).map_err(|_| SHAPE)?;
    let end = n
        .checked_mul(ENTRY_BYTES)
        .and_then(|b| b.checked_add(HEADER))
        .filter(|&end| end <= bytes.len())
        .ok_or(SHAPE)?;
    let records = &bytes[end..];
    let mut rest = records;
    for _ in 0..n {
        let (len, tail) = record(rest).ok_or(SHAPE)?;
        rest = tail.get(len..).ok_or(SHAPE)?;
    }
    if !rest.is_empty() {
        return Err(SHAPE);
    }
    LogView::new(&bytes[HEADER..end], 0)
        .map(|view| view.with_tags(records))
        .ok_or("order of instants out of range")
}

/// The length of the record at the start of `bytes` (at most
/// [`MAX_TAG`]), and what follows the length.
fn record(bytes: &[u8]) -> Option<(usize, &[u8])> {
    match bytes {
        [lo, hi, tail @ ..] => {
            let len = usize::from(u16::from_le_bytes([*lo, *hi]));
            (len <= MAX_TAG).then_some((len, tail))
        }
        _ => None,
    }
}

/// The tag of every entry of `log`, oldest first (`None`: untagged).
pub fn tags_of<'a>(log: &LogView<'a>) -> Vec<Option<&'a [u8]>> {
    let mut tags = Vec::with_capacity(log.len());
    match log.tags() {
        Some(mut rest) => {
            while let Some((len, tail)) = record(rest) {
                let Some(tag) = tail.get(..len) else { break };
                tags.push((len > 0).then_some(tag));
                rest = &tail[len..];
            }
            // A view made by `decode` has a record per entry; any other
            // reads as untagged where records are missing.
            tags.resize(log.len(), None);
        }
        None => tags.resize(log.len(), None),
    }
    tags
}

/// The tags of a tagged log's entries; `None` for an untagged log.
pub fn tags_of_if_any<'a>(log: &LogView<'a>) -> Option<Vec<Option<&'a [u8]>>> {
    log.tags().map(|_| tags_of(log))
}

/// The value holding `entries` (instant and tag, oldest first): the
/// untagged `L` log, linear, when none is tagged; else a tagged log.
pub fn value<'a>(entries: impl Iterator<Item = (u64, Option<&'a [u8]>)> + Clone) -> Bytes {
    let n = entries.clone().count();
    if entries.clone().all(|(_, tag)| tag.is_none()) {
        let mut value = Bytes::with_capacity(super::sliding_log::HEADER + n * ENTRY_BYTES);
        value.push(&[super::sliding_log::TAG, 0, 0, 0, 0]);
        for (at, _) in entries {
            value.push(&at.to_le_bytes());
        }
        return value;
    }
    let tag_bytes: usize = entries
        .clone()
        .map(|(_, tag)| 2 + tag.map_or(0, <[u8]>::len))
        .sum();
    let mut value = Bytes::with_capacity(HEADER + n * ENTRY_BYTES + tag_bytes);
    value.push(&[TAG]);
    value.push(&u32::try_from(n).unwrap_or(u32::MAX).to_le_bytes());
    for (at, _) in entries.clone() {
        value.push(&at.to_le_bytes());
    }
    for (_, tag) in entries {
        let tag = tag.unwrap_or_default();
        value.push(&u16::try_from(tag.len()).unwrap_or(u16::MAX).to_le_bytes());
        value.push(tag);
    }
    value
}

/// `log` (if any) with `append.count` entries at `append.at` tagged `tag`,
/// placed after every entry at or before that instant and before any
/// later one, keeping the newest `append.keep`: the order the untagged
/// log's rewrite keeps. Written in one pass over the entries kept (the
/// usual call: a new log, or one of a few entries).
#[inline]
pub fn appended(log: Option<&LogView<'_>>, append: &Append, tag: Option<&[u8]>) -> Bytes {
    let old_tags = log.and_then(tags_of_if_any);
    let old = log.map_or(0, LogView::len);
    let at = append.at.as_micros();
    let count = usize::try_from(append.count).unwrap_or(usize::MAX);
    let keep = usize::try_from(append.keep).unwrap_or(usize::MAX);
    let later = log.map_or(0, |log| log.count_later_than(u128::from(at)));
    let before = old - later.min(old);
    let total = old.saturating_add(count);
    let skip = total.saturating_sub(keep);
    // The kept entries: old ones `skip..before`, then new ones, then old
    // ones `before..old`, less what `skip` takes from the new and later.
    let old_before = skip.min(before)..before;
    let new_kept = count.saturating_sub(skip.saturating_sub(before));
    let old_after = (before + skip.saturating_sub(before + count).min(later))..old;
    let kept_old = || old_before.clone().chain(old_after.clone());
    let old_tag = |i: usize| old_tags.as_ref().and_then(|tags| tags[i]);
    let new_tag = tag.filter(|_| new_kept > 0);
    let tag_bytes = kept_old()
        .map(|i| old_tag(i).map_or(0, <[u8]>::len))
        .sum::<usize>()
        + new_tag.map_or(0, |t| new_kept * t.len());
    let tagged = new_tag.is_some() || kept_old().any(|i| old_tag(i).is_some());
    let n = old_before.len() + new_kept + old_after.len();
    let instants = |value: &mut Bytes| {
        let log = log.filter(|_| old > 0);
        for i in old_before.clone() {
            value.push(&log.map_or(0, |log| log.get(i)).to_le_bytes());
        }
        let at = at.to_le_bytes();
        for _ in 0..new_kept {
            value.push(&at);
        }
        for i in old_after.clone() {
            value.push(&log.map_or(0, |log| log.get(i)).to_le_bytes());
        }
    };
    if !tagged {
        let mut value = Bytes::with_capacity(super::sliding_log::HEADER + n * ENTRY_BYTES);
        value.push(&[super::sliding_log::TAG, 0, 0, 0, 0]);
        instants(&mut value);
        return value;
    }
    let mut value = Bytes::with_capacity(HEADER + n * (ENTRY_BYTES + 2) + tag_bytes);
    let [a, b, c, d] = u32::try_from(n).unwrap_or(u32::MAX).to_le_bytes();
    value.push(&[TAG, a, b, c, d]);
    instants(&mut value);
    let record = |value: &mut Bytes, tag: Option<&[u8]>| {
        let tag = tag.unwrap_or_default();
        value.push(&u16::try_from(tag.len()).unwrap_or(u16::MAX).to_le_bytes());
        value.push(tag);
    };
    for i in old_before.clone() {
        record(&mut value, old_tag(i));
    }
    for _ in 0..new_kept {
        record(&mut value, new_tag);
    }
    for i in old_after.clone() {
        record(&mut value, old_tag(i));
    }
    value
}

/// `log` without its `newest` newest entries.
pub fn shed(log: &LogView<'_>, newest: usize) -> Bytes {
    let tags = tags_of(log);
    let left = log.len() - newest.min(log.len());
    value((0..left).map(|i| (log.get(i), tags[i])))
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

    fn entries(value: &[u8]) -> Vec<(u64, Option<Vec<u8>>)> {
        let log = match value.first() {
            Some(&TAG) => decode(value).unwrap(),
            _ => super::super::SlidingLogCodec::decode_log(value).unwrap(),
        };
        let tags = tags_of(&log);
        (0..log.len())
            .map(|i| (log.get(i), tags[i].map(<[u8]>::to_vec)))
            .collect()
    }

    #[test]
    fn tagged_entries_keep_their_tags_in_order_and_the_newest() {
        let v = appended(None, &append(10, 2, 4), Some(b"ann"));
        let mut expected = vec![0x6c, 2, 0, 0, 0];
        expected.extend(10u64.to_le_bytes());
        expected.extend(10u64.to_le_bytes());
        expected.extend([3, 0, b'a', b'n', b'n', 3, 0, b'a', b'n', b'n']);
        assert_eq!(v.as_slice(), &expected[..]);
        let log = decode(v.as_slice()).unwrap();
        let v = appended(Some(&log), &append(20, 1, 4), None);
        let log = decode(v.as_slice()).unwrap();
        // A reservation, then an entry before it: the reservation stays newest.
        let v = appended(Some(&log), &append(50, 1, 4), Some(b"bo"));
        let log = decode(v.as_slice()).unwrap();
        let v = appended(Some(&log), &append(30, 2, 4), Some(b"cy"));
        let (bo, cy) = (Some(b"bo".to_vec()), Some(b"cy".to_vec()));
        // The two entries tagged "ann" were the oldest: they went.
        assert_eq!(
            entries(v.as_slice()),
            vec![(20, None), (30, cy.clone()), (30, cy), (50, bo)]
        );
    }

    #[test]
    fn a_log_left_without_tags_is_the_untagged_log() {
        let v = appended(None, &append(10, 1, 2), Some(b"x"));
        let log = decode(v.as_slice()).unwrap();
        // Two untagged entries push the tagged one out: today's bytes.
        let v = appended(Some(&log), &append(20, 2, 2), None);
        let mut expected = vec![b'L', 0, 0, 0, 0];
        expected.extend(20u64.to_le_bytes());
        expected.extend(20u64.to_le_bytes());
        assert_eq!(v.as_slice(), &expected[..]);
        // Shedding the tagged newest does the same.
        let v = appended(None, &append(10, 1, 3), None);
        let log = super::super::SlidingLogCodec::decode_log(v.as_slice()).unwrap();
        let v = appended(Some(&log), &append(20, 1, 3), Some(b"t"));
        let log = decode(v.as_slice()).unwrap();
        let v = shed(&log, 1);
        let mut expected = vec![b'L', 0, 0, 0, 0];
        expected.extend(10u64.to_le_bytes());
        assert_eq!(v.as_slice(), &expected[..]);
    }

    /// Random appends (tagged or not, at instants that may precede the
    /// newest, with limits that change) and refunds through the codec's own
    /// entry points, against a list of (instant, tag): the same entries in
    /// the same order, the untagged form exactly when no tag is left.
    #[test]
    fn the_codec_keeps_what_a_list_of_tagged_entries_keeps() {
        use crate::codec::{Codec, SlidingLogCodec};
        use rl_core::Shed;
        let mut seed = 0x2545_f491_4f6c_dd1d_u64;
        let mut next = |n: u64| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed % n
        };
        let tags: [Option<&[u8]>; 4] = [None, Some(b"a"), Some(b"bb"), Some(b"")];
        for _run in 0..200 {
            let mut value: Vec<u8> = Vec::new();
            let mut model: Vec<(u64, Option<Vec<u8>>)> = Vec::new();
            for _step in 0..30 {
                let view = (!value.is_empty()).then(|| SlidingLogCodec::decode(&value).unwrap());
                let write = if next(5) == 0 && !model.is_empty() {
                    let k = 1 + next(model.len() as u64) as usize;
                    model.truncate(model.len() - k);
                    let shed = Shed {
                        newest: k as u64,
                        horizon: None,
                    };
                    SlidingLogCodec::plan_refund(view.as_ref().unwrap(), &shed, 0)
                } else {
                    let at = 100 + next(20);
                    let count = 1 + next(4);
                    let keep = 1 + next(8);
                    // An empty tag stands for none here: the grammar refuses
                    // empty tags.
                    let tag = tags[next(4) as usize].filter(|t| !t.is_empty());
                    let position = model.iter().filter(|(t, _)| *t <= at).count();
                    for _ in 0..count {
                        model.insert(position, (at, tag.map(<[u8]>::to_vec)));
                    }
                    let keep = keep.max(count) as usize;
                    if model.len() > keep {
                        model.drain(..model.len() - keep);
                    }
                    let a = append(at, count, keep as u64);
                    SlidingLogCodec::plan_tagged(view.as_ref(), &a, 0, tag)
                };
                write.apply_to(&mut value);
                assert_eq!(entries(&value), model);
                let tagged = model.iter().any(|(_, tag)| tag.is_some());
                assert_eq!(value[0], if tagged { TAG } else { b'L' }, "{model:?}");
            }
        }
    }

    #[test]
    fn malformed_tagged_logs_are_refused() {
        let good = appended(None, &append(10, 2, 4), Some(b"ann"));
        let good = good.as_slice();
        assert!(decode(good).is_ok());
        // Any shorter, or one byte more.
        for cut in 0..good.len() {
            assert!(decode(&good[..cut]).is_err(), "{cut}");
        }
        let mut longer = good.to_vec();
        longer.push(0);
        assert!(decode(&longer).is_err());
        // A record longer than the ceiling, a count past the value.
        let mut big = vec![TAG, 1, 0, 0, 0];
        big.extend(1u64.to_le_bytes());
        big.extend(1025u16.to_le_bytes());
        big.extend(vec![b'x'; 1025]);
        assert!(decode(&big).is_err());
        assert!(decode(&[TAG, 0xff, 0xff, 0xff, 0xff]).is_err());
        // Out of order.
        let mut disorder = vec![TAG, 2, 0, 0, 0];
        disorder.extend(5u64.to_le_bytes());
        disorder.extend(4u64.to_le_bytes());
        disorder.extend([0, 0, 0, 0]);
        assert_eq!(decode(&disorder).unwrap_err(), "order of instants out of range");
        assert!(decode(&[TAG, 0, 0, 0, 0]).is_ok());
    }
}
