//! Blocks and the shadow switch on a real server: what only a server can
//! show. A refusal with BLOCK writes the block into the key's own value
//! (its expiry covering it) and replicates it like any write; refusals
//! under it write nothing; the first write after it drops it; RL.ALL blocks
//! only the limits that refuse; replicas without the module and an AOF
//! replay hold the same bytes; `ratelimit.shadow` answers refusals as
//! allowed and records nothing. (The decisions themselves are checked at
//! exact instants by rl-core's tests and the unit tests.)

mod common;

use common::{
    all, cmd, error, five, info_field, rate_commands, server_micros, snapshot, Server, ServerKind, AOF_ALWAYS,
};

/// `B` and a block's end in µs (7 bytes), as a blocked key's value starts.
fn header(until_micros: u64) -> Vec<u8> {
    let mut header = vec![b'B'];
    header.extend_from_slice(&until_micros.to_le_bytes()[..7]);
    header
}

/// The block's end a key's value starts with, if it starts with one.
fn block_of(con: &mut redis::Connection, key: &str) -> Option<u64> {
    let value: Option<Vec<u8>> = cmd(&["GET", key]).query(con).unwrap();
    let value = value?;
    (value.first() == Some(&b'B')).then(|| {
        let mut end = [0u8; 8];
        end[..7].copy_from_slice(&value[1..8]);
        u64::from_le_bytes(end)
    })
}

/// For every algorithm, 3 at once and 3 more per 1500 s: the fourth request
/// with `BLOCK 3600` blocks the key for an hour (every algorithm's own wait
/// and its full rest, at most two windows, are shorter); every request then
/// is refused with the block's time left, and changes nothing. (A fixed
/// window's boundary falls between two calls here once in 1500 s of calls'
/// time, not once in 10.)
#[test]
fn block_on_every_algorithm() {
    let s = Server::start();
    let mut c = s.client();
    for sample in rate_commands() {
        let key = format!("login:{}", sample.lower());
        let params = sample.rate(3, "1500");
        let call = |extra: &[&str]| {
            let mut args = vec![sample.name, key.as_str()];
            args.extend(params.iter().map(String::as_str));
            args.extend_from_slice(extra);
            args.iter().map(|a| a.to_string()).collect::<Vec<_>>()
        };
        let run = |c: &mut redis::Connection, extra: &[&str]| {
            let args = call(extra);
            let args: Vec<&str> = args.iter().map(String::as_str).collect();
            five(c, &args)
        };
        assert!(!run(&mut c, &["3"]).blocked, "{}", sample.name);
        let state = snapshot(&mut c, &key);
        let before = server_micros(&mut c);
        let blocked = run(&mut c, &["BLOCK", "3600"]);
        let after = server_micros(&mut c);
        assert_eq!(
            (
                blocked.blocked,
                blocked.limit,
                blocked.remaining,
                blocked.retry_after,
                blocked.reset
            ),
            (true, 3, 0, 3600, 3600),
            "{}",
            sample.name
        );
        // The block is the call's instant plus an hour, in the key's value;
        // the key expires when it ends.
        let until = block_of(&mut c, &key).expect("a block header");
        assert!((before + 3_600_000_000..=after + 3_600_000_000).contains(&until));
        let pexpiretime = common::pexpiretime(&mut c, &key);
        assert_eq!(pexpiretime, until.div_ceil(1000) as i64, "{}", sample.name);
        let blocked_state = snapshot(&mut c, &key);
        assert_ne!(blocked_state, state);
        // Refused while blocked, whatever is asked; nothing changes.
        for extra in [&[][..], &["BLOCK", "7200"], &["PEEK"], &["0"], &["2", "MS"]] {
            let unit = if extra.contains(&"MS") { 1_000 } else { 1_000_000 };
            // The time left at the call lies between the time left just
            // before it and just after it, however long the call took.
            let most = (until - server_micros(&mut c)).div_ceil(unit) as i64;
            let reply = run(&mut c, extra);
            let least = (until - server_micros(&mut c)).div_ceil(unit) as i64;
            assert!(
                reply.blocked && reply.remaining == 0,
                "{} {extra:?}: {reply:?}",
                sample.name
            );
            assert!((least..=most).contains(&reply.retry_after), "{reply:?}");
            assert_eq!(snapshot(&mut c, &key), blocked_state, "{} {extra:?}", sample.name);
        }
        if common::module_only() {
            continue; // INFO counts the module's calls alone
        }
        assert_eq!(
            info_field(
                &mut c,
                "ratelimit",
                &format!("ratelimit_{}_blocks", sample.lower().trim_start_matches("rl."))
            ),
            1
        );
    }
}

