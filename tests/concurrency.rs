//! RL.CONCURRENCY, RL.RELEASE and RL.RENEW on a real server: deadlines
//! against the server's clock, lease ids across a key's expiry, the key's
//! expiry, replication to a replica without the module and the AOF, memory
//! per lease, and INFO. (The model itself is checked at exact instants by
//! the unit and property tests.)

mod common;

use common::{cmd, info_field, integer, server_micros, snapshot, Reply, Server};
use redis::Connection;
use std::time::{Duration, Instant};

/// `RL.CONCURRENCY`: the five integers and the lease.
fn take(c: &mut Connection, args: &[&str]) -> (Reply, i64) {
    let mut call = vec!["RL.CONCURRENCY"];
    call.extend_from_slice(args);
    common::six(c, &call)
}

/// A lease's id is the server's instant (µs), and its deadline, the key's
/// expiry, that instant plus the timeout, to the millisecond.
#[test]
fn a_lease_ends_at_its_deadline_by_the_servers_clock() {
    let s = Server::start();
    let mut c = s.client();
    let before = server_micros(&mut c);
    let (reply, lease) = take(&mut c, &["jobs", "2", "90000", "MS"]);
    let after = server_micros(&mut c);
    assert_eq!(reply, Reply::allowed(2, 1, 90_000));
    let lease = u64::try_from(lease).unwrap();
    assert!(
        before <= lease && lease <= after,
        "{before} <= {lease} <= {after}"
    );
    let (_, expires) = snapshot(&mut c, "jobs");
    assert_eq!(
        expires,
        i64::try_from((lease + 90_000_000).div_ceil(1000)).unwrap()
    );
    // Renewed for 10 s from now: the key's expiry follows the latest deadline.
    let renewed_at = server_micros(&mut c);
    assert_eq!(
        integer(&mut c, &["RL.RENEW", "jobs", &lease.to_string(), "200", "MS"]),
        1
    );
    let (_, expires) = snapshot(&mut c, "jobs");
    let expires = u64::try_from(expires).unwrap();
    assert!(renewed_at / 1000 + 200 <= expires && expires <= server_micros(&mut c) / 1000 + 201);
    // A crashed worker never releases: at its deadline the lease has ended
    // and the key is gone (waiting for the server's own expiry).
    let deadline = Instant::now() + Duration::from_secs(20);
    while integer(&mut c, &["EXISTS", "jobs"]) == 1 {
        assert!(Instant::now() < deadline, "the lease never ended");
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(server_micros(&mut c) / 1000 >= expires);
    assert_eq!(integer(&mut c, &["RL.RELEASE", "jobs", &lease.to_string()]), 0);
    // A new lease on the key created again never reuses an id.
    let (reply, again) = take(&mut c, &["jobs", "2", "90"]);
    assert_eq!(reply.counts(), (false, 2, 1));
    assert!(u64::try_from(again).unwrap() > lease);
}

/// Several leases; a refusal waits for the earliest deadline that frees
/// enough; releases and renewals; INFO counts each.
#[test]
fn leases_fill_refuse_and_free() {
    let s = Server::start();
    let mut c = s.client();
    let (_, first) = take(&mut c, &["pool", "3", "3600", "2"]);
    let (_, second) = take(&mut c, &["pool", "3", "1800", "1"]);
    // Full: two more units fit when the first lease ends, in an hour less
    // the time the two calls took (under a second).
    let (refused, none) = take(&mut c, &["pool", "3", "3600", "2"]);
    assert_eq!((refused.without_reset(), none), ((true, 3, 0, 3600), 0));
    let (query, none) = take(&mut c, &["pool", "3", "3600", "0"]);
    assert_eq!((query.counts(), none), ((false, 3, 0), 0));
    let before = snapshot(&mut c, "pool");
    let (peek, none) = take(&mut c, &["pool", "3", "3600", "1", "PEEK"]);
    assert_eq!((peek.counts(), none), ((true, 3, 0), 0));
    assert_eq!(
        snapshot(&mut c, "pool"),
        before,
        "refusals, queries and PEEK write nothing"
    );
    assert_eq!(integer(&mut c, &["RL.RELEASE", "pool", &first.to_string()]), 2);
    assert_eq!(integer(&mut c, &["RL.RELEASE", "pool", &first.to_string()]), 0);
    assert_eq!(
        integer(&mut c, &["RL.RENEW", "pool", &second.to_string(), "60"]),
        1
    );
    assert_eq!(
        integer(&mut c, &["RL.RENEW", "pool", &first.to_string(), "60"]),
        0
    );
    let (allowed, third) = take(&mut c, &["pool", "3", "3600", "2"]);
    assert_eq!(allowed.counts(), (false, 3, 0));
    assert!(third > second && second > first);
    if common::module_only() {
        return; // the rest reads INFO, which counts the module's calls alone
    }
    for (field, value) in [
        ("ratelimit_concurrency_calls", 6),
        ("ratelimit_concurrency_acquired", 4),
        ("ratelimit_concurrency_refused", 2),
        ("ratelimit_release_calls", 2),
        ("ratelimit_release_released", 1),
        ("ratelimit_renew_calls", 2),
        ("ratelimit_renew_renewed", 1),
    ] {
        assert_eq!(info_field(&mut c, "ratelimit", field), value, "{field}");
    }
    // The setting caps the limit, and may be changed at run time.
    let e = cmd(&["RL.CONCURRENCY", "pool", "10001", "60"])
        .query::<redis::Value>(&mut c)
        .unwrap_err();
    assert_eq!(
        common::error_text(&e),
        common::over_cap("limit", 10_000, "concurrency_max_limit", 1_000_000)
    );
    common::set_setting(&mut c, "concurrency_max_limit", "20000");
    assert_eq!(common::setting(&mut c, "concurrency_max_limit"), "20000");
    assert_eq!(
        take(&mut c, &["big", "10001", "60"]).0.counts(),
        (false, 10_001, 10_000)
    );
}

/// Memory per lease with 1,000 leases held, as each server reports it: at
/// most 32 bytes.
#[test]
fn memory_per_lease() {
    let s = Server::start();
    let mut c = s.client();
    let mut pipe = redis::pipe();
    for _ in 0..1000 {
        pipe.add_command(cmd(&["RL.CONCURRENCY", "user:000001", "1000", "3600"]));
    }
    let replies: Vec<Vec<i64>> = pipe.query(&mut c).unwrap();
    assert!(replies.iter().all(|r| r[0] == 0));
    assert_eq!(
        take(&mut c, &["user:000001", "1000", "3600"]).0.counts(),
        (true, 1000, 0)
    );
    let usage: i64 = cmd(&["MEMORY", "USAGE", "user:000001"]).query(&mut c).unwrap();
    let kind = common::ServerKind::of(&mut c);
    println!("MEMORY USAGE on {} with 1,000 leases: {usage} bytes", kind.name());
    match kind.memory() {
        Some(expected) => assert!(
            expected.holds(&[(usage, expected.leases_1000)]),
            "{usage}: {expected:?}"
        ),
        None => assert!(usage <= 32 * 1000, "{usage}"),
    }
    assert!(usage <= 32 * 1000, "{usage} bytes for 1,000 leases");
}

/// Takes, appends in place, renewals, releases and rewrites reach a replica
/// without the module and the AOF as effects: both hold the master's
/// state, and a promoted replica with the module goes on with it.
#[test]
fn leases_replicate_as_their_effects() {
    let mut master = Server::master(&common::AOF_ALWAYS);
    let mut m = master.client();
    let replica = Server::replica_of(&master, false);
    let mut r = replica.client();
    // Over 64 bytes after three leases: later ones are appended in place.
    let mut leases = Vec::new();
    for i in 0..6 {
        let timeout = (3600 + i).to_string();
        leases.push(take(&mut m, &["work", "10", &timeout]).1.to_string());
    }
    assert_eq!(integer(&mut m, &["RL.RENEW", "work", &leases[1], "7200"]), 1);
    assert_eq!(integer(&mut m, &["RL.RELEASE", "work", &leases[4]]), 1);
    take(&mut m, &["small", "2", "3600"]);
    let acked: i64 = cmd(&["WAIT", "1", "10000"]).query(&mut m).unwrap();
    assert_eq!(acked, 1);
    let keys = ["work", "small"];
    let on_master: Vec<_> = keys.iter().map(|k| snapshot(&mut m, k)).collect();
    assert!(on_master.iter().all(|(dump, at)| dump.is_some() && *at > 0));
    let on_replica: Vec<_> = keys.iter().map(|k| snapshot(&mut r, k)).collect();
    assert_eq!(on_master, on_replica);
    drop(m);
    master.crash_and_restart();
    let mut m = master.client();
    let replayed: Vec<_> = keys.iter().map(|k| snapshot(&mut m, k)).collect();
    assert_eq!(replayed, on_master);
    // The replayed leases still hold their units, and release as given.
    assert_eq!(
        take(&mut m, &["work", "10", "3600", "0"]).0.counts(),
        (false, 10, 5)
    );
    assert_eq!(integer(&mut m, &["RL.RELEASE", "work", &leases[1]]), 1);
}

/// A lease state whose ids the server's clock cannot have given (0, or past
/// 2^62: the next id would not fit a reply) is a corrupt state, as for the
/// other algorithms: every lease command answers the error and the key
/// stays as it was. (Before, `Q` and the last id 2^63 - 1 was read, and two
/// leases were then given with the id 0, which nothing can release.)
#[test]
fn a_lease_id_the_clock_cannot_give_is_a_corrupt_state() {
    let s = Server::start();
    let mut c = s.client();
    let impossible = "a lease id of 0 or past 2^62, which the server's clock never gives";
    let header = |id: u64| [&b"Q"[..], &id.to_le_bytes()].concat();
    let mut zero_record = header(0);
    zero_record.extend_from_slice(&0u64.to_le_bytes());
    zero_record.extend_from_slice(&(server_micros(&mut c) + 60_000_000).to_le_bytes());
    zero_record.extend_from_slice(&1u32.to_le_bytes());
    for (key, value) in [
        ("past", header(i64::MAX as u64)),
        ("beyond", header((1 << 62) + 1)),
        ("zero", header(0)),
        ("zero-record", zero_record),
    ] {
        redis::cmd("SET")
            .arg(key)
            .arg(&value)
            .query::<()>(&mut c)
            .unwrap();
        let before = snapshot(&mut c, key);
        for call in [
            &["RL.CONCURRENCY", key, "5", "60"][..],
            &["RL.CONCURRENCY", key, "5", "60", "PEEK"],
            &["RL.RELEASE", key, "1"],
            &["RL.RENEW", key, "1", "60"],
        ] {
            assert_eq!(
                common::error(&mut c, call),
                format!("ERR key '{key}' does not hold a valid RL.CONCURRENCY state: {impossible}"),
                "{call:?}"
            );
        }
        assert_eq!(snapshot(&mut c, key), before, "{key}");
        assert_eq!(
            redis::cmd("GET").arg(key).query::<Vec<u8>>(&mut c).unwrap(),
            value
        );
    }
    // The largest id is read, and its lease is released and renewed as
    // given; but no lease comes after it (its id would be past 2^62).
    let mut edge = header(0);
    edge.extend_from_slice(&(1u64 << 62).to_le_bytes());
    edge.extend_from_slice(&(server_micros(&mut c) + 60_000_000).to_le_bytes());
    edge.extend_from_slice(&2u32.to_le_bytes());
    redis::cmd("SET")
        .arg("edge")
        .arg(&edge)
        .query::<()>(&mut c)
        .unwrap();
    let last = (1u64 << 62).to_string();
    if common::edition() != common::Edition::Module {
        // Past 2^53, the functions edition's range: it says so, and
        // changes nothing.
        let before = snapshot(&mut c, "edge");
        for call in [
            &["RL.RENEW", "edge", &last, "60"][..],
            &["RL.CONCURRENCY", "edge", "5", "60"],
            &["RL.RELEASE", "edge", &last],
        ] {
            assert_eq!(
                common::error(&mut c, call),
                "ERR key 'edge' holds an RL.CONCURRENCY state beyond the functions edition's range (instants up to 6000000000000000 microseconds after the epoch, the year 2160)",
                "{call:?}"
            );
        }
        assert_eq!(snapshot(&mut c, "edge"), before);
        return;
    }
    assert_eq!(integer(&mut c, &["RL.RENEW", "edge", &last, "60"]), 1);
    let before = snapshot(&mut c, "edge");
    for call in [&["edge", "5", "60"][..], &["edge", "5", "60", "PEEK"]] {
        let mut args = vec!["RL.CONCURRENCY"];
        args.extend_from_slice(call);
        assert_eq!(
            common::error(&mut c, &args),
            "ERR key 'edge' does not hold a valid RL.CONCURRENCY state: its last lease id is 2^62, past which no lease is given"
        );
    }
    assert_eq!(snapshot(&mut c, "edge"), before);
    // A query gives no lease: it answers.
    assert_eq!(take(&mut c, &["edge", "5", "60", "0"]).0.counts(), (false, 5, 3));
    assert_eq!(integer(&mut c, &["RL.RELEASE", "edge", &last]), 2);
}
