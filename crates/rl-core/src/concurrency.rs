//! Concurrency: at most `limit` units of work in flight, each held by a
//! lease that ends when it is released or at its deadline, whichever comes
//! first; so a client that crashes holds nothing longer than its timeout.
//!
//! Unlike a rate, the state changes on three requests: an acquisition
//! ([`Concurrency::acquire`]), a release ([`release`]) and a renewal
//! ([`renew`]). Each returns the [`LeaseUpdate`] to store, if any.
//!
//! A lease's id is derived from the clock: the larger of `now` (µs) and one
//! more than the last id given on the key. While the clock moves on, an id
//! is never given twice for a key, even after the key has expired and been
//! created again: a key lives at least until the clock has passed its last
//! id (see [`LeaseUpdate::expires_at`]).

use crate::bounds::{MAX_LIMIT, MAX_PERIOD_MICROS};
use crate::decision::{Decision, RetryAfter};
use crate::error::{in_range, ParamError};
use crate::time::{Instant, Micros};

/// One lease: `units` of work held until `deadline` (exclusive: at the
/// deadline it has ended).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Lease {
    pub id: u64,
    pub units: u64,
    pub deadline: Instant,
}

impl Lease {
    /// Whether it still holds its units at `now`.
    pub fn live(&self, now: Instant) -> bool {
        now < self.deadline
    }
}

/// The leases of one key as stored: the last id given, and the leases in
/// the order they were given (ids ascending). Expired leases may still be
/// there; they hold nothing.
pub trait Leases {
    fn last_id(&self) -> u64;
    fn leases(&self) -> impl Iterator<Item = Lease> + '_;
}

/// No leases yet (a new key).
pub struct NoLeases;

impl Leases for NoLeases {
    fn last_id(&self) -> u64 {
        0
    }

    fn leases(&self) -> impl Iterator<Item = Lease> + '_ {
        std::iter::empty()
    }
}

/// Leases kept in memory (tests, and whoever wants a plain list).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LeaseList {
    pub last_id: u64,
    pub leases: Vec<Lease>,
}

impl Leases for LeaseList {
    fn last_id(&self) -> u64 {
        self.last_id
    }

    fn leases(&self) -> impl Iterator<Item = Lease> + '_ {
        self.leases.iter().copied()
    }
}

impl LeaseList {
    /// This list after `update`.
    pub fn apply(&mut self, update: &LeaseUpdate) {
        self.leases
            .retain(|l| l.live(update.now) && Some(l.id) != update.released);
        if let Some((id, deadline)) = update.renewed {
            for lease in &mut self.leases {
                if lease.id == id {
                    lease.deadline = deadline;
                }
            }
        }
        self.leases.extend(update.acquired);
        self.last_id = update.last_id;
    }
}

/// What to store after a request: the leases live at `now`, less the one
/// released, one renewed to a new deadline, plus the one acquired.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct LeaseUpdate {
    pub now: Instant,
    pub acquired: Option<Lease>,
    pub released: Option<u64>,
    pub renewed: Option<(u64, Instant)>,
    /// The last id given on the key.
    pub last_id: u64,
    /// Leases past their deadline that this update drops (for `INFO`).
    pub expired: u64,
    /// When the key stops mattering: the latest deadline, and no earlier
    /// than the instant after the last id (so that an id derived from the
    /// clock cannot repeat). `None`: nothing is live and no id can repeat:
    /// the key may go.
    pub expires_at: Option<Instant>,
}

/// An acquisition's answer: the decision, the lease given (allowed with
/// units), and the update to store.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Acquired {
    pub decision: Decision,
    pub lease: Option<Lease>,
    pub update: Option<LeaseUpdate>,
}

/// Validated concurrency parameters.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Concurrency {
    limit: u64,
    timeout: u64,
}

/// The longest timeout, in microseconds (10^9 s).
pub const MAX_TIMEOUT_MICROS: u64 = MAX_PERIOD_MICROS;

impl Concurrency {
    /// `limit` 1 ..= 10^9 (the module caps it lower: memory grows with the
    /// leases held), `timeout_micros` 1 ..= 10^15.
    pub fn new(limit: u64, timeout_micros: u64) -> Result<Concurrency, ParamError> {
        Ok(Concurrency {
            limit: in_range("limit", limit, 1, MAX_LIMIT)?,
            timeout: in_range("timeout", timeout_micros, 1, MAX_TIMEOUT_MICROS)?,
        })
    }

    pub fn limit(&self) -> u64 {
        self.limit
    }