/// A stored block that has ended is no block: the request is judged on the
/// state alone, and its write drops the header. One in the future refuses.
/// Periods of 10^9 s: a fixed window's key expires at the window's end (the
/// next in 2033), not between the call and the read of its state.
#[test]
fn a_block_ends_by_its_instant_and_goes_at_the_next_write() {
    let s = Server::start();
    let mut c = s.client();
    for sample in rate_commands() {
        let key = format!("k:{}", sample.lower());
        let params = sample.rate(3, "1000000000");
        let mut args = vec![sample.name, key.as_str()];
        args.extend(params.iter().map(String::as_str));
        assert!(!five(&mut c, &args).blocked);
        let plain: Vec<u8> = cmd(&["GET", &key]).query(&mut c).unwrap();
        let now = server_micros(&mut c);
        for (until, refused) in [(now - 1_000_000, false), (now + 3_600_000_000, true)] {
            let framed = [header(until), plain.clone()].concat();
            redis::cmd("SET")
                .arg(&key)
                .arg(&framed)
                .arg("PX")
                .arg(60_000)
                .query::<()>(&mut c)
                .unwrap();
            let mut peek = args.clone();
            peek.push("PEEK");
            assert_eq!(five(&mut c, &peek).blocked, refused, "{} {until}", sample.name);
            if !refused {
                assert!(!five(&mut c, &args).blocked);
                // The header went (a sliding log holds one entry more).
                let after: Vec<u8> = cmd(&["GET", &key]).query(&mut c).unwrap();
                let grown = if sample.name == "RL.SLIDING_LOG" { 8 } else { 0 };
                assert_eq!(after.len(), plain.len() + grown, "{}", sample.name);
                assert_eq!(after[0], plain[0], "{}", sample.name);
            }
        }
        // The header alone: a rested limiter under a block.
        redis::cmd("SET")
            .arg(&key)
            .arg(header(now + 3_600_000_000))
            .query::<()>(&mut c)
            .unwrap();
        let query = five(&mut c, &[&args[..], &["0"]].concat());
        assert!(query.blocked && query.remaining == 0, "{query:?}");
        // A header cut short is an error that names the problem.
        redis::cmd("SET")
            .arg(&key)
            .arg(&b"B\x01\x02"[..])
            .query::<()>(&mut c)
            .unwrap();
        assert_eq!(
            error(&mut c, &args),
            format!(
                "ERR key '{key}' does not hold a valid {} state: expected 'B' and a 7-byte instant before the state",
                sample.name
            )
        );
    }
}

/// RL.ALL blocks each limit that refuses on its own, and only those; while
/// one is blocked, nothing is counted on the others.
#[test]
fn all_blocks_only_the_refusing_limits() {
    let s = Server::start();
    let mut c = s.client();
    let login = [
        "RL.ALL",
        "2",
        "login:{alice}:account",
        "login:{alice}:1.2.3.4",
        "GCRA",
        "4",
        "5",
        "900",
        "GCRA",
        "9",
        "10",
        "900",
    ];
    let with_block = [&login[..], &["BLOCK", "3600"]].concat();
    for remaining in (0..5).rev() {
        let (reply, position) = all(&mut c, &with_block);
        assert_eq!((reply.blocked, reply.remaining, position), (false, remaining, 1));
    }
    let ip = snapshot(&mut c, "login:{alice}:1.2.3.4");
    let (reply, position) = all(&mut c, &with_block);
    assert_eq!(
        (reply.blocked, reply.retry_after, reply.reset, position),
        (true, 3600, 3600, 1)
    );
    assert!(block_of(&mut c, "login:{alice}:account").is_some());
    assert_eq!(block_of(&mut c, "login:{alice}:1.2.3.4"), None);
    assert_eq!(snapshot(&mut c, "login:{alice}:1.2.3.4"), ip);
    for _ in 0..3 {
        let (reply, position) = all(&mut c, &login);
        assert_eq!((reply.blocked, position), (true, 1));
        assert_eq!(snapshot(&mut c, "login:{alice}:1.2.3.4"), ip);
    }
    if common::module_only() {
        return; // the rest reads INFO, which counts the module's calls alone
    }
    assert_eq!(info_field(&mut c, "ratelimit", "ratelimit_all_blocks"), 1);
    // DEL ends a block.
    cmd(&["DEL", "login:{alice}:account"])
        .query::<()>(&mut c)
        .unwrap();
    assert!(!all(&mut c, &login).0.blocked);
}

