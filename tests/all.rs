//! RL.ALL on a real server: what only a server can show. Its keys are
//! declared (COMMAND GETKEYS, ACL key patterns on every key), a refusal
//! writes nothing on any key, an allowed request replicates every key's
//! effect in one MULTI/EXEC (to a replica without the module, and to the
//! AOF), it mixes freely with the single commands, INFO counts it, and no
//! random request crashes the server or writes when it is refused. (The
//! decisions themselves are checked at exact instants by the unit tests.)

mod common;

use common::{all, cmd, error, five, info_field, snapshot, Reply, Rng, Server};
use redis::{ConnectionLike, Value};

/// Both limits of one user, for an hour: a burst of 3 (one more an hour)
/// and 2 per hour.
const BURST_AND_HOURLY: [&str; 11] = [
    "RL.ALL",
    "2",
    "{u}:burst",
    "{u}:hourly",
    "GCRA",
    "2",
    "1",
    "3600",
    "SLIDING_LOG",
    "2",
    "3600",
];

#[test]
fn keys_are_declared_for_getkeys_and_command_info() {
    if common::module_only() {
        return; // about the module itself
    }
    let s = Server::start();
    let mut c = s.client();
    let keys: Vec<String> = cmd(&[
        "COMMAND", "GETKEYS", "RL.ALL", "2", "a", "b", "FIXED", "1", "1", "GCRA", "1", "1", "1",
    ])
    .query(&mut c)
    .unwrap();
    assert_eq!(keys, ["a", "b"]);
    let info: Value = cmd(&["COMMAND", "INFO", "rl.all"]).query(&mut c).unwrap();
    let text = format!("{info:?}");
    for flag in ["write", "denyoom", "movablekeys"] {
        assert!(text.contains(flag), "{flag}: {text}");
    }
    assert!(!text.contains("\"fast\""), "{text}");
}

/// A miscounted `numkeys` is named as such, not as an unknown algorithm,
/// and nothing is written.
#[test]
fn a_miscounted_numkeys_is_named() {
    let s = Server::start();
    let mut c = s.client();
    for (args, expected) in [
        (
            &["RL.ALL", "3", "a", "FIXED", "5", "60"][..],
            "ERR numkeys is 3, but 1 key was given before the first algorithm ('FIXED')",
        ),
        (
            &["RL.ALL", "1", "a", "b", "gcra", "5", "1", "60"],
            "ERR numkeys is 1, but 2 keys were given before the first algorithm ('gcra')",
        ),
        (
            &["RL.ALL", "2", "a", "b", "FIXED", "5", "60", "LEAKY", "1", "1"],
            "ERR limit 2: unknown algorithm 'LEAKY' (expected GCRA, TOKEN_BUCKET, FIXED, SLIDING_LOG or SLIDING_COUNTER)",
        ),
    ] {
        assert_eq!(error(&mut c, args), expected, "{args:?}");
    }
    let keys: Vec<String> = cmd(&["KEYS", "*"]).query(&mut c).unwrap();
    assert!(keys.is_empty(), "{keys:?}");
}

/// A user allowed `~allowed:*` may run RL.ALL only when every key matches.
#[test]
fn acl_key_patterns_apply_to_every_key() {
    let s = Server::start();
    let mut c = s.client();
    cmd(&["ACL", "SETUSER", "app", "on", ">secret", "~allowed:*", "+@all"])
        .query::<()>(&mut c)
        .unwrap();
    let mut app = redis::Client::open(format!("redis://app:secret@127.0.0.1:{}/", s.port))
        .unwrap()
        .get_connection()
        .unwrap();
    let (reply, position) = all(
        &mut app,
        &[
            "RL.ALL",
            "2",
            "allowed:a",
            "allowed:b",
            "FIXED",
            "5",
            "60",
            "FIXED",
            "5",
            "60",
        ],
    );
    assert_eq!((reply.counts(), position), ((false, 5, 4), 1));
    for keys in [["allowed:a", "other:b"], ["other:a", "allowed:b"]] {
        let e = error(
            &mut app,
            &[
                "RL.ALL", "2", keys[0], keys[1], "FIXED", "5", "60", "FIXED", "5", "60",
            ],
        );
        assert!(e.starts_with("NOPERM"), "{keys:?}: {e}");
    }
    let exists: i64 = cmd(&["EXISTS", "other:a", "other:b"]).query(&mut c).unwrap();
    assert_eq!(exists, 0);
}

