//! Never crash, never leak state, never let the wrong client in:
//! randomized arguments, corrupt states, ACL key patterns, OOM.

mod common;

use common::{
    cmd, default_commands, error, five, rate_commands, snapshot, Grammar, Reply, Rng, Sample, Server,
    COMMANDS,
};
use redis::{Connection, ConnectionLike, Value};

/// Tokens meant to break parsers.
fn nasty_token(rng: &mut Rng) -> Vec<u8> {
    const CORPUS: &[&[u8]] = &[
        b"",
        b"0",
        b"-0",
        b"00",
        b"01",
        b"1",
        b"2",
        b"3",
        b"10",
        b"60",
        b"1000",
        b"999999999",
        b"1000000000",
        b"1000000001",
        b"1000000000000",
        b"1000000000001",
        b"9223372036854775807",
        b"9223372036854775808",
        b"-9223372036854775808",
        b"-9223372036854775809",
        b"18446744073709551616",
        b"99999999999999999999999999999999999999999999",
        b"+1",
        b" 1",
        b"1 ",
        b"1.0",
        b"1e3",
        b"0x10",
        b"-1",
        b"\x00",
        b"1\x00",
        b"\xff\xfe",
        b"\xc3\x28",
        b"MS",
        b"ms",
        b"Ms",
        b"PEEK",
        b"peek",
        b"PEEKK",
        b"REFUND",
        b"refunds",
        b"MSS",
        b"M",
        b"PEE",
        b"\r\n",
        b"NaN",
        b"inf",
        b"key",
    ];
    match rng.below(10) {
        0 => (0..rng.below(40)).map(|_| rng.next() as u8).collect(),
        1 => (rng.next() % 100_000).to_string().into_bytes(),
        _ => rng.pick(CORPUS).to_vec(),
    }
}

/// Half the time pure noise; otherwise a well-formed call (positionals,
/// quantity, options in any order) with a few tokens replaced, inserted or
/// dropped, so that both replies and errors are exercised.
fn random_vector(rng: &mut Rng, sample: &Sample, leases: &[i64]) -> Vec<Vec<u8>> {
    // A lease is released or renewed on the keys leases are taken on.
    let name = match sample.grammar {
        Grammar::LeaseOp => "RL.CONCURRENCY",
        _ => sample.name,
    };
    let mut args: Vec<Vec<u8>> = Vec::new();
    match rng.below(10) {
        0 => {}
        1..=3 => args.push(rng.pick(&KEYS).as_bytes().to_vec()),
        // Mostly a key of this command's own, so states match.
        _ => args.push(format!("fz:{name}:{}", rng.below(3)).into_bytes()),
    }
    if rng.below(2) == 0 {
        for _ in 0..rng.below(8) {
            args.push(nasty_token(rng));
        }
        return args;
    }
    for param in sample.params {
        let low = if *param == "max_burst" { 0 } else { 1 };
        let value = match *param {
            // Mostly a lease given earlier in the run.
            "lease" if !leases.is_empty() && rng.below(4) > 0 => *rng.pick(leases) as u64,
            _ => low + rng.next() % 20,
        };
        args.push(value.to_string().into_bytes());
    }
    let options: &[&[u8]] = match sample.grammar {
        Grammar::LeaseOp => &[b"MS", b"ms"],
        // REFUND too for leases: an error there, which must change nothing.
        _ => &[b"MS", b"ms", b"PEEK", b"peek", b"REFUND", b"Refund"],
    };
    if sample.grammar != Grammar::LeaseOp && rng.below(2) == 0 {
        args.push((rng.next() % 25).to_string().into_bytes());
    }
    for _ in 0..rng.below(3) {
        args.push(rng.pick(options).to_vec());
    }
    for _ in 0..rng.below(3) {
        let at = rng.below(args.len() + 1);
        match rng.below(3) {
            0 if at < args.len() => args[at] = nasty_token(rng),
            1 if at < args.len() => {
                args.remove(at);
            }
            _ => args.insert(at, nasty_token(rng)),
        }
    }
    args
}

