//! The local memory of refusals (SPEC 18, `local_refusals`): a plain take
//! refused until an instant is refused in-process until then, with the
//! same decision, without a round trip.

use std::collections::{BTreeMap, HashMap};
use std::time::{Duration, Instant};

use crate::Decision;

struct Entry {
    /// When the refusal was answered.
    at: Instant,
    /// When it ends (`at` + its `retry_after`).
    until: Instant,
    /// Tells apart two entries that end at the same instant.
    seq: u64,
    decision: Decision,
}

/// At most `capacity` refusals, by call (the command with its limiter,
/// keys and units); past the count, the one nearest its end goes first.
pub(crate) struct Memory {
    capacity: usize,
    entries: HashMap<Vec<u8>, Entry>,
    by_end: BTreeMap<(Instant, u64), Vec<u8>>,
    seq: u64,
}

impl Memory {
    pub(crate) fn new(capacity: usize) -> Memory {
        Memory {
            capacity,
            entries: HashMap::new(),
            by_end: BTreeMap::new(),
            seq: 0,
        }
    }

    /// The refusal remembered for `call`, as it stands at `now`.
    pub(crate) fn recall(&mut self, call: &[u8], now: Instant) -> Option<Decision> {
        let entry = self.entries.get(call)?;
        if entry.until > now {
            return Some(entry.decision.shortened(now - entry.at));
        }
        let key = (entry.until, entry.seq);
        self.by_end.remove(&key);
        self.entries.remove(call);
        None
    }

    /// Remember `decision`, answered at `now`, if it is a refusal that
    /// says when to retry.
    pub(crate) fn remember(&mut self, call: Vec<u8>, decision: Decision, now: Instant) {
        let Some(retry_after) = decision.retry_after.filter(|_| !decision.allowed) else {
            return;
        };
        self.forget_ended(now);
        let until = now + retry_after.max(Duration::from_millis(1));
        self.seq += 1;
        let seq = self.seq;
        if let Some(old) = self.entries.insert(
            call.clone(),
            Entry {
                at: now,
                until,
                seq,
                decision,
            },
        ) {
            self.by_end.remove(&(old.until, old.seq));
        }
        self.by_end.insert((until, seq), call);
        while self.entries.len() > self.capacity {
            let Some((_, call)) = self.by_end.pop_first() else {
                break;
            };
            self.entries.remove(&call);
        }
    }

    fn forget_ended(&mut self, now: Instant) {
        while let Some(entry) = self.by_end.first_entry() {
            if entry.key().0 > now {
                break;
            }
            let call = entry.remove();
            self.entries.remove(&call);
        }
    }

    #[cfg(test)]
    fn len(&self) -> usize {
        self.entries.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::decision::Shape;

    fn refusal(retry_after: i64, reset: i64) -> Decision {
        let reply = redis::Value::Array(
            [1, 20, 0, retry_after, reset]
                .iter()
                .map(|&i| redis::Value::Int(i))
                .collect(),
        );
        Decision::parse(&reply, Shape::Rate { at_most: false }, 1)
            .unwrap()
            .0
    }

    const MS: Duration = Duration::from_millis(1);

    #[test]
    fn a_refusal_until_its_end() {
        let t0 = Instant::now();
        let mut m = Memory::new(10);
        m.remember(b"a".to_vec(), refusal(1500, 2000), t0);
        let d = m.recall(b"a", t0 + 400 * MS).unwrap();
        assert_eq!(
            (d.allowed, d.retry_after, d.reset, d.raw()),
            (false, Some(1100 * MS), 1600 * MS, &[1, 20, 0, 1100, 1600][..])
        );
        // Rounded up: never earlier than the server said.
        assert_eq!(
            m.recall(b"a", t0 + Duration::from_micros(1_499_001))
                .unwrap()
                .retry_after,
            Some(MS)
        );
        assert!(m.recall(b"b", t0).is_none(), "another call");
        assert!(m.recall(b"a", t0 + 1500 * MS).is_none(), "ended");
        assert_eq!(m.len(), 0, "an ended refusal is forgotten");
    }

    #[test]
    fn what_is_not_remembered() {
        let t0 = Instant::now();
        let mut m = Memory::new(10);
        // It can never pass: no instant to wait for.
        m.remember(b"never".to_vec(), refusal(-1, 2000), t0);
        let allowed = Decision::by_policy(20, 1);
        m.remember(b"allowed".to_vec(), allowed, t0);
        assert_eq!(m.len(), 0);
    }

    #[test]
    fn past_the_count_the_nearest_end_goes_first() {
        let t0 = Instant::now();
        let mut m = Memory::new(2);
        m.remember(b"late".to_vec(), refusal(3000, 3000), t0);
        m.remember(b"soon".to_vec(), refusal(1000, 1000), t0);
        m.remember(b"middle".to_vec(), refusal(2000, 2000), t0);
        assert_eq!(m.len(), 2);
        assert!(m.recall(b"soon", t0).is_none());
        assert!(m.recall(b"middle", t0).is_some());
        assert!(m.recall(b"late", t0).is_some());
        // A new refusal that ends first is the one dropped.
        m.remember(b"sooner".to_vec(), refusal(500, 500), t0);
        assert!(m.recall(b"sooner", t0).is_none());
        assert_eq!(m.len(), 2);
        // Remembered again: its new end replaces the old one.
        m.remember(b"middle".to_vec(), refusal(5000, 5000), t0 + 10 * MS);
        assert_eq!(
            m.recall(b"middle", t0 + 10 * MS).unwrap().retry_after,
            Some(5000 * MS)
        );
        assert_eq!(m.by_end.len(), 2);
    }
}
