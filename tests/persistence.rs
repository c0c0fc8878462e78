//! The same state everywhere: replicas (with and without the module), AOF
//! replay after a crash, AOF rewrite, RDB, and the replication cost.
//!
//! Every limiter here uses windows of an hour or more, so nothing expires
//! while a test compares servers; fixed windows, which end (and whose keys
//! expire) at the next epoch-aligned boundary, are 10^9 s long: the next
//! boundary is in 2033.

mod common;

use common::{cmd, five, info_field, integer, rate_commands, reply, sample, six, snapshot, Reply, Server};
use redis::Connection;

type Snapshot = Vec<(String, (Option<Vec<u8>>, i64))>;

/// A mixed workload over all five commands: allowed, refused, quantity 0,
/// PEEK, MS, several value forms (GCRA's integer and fractional forms, a
/// sliding log that has wrapped around its ring), and leases taken,
/// released and renewed. Returns the keys written.
fn workload(c: &mut Connection, prefix: &str) -> Vec<String> {
    let k = |name: &str| format!("{prefix}{name}");
    let (gcra_a, gcra_b, gcra_c) = (k("gcra:a"), k("gcra:b"), k("gcra:c"));
    let (tb, fx, fx_ms, log_a, log_c, sc, sc_ms) = (
        k("tb"),
        k("fx"),
        k("fx:ms"),
        k("log:a"),
        k("log:c"),
        k("sc"),
        k("sc:ms"),
    );
    let calls: Vec<Vec<&str>> = vec![
        vec!["RL.GCRA", &gcra_a, "2", "1", "3600"],
        vec!["RL.GCRA", &gcra_a, "2", "1", "3600", "2"],
        vec!["RL.GCRA", &gcra_a, "2", "1", "3600"],
        vec!["RL.GCRA", &gcra_a, "2", "1", "3600", "0"],
        vec!["RL.GCRA", &gcra_a, "2", "1", "3600", "PEEK"],
        vec!["RL.GCRA", &gcra_b, "5", "3", "3600"],
        vec!["RL.GCRA", &gcra_c, "5", "17", "3600", "2"],
        vec!["RL.GCRA", &gcra_c, "5", "17", "3600000", "1", "MS"],
        vec!["RL.TOKEN_BUCKET", &tb, "3", "1", "3600", "2"],
        vec!["RL.TOKEN_BUCKET", &tb, "3", "1", "3600", "2"],
        vec!["RL.TOKEN_BUCKET", &tb, "3", "1", "3600", "0"],
        vec!["RL.TOKEN_BUCKET", &tb, "3", "1", "3600", "1", "PEEK"],
        vec!["RL.FIXED", &fx, "3", "1000000000", "3"],
        vec!["RL.FIXED", &fx, "3", "1000000000"],
        vec!["RL.FIXED", &fx_ms, "5", "1000000000000", "2", "MS"],
        vec!["RL.SLIDING_LOG", &log_a, "4", "3600", "3"],
        vec!["RL.SLIDING_LOG", &log_a, "4", "3600"],
        vec!["RL.SLIDING_LOG", &log_a, "4", "3600"],
        vec!["RL.SLIDING_LOG", &log_a, "4", "3600", "0"],
        vec!["RL.SLIDING_COUNTER", &sc, "10", "7200", "6"],
        vec!["RL.SLIDING_COUNTER", &sc, "10", "7200", "5"],
        vec!["RL.SLIDING_COUNTER", &sc, "10", "7200", "4"],
        vec!["RL.SLIDING_COUNTER", &sc_ms, "10", "7200000", "3", "MS"],
    ];
    for call in &calls {
        five(c, call);
    }
    // A sliding log whose ring has turned (its oldest entry not in slot 0),
    // with entries two hours old, then overwritten across the ring's end.
    let old = common::server_micros(c) - 7_200_000_000;
    let mut ring = vec![b'L', 1, 0, 0, 0];
    for t in [old + 2, old, old + 1] {
        ring.extend_from_slice(&t.to_le_bytes());
    }
    redis::cmd("SET").arg(&log_c).arg(ring).query::<()>(c).unwrap();
    assert_eq!(
        five(c, &["RL.SLIDING_LOG", &log_c, "3", "3600", "3"]).counts(),
        (false, 3, 0)
    );
    // Logs longer than 64 bytes, replicated as patches: one growing, one
    // whose ring has turned, overwritten across its end.
    let log_d = k("log:d");
    for (q, expected) in [("10", 10), ("1", 9), ("9", 0)] {
        assert_eq!(
            five(c, &["RL.SLIDING_LOG", &log_d, "20", "3600", q]).counts(),
            (false, 20, expected)
        );
    }
    let log_e = k("log:e");
    let mut ring = vec![b'L', 3, 0, 0, 0];
    for i in 0..10u64 {
        ring.extend_from_slice(&(old + (i + 7) % 10).to_le_bytes());
    }
    redis::cmd("SET").arg(&log_e).arg(ring).query::<()>(c).unwrap();
    assert_eq!(
        five(c, &["RL.SLIDING_LOG", &log_e, "10", "3600", "8"]).counts(),
        (false, 10, 2)
    );
    // Leases: four taken (one of two units), one released, one renewed, a
    // refusal at the limit; seven records, so the last ones were appended in
    // place and replicated as patches.
    let leases = k("leases");
    let take = |c: &mut Connection, q: &str| six(c, &["RL.CONCURRENCY", &leases, "6", "3600", q]);
    let mut ids = Vec::new();
    for (q, remaining) in [("1", 5), ("2", 3), ("1", 2), ("1", 1)] {
        let (reply, id) = take(c, q);
        assert_eq!((reply.counts(), id > 0), ((false, 6, remaining), true));
        ids.push(id.to_string());
    }
    assert_eq!(integer(c, &["RL.RELEASE", &leases, &ids[1]]), 2);
    assert_eq!(integer(c, &["RL.RENEW", &leases, &ids[0], "7200"]), 1);
    for (q, remaining) in [("1", 2), ("2", 0)] {
        assert_eq!(take(c, q).0.counts(), (false, 6, remaining));
    }
    assert_eq!(take(c, "1"), (Reply::refused(6, 0, 3600, 7200), 0));
    let keys = [
        gcra_a, gcra_b, gcra_c, tb, fx, fx_ms, log_a, log_c, log_d, log_e, sc, sc_ms, leases,
    ];
    keys.to_vec()
}