/// Keys the fuzzer aims at: some empty, some holding valid or corrupt states.
const KEYS: [&str; 6] = ["fz:a", "fz:b", "fz:c", "fz:list", "fz:junk", "fz:gcra"];

fn setup_keys(c: &mut Connection) {
    cmd(&["RPUSH", "fz:list", "x"]).query::<()>(c).unwrap();
    cmd(&["SET", "fz:junk", "not a limiter"]).query::<()>(c).unwrap();
    five(c, &["RL.GCRA", "fz:gcra", "5", "1", "3600"]);
}

/// Check one raw reply against the spec's invariants: five integers (a
/// `Reply`, so `blocked` is 0 or 1), then each field; for a lease, a sixth,
/// the lease taken (positive iff one was); for a lease's release or
/// renewal, one integer. `args` starts with the command's name. Returns
/// the lease taken, if any.
fn check_reply(args: &[Vec<u8>], reply: &Value) -> Option<i64> {
    let sample = COMMANDS
        .iter()
        .find(|s| s.name.as_bytes() == args[0])
        .unwrap_or_else(|| panic!("{args:?}: not a command of COMMANDS"));
    if sample.grammar == Grammar::LeaseOp {
        let Value::Int(answer) = reply else {
            panic!("{args:?}: not an integer: {reply:?}");
        };
        // Units released (a lease holds at most 24 in this run), or 0/1.
        let most = if sample.name == "RL.RELEASE" { 24 } else { 1 };
        assert!((0..=most).contains(answer), "{args:?}: {answer}");
        return None;
    }
    let Value::Array(items) = reply else {
        panic!("{args:?}: not an array: {reply:?}");
    };
    let mut fields: Vec<i64> = items
        .iter()
        .map(|v| match v {
            Value::Int(i) => *i,
            other => panic!("{args:?}: not an integer: {other:?}"),
        })
        .collect();
    let lease = match sample.grammar {
        Grammar::Lease => {
            assert_eq!(fields.len(), 6, "{args:?}: {fields:?}");
            fields.pop()
        }
        _ => None,
    };
    let r = Reply::try_from(fields).unwrap_or_else(|e| panic!("{args:?}: {e}"));
    if let Some(lease) = lease {
        let options = args.get(2 + sample.params.len()..).unwrap_or_default();
        let peek = options.iter().any(|a| a.eq_ignore_ascii_case(b"PEEK"));
        let quantity = args
            .get(2 + sample.params.len())
            .and_then(|t| std::str::from_utf8(t).ok())
            .and_then(|t| t.parse::<i64>().ok())
            .unwrap_or(1);
        assert_eq!(
            lease > 0,
            !r.blocked && !peek && quantity > 0,
            "{args:?}: {r:?} lease {lease}"
        );
        assert!(lease >= 0, "{args:?}: {lease}");
    }
    // A refund is never refused.
    let options = args.get(2 + sample.params.len()..).unwrap_or_default();
    if options.iter().any(|a| a.eq_ignore_ascii_case(b"REFUND")) {
        assert!(!r.blocked && r.retry_after == -1, "{args:?}: {r:?}");
    }
    assert!(r.limit >= 1, "{args:?}: {r:?}");
    assert!((0..=r.limit).contains(&r.remaining), "{args:?}: {r:?}");
    assert!(r.reset >= 0, "{args:?}: {r:?}");
    if !r.blocked {
        assert_eq!(r.retry_after, -1, "{args:?}: {r:?}");
    } else {
        assert!(r.retry_after >= -1, "{args:?}: {r:?}");
        // -1 on a refusal means "never": only when quantity > limit. The
        // quantity is the token after the key and positionals, if numeric.
        let sample = COMMANDS
            .iter()
            .find(|s| s.name.as_bytes() == args[0])
            .unwrap_or_else(|| panic!("{args:?}: not a command of COMMANDS"));
        let quantity = args
            .get(2 + sample.params.len())
            .and_then(|t| std::str::from_utf8(t).ok())
            .and_then(|t| t.parse::<i64>().ok())
            .unwrap_or(1);
        assert_eq!(r.retry_after == -1, quantity > r.limit, "{args:?}: {r:?}");
    }
    lease.filter(|&l| l > 0)
}