/// A block is replicated and persisted like any write: a replica without
/// the module and the AOF hold the master's bytes and expiry.
#[test]
fn blocks_replicate_and_survive_an_aof_replay() {
    let mut master = Server::master(&AOF_ALWAYS);
    let replica = Server::replica_of(&master, false);
    let mut m = master.client();
    let key = "login:bob";
    let args = ["RL.SLIDING_LOG", key, "5", "900", "BLOCK", "3600"];
    for _ in 0..5 {
        assert!(!five(&mut m, &args).blocked);
    }
    assert!(five(&mut m, &args).blocked);
    assert!(five(&mut m, &args).blocked);
    let on_master = snapshot(&mut m, key);
    assert!(block_of(&mut m, key).is_some());
    let replicated: i64 = cmd(&["WAIT", "1", "5000"]).query(&mut m).unwrap();
    assert_eq!(replicated, 1);
    let mut r = replica.client();
    assert_eq!(snapshot(&mut r, key), on_master);
    drop(m);
    master.crash_and_restart();
    let mut m = master.client();
    assert_eq!(snapshot(&mut m, key), on_master);
    assert!(five(&mut m, &["RL.SLIDING_LOG", key, "5", "900"]).blocked);
}

/// A blocked GCRA limiter takes at most 16 bytes more than an unblocked one.
#[test]
fn a_block_costs_at_most_sixteen_bytes() {
    let s = Server::start();
    let mut c = s.client();
    let args = ["RL.GCRA", "user:000001", "0", "1", "60"];
    five(&mut c, &args);
    let plain: i64 = cmd(&["MEMORY", "USAGE", "user:000001"]).query(&mut c).unwrap();
    assert!(five(&mut c, &[&args[..], &["BLOCK", "600"]].concat()).blocked);
    let blocked: i64 = cmd(&["MEMORY", "USAGE", "user:000001"]).query(&mut c).unwrap();
    let server = ServerKind::of(&mut c);
    println!("{}: MEMORY USAGE {plain} -> {blocked}", server.name());
    // The C library's malloc may report a chunk up to `slack` bytes
    // larger than asked, as the heap happens to lie (see
    // `ServerKind::memory`): either size may carry it.
    let slack = server.memory().map_or(0, |m| m.slack);
    assert!(
        (plain - slack..=plain + 16 + slack).contains(&blocked),
        "{plain} -> {blocked}"
    );
    // What each server measured here reports: the 8-byte header moves a
    // value into the next allocation size, or fits in the room it had.
    let expected = match (server.valkey, server.version.0, server.version.1) {
        _ if server.memory().is_none() => None,
        // A new key written once holds Redis 6's embedded string (one
        // allocation, its object header included, as MEMORY USAGE counts
        // it): the header adds its 8 bytes and no more.
        (false, 6, 0) => Some((67, 75)),
        (false, 6, 2) => Some((75, 83)),
        (false, 7, 0) => Some((72, 88)),
        (false, 8, 2) => Some((56, 64)),
        (true, 8, 1) => Some((56, 72)),
        (true, 9, 1) => Some((56, 56)),
        _ => None,
    };
    if let (Some((unblocked, with_block)), Some(memory)) = (expected, server.memory()) {
        assert!(
            memory.holds(&[(plain, unblocked), (blocked, with_block)]),
            "{}: {plain} -> {blocked}, expected {unblocked} -> {with_block}",
            server.name()
        );
    }
}

/// BLOCK where it does not belong, and with what it excludes: errors that
/// change nothing.
#[test]
fn block_errors() {
    let s = Server::start();
    let mut c = s.client();
    five(&mut c, &["RL.FIXED", "k", "1", "1000000000"]);
    let before = snapshot(&mut c, "k");
    for (args, expected) in [
        (
            &["RL.FIXED", "k", "1", "1000000000", "REFUND", "BLOCK", "60"][..],
            "ERR syntax error: REFUND and BLOCK cannot be combined (a refund is never refused)",
        ),
        (
            &["RL.FIXED", "k", "1", "1000000000", "BLOCK"],
            "ERR syntax error: BLOCK needs a value (BLOCK duration)",
        ),
        (
            &["RL.FIXED", "k", "1", "1000000000", "BLOCK", "60", "BLOCK", "60"],
            "ERR syntax error: BLOCK is given twice",
        ),
        (
            &["RL.FIXED", "k", "1", "1000000000", "BLOCK", "0"],
            "ERR BLOCK duration must be an integer from 1 to 1000000000",
        ),
        (
            &["RL.FIXED", "k", "1", "1000000000", "BLOCK", "1000000000001", "MS"],
            "ERR BLOCK duration must be an integer from 1 to 1000000000000",
        ),
        (
            &["RL.CONCURRENCY", "j", "1", "60", "BLOCK", "60"],
            "ERR syntax error: 'rl.concurrency' does not take BLOCK (it takes MS or PEEK)",
        ),
        (
            &["RL.RENEW", "j", "1", "60", "BLOCK"],
            "ERR syntax error: 'rl.renew' does not take BLOCK (it takes MS)",
        ),
    ] {
        assert_eq!(error(&mut c, args), expected, "{args:?}");
        assert_eq!(snapshot(&mut c, "k"), before);
    }
}