/// All or nothing: when one limit refuses, no key changes, not even the
/// one that would have allowed; the next allowed request counts on both.
#[test]
fn a_refusal_writes_nothing_on_any_key() {
    let s = Server::start();
    let mut c = s.client();
    let (first, position) = all(&mut c, &BURST_AND_HOURLY);
    assert_eq!((first, position), (Reply::allowed(2, 1, 3600), 2));
    let (second, _) = all(&mut c, &BURST_AND_HOURLY);
    assert_eq!(second.counts(), (false, 2, 0));
    let before = (snapshot(&mut c, "{u}:burst"), snapshot(&mut c, "{u}:hourly"));
    // The hourly log refuses; the burst had room for a third unit.
    let (third, position) = all(&mut c, &BURST_AND_HOURLY);
    assert_eq!((third.without_reset(), position), ((true, 2, 0, 3600), 2));
    assert_eq!(
        (snapshot(&mut c, "{u}:burst"), snapshot(&mut c, "{u}:hourly")),
        before
    );
    // The same limiter as RL.GCRA's: two units taken, one left.
    let burst = five(&mut c, &["RL.GCRA", "{u}:burst", "2", "1", "3600", "0"]);
    assert_eq!(burst.counts(), (false, 3, 1));
    if common::module_only() {
        return; // the rest reads INFO, which counts the module's calls alone
    }
    assert_eq!(info_field(&mut c, "ratelimit", "ratelimit_all_calls"), 3);
    assert_eq!(info_field(&mut c, "ratelimit", "ratelimit_all_allowed"), 2);
    assert_eq!(info_field(&mut c, "ratelimit", "ratelimit_all_refused"), 1);
    assert_eq!(info_field(&mut c, "ratelimit", "ratelimit_gcra_calls"), 1);
    // A sliding log written by RL.ALL counts its entries.
    assert_eq!(
        info_field(&mut c, "ratelimit", "ratelimit_sliding_log_entries_written"),
        2
    );
}

/// The single commands and RL.ALL are the same limiters: a key written by
/// one is read by the other, in any order.
#[test]
fn the_single_commands_and_all_share_their_limiters() {
    let s = Server::start();
    let mut c = s.client();
    let single = ["RL.SLIDING_COUNTER", "{u}:c", "4", "1000000000"];
    assert_eq!(five(&mut c, &single).counts(), (false, 4, 3));
    let (reply, _) = all(
        &mut c,
        &["RL.ALL", "1", "{u}:c", "sliding_counter", "4", "1000000000", "2"],
    );
    assert_eq!(reply.counts(), (false, 4, 1));
    assert_eq!(five(&mut c, &single).counts(), (false, 4, 0));
    assert_eq!(five(&mut c, &single).counts(), (true, 4, 0));
}

