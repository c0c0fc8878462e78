//! Concurrency state as one string: the tag `Q`, an id (8 bytes), then one
//! 20-byte record per lease: its id (8 bytes), deadline (µs, 8 bytes) and
//! units (4 bytes), little-endian, in the order they were given (ids
//! ascending). The last id given is the larger of the header's id and the
//! last record's: an appended lease leaves the header as it is, and a
//! rewrite that drops the newest records keeps the last id in the header.
//!
//! Leases past their deadline are dropped at every write. With nothing to
//! drop, an acquisition appends its record (and the value is then kept at
//! its exact size), a renewal rewrites its deadline in place, and a release
//! sets its deadline to 0, the mark of a released record, in place: each
//! replicated as the changed bytes only. Released records are skipped when
//! read, and go when the value is next rewritten, which happens before
//! they outnumber the leases held. Anything else rewrites the value.

use crate::store::{Bytes, Fill, Patches, Write};
use rl_core::{Instant, Lease, LeaseUpdate, Leases};

const TAG: u8 = b'Q';
pub const HEADER: usize = 9;
pub const RECORD: usize = 20;

/// The leases of a stored value, read in place.
#[derive(Copy, Clone, Debug)]
pub struct LeaseView<'a> {
    records: &'a [u8],
    last_id: u64,
}

fn u64_at(bytes: &[u8], at: usize) -> u64 {
    let mut le = [0u8; 8];
    if let Some(field) = bytes.get(at..at + 8) {
        le.copy_from_slice(field);
    }
    u64::from_le_bytes(le)
}

fn lease_of(record: &[u8]) -> Lease {
    let mut units = [0u8; 4];
    if let Some(field) = record.get(16..20) {
        units.copy_from_slice(field);
    }
    Lease {
        id: u64_at(record, 0),
        deadline: Instant::from_micros(u64_at(record, 8)),
        units: u64::from(u32::from_le_bytes(units)),
    }
}

fn record_of(lease: &Lease) -> [u8; RECORD] {
    let mut record = [0u8; RECORD];
    record[..8].copy_from_slice(&lease.id.to_le_bytes());
    record[8..16].copy_from_slice(&lease.deadline.as_micros().to_le_bytes());
    // Units are at most the limit, which a setting keeps below 2^32.
    let units = u32::try_from(lease.units).unwrap_or(u32::MAX);
    record[16..].copy_from_slice(&units.to_le_bytes());
    record
}

/// The deadline of a released record, kept until the value is rewritten
/// (a lease's own deadline is at least a microsecond after the epoch).
const RELEASED: u64 = 0;

impl Leases for LeaseView<'_> {
    fn last_id(&self) -> u64 {
        self.last_id
    }

    /// The leases, without the records of released ones.
    fn leases(&self) -> impl Iterator<Item = Lease> + '_ {
        self.records().filter(|l| l.deadline.as_micros() != RELEASED)
    }
}

impl LeaseView<'_> {
    /// Every record, released ones included, as stored.
    fn records(&self) -> impl Iterator<Item = Lease> + '_ {
        self.records.chunks_exact(RECORD).map(lease_of)
    }

    /// Records stored, released ones included.
    pub fn len(&self) -> usize {
        self.records.len() / RECORD
    }

    /// Where lease `id`'s record is among all records.
    fn position(&self, id: u64) -> Option<usize> {
        self.records()
            .position(|l| l.id == id && l.deadline.as_micros() != RELEASED)
    }
}

/// The largest lease id a state may hold. A lease's id is the server's
/// clock in microseconds, or one more than the last id when leases are
/// given faster than one a microsecond: every id the module gives is far
/// below 2^62 (the clock reaches it in the year 148,000), and so is the next
/// one, which must fit the reply's signed 64-bit integer. An id of 0, or
/// past this, was not given by the module: the state is corrupt.
pub const MAX_ID: u64 = 1 << 62;

/// Whether a state starting with `first` would be a lease list.
pub fn holds_first(first: u8) -> bool {
    first == TAG
}

/// Whether `bytes` are a lease list (for the error of another command on
/// its key).
pub fn holds(bytes: &[u8]) -> bool {
    bytes.first() == Some(&TAG) && decode(bytes).is_ok()
}

