//! REFUND on a live server: units given back on every algorithm and on
//! RL.ALL, the key deleted when a refund rests the limiter, nothing written
//! when nothing changes, the effect on a replica without the module and in
//! the AOF, INFO and COMMAND DOCS.
//!
//! Periods are an hour and fixed windows 10^9 s (the next boundary is in
//! 2033), so that no reply depends on when a call runs.

mod common;

use common::{cmd, five, info_field, six, snapshot, Reply, Server};
use redis::Connection;

/// Each algorithm with a limit of 5.
const LIMITERS: [&[&str]; 5] = [
    &["RL.GCRA", "r:gcra", "4", "1", "3600"],
    &["RL.TOKEN_BUCKET", "r:tb", "5", "1", "3600"],
    &["RL.FIXED", "r:fixed", "5", "1000000000"],
    &["RL.SLIDING_LOG", "r:log", "5", "3600"],
    &["RL.SLIDING_COUNTER", "r:counter", "5", "3600"],
];

fn with<'a>(args: &[&'a str], extra: &[&'a str]) -> Vec<&'a str> {
    args.iter().chain(extra).copied().collect()
}

/// Writes the server has counted (`rdb_changes_since_last_save`).
fn dirty(c: &mut Connection) -> i64 {
    info_field(c, "persistence", "rdb_changes_since_last_save")
}

fn pexpiretime(c: &mut Connection, key: &str) -> i64 {
    common::pexpiretime(c, key)
}

#[test]
fn a_refund_gives_units_back_on_every_algorithm() {
    let s = Server::start();
    let mut c = s.client();
    for limiter in LIMITERS {
        let key = limiter[1];
        assert_eq!(
            five(&mut c, &with(limiter, &["3"])).counts(),
            (false, 5, 2),
            "{limiter:?}"
        );
        let expiry = pexpiretime(&mut c, key);
        let refunded = five(&mut c, &with(limiter, &["2", "REFUND"]));
        // Answered as a query after the refund: never blocked.
        assert_eq!(
            (refunded.counts(), refunded.retry_after),
            ((false, 5, 4), -1),
            "{limiter:?}"
        );
        // A query then answers the same, its reset counted from its own
        // instant: a second less when a second ended between the two calls.
        let query = five(&mut c, &with(limiter, &["0"]));
        assert_eq!(
            (query.counts(), query.retry_after),
            (refunded.counts(), refunded.retry_after),
            "{limiter:?}"
        );
        assert!(
            (refunded.reset - 1..=refunded.reset).contains(&query.reset),
            "{limiter:?}: {query:?} after {refunded:?}"
        );
        // The expiry follows the rested instant, which came no later.
        let after = pexpiretime(&mut c, key);
        assert!(after <= expiry, "{limiter:?}: {after} after {expiry}");
        if limiter[0] == "RL.GCRA" || limiter[0] == "RL.TOKEN_BUCKET" {
            // Rested 2 hours sooner: 2 units of an hour each.
            assert!(
                (expiry - after - 7_200_000).abs() <= 1_000,
                "{limiter:?}: {expiry} -> {after}"
            );
        }
        // The units given back can be taken again, and no more.
        assert_eq!(
            five(&mut c, &with(limiter, &["4"])).counts(),
            (false, 5, 0),
            "{limiter:?}"
        );
        assert!(five(&mut c, limiter).blocked, "{limiter:?}");
    }
}

#[test]
fn a_refund_that_rests_the_limiter_deletes_its_key() {
    let s = Server::start();
    let mut c = s.client();
    for limiter in LIMITERS {
        let key = limiter[1];
        five(&mut c, &with(limiter, &["2"]));
        // More than was taken: rested, no further.
        let rested = five(&mut c, &with(limiter, &["5", "REFUND"]));
        assert_eq!(rested, Reply::allowed(5, 5, 0), "{limiter:?}");
        let exists: i64 = cmd(&["EXISTS", key]).query(&mut c).unwrap();
        assert_eq!(exists, 0, "{limiter:?}");
    }
}

/// A bucket's 28 bytes: updated_at (µs), grains per token, level in grains.
fn bucket_state(c: &mut Connection, key: &str) -> (u64, u64, i128) {
    let bytes: Vec<u8> = cmd(&["GET", key]).query(c).unwrap();
    assert_eq!((bytes.len(), bytes.first()), (28, Some(&b'T')), "{bytes:?}");
    let field = |from: usize, to: usize| {
        bytes[from..to]
            .iter()
            .rev()
            .fold(0u128, |v, b| (v << 8) | u128::from(*b))
    };
    let level = ((field(16, 28) << 32) as i128) >> 32;
    (field(1, 9) as u64, field(9, 16) as u64, level)
}

/// Regression: a slow bucket's reservation, 100 s ahead, refunded at a rate
/// of 10^9 tokens per 2 ms, owes 5 * 10^13 tokens of refill: deeper than a
/// stored debt may go. It was stored as of now, and every later call on
/// the key answered "does not hold a valid RL.TOKEN_BUCKET state". It is
/// stored as of the instant the refill brings it near full, the
/// reservation's own here: the same level at every instant.
#[test]
fn a_refund_owing_a_deep_refill_leaves_a_state_that_reads_back() {
    let s = Server::start();
    let mut c = s.client();
    let slow = ["RL.TOKEN_BUCKET", "r:deep", "1", "1", "100"];
    assert_eq!(five(&mut c, &slow).counts(), (false, 1, 0));
    let reserved = five(&mut c, &with(&slow, &["1", "WAIT", "200"]));
    assert!(!reserved.blocked && reserved.retry_after >= 99, "{reserved:?}");
    let (at, grains, level) = bucket_state(&mut c, "r:deep");
    assert_eq!((grains, level), (100_000_000, 0));
    let fast = ["RL.TOKEN_BUCKET", "r:deep", "20", "1000000000", "2"];
    let refunded = five(&mut c, &with(&fast, &["1", "MS", "REFUND"]));
    assert_eq!((refunded.counts(), refunded.retry_after), ((false, 20, 0), -1));
    // One token (a grain at this rate) more, as of the reservation's instant.
    assert_eq!(bucket_state(&mut c, "r:deep"), (at, 1, 1));
    assert_eq!(five(&mut c, &with(&fast, &["0", "MS"])).counts(), (false, 20, 0));
    assert_eq!(five(&mut c, &with(&slow, &["0"])).counts(), (false, 1, 0));
}

#[test]
fn a_refund_that_changes_nothing_writes_nothing() {
    let s = Server::start();
    let mut c = s.client();
    for limiter in LIMITERS {
        let key = limiter[1];
        // No key: a refund never creates one.
        let before = dirty(&mut c);
        assert_eq!(
            five(&mut c, &with(limiter, &["3", "REFUND"])),
            Reply::allowed(5, 5, 0)
        );
        assert_eq!(snapshot(&mut c, key).0, None, "{limiter:?}");
        assert_eq!(dirty(&mut c), before, "{limiter:?}");
        five(&mut c, &with(limiter, &["3"]));
        let (state, before) = (snapshot(&mut c, key), dirty(&mut c));
        // PEEK answers as the refund would; 0 REFUND is a query.
        let peeked = five(&mut c, &with(limiter, &["2", "PEEK", "REFUND"]));
        assert_eq!(peeked.counts(), (false, 5, 4), "{limiter:?}");
        assert_eq!(
            five(&mut c, &with(limiter, &["0", "REFUND"])).counts(),
            (false, 5, 2),
            "{limiter:?}"
        );
        assert_eq!(
            (snapshot(&mut c, key), dirty(&mut c)),
            (state, before),
            "{limiter:?}"
        );
    }
}

/// Refunds are replicated as their effects: a replica without the module
/// and an AOF replay hold the master's keys, the deleted ones included;
/// `RL.ALL ... REFUND` gives units back to each of its limits.
#[test]
fn refunds_replicate_as_their_effects() {
    let mut master = Server::master(&common::AOF_ALWAYS);
    let mut m = master.client();
    let replica = Server::replica_of(&master, false);
    let mut r = replica.client();
    for limiter in LIMITERS {
        five(&mut m, &with(limiter, &["3"]));
        five(&mut m, &with(limiter, &["1", "REFUND"]));
    }
    // A log long enough to be patched in place: 10 entries, 5 given back.
    let long = ["RL.SLIDING_LOG", "r:long", "20", "3600"];
    five(&mut m, &with(&long, &["10"]));
    assert_eq!(
        five(&mut m, &with(&long, &["5", "REFUND"])).counts(),
        (false, 20, 15)
    );
    // One limiter rested by its refund: gone everywhere.
    five(&mut m, &["RL.FIXED", "r:gone", "5", "1000000000", "2"]);
    five(&mut m, &["RL.FIXED", "r:gone", "5", "1000000000", "2", "REFUND"]);
    // Two limits refunded at once.
    let all = [
        "RL.ALL",
        "2",
        "{u}:burst",
        "{u}:hourly",
        "GCRA",
        "2",
        "1",
        "3600",
        "SLIDING_LOG",
        "3",
        "3600",
    ];
    assert_eq!(six(&mut m, &with(&all, &["2"])).0.counts(), (false, 3, 1));
    let (refunded, position) = six(&mut m, &with(&all, &["1", "REFUND"]));
    assert_eq!((refunded.counts(), position), ((false, 3, 2), 1));
    let mut keys: Vec<&str> = LIMITERS.iter().map(|l| l[1]).collect();
    keys.extend(["r:long", "r:gone", "{u}:burst", "{u}:hourly"]);
    let acked: i64 = cmd(&["WAIT", "1", "10000"]).query(&mut m).unwrap();
    assert_eq!(acked, 1);
    let on_master: Vec<_> = keys.iter().map(|k| snapshot(&mut m, k)).collect();
    assert_eq!(on_master[keys.len() - 3].0, None, "r:gone was deleted");
    assert!(on_master.iter().filter(|s| s.0.is_some()).all(|s| s.1 > 0));
    let on_replica: Vec<_> = keys.iter().map(|k| snapshot(&mut r, k)).collect();
    assert_eq!(on_master, on_replica);
    master.crash_and_restart();
    let mut m = master.client();
    let replayed: Vec<_> = keys.iter().map(|k| snapshot(&mut m, k)).collect();
    assert_eq!(replayed, on_master);
    // The limiters go on from there: the long log holds 5 of 20.
    assert_eq!(five(&mut m, &with(&long, &["10"])).counts(), (false, 20, 5));
}

#[test]
fn info_counts_refunds_apart() {
    let s = Server::start();
    let mut c = s.client();
    let gcra = LIMITERS[0];
    five(&mut c, &with(gcra, &["3"]));
    five(&mut c, &with(gcra, &["2", "REFUND"]));
    // Changes nothing: counted as a refund, with no units.
    five(&mut c, &with(gcra, &["2", "PEEK", "REFUND"]));
    let all = ["RL.ALL", "1", "r:all", "FIXED", "5", "1000000000"];
    six(&mut c, &with(&all, &["2"]));
    six(&mut c, &with(&all, &["2", "REFUND"]));
    if common::module_only() {
        return; // the rest reads INFO, which counts the module's calls alone
    }
    let field = |c: &mut Connection, f: &str| info_field(c, "ratelimit", &format!("ratelimit_{f}"));
    assert_eq!(
        [
            "gcra_calls",
            "gcra_allowed",
            "gcra_refused",
            "gcra_refunds",
            "gcra_refunded"
        ]
        .map(|f| field(&mut c, f)),
        [3, 1, 0, 2, 2]
    );
    assert_eq!(
        ["all_calls", "all_allowed", "all_refunds", "all_refunded"].map(|f| field(&mut c, f)),
        [2, 1, 1, 2]
    );
}

#[test]
fn refund_is_documented_where_it_is_taken() {
    if common::module_only() {
        return; // about the module itself
    }
    let s = Server::start();
    let mut c = s.client();
    // Redis 6.x has no COMMAND DOCS: there `docs` asserts its error.
    let docs = |c: &mut Connection, name: &str| common::command_docs(c, name).map(|d| d.to_lowercase());
    for name in [
        "rl.gcra",
        "rl.token_bucket",
        "rl.fixed",
        "rl.sliding_log",
        "rl.sliding_counter",
        "rl.all",
    ] {
        if let Some(docs) = docs(&mut c, name) {
            assert!(docs.contains("refund"), "{name}");
        }
    }
    if let Some(docs) = docs(&mut c, "rl.concurrency") {
        assert!(!docs.contains("refund"));
    }
    let e = cmd(&["RL.CONCURRENCY", "j", "2", "60", "REFUND"])
        .query::<redis::Value>(&mut c)
        .unwrap_err();
    assert_eq!(
        common::error_text(&e),
        "ERR syntax error: 'rl.concurrency' does not take REFUND (it takes MS or PEEK)"
    );
}