/// An allowed request replicates each key's effect, wrapped by the server in
/// one MULTI/EXEC: a replica without the module and an AOF replay hold the
/// same state; nothing of RL.ALL itself reaches them.
#[test]
fn every_keys_effect_replicates_in_one_transaction() {
    let mut master = Server::master(&common::AOF_ALWAYS);
    let mut m = master.client();
    let replica = Server::replica_of(&master, false);
    let mut r = replica.client();
    let keys = ["{u}:burst", "{u}:hourly", "{u}:log", "{u}:fixed"];
    // A log longer than 64 bytes is replicated as patches.
    for _ in 0..3 {
        let (reply, _) = all(
            &mut m,
            &[
                "RL.ALL",
                "4",
                keys[0],
                keys[1],
                keys[2],
                keys[3],
                "GCRA",
                "19",
                "1",
                "3600",
                "SLIDING_LOG",
                "20",
                "3600",
                "SLIDING_LOG",
                "100",
                "3600",
                "FIXED",
                "50",
                "1000000000",
                "4",
            ],
        );
        assert!(!reply.blocked, "{reply:?}");
    }
    let acked: i64 = cmd(&["WAIT", "1", "10000"]).query(&mut m).unwrap();
    assert_eq!(acked, 1);
    let on_master: Vec<_> = keys.iter().map(|k| snapshot(&mut m, k)).collect();
    assert!(on_master.iter().all(|(dump, at)| dump.is_some() && *at > 0));
    let on_replica: Vec<_> = keys.iter().map(|k| snapshot(&mut r, k)).collect();
    assert_eq!(on_master, on_replica);
    // The AOF: transactions of SETs (and a log's SETRANGEs), no RL.ALL.
    let aof = common::aof_commands(&common::aof_bytes(&master.dir, false));
    assert!(!aof.contains("rl.all"), "{aof}");
    assert_eq!(aof.matches("\r\nmulti\r\n").count(), 3, "{aof}");
    assert_eq!(aof.matches("\r\nexec\r\n").count(), 3, "{aof}");
    assert!(aof.contains("setrange"), "{aof}");
    // Replayed after a crash: the same state.
    drop(m);
    master.crash_and_restart();
    let mut m = master.client();
    let replayed: Vec<_> = keys.iter().map(|k| snapshot(&mut m, k)).collect();
    assert_eq!(replayed, on_master);
}

/// Keys the fuzzer aims at: one per algorithm and position for the
/// well-formed requests (so a key only ever holds its own algorithm's
/// state), as many for the requests with tokens replaced, inserted or
/// dropped (which may claim a key for another algorithm), and two that
/// hold another type or a corrupt state.
const KEYS: [&str; 32] = [
    "fz:GCRA:0",
    "fz:GCRA:1",
    "fz:GCRA:2",
    "fz:TOKEN_BUCKET:0",
    "fz:TOKEN_BUCKET:1",
    "fz:TOKEN_BUCKET:2",
    "fz:FIXED:0",
    "fz:FIXED:1",
    "fz:FIXED:2",
    "fz:SLIDING_LOG:0",
    "fz:SLIDING_LOG:1",
    "fz:SLIDING_LOG:2",
    "fz:SLIDING_COUNTER:0",
    "fz:SLIDING_COUNTER:1",
    "fz:SLIDING_COUNTER:2",
    "fz:m:GCRA:0",
    "fz:m:GCRA:1",
    "fz:m:GCRA:2",
    "fz:m:TOKEN_BUCKET:0",
    "fz:m:TOKEN_BUCKET:1",
    "fz:m:TOKEN_BUCKET:2",
    "fz:m:FIXED:0",
    "fz:m:FIXED:1",
    "fz:m:FIXED:2",
    "fz:m:SLIDING_LOG:0",
    "fz:m:SLIDING_LOG:1",
    "fz:m:SLIDING_LOG:2",
    "fz:m:SLIDING_COUNTER:0",
    "fz:m:SLIDING_COUNTER:1",
    "fz:m:SLIDING_COUNTER:2",
    "fz:list",
    "fz:junk",
];

/// The keys of the mutated requests, another type and a corrupt state.
fn other_keys() -> &'static [&'static str] {
    &KEYS[15..]
}

fn random_token(rng: &mut Rng) -> Vec<u8> {
    const CORPUS: &[&[u8]] = &[
        b"",
        b"0",
        b"-1",
        b"1",
        b"2",
        b"3",
        b"5",
        b"60",
        b"100",
        b"00",
        b"1.5",
        b"MS",
        b"ms",
        b"PEEK",
        b"peek",
        b"REFUND",
        b"BLOCK",
        b"block",
        b"FIXED",
        b"fixed",
        b"GCRA",
        b"gcra",
        b"Token_Bucket",
        b"SLIDING_LOG",
        b"sliding_counter",
        b"LEAKY",
        b"RL.FIXED",
        b"\xff\xfe",
        b"\x00",
        b"9223372036854775808",
        b"99999999999999999999999",
    ];
    CORPUS[rng.below(CORPUS.len())].to_vec()
}