    /// Take a lease of `quantity` units for `timeout` at `now`: allowed iff
    /// the units of the live leases plus `quantity` are at most `limit`.
    /// `quantity` 0 is a query, more than `limit` can never pass.
    pub fn acquire(&self, state: &impl Leases, now: Instant, quantity: u64) -> Acquired {
        let (mut held, mut latest, mut expired) = (0u64, now, 0u64);
        for lease in state.leases() {
            if lease.live(now) {
                held = held.saturating_add(lease.units);
                latest = latest.max(lease.deadline);
            } else {
                expired += 1;
            }
        }
        let mut decision = Decision {
            blocked: false,
            limit: self.limit,
            remaining: self.limit.saturating_sub(held),
            retry_after: RetryAfter::Allowed,
            reset: latest.saturating_since(now),
        };
        let unchanged = |decision| Acquired {
            decision,
            lease: None,
            update: None,
        };
        if quantity == 0 {
            return unchanged(decision);
        }
        if quantity > self.limit {
            decision.blocked = true;
            decision.retry_after = RetryAfter::Never;
            return unchanged(decision);
        }
        if held.saturating_add(quantity) > self.limit {
            decision.blocked = true;
            decision.retry_after = RetryAfter::After(self.wait(state, now, held, quantity));
            return unchanged(decision);
        }
        let id = now.as_micros().max(state.last_id().saturating_add(1));
        let deadline = now.saturating_add(Micros(u128::from(self.timeout)));
        let lease = Lease {
            id,
            units: quantity,
            deadline,
        };
        let latest = latest.max(deadline);
        Acquired {
            decision: Decision {
                remaining: self.limit - held - quantity,
                reset: latest.saturating_since(now),
                ..decision
            },
            lease: Some(lease),
            update: Some(LeaseUpdate {
                now,
                acquired: Some(lease),
                released: None,
                renewed: None,
                last_id: id,
                expired,
                expires_at: Some(expiry(latest, id)),
            }),
        }
    }

    /// The time until enough live leases reach their deadlines for
    /// `quantity` more units to fit, if none is released.
    fn wait(&self, state: &impl Leases, now: Instant, held: u64, quantity: u64) -> Micros {
        let mut live: Vec<(Instant, u64)> = state
            .leases()
            .filter(|l| l.live(now))
            .map(|l| (l.deadline, l.units))
            .collect();
        live.sort_unstable();
        let mut held = held;
        for (deadline, units) in live {
            held = held.saturating_sub(units);
            if held + quantity <= self.limit {
                return deadline.saturating_since(now);
            }
        }
        // Unreachable for quantity <= limit: every lease ends eventually.
        Micros::ZERO
    }
}

/// When a key whose latest deadline is `latest` and whose last id is
/// `last_id` stops mattering.
fn expiry(latest: Instant, last_id: u64) -> Instant {
    latest.max(Instant::from_micros(last_id.saturating_add(1)))
}

/// The update that stores `state` at `now` without its expired leases,
/// less `released`, with `renewed`'s new deadline.
fn update_at(
    state: &impl Leases,
    now: Instant,
    released: Option<u64>,
    renewed: Option<(u64, Instant)>,
) -> LeaseUpdate {
    let (mut expired, mut latest, mut any) = (0u64, Instant::EPOCH, false);
    for lease in state.leases() {
        if !lease.live(now) {
            expired += 1;
            continue;
        }
        if Some(lease.id) == released {
            continue;
        }
        let deadline = match renewed {
            Some((id, deadline)) if id == lease.id => deadline,
            _ => lease.deadline,
        };
        latest = latest.max(deadline);
        any = true;
    }
    let last_id = state.last_id();
    let expires_at = if any {
        Some(expiry(latest, last_id))
    } else if last_id < now.as_micros() {
        // Nothing live, and every id to come is larger than the last.
        None
    } else {
        Some(expiry(now, last_id))
    };
    LeaseUpdate {
        now,
        acquired: None,
        released,
        renewed,
        last_id,
        expired,
        expires_at,
    }
}

/// Release lease `id` at `now`: its units, and the update to store; `None`
/// for a lease that is unknown, already released or past its deadline (and
/// then nothing is stored).
pub fn release(state: &impl Leases, now: Instant, id: u64) -> Option<(u64, LeaseUpdate)> {
    let lease = state.leases().find(|l| l.id == id && l.live(now))?;
    Some((lease.units, update_at(state, now, Some(id), None)))
}