/// A server with the module loaded with `args`.
fn loaded_with(args: &[&str]) -> Server {
    let module = common::module_path();
    let module = module.to_string_lossy();
    let mut load = vec!["--loadmodule", &*module];
    load.extend_from_slice(args);
    Server::start_with(&load, false)
}

/// `CL.THROTTLE` takes no options, BLOCK included.
#[test]
fn cl_throttle_refuses_block() {
    if common::module_only() {
        return; // about the module itself (CL.THROTTLE)
    }
    let s = loaded_with(&["cl_throttle", "yes"]);
    let mut c = s.client();
    assert_eq!(
        error(&mut c, &["CL.THROTTLE", "k", "1", "1", "1", "1", "BLOCK", "60"]),
        "ERR syntax error: 'cl.throttle' takes no options, got 'BLOCK' (RL.GCRA takes MS, PEEK, REFUND, FORCE, WAIT, AT_MOST and BLOCK)"
    );
}

/// `ratelimit.shadow yes`: every refusal of the rate commands and RL.ALL is
/// answered as allowed, records nothing, starts no block and is counted;
/// leases are not affected; `no` restores enforcement at once.
#[test]
fn the_shadow_switch() {
    if common::module_only() {
        return; // the module's CONFIG SET (the library's switch is its settings table)
    }
    let s = Server::start();
    let mut c = s.client();
    let gcra = ["RL.GCRA", "k", "0", "1", "3600"];
    assert!(!five(&mut c, &gcra).blocked);
    let refused = five(&mut c, &gcra);
    assert!(refused.blocked);
    let state = snapshot(&mut c, "k");
    assert_eq!(common::setting(&mut c, "shadow"), "no");
    // On Redis 6.x the module is loaded again with `shadow yes`, which
    // starts its counters again.
    common::set_setting(&mut c, "shadow", "yes");
    assert_eq!(common::setting(&mut c, "shadow"), "yes");
    let refused_before = if common::tested().has_module_settings() {
        1
    } else {
        0
    };
    for _ in 0..3 {
        let shadowed = five(&mut c, &[&gcra[..], &["BLOCK", "600"]].concat());
        assert_eq!(
            (
                shadowed.blocked,
                shadowed.limit,
                shadowed.remaining,
                shadowed.retry_after
            ),
            (false, 1, 0, -1)
        );
        assert_eq!(snapshot(&mut c, "k"), state, "nothing recorded, no block");
    }
    let (reply, position) = all(&mut c, &["RL.ALL", "1", "k", "GCRA", "0", "1", "3600"]);
    assert_eq!((reply.blocked, reply.retry_after, position), (false, -1, 1));
    // Allowed requests are recorded as ever.
    assert!(!five(&mut c, &["RL.FIXED", "f", "1", "60"]).blocked);
    assert_eq!(five(&mut c, &["RL.FIXED", "f", "1", "60"]).remaining, 0);
    // Leases still refuse.
    let lease = common::six(&mut c, &["RL.CONCURRENCY", "j", "1", "60"]);
    assert!(!lease.0.blocked);
    assert!(common::six(&mut c, &["RL.CONCURRENCY", "j", "1", "60"]).0.blocked);
    assert_eq!(
        info_field(&mut c, "ratelimit", "ratelimit_gcra_shadow_refused"),
        3
    );
    assert_eq!(info_field(&mut c, "ratelimit", "ratelimit_all_shadow_refused"), 1);
    assert_eq!(
        info_field(&mut c, "ratelimit", "ratelimit_fixed_shadow_refused"),
        1
    );
    assert_eq!(
        info_field(&mut c, "ratelimit", "ratelimit_gcra_refused"),
        refused_before
    );
    common::set_setting(&mut c, "shadow", "no");
    assert!(five(&mut c, &gcra).blocked);
    // A module argument sets it at load.
    let loaded = loaded_with(&["shadow", "yes"]);
    let mut l = loaded.client();
    assert_eq!(common::setting(&mut l, "shadow"), "yes");
    five(&mut l, &gcra);
    assert!(!five(&mut l, &gcra).blocked);
}