/// Read a stored value. Stored bytes are untrusted: every record is checked
/// (ids ascending and at most the last id, at least one unit), and so is
/// the last id (from 1 to [`MAX_ID`]).
pub fn decode(bytes: &[u8]) -> Result<LeaseView<'_>, &'static str> {
    let (header, records) = bytes.split_at_checked(HEADER).ok_or(SHAPE)?;
    if header[0] != TAG || records.len() % RECORD != 0 {
        return Err(SHAPE);
    }
    let newest = records
        .len()
        .checked_sub(RECORD)
        .map_or(0, |at| u64_at(records, at));
    let view = LeaseView {
        records,
        last_id: u64_at(header, 1).max(newest),
    };
    if !(1..=MAX_ID).contains(&view.last_id) {
        return Err("a lease id of 0 or past 2^62, which the server's clock never gives");
    }
    let mut previous = 0u64;
    for lease in view.records() {
        if lease.id <= previous || lease.id > view.last_id || lease.units == 0 {
            return Err("a lease out of order, or with no units");
        }
        previous = lease.id;
    }
    Ok(view)
}

const SHAPE: &str = "expected 'Q', the last lease id and 20-byte leases";

/// The write that stores `update` over `state`.
pub fn plan(state: Option<&LeaseView<'_>>, update: &LeaseUpdate) -> Write {
    let Some(expire_at_ms) = update.expires_at.map(Instant::ceil_millis) else {
        return Write::Delete;
    };
    if let Some(write) = state.and_then(|view| release_in_place(view, update, expire_at_ms)) {
        return write;
    }
    if let Some(view) = state.filter(|_| update.expired == 0 && update.released.is_none()) {
        let n = view.len();
        let mut patches = Patches::default();
        let in_place = match (update.acquired, update.renewed) {
            // The new record holds the last id: the header stays.
            (Some(lease), None) => patches.push(HEADER + n * RECORD, Fill::bytes(record_of(&lease))),
            (None, Some((id, deadline))) => view.position(id).is_some_and(|i| {
                let at = HEADER + i * RECORD + 8;
                patches.push(at, Fill::bytes(deadline.as_micros().to_le_bytes()))
            }),
            _ => false,
        };
        let grown = update.acquired.is_some();
        let new_len = HEADER + (n + usize::from(grown)) * RECORD;
        if in_place && patches.fit(new_len) {
            // A grown string keeps the spare room the server gives it (up
            // to as much again): an appended value is reallocated at its
            // exact size. That copy is O(n), as is reading the leases; what
            // is replicated is still only the appended record.
            // A value of at most 64 bytes (two leases) keeps its spare
            // room: compacting it would cost a new object and a key
            // replaced for a few bytes, and the next lease would grow it
            // again.
            return Write::Patch {
                new_len,
                patches,
                compact: grown && !Write::replicated_whole(new_len),
                expire_at_ms,
            };
        }
    }
    Write::Set {
        value: rebuild(state, update),
        expire_at_ms,
        share: false,
    }
}

/// A release that marks its record released, in place: when nothing else
/// changes (no lease to drop), the value is over 64 bytes (a smaller one is
/// replicated whole anyway, and rewriting it frees the record), and the
/// released records would still not outnumber the leases held.
fn release_in_place(view: &LeaseView<'_>, update: &LeaseUpdate, expire_at_ms: u64) -> Option<Write> {
    let id = update.released?;
    let plain = update.expired == 0 && update.acquired.is_none() && update.renewed.is_none();
    let len = HEADER + view.len() * RECORD;
    if !plain || Write::replicated_whole(len) {
        return None;
    }
    let held = view.leases().count();
    // After this release: `held - 1` leases, `len - held + 1` released.
    if view.len() - held + 1 > held.checked_sub(1)? {
        return None;
    }
    let at = HEADER + view.position(id)? * RECORD + 8;
    let mut patches = Patches::default();
    (patches.push(at, Fill::bytes(RELEASED.to_le_bytes())) && patches.fit(len)).then_some(Write::Patch {
        new_len: len,
        patches,
        compact: false,
        expire_at_ms,
    })
}

/// The whole value after `update`: the leases live at its instant, less the
/// one released, with the one renewed, plus the one acquired.
fn rebuild(state: Option<&LeaseView<'_>>, update: &LeaseUpdate) -> Bytes {
    let live = state
        .into_iter()
        .flat_map(|view| view.leases())
        .filter(|l| l.live(update.now) && Some(l.id) != update.released)
        .map(|mut lease| {
            if let Some((_, deadline)) = update.renewed.filter(|(id, _)| *id == lease.id) {
                lease.deadline = deadline;
            }
            lease
        });
    let mut value = Bytes::with_capacity(HEADER + (state.map_or(0, LeaseView::len) + 1) * RECORD);
    value.push(&[TAG]);
    value.push(&update.last_id.to_le_bytes());
    for lease in live.chain(update.acquired) {
        value.push(&record_of(&lease));
    }
    value
}

