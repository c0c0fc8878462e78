//! Property tests for concurrency leases: random walks of acquisitions,
//! releases, renewals and waiting, with time moved by hand, against what a
//! lease must never do.

use proptest::prelude::*;
use proptest::test_runner::FileFailurePersistence;
use rl_core::concurrency::{release, renew};
use rl_core::{Concurrency, Instant, LeaseList, Leases, RetryAfter};
use std::collections::BTreeMap;

const T0: u64 = 1_763_700_000_000_000;

#[derive(Clone, Debug)]
enum Op {
    Acquire {
        quantity: u64,
    },
    /// Release the `pick`-th lease ever given (modulo their number), or an
    /// id never given.
    Release {
        pick: usize,
        unknown: bool,
    },
    Renew {
        pick: usize,
        timeout: u64,
    },
    Wait {
        micros: u64,
    },
    /// The clock steps back a little (it may, on a real server).
    StepBack {
        micros: u64,
    },
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        4 => (0u64..5).prop_map(|quantity| Op::Acquire { quantity }),
        3 => (any::<usize>(), prop::bool::weighted(0.1)).prop_map(|(pick, unknown)| Op::Release { pick, unknown }),
        1 => (any::<usize>(), 1u64..4_000_000).prop_map(|(pick, timeout)| Op::Renew { pick, timeout }),
        3 => prop_oneof![Just(0u64), 0u64..2_000_000].prop_map(|micros| Op::Wait { micros }),
        1 => (0u64..1_000).prop_map(|micros| Op::StepBack { micros }),
    ]
}

/// The units held at `now` by the live leases.
fn held(list: &LeaseList, now: Instant) -> u64 {
    list.leases().filter(|l| l.live(now)).map(|l| l.units).sum()
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: 512,
        failure_persistence: Some(Box::new(FileFailurePersistence::WithSource("regressions"))),
        ..ProptestConfig::default()
    })]

    /// The units held never exceed the limit at any instant; a lease is
    /// released, renewed or freed by its deadline at most once; an id is
    /// never given twice; a refusal's wait is exact.
    #[test]
    fn leases_never_exceed_the_limit_nor_free_twice(
        limit in 1u64..8,
        timeout in 1u64..3_000_000,
        ops in prop::collection::vec(op(), 1..80),
    ) {
        let c = Concurrency::new(limit, timeout).unwrap();
        let mut list = LeaseList::default();
        let mut now = T0;
        // Every lease given: its units, and whether it has been released.
        let mut given: Vec<u64> = Vec::new();
        let mut released: BTreeMap<u64, u64> = BTreeMap::new();
        let mut last_id = 0u64;
        for op in ops {
            let at = Instant::from_micros(now);
            match op {
                Op::Acquire { quantity } => {
                    let before = held(&list, at);
                    let a = c.acquire(&list, at, quantity);
                    let fits = quantity > 0 && before + quantity <= limit;
                    prop_assert_eq!(!a.decision.blocked, quantity == 0 || fits);
                    prop_assert_eq!(a.decision.remaining, limit.saturating_sub(before + if fits { quantity } else { 0 }));
                    if let Some(lease) = a.lease {
                        prop_assert!(lease.id > last_id && lease.id >= now, "ids only grow");
                        last_id = lease.id;
                        given.push(lease.id);
                    }
                    if a.decision.blocked {
                        prop_assert!(a.update.is_none());
                        match a.decision.retry_after {
                            RetryAfter::Never => prop_assert!(quantity > limit),
                            RetryAfter::After(wait) => {
                                // Waiting exactly that long, and no less, is enough.
                                let later = Instant::from_micros(now + wait.get() as u64);
                                prop_assert!(held(&list, later) + quantity <= limit);
                                if wait.get() > 0 {
                                    let just_before = Instant::from_micros(now + wait.get() as u64 - 1);
                                    prop_assert!(held(&list, just_before) + quantity > limit);
                                }
                            }
                            RetryAfter::Allowed => prop_assert!(false, "refused but allowed"),
                        }
                    }
                    if let Some(update) = a.update {
                        list.apply(&update);
                    }
                }
                Op::Release { pick, unknown } => {
                    let id = if unknown || given.is_empty() { 7 } else { given[pick % given.len()] };
                    if let Some((units, update)) = release(&list, at, id) {
                        prop_assert!(released.insert(id, units).is_none(), "released twice");
                        list.apply(&update);
                    }
                }
                Op::Renew { pick, timeout } => {
                    if let Some(&id) = given.get(pick % given.len().max(1)) {
                        let live = list.leases().any(|l| l.id == id && l.live(at));
                        let update = renew(&list, at, id, timeout);
                        prop_assert_eq!(update.is_some(), live);
                        if let Some(update) = update {
                            list.apply(&update);
                        }
                    }
                }
                Op::Wait { micros } => now += micros,
                Op::StepBack { micros } => now -= micros.min(now - T0),
            }
            let at = Instant::from_micros(now);
            prop_assert!(held(&list, at) <= limit, "{} units held", held(&list, at));
            // A released lease is gone; a lease past its deadline holds nothing.
            for lease in list.leases() {
                prop_assert!(!released.contains_key(&lease.id));
            }
            prop_assert_eq!(list.last_id(), last_id);
        }
    }
}
