//! The most refused identities in bounded memory: space-saving top-k over
//! (limit, identity) pairs (clients/contract/metrics.json, `top_k`).
//!
//! At most `k` entries. A refusal of a pair already kept adds 1 to its
//! count. A new pair takes a free entry with count 1; when all `k` are
//! taken it replaces the entry of least count (ties: the one least
//! recently counted) and gets that count plus 1: an overestimate, by at
//! most the count it replaced. Each refusal costs O(log k).

use std::collections::{BTreeMap, HashMap};

/// A (limit, identity) pair.
type Pair = (String, String);

/// What one refusal changed among the kept entries: the count of the pair
/// refused, and the pair whose entry it took, if any.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Counted {
    /// The refused pair's count after this refusal.
    pub count: u64,
    /// The pair no longer kept, as `(limit, identity)`: its entry went to
    /// the refused pair.
    pub replaced: Option<(String, String)>,
}

/// Space-saving top-k over (limit, identity) pairs.
///
/// ```
/// use redis_ratelimit_client::TopK;
///
/// let mut top = TopK::new(2);
/// for identity in ["a", "a", "b", "c"] {
///     top.refused("api", identity);
/// }
/// // "c" replaced "b" (count 1) and got 1 + 1.
/// assert_eq!(
///     top.entries(),
///     vec![("api".into(), "a".into(), 2), ("api".into(), "c".into(), 2)]
/// );
/// ```
#[derive(Debug, Clone)]
pub struct TopK {
    k: usize,
    /// Each kept pair's count and the instant it was last counted, by
    /// limit then identity (found without building the pair).
    kept: HashMap<String, HashMap<String, (u64, u64)>>,
    /// The kept pairs by (count, last counted): the first is replaced next.
    order: BTreeMap<(u64, u64), Pair>,
    /// A counter of refusals: each one's instant, distinct.
    clock: u64,
}

impl TopK {
    /// Room for `k` pairs (0 keeps none).
    pub fn new(k: usize) -> TopK {
        TopK {
            k,
            kept: HashMap::new(),
            order: BTreeMap::new(),
            clock: 0,
        }
    }

    /// How many pairs it keeps at most.
    pub fn k(&self) -> usize {
        self.k
    }

    /// Count one refusal of `identity` by the limit `limit`: what changed,
    /// or `None` when `k` is 0. A pair already kept costs no allocation.
    pub fn refused(&mut self, limit: &str, identity: &str) -> Option<Counted> {
        if self.k == 0 {
            return None;
        }
        self.clock += 1;
        if let Some(entry) = self.kept.get_mut(limit).and_then(|m| m.get_mut(identity)) {
            let pair = self.order.remove(&(entry.0, entry.1))?;
            *entry = (entry.0 + 1, self.clock);
            self.order.insert(*entry, pair);
            return Some(Counted {
                count: entry.0,
                replaced: None,
            });
        }
        let (count, replaced) = if self.order.len() < self.k {
            (1, None)
        } else {
            let ((least, _), gone) = self.order.pop_first()?;
            if let Some(identities) = self.kept.get_mut(&gone.0) {
                identities.remove(&gone.1);
                if identities.is_empty() {
                    self.kept.remove(&gone.0);
                }
            }
            (least + 1, Some(gone))
        };
        self.kept
            .entry(limit.to_string())
            .or_default()
            .insert(identity.to_string(), (count, self.clock));
        self.order
            .insert((count, self.clock), (limit.to_string(), identity.to_string()));
        Some(Counted { count, replaced })
    }

    /// The kept entries, `(limit, identity, count)`, by limit then
    /// identity.
    pub fn entries(&self) -> Vec<(String, String, u64)> {
        let mut all: Vec<(String, String, u64)> = self
            .order
            .iter()
            .map(|((count, _), (limit, identity))| (limit.clone(), identity.clone(), *count))
            .collect();
        all.sort();
        all
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(limit: &str, identity: &str, count: u64) -> (String, String, u64) {
        (limit.to_string(), identity.to_string(), count)
    }

    #[test]
    fn ties_go_to_the_least_recently_counted() {
        let mut top = TopK::new(2);
        top.refused("api", "a");
        top.refused("api", "b");
        top.refused("api", "a"); // a: 2, b: 1
        top.refused("api", "b"); // a: 2, b: 2, b counted last
        let c = top.refused("api", "c").unwrap();
        assert_eq!(c.count, 3);
        assert_eq!(c.replaced, Some(("api".to_string(), "a".to_string())));
        assert_eq!(top.entries(), vec![entry("api", "b", 2), entry("api", "c", 3)]);
    }

    #[test]
    fn none_kept_with_k_0() {
        let mut top = TopK::new(0);
        assert_eq!(top.refused("api", "a"), None);
        assert!(top.entries().is_empty());
    }

    #[test]
    fn memory_stays_at_k() {
        let mut top = TopK::new(3);
        for i in 0..1000 {
            top.refused("api", &i.to_string());
        }
        assert_eq!(top.kept.len(), 1);
        assert_eq!(top.kept["api"].len(), 3);
        assert_eq!(top.order.len(), 3);
        // Each of the 1,000 refusals went to one of 3 entries.
        assert_eq!(top.entries().iter().map(|e| e.2).sum::<u64>(), 1000);
    }
}