#[cfg(test)]
mod tests {
    use super::*;
    use rl_core::{Concurrency, LeaseList};

    const T0: u64 = 1_763_700_000_000_000;
    const SEC: u64 = 1_000_000;

    fn list(value: &[u8]) -> LeaseList {
        let view = decode(value).unwrap();
        LeaseList {
            last_id: view.last_id(),
            leases: view.leases().collect(),
        }
    }

    #[test]
    fn the_stored_leases_follow_the_model() {
        let c = Concurrency::new(10, 10 * SEC).unwrap();
        let mut value = Vec::new();
        let mut model = LeaseList::default();
        let step = |value: &mut Vec<u8>, model: &mut LeaseList, update: LeaseUpdate| {
            let write = if value.is_empty() {
                plan(None, &update)
            } else {
                plan(Some(&decode(value).unwrap()), &update)
            };
            write.apply_to(value);
            model.apply(&update);
            if !value.is_empty() {
                assert_eq!(&list(value), model);
            }
        };
        for (i, q) in [1, 2, 3].into_iter().enumerate() {
            let now = Instant::from_micros(T0 + i as u64 * SEC);
            let a = c.acquire(&model, now, q);
            step(&mut value, &mut model, a.update.unwrap());
        }
        assert_eq!(value.len(), HEADER + 3 * RECORD);
        let renewed =
            rl_core::concurrency::renew(&model, Instant::from_micros(T0 + 3 * SEC), T0 + SEC, SEC).unwrap();
        step(&mut value, &mut model, renewed);
        let (units, released) =
            rl_core::concurrency::release(&model, Instant::from_micros(T0 + 3 * SEC), T0).unwrap();
        assert_eq!(units, 1);
        step(&mut value, &mut model, released);
        // Marked released in place: the record stays until a rewrite.
        assert_eq!(value.len(), HEADER + 3 * RECORD);
        assert_eq!(u64_at(&value, HEADER + 8), RELEASED);
        // Past every deadline (and the last id), an acquisition drops them all.
        let later = Instant::from_micros(T0 + 20 * SEC);
        let a = c.acquire(&model, later, 1);
        assert_eq!(a.update.unwrap().expired, 2);
        step(&mut value, &mut model, a.update.unwrap());
        assert_eq!(value.len(), HEADER + RECORD);
    }

    #[test]
    fn appends_and_renewals_are_written_in_place() {
        let c = Concurrency::new(10, 10 * SEC).unwrap();
        let first = c
            .acquire(&LeaseList::default(), Instant::from_micros(T0), 1)
            .update
            .unwrap();
        let Write::Set { value, .. } = plan(None, &first) else {
            panic!("a new key is written whole");
        };
        let mut value = value.as_slice().to_vec();
        // Every append is a patch; up to 64 bytes (two leases) the value
        // keeps the room it grew into, past that it is compacted.
        for (at, units, compacted) in [(T0 + 1, 2, false), (T0 + 2, 1, true)] {
            let view = decode(&value).unwrap();
            let n = view.len();
            let next = c.acquire(&view, Instant::from_micros(at), units).update.unwrap();
            let write = plan(Some(&view), &next);
            let Write::Patch {
                new_len,
                ref patches,
                compact,
                ..
            } = write
            else {
                panic!("an append is a patch");
            };
            assert_eq!((new_len, compact), (HEADER + (n + 1) * RECORD, compacted));
            // The record alone: it holds the new last id.
            assert_eq!(
                patches.ranges().collect::<Vec<_>>(),
                vec![HEADER + n * RECORD..HEADER + (n + 1) * RECORD]
            );
            write.apply_to(&mut value);
        }
        let view = decode(&value).unwrap();
        assert_eq!(view.len(), 3);
        // A renewal rewrites its deadline in place, even in a small value.
        let renewed = rl_core::concurrency::renew(&view, Instant::from_micros(T0 + 2), T0, SEC).unwrap();
        let Write::Patch { patches, .. } = plan(Some(&view), &renewed) else {
            panic!("a renewal is a patch");
        };
        assert_eq!(
            patches.ranges().collect::<Vec<_>>(),
            vec![HEADER + 8..HEADER + 16]
        );
    }