fn snapshot_all(c: &mut Connection, keys: &[String]) -> Snapshot {
    keys.iter()
        .map(|k| {
            let snap = snapshot(c, k);
            assert!(
                snap.0.is_some() && snap.1 > 0,
                "{k} missing or without expiry: {snap:?}"
            );
            (k.clone(), snap)
        })
        .collect()
}

fn wait_for_replica(master: &mut Connection) {
    let acked: i64 = cmd(&["WAIT", "1", "10000"]).query(master).unwrap();
    assert_eq!(acked, 1, "the replica did not acknowledge");
}

fn replica_holds_the_same_state(replica_has_module: bool) {
    let master = Server::master(&[]);
    let mut m = master.client();
    // Part of the data reaches the replica in the initial sync (an RDB)...
    let mut keys = workload(&mut m, "before:");
    let replica = Server::replica_of(&master, replica_has_module);
    let mut r = replica.client();
    // ...and the rest as a stream of effects.
    keys.extend(workload(&mut m, "after:"));
    wait_for_replica(&mut m);
    let on_master = snapshot_all(&mut m, &keys);
    let on_replica = snapshot_all(&mut r, &keys);
    assert_eq!(on_master, on_replica);
    let dbsize: (i64, i64) = (
        cmd(&["DBSIZE"]).query(&mut m).unwrap(),
        cmd(&["DBSIZE"]).query(&mut r).unwrap(),
    );
    assert_eq!(dbsize.0, dbsize.1);
}