/// 100,000 random argument vectors: every reply is five integers obeying the
/// invariants, or an error that changed nothing; the server stays up.
#[test]
fn random_arguments_never_crash_or_corrupt() {
    let s = Server::start();
    let mut c = s.client();
    setup_keys(&mut c);
    // RL_FUZZ_SEED replays a run; by default every run explores anew.
    let seed = std::env::var("RL_FUZZ_SEED")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(0x9e37_79b9_7f4a_7c15 ^ u64::from(std::process::id()));
    // Shown with a failure's output: RL_FUZZ_SEED=<seed> replays the run.
    println!("seed {seed}");
    let mut rng = Rng(seed.max(1));
    let total = std::env::var("RL_FUZZ_CALLS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(100_000usize);
    let (mut replies, mut errors) = (0usize, 0usize);
    // Every command but RL.ALL, which tests/all.rs fuzzes over its keys.
    let commands: Vec<&Sample> = default_commands()
        .filter(|s| s.grammar != Grammar::Keys)
        .collect();
    let mut leases: Vec<i64> = Vec::new();
    let batch = 500;
    for _ in 0..total.div_ceil(batch) {
        let mut pipe = redis::pipe();
        let mut vectors = Vec::with_capacity(batch);
        for _ in 0..batch {
            let sample = *rng.pick(&commands);
            let name = sample.name;
            let args = random_vector(&mut rng, sample, &leases);
            let key = args.first().cloned().unwrap_or_default();
            // Before and after, atomically: the key's value and expiry.
            pipe.cmd("MULTI");
            pipe.cmd("DUMP").arg(&key);
            pipe.cmd("PEXPIRETIME").arg(&key);
            let mut call = redis::cmd(name);
            for a in &args {
                call.arg(&a[..]);
            }
            pipe.add_command(call);
            pipe.cmd("DUMP").arg(&key);
            pipe.cmd("PEXPIRETIME").arg(&key);
            pipe.cmd("EXEC");
            vectors.push((name, args));
        }
        // Raw replies: MULTI's OK, five QUEUED, then EXEC's array (which
        // holds the command's error, if any, in place).
        let raw = c
            .req_packed_commands(&pipe.get_packed_pipeline(), 0, 7 * batch)
            .unwrap();
        for ((name, args), chunk) in vectors.iter().zip(raw.chunks(7)) {
            let result = &chunk[6];
            if let Value::ServerError(e) = result {
                // The server refused the command before running anything (its
                // declared arity): the transaction ran nothing at all.
                assert_eq!(e.code(), "EXECABORT", "seed {seed}: {name} {args:?}: {e:?}");
                let Value::ServerError(queued) = &chunk[3] else {
                    panic!("seed {seed}: {name} {args:?}: {chunk:?}");
                };
                assert!(
                    queued
                        .details()
                        .is_some_and(|d| d.starts_with("wrong number of arguments")),
                    "seed {seed}: {name} {args:?}: {queued:?}"
                );
                errors += 1;
                continue;
            }
            let Value::Array(parts) = result else {
                panic!("seed {seed}: {name} {args:?}: EXEC gave {result:?}");
            };
            let [before, before_ttl, reply, after, after_ttl] = &parts[..] else {
                panic!("seed {seed}: {name} {args:?}: {parts:?}");
            };
            match reply {
                Value::ServerError(e) => {
                    errors += 1;
                    let code = e.code();
                    assert!(
                        code == "ERR" || code == "WRONGTYPE",
                        "seed {seed}: {name} {args:?}: {e:?}"
                    );
                    // A caught panic (an overflow, since every build checks
                    // them) is a bug, not an answer.
                    assert!(
                        !e.details().is_some_and(|d| d.contains("internal error")),
                        "seed {seed}: {name} {args:?}: {e:?}"
                    );
                    assert_eq!(
                        (before, before_ttl),
                        (after, after_ttl),
                        "seed {seed}: {name} {args:?} changed its key"
                    );
                }
                reply => {
                    replies += 1;
                    let mut full = vec![name.as_bytes().to_vec()];
                    full.extend(args.iter().cloned());
                    if let Some(lease) = check_reply(&full, reply) {
                        leases.push(lease);
                    }
                }
            }
        }
    }
    println!("{total} random calls (seed {seed}): {replies} replies, {errors} errors");
    assert!(
        replies > total / 10 && errors > total / 10,
        "the corpus should exercise both paths"
    );
    let pong: String = cmd(&["PING"]).query(&mut c).unwrap();
    assert_eq!(pong, "PONG");
}

/// For every algorithm: values of the right type but wrong content give an
/// error naming the key and the problem, and stay as they were; or, when the
/// bytes happen to form a valid state, a valid reply.
#[test]
fn corrupt_states_are_reported_and_kept() {
    let s = Server::start();
    let mut c = s.client();
    // Each command's sample (nothing in it refills or ends during the
    // test), and GCRA's fraction form too (17 per hour: T is no whole
    // number of ticks).
    let mut valid: Vec<(&str, &[&str])> = rate_commands().map(|s| (s.name, s.args)).collect();
    valid.push(("RL.GCRA", &["5", "17", "3600"]));
    // Real states of every algorithm, to truncate and to cross-feed.
    let mut samples: Vec<Vec<u8>> = Vec::new();
    for (i, (name, params)) in valid.iter().enumerate() {
        let key = format!("sample:{i}");
        let mut args = vec![*name, key.as_str()];
        args.extend_from_slice(params);
        args.push("2");
        five(&mut c, &args);
        samples.push(cmd(&["GET", &key]).query(&mut c).unwrap());
    }
    let mut values: Vec<Vec<u8>> = Vec::new();
    for sample in &samples {
        for cut in 0..sample.len() {
            values.push(sample[..cut].to_vec());
        }
        values.push(sample.clone());
        let mut longer = sample.clone();
        longer.push(b'0');
        values.push(longer);
    }
    let mut rng = Rng(42);
    for len in [1usize, 5, 12, 13, 16, 21, 28, 40, 100] {
        for tag in [b'F', b'C', b'T', b'L', b'1', b'x'] {
            let mut v: Vec<u8> = (0..len).map(|_| rng.next() as u8).collect();
            v[0] = tag;
            values.push(v);
        }
    }
    for extreme in [
        &b"0"[..],
        b"9223372036854775807",
        b"18446744073709551615",
        b"340282366920938463463374607431768211455",
        b"340282366920938463463374607431768211456",
        b"1/1",
        b"0/1000000000",
        b"1/1000000001",
        b"99999999999999999999999999999999999999/1",
        b"-1",
        b" 1",
    ] {
        values.push(extreme.to_vec());
    }
    let (mut errors, mut ok) = (0, 0);
    for value in &values {
        for (name, params) in &valid {
            redis::cmd("SET")
                .arg("victim")
                .arg(&value[..])
                .arg("PX")
                .arg(3_600_000)
                .query::<()>(&mut c)
                .unwrap();
            let before = snapshot(&mut c, "victim");
            let mut call = redis::cmd(name);
            call.arg("victim").arg(*params);
            match call.query::<Value>(&mut c) {
                Err(e) => {
                    errors += 1;
                    let text = common::error_text(&e);
                    // Bytes that are no limiter's state, or another
                    // algorithm's state, named as such.
                    let foreign = text.starts_with("ERR key 'victim' holds an RL.")
                        && text.contains(&format!(
                            ", not an {name} one (use another key, or DEL it to start over)"
                        ));
                    assert!(
                        foreign
                            || text.starts_with(&format!(
                                "ERR key 'victim' does not hold a valid {name} state: "
                            )),
                        "{name} on {value:?}: {text}"
                    );
                    assert_eq!(snapshot(&mut c, "victim"), before, "{name} on {value:?}");
                }
                Ok(reply) => {
                    ok += 1;
                    check_reply(&[name.as_bytes().to_vec(), value.clone()], &reply);
                }
            }
        }
    }
    println!(
        "{} corrupt-state calls: {errors} errors, {ok} decoded as valid states",
        values.len() * valid.len()
    );
    assert!(errors > ok);
    // Every other type is WRONGTYPE, and stays as it was.
    cmd(&["XADD", "stream", "*", "f", "v"])
        .query::<String>(&mut c)
        .unwrap();
    cmd(&["RPUSH", "list", "a"]).query::<()>(&mut c).unwrap();
    cmd(&["HSET", "hash", "f", "v"]).query::<()>(&mut c).unwrap();
    cmd(&["SADD", "set", "m"]).query::<()>(&mut c).unwrap();
    cmd(&["ZADD", "zset", "1", "m"]).query::<()>(&mut c).unwrap();
    for key in ["stream", "list", "hash", "set", "zset"] {
        for (name, params) in &valid {
            let before = snapshot(&mut c, key);
            let mut args = vec![*name, key];
            args.extend_from_slice(params);
            assert_eq!(
                error(&mut c, &args),
                "WRONGTYPE Operation against a key holding the wrong kind of value"
            );
            assert_eq!(snapshot(&mut c, key), before);
        }
    }
    let pong: String = cmd(&["PING"]).query(&mut c).unwrap();
    assert_eq!(pong, "PONG");
}

#[test]
fn acl_key_patterns_apply() {
    let s = Server::start();
    let mut admin = s.client();
    cmd(&[
        "ACL",
        "SETUSER",
        "limited",
        "on",
        ">secret",
        "~allowed:*",
        "+@all",
    ])
    .query::<()>(&mut admin)
    .unwrap();
    let mut c = redis::Client::open(format!("redis://limited:secret@127.0.0.1:{}/", s.port))
        .unwrap()
        .get_connection()
        .unwrap();
    for sample in rate_commands() {
        let name = sample.name;
        let e = error(&mut c, &sample.call("other:x", &[]));
        assert!(e.starts_with("NOPERM"), "{name}: {e}");
        let key = format!("allowed:{name}");
        assert!(!five(&mut c, &sample.call(&key, &[])).blocked, "{name}");
    }
    let exists: i64 = cmd(&["EXISTS", "other:x"]).query(&mut admin).unwrap();
    assert_eq!(exists, 0);
}

#[test]
fn out_of_memory_refuses_instead_of_growing() {
    let s = Server::start();
    let mut c = s.client();
    five(&mut c, &["RL.GCRA", "existing", "5", "1", "60"]);
    cmd(&["CONFIG", "SET", "maxmemory-policy", "noeviction"])
        .query::<()>(&mut c)
        .unwrap();
    cmd(&["CONFIG", "SET", "maxmemory", "1"])
        .query::<()>(&mut c)
        .unwrap();
    for sample in rate_commands() {
        let e = error(&mut c, &sample.call("new", &[]));
        assert!(e.starts_with("OOM "), "{}: {e}", sample.name);
    }
    let e = error(&mut c, &["RL.GCRA", "existing", "5", "1", "60"]);
    assert!(e.starts_with("OOM "), "{e}");
    cmd(&["CONFIG", "SET", "maxmemory", "0"])
        .query::<()>(&mut c)
        .unwrap();
    let exists: i64 = cmd(&["EXISTS", "new"]).query(&mut c).unwrap();
    assert_eq!(exists, 0);
}