    #[test]
    fn releases_are_marked_in_place_until_they_would_outnumber_the_leases() {
        let c = Concurrency::new(10, 10 * SEC).unwrap();
        let mut value = Vec::new();
        let mut ids = Vec::new();
        for i in 0..4 {
            let view = (!value.is_empty()).then(|| decode(&value).unwrap());
            let a = match &view {
                Some(v) => c.acquire(v, Instant::from_micros(T0 + i), 1),
                None => c.acquire(&LeaseList::default(), Instant::from_micros(T0 + i), 1),
            };
            ids.push(a.lease.unwrap().id);
            let write = plan(view.as_ref(), &a.update.unwrap());
            write.apply_to(&mut value);
        }
        let now = Instant::from_micros(T0 + SEC);
        let release = |value: &Vec<u8>, id: u64| {
            let view = decode(value).unwrap();
            let (_, update) = rl_core::concurrency::release(&view, now, id).unwrap();
            plan(Some(&view), &update)
        };
        // Four leases, then two released in place: 8 bytes each.
        for (i, &id) in ids[..2].iter().enumerate() {
            let write = release(&value, id);
            let Write::Patch {
                ref patches, new_len, ..
            } = write
            else {
                panic!("a release in place: {write:?}");
            };
            assert_eq!(new_len, HEADER + 4 * RECORD);
            let at = HEADER + i * RECORD + 8;
            assert_eq!(patches.ranges().collect::<Vec<_>>(), vec![at..at + 8]);
            write.apply_to(&mut value);
        }
        assert_eq!(
            decode(&value).unwrap().leases().map(|l| l.id).collect::<Vec<_>>(),
            ids[2..]
        );
        // A third would leave more released records than leases: the value
        // is rewritten without them.
        let write = release(&value, ids[2]);
        assert!(matches!(write, Write::Set { .. }), "{write:?}");
        write.apply_to(&mut value);
        assert_eq!(value.len(), HEADER + RECORD);
        assert_eq!(
            decode(&value).unwrap().leases().map(|l| l.id).collect::<Vec<_>>(),
            ids[3..]
        );
        // A released lease is unknown from then on.
        assert!(rl_core::concurrency::release(&decode(&value).unwrap(), now, ids[0]).is_none());
    }

    #[test]
    fn malformed_values_are_rejected() {
        let record = |id: u64, units: u32| {
            let mut r = id.to_le_bytes().to_vec();
            r.extend_from_slice(&T0.to_le_bytes());
            r.extend_from_slice(&units.to_le_bytes());
            r
        };
        let header = |last: u64| [&[b'Q'][..], &last.to_le_bytes()].concat();
        for bad in [
            b"".to_vec(),
            b"Q".to_vec(),
            [&header(5)[..], &[0u8; 19]].concat(),
            [&b"X"[..], &5u64.to_le_bytes()].concat(),
            [header(9), record(5, 1), record(5, 1)].concat(),
            [header(9), record(5, 0)].concat(),
        ] {
            assert!(decode(&bad).is_err(), "{bad:?}");
        }
        // Ids are the clock's microseconds: never 0, never past 2^62 (the
        // next id would not fit a reply, or be 0 there).
        let impossible = Err("a lease id of 0 or past 2^62, which the server's clock never gives");
        for bad in [
            header(0),
            header(MAX_ID + 1),
            header(i64::MAX as u64),
            header(u64::MAX),
            [header(0), record(MAX_ID + 1, 1)].concat(),
        ] {
            assert_eq!(decode(&bad).map(|v| v.last_id()), impossible, "{bad:?}");
        }
        assert_eq!(decode(&header(1)).unwrap().last_id(), 1);
        assert_eq!(decode(&header(MAX_ID)).unwrap().last_id(), MAX_ID);
        assert_eq!(
            decode(&[header(0), record(MAX_ID, 1)].concat())
                .unwrap()
                .last_id(),
            MAX_ID
        );
        // The last id is the larger of the header's and the last record's.
        assert_eq!(decode(&[header(5), record(6, 1)].concat()).unwrap().last_id(), 6);
        assert_eq!(decode(&[header(9), record(6, 1)].concat()).unwrap().last_id(), 9);
        assert!(decode(&[header(9), record(5, 1), record(9, 2)].concat()).is_ok());
    }
}