/// Failover: a master and a replica that both load the module. After the
/// workload, `WAIT`, and the replica's promotion (`REPLICAOF NO ONE`), every
/// limiter on the new master continues exactly where the old one left it:
/// the same calls, made on both, get the same replies (the old master stands
/// in for the limiter that was not failed over), and nothing extra is
/// admitted.
#[test]
fn a_promoted_replica_continues_every_limiter() {
    let master = Server::master(&[]);
    let mut m = master.client();
    let replica = Server::replica_of(&master, true);
    let mut r = replica.client();
    let keys = workload(&mut m, "");
    let (taken, lease) = six(&mut m, &["RL.CONCURRENCY", "lease:f", "1", "3600"]);
    assert_eq!(taken, Reply::allowed(1, 0, 3600));
    let lease = lease.to_string();
    wait_for_replica(&mut m);
    let on_master = snapshot_all(&mut m, &keys);
    let _: String = cmd(&["REPLICAOF", "NO", "ONE"]).query(&mut r).unwrap();
    assert_eq!(info_field_str(&mut r, "role"), "master");
    assert_eq!(snapshot_all(&mut r, &keys), on_master);
    // The workload's limiters, each called one unit at a time until past its
    // limit, on the old master and then on the new one.
    let continuations: [&[&str]; 13] = [
        &["RL.CONCURRENCY", "leases", "6", "3600"],
        &["RL.GCRA", "gcra:a", "2", "1", "3600"],
        &["RL.GCRA", "gcra:b", "5", "3", "3600"],
        &["RL.GCRA", "gcra:c", "5", "17", "3600"],
        &["RL.TOKEN_BUCKET", "tb", "3", "1", "3600"],
        &["RL.FIXED", "fx", "3", "1000000000"],
        &["RL.FIXED", "fx:ms", "5", "1000000000000", "MS"],
        &["RL.SLIDING_LOG", "log:a", "4", "3600"],
        &["RL.SLIDING_LOG", "log:d", "20", "3600"],
        &["RL.SLIDING_LOG", "log:e", "10", "3600"],
        &["RL.SLIDING_COUNTER", "sc", "10", "7200"],
        &["RL.SLIDING_COUNTER", "sc:ms", "10", "7200000", "MS"],
        &["RL.SLIDING_LOG", "log:c", "3", "3600"],
    ];
    for call in continuations {
        let mut admitted = [0, 0];
        let unit_micros: u128 = if call.contains(&"MS") { 1_000 } else { 1_000_000 };
        for _ in 0..8 {
            let started = std::time::Instant::now();
            let old = reply(&mut m, call);
            let new = reply(&mut r, call);
            let apart = started.elapsed().as_micros().div_ceil(unit_micros) as i64;
            // Blocked, limit and remaining exactly; the two servers share
            // this machine's clock, and read it at most `apart` units apart
            // (rounded up to the reply's unit: one more).
            assert_eq!(
                old.counts(),
                new.counts(),
                "{call:?}: {old:?} on the old master, {new:?} on the new"
            );
            for (old_time, new_time) in [(old.retry_after, new.retry_after), (old.reset, new.reset)] {
                assert!(
                    (old_time - new_time).abs() <= apart + 1,
                    "{call:?}: {old:?} {new:?}"
                );
            }
            admitted[0] += i64::from(!old.blocked);
            admitted[1] += i64::from(!new.blocked);
        }
        assert_eq!(admitted[0], admitted[1], "{call:?}");
        // Every limiter reaches its limit within the eight calls.
        assert!(reply(&mut r, call).blocked, "{call:?}");
    }
    // A lease taken on the old master is held on the new one, and can be
    // renewed and released there; the next lease's id is a new one.
    let holder = ["RL.CONCURRENCY", "lease:f", "1", "3600"];
    assert_eq!(six(&mut r, &holder).0.counts(), (true, 1, 0));
    assert_eq!(integer(&mut r, &["RL.RENEW", "lease:f", &lease, "60"]), 1);
    assert_eq!(integer(&mut r, &["RL.RELEASE", "lease:f", &lease]), 1);
    assert_eq!(integer(&mut r, &["RL.RELEASE", "lease:f", &lease]), 0);
    let (next, id) = six(&mut r, &holder);
    assert_eq!(next, Reply::allowed(1, 0, 3600));
    assert!(id.to_string() != lease && id > 0, "{id} after {lease}");
    // The promoted server writes on its own now, and stays a master.
    assert!(!five(&mut r, &["RL.GCRA", "new:key", "1", "1", "3600"]).blocked);
    assert_eq!(info_field_str(&mut r, "role"), "master");
}