/// What a generated request must get.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Made {
    /// Tokens replaced, inserted or dropped, or a key of another type: a
    /// reply that obeys the invariants, or an error that changed nothing.
    Anything,
    /// Well formed on keys of its own: a reply, never an error, that obeys
    /// the rules of the options it has.
    WellFormed(How),
    /// The same, and asking more than one of its limits: refused, never to
    /// pass (`retry_after` -1).
    Refused,
}

/// The options of a well-formed request.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
struct How {
    refund: bool,
    wait: bool,
    at_most: bool,
    /// `quantity` 0.
    query: bool,
}

/// A request that is mostly well formed: numkeys, keys, limits and options,
/// then in half the requests a few tokens replaced, removed or inserted.
/// Every draw is made whatever the outcome of earlier requests, so a seed
/// makes the same requests on every run.
fn random_request(rng: &mut Rng) -> (Vec<Vec<u8>>, Made) {
    const ALGORITHMS: [(&str, usize); 5] = [
        ("GCRA", 3),
        ("TOKEN_BUCKET", 3),
        ("FIXED", 2),
        ("SLIDING_LOG", 2),
        ("SLIDING_COUNTER", 2),
    ];
    let mutations = rng.below(4).saturating_sub(1);
    let n = 1 + rng.below(3);
    let mut args: Vec<Vec<u8>> = vec![n.to_string().into_bytes()];
    let limits: Vec<(&str, usize)> = (0..n).map(|_| ALGORITHMS[rng.below(ALGORITHMS.len())]).collect();
    let mut own_keys = true;
    for (i, (name, _)) in limits.iter().enumerate() {
        // Its own key; now and then another (a repeat, another algorithm's,
        // another type, a corrupt state). A request to be mutated has its
        // own keys apart, so that a well-formed one's keys hold only their
        // algorithm's state.
        let key = if rng.below(10) == 0 {
            own_keys = false;
            rng.pick(other_keys()).to_string()
        } else if mutations > 0 {
            format!("fz:m:{name}:{i}")
        } else {
            format!("fz:{name}:{i}")
        };
        args.push(key.into_bytes());
    }
    // The most units any of the limits allows.
    let mut least_limit = usize::MAX;
    let limits_all_reserve = limits
        .iter()
        .all(|(name, _)| matches!(*name, "GCRA" | "TOKEN_BUCKET" | "SLIDING_LOG"));
    for (name, count) in limits {
        args.push(name.as_bytes().to_vec());
        for i in 0..count {
            // The first parameter (a burst, a capacity, a limit) small, the
            // last (a period or window) up to an hour.
            let value = if i == 0 {
                1 + rng.below(5)
            } else {
                1 + rng.below(3600)
            };
            if i == 0 {
                least_limit = least_limit.min(value + usize::from(name == "GCRA"));
            }
            args.push(value.to_string().into_bytes());
        }
    }
    let mut quantity = 1;
    if rng.below(2) == 0 {
        quantity = rng.below(8);
        args.push(quantity.to_string().into_bytes());
    }
    let (mut how, mut force, mut blocks, mut waits, mut ways) = (How::default(), false, 0, 0, 0);
    how.query = quantity == 0;
    for _ in 0..rng.below(3) {
        // Refunds now and then: one that rests a limiter deletes its key,
        // which a mutated request may then claim for another algorithm.
        // Blocks too, mostly short so that they end within the run; waits
        // of up to 3 s; debts; grants.
        let value = rng.below(4);
        match rng.below(10) {
            0 | 1 => args.push(b"MS".to_vec()),
            2 | 3 => args.push(b"PEEK".to_vec()),
            4 => {
                how.refund = true;
                ways += 1;
                args.push(b"REFUND".to_vec());
            }
            5 => {
                force = true;
                ways += 1;
                args.push(b"FORCE".to_vec());
            }
            6 => {
                how.at_most = true;
                ways += 1;
                args.push(b"AT_MOST".to_vec());
            }
            7 => {
                how.wait = true;
                waits += 1;
                args.push(b"WAIT".to_vec());
                args.push(value.to_string().into_bytes());
            }
            _ => {
                blocks += 1;
                args.push(b"BLOCK".to_vec());
                args.push((1 + value % 3).to_string().into_bytes());
            }
        }
    }
    ways += usize::from(waits > 0);
    // WAIT only where every limit can reserve.
    let reserves = limits_all_reserve;
    for _ in 0..mutations {
        let at = rng.below(args.len() + 1);
        match rng.below(3) {
            0 if at < args.len() => args[at] = random_token(rng),
            1 if at < args.len() => {
                args.remove(at);
            }
            _ => args.insert(at, random_token(rng)),
        }
    }
    // REFUND or FORCE with BLOCK, an option with a value twice, two ways
    // of taking the units, WAIT where a limit cannot reserve: errors.
    // FORCE may go past the deepest debt a limiter may hold on a key whose
    // parameters vary from call to call: an error then, so never sure.
    let valid = blocks < 2
        && waits < 2
        && ways <= 1
        && !(blocks > 0 && (how.refund || force))
        && (waits == 0 || reserves)
        && !force;
    let made = match mutations == 0 && own_keys && valid {
        true if !how.refund && !how.at_most && quantity > least_limit => Made::Refused,
        true => Made::WellFormed(how),
        false => Made::Anything,
    };
    (args, made)
}

