//! Concurrency state as one string: the tag `Q`, the last lease id given
//! (8 bytes), then one 20-byte record per lease: its id (8 bytes), deadline
//! (µs, 8 bytes) and units (4 bytes), little-endian, in the order they were
//! given (ids ascending).
//!
//! Leases past their deadline are dropped at every write. An acquisition
//! with nothing to drop appends its record (and the value is then kept at
//! its exact size), and a renewal with nothing to drop rewrites its
//! deadline in place, each replicated as the changed bytes only; anything
//! else rewrites the value.

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

impl Leases for LeaseView<'_> {
    fn last_id(&self) -> u64 {
        self.last_id
    }

    fn leases(&self) -> impl Iterator<Item = Lease> + '_ {
        self.records.chunks_exact(RECORD).map(lease_of)
    }
}

impl LeaseView<'_> {
    pub fn len(&self) -> usize {
        self.records.len() / RECORD
    }

    fn position(&self, id: u64) -> Option<usize> {
        self.leases().position(|l| l.id == id)
    }
}

/// Read a stored value. Stored bytes are untrusted: every record is checked
/// (ids ascending and at most the last id, at least one unit).
pub fn decode(bytes: &[u8]) -> Result<LeaseView<'_>, &'static str> {
    let (header, records) = bytes.split_at_checked(HEADER).ok_or(SHAPE)?;
    if header[0] != TAG || records.len() % RECORD != 0 {
        return Err(SHAPE);
    }
    let view = LeaseView {
        records,
        last_id: u64_at(header, 1),
    };
    let mut previous = 0u64;
    for lease in view.leases() {
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
    if let Some(view) = state.filter(|_| update.expired == 0 && update.released.is_none()) {
        let n = view.len();
        let last_id = Fill::bytes(update.last_id.to_le_bytes());
        let mut patches = Patches::default();
        let in_place = match (update.acquired, update.renewed) {
            (Some(lease), None) => {
                patches.push(HEADER + n * RECORD, Fill::bytes(record_of(&lease))) && patches.push(1, last_id)
            }
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
        assert_eq!(value.len(), HEADER + 2 * RECORD);
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
            assert_eq!(
                patches.ranges().collect::<Vec<_>>(),
                vec![HEADER + n * RECORD..HEADER + (n + 1) * RECORD, 1..9]
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
            [header(5), record(6, 1)].concat(),
            [header(9), record(5, 1), record(5, 1)].concat(),
            [header(9), record(5, 0)].concat(),
        ] {
            assert!(decode(&bad).is_err(), "{bad:?}");
        }
        assert!(decode(&header(0)).is_ok());
        assert!(decode(&[header(9), record(5, 1), record(9, 2)].concat()).is_ok());
    }
}