fn info_field_str(c: &mut Connection, field: &str) -> String {
    let info: String = cmd(&["INFO", "replication"]).query(c).unwrap();
    info.lines()
        .find_map(|l| l.strip_prefix(&format!("{field}:")))
        .unwrap_or("")
        .trim()
        .to_string()
}

#[test]
fn a_replica_without_the_module_holds_the_same_state() {
    replica_holds_the_same_state(false);
}

#[test]
fn a_replica_with_the_module_holds_the_same_state() {
    replica_holds_the_same_state(true);
}

fn aof_text(server: &Server) -> String {
    let mut all = Vec::new();
    for entry in std::fs::read_dir(server.dir.join("appendonlydir")).expect("appendonlydir") {
        let path = entry.unwrap().path();
        if path.to_string_lossy().ends_with(".aof") {
            all.extend(std::fs::read(path).unwrap());
        }
    }
    common::aof_commands(&all)
}

/// A limiter that was refusing before the restart still refuses after it.
fn assert_still_refusing(c: &mut Connection) {
    let gcra = five(c, &["RL.GCRA", "gcra:a", "2", "1", "3600", "PEEK"]);
    assert_eq!((gcra.blocked, gcra.limit), (true, 3), "{gcra:?}");
    assert_eq!(
        five(c, &["RL.SLIDING_LOG", "log:a", "4", "3600", "PEEK"]).counts(),
        (true, 4, 0)
    );
    assert_eq!(
        five(c, &["RL.FIXED", "fx", "3", "1000000000", "PEEK"]).counts(),
        (true, 3, 0)
    );
}