/// Random RL.ALL requests, refunds and blocks among them, each in a MULTI
/// between GETs of every key: a reply is six integers obeying the reply's
/// rules with a position among the keys; an error changes no key, a
/// refusal none but by the blocks it starts (which leave the state behind
/// them as it was), and a refund is never refused; a well-formed request on its own keys is
/// answered, and refused when it asks more than one of its limits allows;
/// the server stays up. The requests are the seed's alone (`RL_FUZZ_SEED`
/// replays them); their answers also depend on the clock, and no assertion
/// depends on it.
#[test]
fn random_requests_never_crash_or_write_when_refused() {
    let s = Server::start();
    let mut c = s.client();
    cmd(&["RPUSH", "fz:list", "x"]).query::<()>(&mut c).unwrap();
    cmd(&["SET", "fz:junk", "not a limiter"])
        .query::<()>(&mut c)
        .unwrap();
    let seed = std::env::var("RL_FUZZ_SEED")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(0x51_7cc1_b727_220a ^ u64::from(std::process::id()));
    println!("seed {seed}");
    let mut rng = Rng(seed.max(1));
    let total: usize = std::env::var("RL_FUZZ_CALLS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(20_000);
    let words = |args: &[&str]| args.iter().map(|a| a.as_bytes().to_vec()).collect::<Vec<_>>();
    // First, one request of each kind: every run takes every path, whatever
    // its seed and size.
    let mut requests = vec![
        (
            words(&["1", "fz:FIXED:0", "FIXED", "5", "60"]),
            Made::WellFormed(How::default()),
        ),
        (
            words(&["1", "fz:FIXED:1", "FIXED", "5", "60", "6"]),
            Made::Refused,
        ),
        (
            words(&["1", "fz:FIXED:2", "FIXED", "5", "60", "FAST"]),
            Made::Anything,
        ),
    ];
    let first = requests.len();
    requests.extend((0..total).map(|_| random_request(&mut rng)));
    let (mut replies, mut refusals, mut errors) = (0usize, 0usize, 0usize);
    let (mut well_formed, mut sure_refusals) = (0usize, 0usize);
    let batch = 200;
    // Redis 6.0 reads the clock anew for every command of a transaction (and
    // a function or script on Redis 7.0 at its own start), so a key may
    // expire between the GETs before the call and the call: there each
    // transaction also reads the time first and last, and every key's PTTL
    // first, to tell such a key from one the call changed.
    let clock = common::transaction_time_moves();
    let extra = if clock { 2 + KEYS.len() } else { 0 };
    // Per request: MULTI, (TIME, the PTTLs,) the GETs before, the call, the
    // GETs after, (TIME,) EXEC.
    let per = 2 + 2 * KEYS.len() + 1 + extra;
    for (n, chunk) in requests.chunks(batch).enumerate() {
        let mut pipe = redis::pipe();
        for (args, _) in chunk {
            pipe.cmd("MULTI");
            if clock {
                pipe.cmd("TIME");
                for key in KEYS {
                    pipe.cmd("PTTL").arg(key);
                }
            }
            for key in KEYS {
                pipe.cmd("GET").arg(key);
            }
            let mut call = common::command("RL.ALL");
            for a in args {
                call.arg(&a[..]);
            }
            pipe.add_command(call);
            for key in KEYS {
                pipe.cmd("GET").arg(key);
            }
            if clock {
                pipe.cmd("TIME");
            }
            pipe.cmd("EXEC");
        }
        let raw = c
            .req_packed_commands(&pipe.get_packed_pipeline(), 0, per * chunk.len())
            .unwrap();
        for (i, ((args, made), chunk)) in chunk.iter().zip(raw.chunks(per)).enumerate() {
            let shown = args
                .iter()
                .map(|a| String::from_utf8_lossy(a).into_owned())
                .collect::<Vec<_>>();
            let at = n * batch + i;
            let what = if at < first {
                "the first requests"
            } else {
                "random"
            };
            let context = format!("seed {seed}, request {at} ({what}, {made:?}): {shown:?}");
            let result = &chunk[per - 1];
            if let Value::ServerError(e) = result {
                // The server's own arity check: nothing ran.
                assert_eq!(e.code(), "EXECABORT", "{context}: {e:?}");
                assert_eq!(*made, Made::Anything, "{context}: {e:?}");
                errors += 1;
                continue;
            }
            let Value::Array(parts) = result else {
                panic!("{context}: EXEC gave {result:?}");
            };
            let (before, reply, after): (&[Value], &Value, Vec<Value>) = if clock {
                let millis = |v: &Value| {
                    let (secs, micros): (i64, i64) = redis::from_redis_value(v).expect("TIME");
                    secs * 1000 + micros / 1000
                };
                let (first, rest) = parts.split_at(1 + KEYS.len());
                let (rest, last) = rest.split_at(rest.len() - 1);
                let elapsed = millis(&last[0]) - millis(&first[0]);
                let (before, rest) = rest.split_at(KEYS.len());
                let (reply, after) = rest.split_first().expect("a reply");
                // A key gone after the call that had no more time to live
                // than the transaction took expired meanwhile: the call did
                // not change it.
                let after = after
                    .iter()
                    .zip(before)
                    .zip(&first[1..])
                    .map(|((new, old), pttl)| {
                        let ttl: i64 = redis::from_redis_value(pttl).expect("PTTL");
                        let expired =
                            *new == Value::Nil && *old != Value::Nil && (0..=elapsed).contains(&ttl);
                        if expired { old } else { new }.clone()
                    })
                    .collect();
                (before, reply, after)
            } else {
                let (before, rest) = parts.split_at(KEYS.len());
                let (reply, after) = rest.split_first().expect("a reply");
                (before, reply, after.to_vec())
            };
            let after = &after[..];
            let unchanged = before == after;
            match reply {
                Value::ServerError(e) => {
                    errors += 1;
                    assert!(matches!(e.code(), "ERR" | "WRONGTYPE"), "{context}: {e:?}");
                    assert!(
                        !e.details().is_some_and(|d| d.contains("internal error")),
                        "{context}: {e:?}"
                    );
                    assert_eq!(*made, Made::Anything, "{context}: {e:?}");
                    assert!(unchanged, "{context}: an error changed a key");
                }
                Value::Array(items) => {
                    replies += 1;
                    let mut fields: Vec<i64> = items
                        .iter()
                        .map(|v| match v {
                            Value::Int(i) => *i,
                            other => panic!("{context}: {other:?}"),
                        })
                        .collect();
                    let how = match made {
                        Made::WellFormed(how) => Some(*how),
                        Made::Refused => Some(How::default()),
                        Made::Anything => None,
                    };
                    // AT_MOST adds the units granted.
                    let granted = match (fields.len(), how) {
                        (7, None | Some(How { at_most: true, .. })) => fields.pop(),
                        (6, None | Some(How { at_most: false, .. })) => None,
                        _ => panic!("{context}: {fields:?}"),
                    };
                    let [a, b, c, d, e, position] = fields[..] else {
                        panic!("{context}: not six integers: {fields:?}");
                    };
                    if let Some(granted) = granted {
                        assert!(granted >= 0, "{context}: {fields:?}");
                        // None only when refused, or asked for none (a
                        // request mutated into a query may say so too).
                        assert!(
                            granted > 0 || a == 1 || how.is_none_or(|h| h.query),
                            "{context}: {fields:?}"
                        );
                    }
                    let r = Reply::try_from(vec![a, b, c, d, e]).unwrap();
                    let numkeys: i64 = std::str::from_utf8(&args[0]).unwrap().parse().unwrap();
                    assert!((1..=numkeys).contains(&position), "{context}: {fields:?}");
                    assert!((0..=r.limit).contains(&r.remaining), "{context}: {r:?}");
                    assert!(r.limit >= 1 && r.reset >= 0, "{context}: {r:?}");
                    // A refund is never refused, but `0 REFUND` is a
                    // query (refused on a blocked key).
                    if let Some(how) = how {
                        assert!(
                            !(how.refund && !how.query && r.blocked),
                            "{context}: a refund refused"
                        );
                    }
                    if r.blocked {
                        refusals += 1;
                        // Changed only by a block put in front of the
                        // state, which stays as it was.
                        for (old, new) in before.iter().zip(after) {
                            if old != new {
                                let (Some(old), Some(new)) = (string(old), string(new)) else {
                                    panic!("{context}: a refusal changed {old:?} to {new:?}");
                                };
                                assert!(
                                    new.first() == Some(&b'B') && unframed(&new) == unframed(&old),
                                    "{context}: a refusal changed {old:?} to {new:?}"
                                );
                            }
                        }
                    } else {
                        // Allowed; with WAIT, perhaps later: the wait
                        // before the work.
                        let wait = how.is_none_or(|h| h.wait);
                        assert!(
                            r.retry_after == -1 || (wait && r.retry_after >= 1),
                            "{context}: {r:?}"
                        );
                    }
                    if *made == Made::Refused {
                        sure_refusals += 1;
                        assert!(r.blocked && r.retry_after == -1, "{context}: {r:?}");
                    }
                    well_formed += usize::from(how.is_some());
                }
                other => panic!("{context}: {other:?}"),
            }
        }
    }
    println!(
        "{total} random RL.ALL and {first} first ones (seed {seed}): {replies} replies ({refusals} refused; \
         {well_formed} to well-formed requests, which all were, {sure_refusals} of them refused as they had to be), {errors} errors"
    );
    // The first requests alone make each count positive on a correct module.
    assert!(replies >= 2 && refusals >= 1 && errors >= 1);
    let pong: String = cmd(&["PING"]).query(&mut c).unwrap();
    assert_eq!(pong, "PONG");
}

/// A GET's bulk string (`Some(empty)` for an absent key).
fn string(value: &Value) -> Option<Vec<u8>> {
    match value {
        Value::BulkString(bytes) => Some(bytes.clone()),
        Value::Nil => Some(Vec::new()),
        _ => None,
    }
}

/// A value without its block header (`B` and 7 bytes), if it has one.
fn unframed(value: &[u8]) -> &[u8] {
    match value {
        [b'B', ..] if value.len() >= 8 => &value[8..],
        _ => value,
    }
}