/// Move live lease `id`'s deadline to `now + timeout`: the update to store;
/// `None` for a lease that is unknown, released or past its deadline.
pub fn renew(state: &impl Leases, now: Instant, id: u64, timeout_micros: u64) -> Option<LeaseUpdate> {
    state.leases().find(|l| l.id == id && l.live(now))?;
    let deadline = now.saturating_add(Micros(u128::from(timeout_micros)));
    Some(update_at(state, now, None, Some((id, deadline))))
}

#[cfg(test)]
mod tests {
    use super::*;

    const T0: u64 = 1_763_700_000_000_000;
    const SEC: u64 = 1_000_000;

    fn at(micros: u64) -> Instant {
        Instant::from_micros(micros)
    }

    #[test]
    fn leases_are_given_until_the_limit_then_refused_until_one_ends() {
        let c = Concurrency::new(3, 10 * SEC).unwrap();
        let mut list = LeaseList::default();
        let first = c.acquire(&list, at(T0), 2);
        assert_eq!(
            first.lease.map(|l| (l.id, l.units, l.deadline)),
            Some((T0, 2, at(T0 + 10 * SEC)))
        );
        assert_eq!(
            (first.decision.remaining, first.decision.reset),
            (1, Micros(10_000_000))
        );
        list.apply(&first.update.unwrap());
        let second = c.acquire(&list, at(T0 + SEC), 1);
        assert_eq!(second.lease.map(|l| l.id), Some(T0 + SEC));
        list.apply(&second.update.unwrap());
        // Full: 2 more fit when the first lease ends, 9 s from now.
        let refused = c.acquire(&list, at(T0 + SEC), 2);
        assert!(refused.decision.blocked);
        assert_eq!(
            refused.decision.retry_after,
            RetryAfter::After(Micros(9 * SEC as u128))
        );
        assert_eq!(refused.decision.reset, Micros(10 * SEC as u128));
        assert_eq!(refused.update, None);
        // More than the limit never fits.
        assert_eq!(
            c.acquire(&list, at(T0), 4).decision.retry_after,
            RetryAfter::Never
        );
        // At the first deadline its units are free again.
        let later = c.acquire(&list, at(T0 + 10 * SEC), 2);
        assert!(!later.decision.blocked);
        assert_eq!(later.update.unwrap().expired, 1);
    }

    #[test]
    fn release_and_renew_act_on_live_leases_once() {
        let c = Concurrency::new(5, 10 * SEC).unwrap();
        let mut list = LeaseList::default();
        for (i, q) in [2, 3].into_iter().enumerate() {
            list.apply(&c.acquire(&list, at(T0 + i as u64), q).update.unwrap());
        }
        let (units, update) = release(&list, at(T0 + 5), T0).unwrap();
        assert_eq!(units, 2);
        list.apply(&update);
        assert_eq!(release(&list, at(T0 + 6), T0), None, "released twice");
        assert_eq!(release(&list, at(T0 + 6), 42), None, "unknown");
        let renewed = renew(&list, at(T0 + 9 * SEC), T0 + 1, 10 * SEC).unwrap();
        assert_eq!(renewed.expires_at, Some(at(T0 + 19 * SEC)));
        list.apply(&renewed);
        // Past its deadline a lease can be neither renewed nor released.
        assert_eq!(renew(&list, at(T0 + 19 * SEC), T0 + 1, SEC), None);
        assert_eq!(release(&list, at(T0 + 19 * SEC), T0 + 1), None);
    }

    #[test]
    fn ids_never_repeat_even_in_one_instant() {
        let c = Concurrency::new(10, SEC).unwrap();
        let mut list = LeaseList::default();
        let mut ids = Vec::new();
        for _ in 0..3 {
            let a = c.acquire(&list, at(T0), 1);
            ids.push(a.lease.unwrap().id);
            list.apply(&a.update.unwrap());
        }
        assert_eq!(ids, [T0, T0 + 1, T0 + 2]);
        // All released at the same instant: the key must outlive its last
        // id, or a new key could give T0 again.
        for id in ids {
            let (_, update) = release(&list, at(T0), id).unwrap();
            list.apply(&update);
            assert!(update.expires_at.is_some());
        }
        assert_eq!(list.leases, []);
        assert_eq!(list.last_id, T0 + 2);
        assert_eq!(c.acquire(&list, at(T0), 1).lease.unwrap().id, T0 + 3);
        // Until the clock has passed the last id the empty key is kept;
        // then it may go.
        assert_eq!(
            update_at(&list, at(T0 + 2), None, None).expires_at,
            Some(at(T0 + 3))
        );
        assert_eq!(update_at(&list, at(T0 + 3), None, None).expires_at, None);
    }
}