#[test]
fn the_aof_replays_the_same_state_after_a_crash() {
    let mut s = Server::start_with(&common::AOF_ALWAYS, true);
    let mut c = s.client();
    let keys = workload(&mut c, "");
    let before = snapshot_all(&mut c, &keys);
    assert_still_refusing(&mut c);
    assert!(!aof_text(&s).contains("rl."), "a module command reached the AOF");
    drop(c);
    s.crash_and_restart();
    let mut c = s.client();
    assert_eq!(snapshot_all(&mut c, &keys), before);
    assert_still_refusing(&mut c);
    // The same after the AOF is rewritten from the dataset.
    let _: String = cmd(&["BGREWRITEAOF"]).query(&mut c).unwrap();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    while info_field(&mut c, "persistence", "aof_rewrite_in_progress") == 1
        || info_field(&mut c, "persistence", "aof_rewrite_scheduled") == 1
    {
        assert!(std::time::Instant::now() < deadline, "rewrite never finished");
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    drop(c);
    s.crash_and_restart();
    let mut c = s.client();
    assert_eq!(snapshot_all(&mut c, &keys), before);
    assert_still_refusing(&mut c);
    assert!(!aof_text(&s).contains("rl."));
}

#[test]
fn rdb_save_and_debug_reload_keep_the_state() {
    let mut s = Server::start_with(&["--enable-debug-command", "yes"], true);
    let mut c = s.client();
    let keys = workload(&mut c, "");
    let before = snapshot_all(&mut c, &keys);
    let _: String = cmd(&["SAVE"]).query(&mut c).unwrap();
    drop(c);
    s.crash_and_restart();
    let mut c = s.client();
    assert_eq!(snapshot_all(&mut c, &keys), before);
    assert_still_refusing(&mut c);
    let _: String = cmd(&["DEBUG", "RELOAD"]).query(&mut c).unwrap();
    assert_eq!(snapshot_all(&mut c, &keys), before);
    assert_still_refusing(&mut c);
}

/// Replication bytes per allowed request (`master_repl_offset` delta), with a
/// replica attached. The sliding log's cost must not grow with its limit.
#[test]
fn replication_bytes_per_allowed_request() {
    if common::module_only() {
        return; // the module's own replication stream
    }
    let master = Server::master(&[]);
    let mut m = master.client();
    let _replica = Server::replica_of(&master, false);
    // Every command at a limit of 100, which the 51 calls below stay within
    // (a sliding log grows to 51 entries); then a sliding log at a larger
    // limit, one unit and ten at a time. Each: (label, command, parameters
    // and quantity).
    let (log, quantity_10) = (
        "RL.SLIDING_LOG (limit 10000, growing)",
        "RL.SLIDING_LOG quantity 10",
    );
    let mut workloads: Vec<(String, &str, Vec<String>)> = rate_commands()
        .map(|s| (format!("{} (limit 100)", s.name), s.name, s.rate(100, "3600")))
        .collect();
    let larger = sample("RL.SLIDING_LOG").rate(10_000, "3600");
    workloads.push((log.into(), "RL.SLIDING_LOG", larger.clone()));
    workloads.push((
        quantity_10.into(),
        "RL.SLIDING_LOG",
        [larger, vec!["10".into()]].concat(),
    ));
    let mut report = Vec::new();
    for (i, (name, command, params)) in workloads.iter().enumerate() {
        let key = format!("user:{:06}", i + 1);
        let mut args = vec![*command, key.as_str()];
        args.extend(params.iter().map(String::as_str));
        five(&mut m, &args); // creating the key is a one-off
        let before = info_field(&mut m, "replication", "master_repl_offset");
        for _ in 0..50 {
            assert!(!five(&mut m, &args).blocked, "{name}");
        }
        let after = info_field(&mut m, "replication", "master_repl_offset");
        report.push((name.as_str(), (after - before) / 50));
    }
    for (name, bytes) in &report {
        println!("replication: {name}: {bytes} bytes per allowed request");
    }
    let bytes = |name: &str| report.iter().find(|(n, _)| *n == name).unwrap().1;
    for (name, bytes) in report.iter().filter(|(n, _)| *n != quantity_10) {
        assert!(*bytes > 0 && *bytes < 200, "{name}: {bytes}");
    }
    assert!(
        (bytes("RL.SLIDING_LOG (limit 100)") - bytes(log)).abs() <= 8,
        "{report:?}"
    );
    // Ten units cost ten more 8-byte instants, not a rewrite of the log.
    assert!(bytes(quantity_10) - bytes(log) <= 9 * 8 + 8, "{report:?}");
    // A log of at most 64 bytes (7 entries) is replicated whole, as one
    // SET .. PXAT, which is shorter than the transaction of patches used
    // beyond that size (the same for every unit of a growing log): compare
    // the 2nd-7th units with the 9th-14th.
    let key = format!("user:{:06}", workloads.len() + 1);
    let log = ["RL.SLIDING_LOG", &key, "100", "3600"];
    let mut offsets = Vec::new();
    for _ in 0..14 {
        offsets.push(info_field(&mut m, "replication", "master_repl_offset"));
        assert!(!five(&mut m, &log).blocked);
    }
    let (whole, patched) = ((offsets[7] - offsets[1]) / 6, (offsets[13] - offsets[8]) / 5);
    println!("replication: small log: {whole} bytes per unit whole, {patched} as patches");
    assert!(whole > 0 && whole < patched, "{whole} {patched}");
    // Leases on a key holding 10 to 20: an acquisition appends its record,
    // a release marks its record in place; neither sends the list.
    let key = format!("user:{:06}", workloads.len() + 2);
    let take = ["RL.CONCURRENCY", &key, "100", "3600"];
    let mut leases: Vec<String> = (0..10).map(|_| six(&mut m, &take).1.to_string()).collect();
    let before = info_field(&mut m, "replication", "master_repl_offset");
    for _ in 0..10 {
        leases.push(six(&mut m, &take).1.to_string());
    }
    let middle = info_field(&mut m, "replication", "master_repl_offset");
    for lease in &leases[..5] {
        assert_eq!(integer(&mut m, &["RL.RELEASE", &key, lease]), 1);
    }
    let after = info_field(&mut m, "replication", "master_repl_offset");
    let (acquired, released) = ((middle - before) / 10, (after - middle) / 5);
    println!("replication: RL.CONCURRENCY: {acquired} bytes per lease taken, {released} per lease released (10 to 20 held)");
    assert!(acquired < 200 && released < 150, "{acquired} {released}");
    wait_for_replica(&mut m);
}
