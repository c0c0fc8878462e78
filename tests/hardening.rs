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
        b"BLOCK",
        b"block",
        b"BLOCKS",
        b"MSS",
        b"M",
        b"PEE",
        b"\r\n",
        b"NaN",
        b"inf",
        b"key",
        b"TAG",
        b"tag",
        b"BY",
        b"COUNT",
    ];
    match rng.below(10) {
        0 => (0..rng.below(40)).map(|_| rng.next() as u8).collect(),
        1 => (rng.next() % 100_000).to_string().into_bytes(),
        _ => rng.pick(CORPUS).to_vec(),
    }
}

/// One argument of a generated call: bytes, or the lease that an earlier
/// acquisition took (see [`Leases`]).
#[derive(Clone)]
enum Arg {
    Bytes(Vec<u8>),
    /// The lease of acquisition `call % n` among the `n` made in earlier
    /// batches; a number no lease has when that one took none.
    Lease(u64),
}

/// What a generated call must get.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Made {
    /// Noise, a call with tokens replaced, inserted or dropped, or a call on
    /// another key: a reply that obeys the invariants, or an error that
    /// changed nothing.
    Anything,
    /// Well formed, on a key of its own command, with only options the
    /// command takes: a reply, never an error.
    WellFormed,
}

/// The leases the run has taken: every `RL.CONCURRENCY` call of the
/// batches already answered, in order (`None`: it took no lease), and the
/// units each lease holds, by key and id.
#[derive(Default)]
struct Leases {
    calls: Vec<Option<(Vec<u8>, i64)>>,
    units: std::collections::HashMap<(Vec<u8>, i64), i64>,
}

impl Leases {
    /// The bytes of `arg`. Which acquisition a lease argument names depends
    /// on the seed alone (the number of acquisitions in earlier batches is
    /// the seed's); only the lease's value comes from the server's clock.
    fn resolve(&self, arg: &Arg) -> Vec<u8> {
        match arg {
            Arg::Bytes(bytes) => bytes.clone(),
            Arg::Lease(call) => {
                let taken = self
                    .calls
                    .get((*call as usize).checked_rem(self.calls.len()).unwrap_or(0))
                    .and_then(|c| c.as_ref());
                // Lease ids are the server's clock in µs: 1..20 is none.
                let id = taken.map_or(1 + (*call % 20) as i64, |(_, lease)| *lease);
                id.to_string().into_bytes()
            }
        }
    }
}

/// The options each grammar takes (`CL.THROTTLE`, `RL.RELEASE`: none).
fn accepted(sample: &Sample) -> &'static [&'static [u8]] {
    match (sample.grammar, sample.name) {
        (_, "CL.THROTTLE" | "RL.RELEASE") => &[],
        (Grammar::LeaseOp, _) => &[b"MS"],
        (Grammar::Lease, _) => &[b"MS", b"PEEK"],
        (_, "RL.SLIDING_LOG") => &[
            b"MS", b"PEEK", b"REFUND", b"FORCE", b"WAIT", b"AT_MOST", b"BLOCK", b"TAG",
        ],
        _ => &[b"MS", b"PEEK", b"REFUND", b"FORCE", b"WAIT", b"AT_MOST", b"BLOCK"],
    }
}

/// Whether `words` (the options of a call, values left out) form a call
/// `sample` must answer: each taken by the command, an option with a value
/// at most once, no two that exclude each other, WAIT only where the
/// algorithm can reserve. (FORCE may go past the deepest debt a limiter
/// may hold, or a sliding log's cap, on a key whose parameters vary from
/// call to call: an error then, so never sure.)
fn options_valid(sample: &Sample, words: &[&[u8]]) -> bool {
    let has = |w: &[u8]| words.iter().filter(|o| o.eq_ignore_ascii_case(w)).count();
    let ways = has(b"REFUND").min(1) + has(b"FORCE").min(1) + has(b"WAIT").min(1) + has(b"AT_MOST").min(1);
    words
        .iter()
        .all(|o| accepted(sample).iter().any(|a| o.eq_ignore_ascii_case(a)))
        && has(b"BLOCK") <= 1
        && has(b"WAIT") <= 1
        && has(b"TAG") <= 1
        && !(has(b"TAG") > 0 && has(b"REFUND") > 0)
        && ways <= 1
        && !(has(b"BLOCK") > 0 && (has(b"REFUND") > 0 || has(b"FORCE") > 0))
        && (has(b"WAIT") == 0 || matches!(sample.name, "RL.GCRA" | "RL.TOKEN_BUCKET" | "RL.SLIDING_LOG"))
        && has(b"FORCE") == 0
}

/// Half the time pure noise; otherwise a well-formed call (positionals,
/// quantity, options in any order), in two cases of three with a few
/// tokens replaced, inserted or dropped, so that both replies and errors
/// are exercised. Every draw is made whatever the outcome of earlier calls,
/// so a seed makes the same calls on every run.
fn random_vector(rng: &mut Rng, sample: &Sample) -> (Vec<Arg>, Made) {
    // A lease is released or renewed on the keys leases are taken on.
    let name = match sample.grammar {
        Grammar::LeaseOp => "RL.CONCURRENCY",
        _ => sample.name,
    };
    let mut args: Vec<Arg> = Vec::new();
    let own_key = match rng.below(10) {
        0 => false,
        1..=3 => {
            args.push(Arg::Bytes(rng.pick(&KEYS).as_bytes().to_vec()));
            false
        }
        // Mostly a key of this command's own, so states match.
        _ => {
            args.push(Arg::Bytes(format!("fz:{name}:{}", rng.below(3)).into_bytes()));
            true
        }
    };
    if rng.below(2) == 0 {
        for _ in 0..rng.below(8) {
            args.push(Arg::Bytes(nasty_token(rng)));
        }
        return (args, Made::Anything);
    }
    for param in sample.params {
        let low = if *param == "max_burst" { 0 } else { 1 };
        let (earlier, call, value) = (rng.below(4) > 0, rng.next(), low + rng.next() % 20);
        args.push(match *param {
            // Mostly a lease given earlier in the run.
            "lease" if earlier => Arg::Lease(call),
            _ => Arg::Bytes(value.to_string().into_bytes()),
        });
    }
    let options: &[&[u8]] = match sample.grammar {
        Grammar::LeaseOp => &[b"MS", b"ms"],
        // The rate options too for leases: errors there, which must change
        // nothing.
        _ => &[
            b"MS", b"ms", b"PEEK", b"peek", b"REFUND", b"Refund", b"BLOCK", b"block", b"FORCE", b"WAIT",
            b"wait", b"AT_MOST", b"at_most", b"TAG", b"tag",
        ],
    };
    if sample.grammar != Grammar::LeaseOp && rng.below(2) == 0 {
        args.push(Arg::Bytes((rng.next() % 25).to_string().into_bytes()));
    }
    let mut words: Vec<&[u8]> = Vec::new();
    for _ in 0..rng.below(3) {
        let option = *rng.pick(options);
        words.push(option);
        args.push(Arg::Bytes(option.to_vec()));
        // A duration: blocks mostly short, so that they end within the run;
        // waits of up to 3 s.
        let value = rng.next() % 4;
        if option.eq_ignore_ascii_case(b"BLOCK") {
            args.push(Arg::Bytes((1 + value % 3).to_string().into_bytes()));
        } else if option.eq_ignore_ascii_case(b"WAIT") {
            args.push(Arg::Bytes(value.to_string().into_bytes()));
        } else if option.eq_ignore_ascii_case(b"TAG") {
            // A tag of any bytes, 1 to 64 of them (the default setting).
            let tag: Vec<u8> = match value {
                0 => b"a".to_vec(),
                1 => b"tenant:42".to_vec(),
                2 => vec![0xff, 0x00, b'\n'],
                _ => vec![b't'; 64],
            };
            args.push(Arg::Bytes(tag));
        }
    }
    let all_accepted = options_valid(sample, &words);
    let mutations = rng.below(3);
    for _ in 0..mutations {
        let at = rng.below(args.len() + 1);
        match rng.below(3) {
            0 if at < args.len() => args[at] = Arg::Bytes(nasty_token(rng)),
            1 if at < args.len() => {
                args.remove(at);
            }
            _ => args.insert(at, Arg::Bytes(nasty_token(rng))),
        }
    }
    let made = if mutations == 0 && own_key && all_accepted {
        Made::WellFormed
    } else {
        Made::Anything
    };
    (args, made)
}

/// Keys the fuzzer aims at: some empty, some holding valid or corrupt states.
const KEYS: [&str; 6] = ["fz:a", "fz:b", "fz:c", "fz:list", "fz:junk", "fz:gcra"];

fn setup_keys(c: &mut Connection) {
    cmd(&["RPUSH", "fz:list", "x"]).query::<()>(c).unwrap();
    cmd(&["SET", "fz:junk", "not a limiter"]).query::<()>(c).unwrap();
    five(c, &["RL.GCRA", "fz:gcra", "5", "1", "3600"]);
}

/// The quantity of a call that was answered (`args` starts with the
/// command's name): the token after the parameters when it is a number, else
/// the default, 1.
fn quantity_of(sample: &Sample, args: &[Vec<u8>]) -> i64 {
    args.get(2 + sample.params.len())
        .and_then(|t| std::str::from_utf8(t).ok())
        .and_then(|t| t.parse::<i64>().ok())
        .unwrap_or(1)
}

/// Check one raw reply against the spec's invariants: five integers (a
/// `Reply`, so `blocked` is 0 or 1), then each field; for a lease, a sixth,
/// the lease taken (positive iff one was); for a release, the units of the
/// lease it names on its key (`leases`) or 0; for a renewal, 0 or 1. `args`
/// starts with the command's name. Returns the lease taken, if any, with
/// its units.
fn check_reply(args: &[Vec<u8>], reply: &Value, leases: &Leases) -> Option<(i64, i64)> {
    let sample = COMMANDS
        .iter()
        .find(|s| s.name.as_bytes() == args[0])
        .unwrap_or_else(|| panic!("{args:?}: not a command of COMMANDS"));
    if sample.grammar == Grammar::LeaseOp {
        let Value::Int(answer) = reply else {
            panic!("{args:?}: not an integer: {reply:?}");
        };
        if sample.name == "RL.RELEASE" {
            // The units the named lease was taken with, on this key; 0 when
            // it is unknown there, released or past its deadline.
            let id = std::str::from_utf8(&args[2])
                .ok()
                .and_then(|t| t.parse::<i64>().ok());
            let held = id.and_then(|id| leases.units.get(&(args[1].clone(), id)));
            assert!(
                *answer == 0 || Some(answer) == held,
                "{args:?}: released {answer}, the lease held {held:?}"
            );
        } else {
            assert!((0..=1).contains(answer), "{args:?}: {answer}");
        }
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
    // The option words (a TAG's value, any bytes, is none).
    let mut options: Vec<&[u8]> = Vec::new();
    let mut tokens = args.get(2 + sample.params.len()..).unwrap_or_default().iter();
    while let Some(token) = tokens.next() {
        options.push(token);
        if token.eq_ignore_ascii_case(b"TAG") {
            tokens.next();
        }
    }
    let option = |word: &[u8]| options.iter().any(|a| a.eq_ignore_ascii_case(word));
    let (peek, refund, force, wait, at_most) = (
        option(b"PEEK"),
        option(b"REFUND"),
        option(b"FORCE"),
        option(b"WAIT"),
        option(b"AT_MOST"),
    );
    let quantity = quantity_of(sample, args);
    let lease = match sample.grammar {
        Grammar::Lease => {
            assert_eq!(fields.len(), 6, "{args:?}: {fields:?}");
            fields.pop()
        }
        _ => None,
    };
    // AT_MOST: a sixth integer, the units granted: at most the quantity,
    // none exactly when refused.
    if at_most {
        assert_eq!(fields.len(), 6, "{args:?}: {fields:?}");
        let granted = fields.pop().unwrap_or(-1);
        assert!((0..=quantity).contains(&granted), "{args:?}: {granted}");
        if quantity > 0 {
            assert_eq!(granted == 0, fields[0] == 1, "{args:?}: {fields:?} {granted}");
        }
    }
    let r = Reply::try_from(fields).unwrap_or_else(|e| panic!("{args:?}: {e}"));
    if let Some(lease) = lease {
        assert_eq!(
            lease > 0,
            !r.blocked && !peek && quantity > 0,
            "{args:?}: {r:?} lease {lease}"
        );
        assert!(lease >= 0, "{args:?}: {lease}");
    }
    if (refund || force) && quantity > 0 {
        // A refund or a forced request is never refused (`0 REFUND` is a
        // query, refused on a blocked key).
        assert!(!r.blocked && r.retry_after == -1, "{args:?}: {r:?}");
    } else if !at_most && quantity > r.limit {
        // More than the limit can never pass (AT_MOST grants what fits).
        assert!(r.blocked && r.retry_after == -1, "{args:?}: {r:?}");
    }
    assert!(r.limit >= 1, "{args:?}: {r:?}");
    assert!((0..=r.limit).contains(&r.remaining), "{args:?}: {r:?}");
    assert!(r.reset >= 0, "{args:?}: {r:?}");
    if !r.blocked {
        // Allowed; with WAIT, perhaps later: the wait before the work.
        assert!(
            r.retry_after == -1 || (wait && r.retry_after >= 1),
            "{args:?}: {r:?}"
        );
    } else {
        // -1 on a refusal means "never": only when quantity > limit (a
        // refused AT_MOST waits for one unit).
        assert!(r.retry_after >= -1, "{args:?}: {r:?}");
        let never = quantity > r.limit && !at_most;
        assert_eq!(r.retry_after == -1, never, "{args:?}: {r:?}");
    }
    lease.filter(|&l| l > 0).map(|l| (l, quantity))
}

/// 100,000 random argument vectors: every reply is five integers obeying the
/// invariants, or an error that changed nothing; a well-formed call on its
/// own key is answered, never an error; the server stays up. The calls
/// are the seed's alone (`RL_FUZZ_SEED` replays them); their answers also
/// depend on the clock (windows, deadlines, lease ids), and no assertion
/// depends on it.
/// How a transaction reads a key's absolute expiry: `PEXPIRETIME` (Redis
/// 7.0+, `Probe(true)`), or on Redis 6.x `TIME`, `PTTL`, `TIME`, which
/// bound it: `PTTL` is the expiry less the clock, read between the two
/// `TIME`s.
struct Probe(bool);

impl Probe {
    /// How many commands it queues.
    fn len(&self) -> usize {
        if self.0 {
            1
        } else {
            3
        }
    }

    fn add(&self, pipe: &mut redis::Pipeline, key: &[u8]) {
        if self.0 {
            pipe.cmd("PEXPIRETIME").arg(key);
        } else {
            pipe.cmd("TIME");
            pipe.cmd("PTTL").arg(key);
            pipe.cmd("TIME");
        }
    }

    /// The server's clock in ms when it read, if it read it: the first
    /// `TIME` (before the `PTTL`), or with `last` the second (after it).
    fn now(&self, replies: &[Value], last: bool) -> Option<i64> {
        let at = if last { 2 } else { 0 };
        let (secs, micros): (i64, i64) = (!self.0).then(|| redis::from_redis_value(&replies[at]).ok())??;
        Some(secs * 1000 + micros / 1000)
    }

    /// The expiry its replies bound, in Unix ms: `(at, at)` when exact (a
    /// negative `at` as `PEXPIRETIME` answers it: no expiry, no key), else
    /// the earliest and the latest it can be (a millisecond apart, when
    /// the clock turned one between the two `TIME`s). A key already due
    /// but not yet deleted (Redis 6.2 decides expiry at the transaction's
    /// instant, while `PTTL` reads the clock and answers 0) expired at any
    /// instant up to the clock's.
    fn expiry(&self, replies: &[Value]) -> (i64, i64) {
        let int = |v: &Value| -> i64 { redis::from_redis_value(v).expect("an integer") };
        if self.0 {
            let at = int(&replies[0]);
            return (at, at);
        }
        let millis = |v: &Value| {
            let (secs, micros): (i64, i64) = redis::from_redis_value(v).expect("TIME");
            secs * 1000 + micros / 1000
        };
        match int(&replies[1]) {
            ttl if ttl < 0 => (ttl, ttl),
            0 => (0, millis(&replies[2])),
            ttl => (millis(&replies[0]) + ttl, millis(&replies[2]) + ttl),
        }
    }
}

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
    // Every command but RL.ALL, which tests/all.rs fuzzes over its keys.
    let commands: Vec<&Sample> = default_commands()
        .filter(|s| s.grammar != Grammar::Keys)
        .collect();
    // First, each command well formed on a new key and with a bad option:
    // every run takes both paths, whatever its seed and size.
    let mut calls: Vec<(&Sample, Vec<Arg>, Made)> = Vec::new();
    for sample in &commands {
        let key = Arg::Bytes(format!("fz:first:{}", sample.name).into_bytes());
        let params = sample.args.iter().map(|a| Arg::Bytes(a.as_bytes().to_vec()));
        let well_formed: Vec<Arg> = std::iter::once(key).chain(params).collect();
        let mut bad = well_formed.clone();
        bad.push(Arg::Bytes(b"FAST".to_vec()));
        calls.push((sample, well_formed, Made::WellFormed));
        calls.push((sample, bad, Made::Anything));
    }
    let first = calls.len();
    for _ in 0..total {
        let sample = *rng.pick(&commands);
        let (args, made) = random_vector(&mut rng, sample);
        calls.push((sample, args, made));
    }
    let (mut replies, mut errors, mut well_formed) = (0usize, 0usize, 0usize);
    let mut leases = Leases::default();
    // Where a key may expire between two commands of a transaction (Redis
    // 6.0; the editions on 7.0), the probe reads the clock around PTTL.
    let thawed = common::transaction_time_moves();
    let probe = Probe(common::tested().has_pexpiretime() && !thawed);
    let batch = 500;
    for (n, chunk) in calls.chunks(batch).enumerate() {
        let mut pipe = redis::pipe();
        let mut vectors = Vec::with_capacity(batch);
        for (sample, args, made) in chunk {
            let args: Vec<Vec<u8>> = args.iter().map(|a| leases.resolve(a)).collect();
            let key = args.first().cloned().unwrap_or_default();
            // Before and after, atomically: the key's value and expiry.
            pipe.cmd("MULTI");
            pipe.cmd("DUMP").arg(&key);
            probe.add(&mut pipe, &key);
            let mut call = common::command(sample.name);
            for a in &args {
                call.arg(&a[..]);
            }
            pipe.add_command(call);
            pipe.cmd("DUMP").arg(&key);
            probe.add(&mut pipe, &key);
            pipe.cmd("EXEC");
            vectors.push((sample.name, args, *made));
        }
        // Raw replies: MULTI's OK, the queued commands' QUEUED, then EXEC's
        // array (which holds the command's error, if any, in place).
        let (queued, per_call) = (3 + 2 * probe.len(), 5 + 2 * probe.len());
        let raw = c
            .req_packed_commands(&pipe.get_packed_pipeline(), 0, per_call * vectors.len())
            .unwrap();
        let mut taken = Vec::new();
        for (i, ((name, args, made), chunk)) in vectors.iter().zip(raw.chunks(per_call)).enumerate() {
            let at = n * batch + i;
            let what = if at < first { "the first calls" } else { "random" };
            let context = format!("seed {seed}, call {at} ({what}, {made:?}): {name} {args:?}");
            let result = &chunk[per_call - 1];
            let mut lease = None;
            if let Value::ServerError(e) = result {
                // The server refused the command before running anything (its
                // declared arity): the transaction ran nothing at all.
                assert_eq!(e.code(), "EXECABORT", "{context}: {e:?}");
                let Value::ServerError(queued) = &chunk[2 + probe.len()] else {
                    panic!("{context}: {chunk:?}");
                };
                assert!(
                    queued
                        .details()
                        .is_some_and(|d| d.starts_with("wrong number of arguments")),
                    "{context}: {queued:?}"
                );
                assert_eq!(*made, Made::Anything, "{context}: {e:?}");
                errors += 1;
            } else {
                let Value::Array(parts) = result else {
                    panic!("{context}: EXEC gave {result:?}");
                };
                assert_eq!(parts.len(), queued, "{context}: {parts:?}");
                let (before, rest) = parts.split_first().expect("DUMP");
                let (before_probe, rest) = rest.split_at(probe.len());
                let (reply, rest) = rest.split_first().expect("the call");
                let (after, after_probe) = rest.split_first().expect("DUMP");
                let (before_ttl, after_ttl) = (probe.expiry(before_probe), probe.expiry(after_probe));
                // Redis 6.0 reads the clock anew for each command of a
                // transaction (a function or script on 7.0, at its own
                // start): a key whose expiry falls between the DUMP
                // before the call and the DUMP after it is gone then. It
                // expired if it had to by the time the probe after it read,
                // or if it was gone already when the probe before it read
                // (PTTL's -2 for a key DUMP had just read).
                // The same holds for the PTTL after the call: the DUMP after
                // it may still read the key, and the PTTL a millisecond later
                // find it gone (-2), if it was due by the clock's reading
                // after that PTTL.
                let gone_before_the_call = before_ttl.0 == -2;
                let due_by = |last: bool| {
                    gone_before_the_call
                        || before_ttl.0 >= 0
                            && probe
                                .now(after_probe, last)
                                .is_some_and(|now| before_ttl.0 <= now)
                };
                let may_expire = thawed && *before != Value::Nil;
                let expired = may_expire && *after == Value::Nil && due_by(false);
                let expired_by_the_probe = may_expire && after_ttl.0 == -2 && due_by(true);
                match reply {
                    Value::ServerError(e) => {
                        errors += 1;
                        let code = e.code();
                        assert!(code == "ERR" || code == "WRONGTYPE", "{context}: {e:?}");
                        // A caught panic (an overflow, since every build checks
                        // them) is a bug, not an answer; so is a Lua runtime
                        // error of the functions edition.
                        assert_eq!(
                            common::editions::lua_runtime_error(reply),
                            None,
                            "{context}: {e:?}"
                        );
                        // The functions edition refuses what it cannot
                        // compute exactly (a debt past its range), naming
                        // itself; any other error is for bad input only.
                        let beyond = common::module_only()
                            && e.details()
                                .is_some_and(|d| d.contains("beyond the functions edition's range"));
                        if !beyond {
                            assert_eq!(*made, Made::Anything, "{context}: {e:?}");
                        }
                        if !expired {
                            assert_eq!(before, after, "{context}: changed its key");
                        }
                        if !expired && !expired_by_the_probe {
                            assert!(
                                before_ttl.0 <= after_ttl.1 && after_ttl.0 <= before_ttl.1,
                                "{context}: changed its key's expiry: {before_ttl:?} {after_ttl:?}"
                            );
                        }
                    }
                    reply => {
                        replies += 1;
                        well_formed += usize::from(*made == Made::WellFormed);
                        let mut full = vec![name.as_bytes().to_vec()];
                        full.extend(args.iter().cloned());
                        lease = check_reply(&full, reply, &leases);
                    }
                }
            }
            if *name == "RL.CONCURRENCY" {
                let key = args.first().cloned().unwrap_or_default();
                if let Some((id, units)) = lease {
                    taken.push(((key.clone(), id), units));
                }
                leases.calls.push(lease.map(|(id, _)| (key, id)));
            }
        }
        leases.units.extend(taken);
    }
    println!(
        "{total} random calls and {first} first ones (seed {seed}): {replies} replies ({well_formed} to well-formed calls, which all were), {errors} errors"
    );
    // The first calls alone make both counts positive on a correct module.
    assert!(replies >= commands.len() && errors >= commands.len());
    let pong: String = cmd(&["PING"]).query(&mut c).unwrap();
    assert_eq!(pong, "PONG");
}

/// An `RL.LOG` or `RL.INSPECT` call (they are read-only, and not in
/// `COMMANDS`): a key of the fuzzer's (a sliding log's mostly), then, for
/// RL.LOG, a window and its options, all now and then replaced by noise.
fn view_vector(rng: &mut Rng) -> Vec<Vec<u8>> {
    let inspect = rng.below(2) == 0;
    let mut args: Vec<Vec<u8>> = vec![if inspect {
        b"RL.INSPECT".to_vec()
    } else {
        b"RL.LOG".to_vec()
    }];
    let key = match rng.below(4) {
        0 => rng.pick(&KEYS).as_bytes().to_vec(),
        1 if inspect => format!("fz:{}:{}", rng.pick(&COMMANDS).name, rng.below(3)).into_bytes(),
        _ => format!("fz:RL.SLIDING_LOG:{}", rng.below(3)).into_bytes(),
    };
    if rng.below(20) > 0 {
        args.push(key);
    }
    if !inspect {
        args.push((1 + rng.next() % 3600).to_string().into_bytes());
        const WORDS: [&[u8]; 8] = [b"MS", b"ms", b"BY", b"TAG", b"by", b"tag", b"COUNT", b"count"];
        for _ in 0..rng.below(4) {
            let word = *rng.pick(&WORDS);
            args.push(word.to_vec());
            if word.eq_ignore_ascii_case(b"COUNT") {
                args.push((1 + rng.next() % 5).to_string().into_bytes());
            }
        }
    }
    for _ in 0..rng.below(3) {
        let at = 1 + rng.below(args.len());
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

/// The fuzz vocabulary (the calls of `random_arguments_never_crash_or_corrupt`)
/// sent to the module, the library and the generated scripts of one server,
/// each call in one transaction (see `common::editions`): the same reply or
/// the same error text, never a Lua runtime error, and the same bytes, expiry
/// and effects after every call where the server has one instant per
/// transaction. The library may refuse what it cannot compute exactly (an
/// error naming the functions edition, which changed nothing, where the
/// module answers or gives another error); the key is then copied from the
/// module's database after the batch, so that the calls go on alike.
/// `RL_FUZZ_SEED` replays a run; `RL_FUZZ_EDITIONS_CALLS` sets its size
/// (default 30,000).
#[test]
fn the_editions_answer_the_vocabulary_alike() {
    let Some(mut both) = common::editions::SideBySide::start_default() else {
        return; // needs the module and Functions: runs in the module's run on 7.0+
    };
    let seed = std::env::var("RL_FUZZ_SEED")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(0x7f4a_7c15_9e37_79b9 ^ u64::from(std::process::id()));
    println!("seed {seed}");
    let total: usize = std::env::var("RL_FUZZ_EDITIONS_CALLS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(30_000);
    let plain = |args: &[&str]| common::editions::Step {
        args: args.iter().map(|a| a.as_bytes().to_vec()).collect(),
        keys: vec![args[1].as_bytes().to_vec()],
    };
    both.run(&[
        plain(&["RPUSH", "fz:list", "x"]),
        plain(&["SET", "fz:junk", "not a limiter"]),
        plain(&["RL.GCRA", "fz:gcra", "5", "1", "3600"]),
    ]);
    both.effects();
    let mut rng = Rng(seed.max(1));
    let commands: Vec<&Sample> = default_commands()
        .filter(|s| s.grammar != Grammar::Keys)
        .collect();
    let mut leases = Leases::default();
    let (mut replies, mut errors, mut edition_refusals, mut skipped) = (0usize, 0usize, 0usize, 0usize);
    let batch = 100;
    let mut done = 0;
    while done < total {
        // One call in eight reads a key (RL.LOG, RL.INSPECT).
        let steps: Vec<common::editions::Step> = (0..batch)
            .map(|_| {
                if rng.below(8) == 0 {
                    let args = view_vector(&mut rng);
                    let keys = args.get(1).cloned().into_iter().collect();
                    return common::editions::Step { args, keys };
                }
                let sample = *rng.pick(&commands);
                let (args, _) = random_vector(&mut rng, sample);
                let args: Vec<Vec<u8>> = args.iter().map(|a| leases.resolve(a)).collect();
                let mut full = vec![sample.name.as_bytes().to_vec()];
                full.extend(args.iter().cloned());
                common::editions::Step {
                    args: full,
                    keys: args.first().cloned().into_iter().collect(),
                }
            })
            .collect();
        let outcomes = both.run(&steps);
        let mut diverged: Vec<Vec<u8>> = Vec::new();
        let mut taken = Vec::new();
        for (i, (step, outcome)) in steps.iter().zip(&outcomes).enumerate() {
            let context = format!(
                "seed {seed}, call {}: {:?}",
                done + i,
                step.args
                    .iter()
                    .map(|a| String::from_utf8_lossy(a))
                    .collect::<Vec<_>>()
            );
            let module = &outcome.replies[0];
            let mut lease = None;
            if diverged.iter().any(|k| step.keys.contains(k)) {
                // A key the functions edition alone refused on earlier in
                // this batch: the editions' states differ until it is
                // copied over, after the batch.
                skipped += 1;
            } else if !common::editions::error_of(module).is_some_and(|t| t.contains("functions edition"))
                && outcome.replies[1..]
                    .iter()
                    .all(|r| common::editions::error_of(r).is_some_and(|t| t.contains("functions edition")))
            {
                // What only the functions edition refuses, naming itself
                // (the module answers, or has another error to give: the
                // edition checks its own ranges with the arguments, before
                // the key). The library and the scripts agree.
                edition_refusals += 1;
                assert_eq!(outcome.states[1], outcome.states[2], "{context}");
                diverged.extend(step.keys.iter().cloned());
            } else {
                if let Some(what) = common::editions::disagreement(outcome, both.one_instant) {
                    panic!("{context}: {what}");
                }
                match module {
                    Value::ServerError(_) => errors += 1,
                    reply => {
                        replies += 1;
                        if step.args[0] == b"RL.CONCURRENCY" {
                            lease = check_reply(&step.args, reply, &leases);
                        }
                    }
                }
            }
            if step.args[0] == b"RL.CONCURRENCY" {
                let key = step.args.get(1).cloned().unwrap_or_default();
                if let Some((id, units)) = lease {
                    taken.push(((key.clone(), id), units));
                }
                leases.calls.push(lease.map(|(id, _)| (key, id)));
            }
        }
        leases.units.extend(taken);
        let effects = both.effects();
        if both.one_instant && diverged.is_empty() {
            assert_eq!(
                effects[1],
                effects[0],
                "seed {seed}, calls {done} to {}: the library's effects",
                done + batch - 1
            );
            assert_eq!(
                effects[2],
                effects[0],
                "seed {seed}, calls {done} to {}: the scripts' effects",
                done + batch - 1
            );
        }
        // The keys only the functions edition refused on: the module's state
        // for all, so that the next calls start alike.
        for key in diverged {
            for db in ["1", "2"] {
                let mut pipe = redis::pipe();
                pipe.cmd("SELECT")
                    .arg(db)
                    .cmd("DEL")
                    .arg(&key[..])
                    .cmd("SELECT")
                    .arg(0);
                pipe.cmd("COPY")
                    .arg(&key[..])
                    .arg(&key[..])
                    .arg("DB")
                    .arg(db)
                    .arg("REPLACE");
                pipe.query::<()>(&mut both.con).unwrap();
            }
        }
        both.effects();
        done += batch;
    }
    println!(
        "{total} calls (seed {seed}): {replies} replies, {errors} errors alike, {edition_refusals} refused by the functions edition alone (and {skipped} calls after one on its key, in the same batch, not compared)"
    );
    assert!(replies > total / 20 && errors > total / 20, "{replies} {errors}");
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
        for tag in [b'F', b'C', b'T', b'L', b'l', b'1', b'x'] {
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
            let mut call = common::command(name);
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
                    // The functions edition names itself for a state it
                    // cannot compute exactly (an instant past its range).
                    let beyond = common::module_only()
                        && text.starts_with(&format!(
                            "ERR key 'victim' holds an {name} state beyond the functions edition's range"
                        ));
                    assert!(
                        foreign
                            || beyond
                            || text.starts_with(&format!(
                                "ERR key 'victim' does not hold a valid {name} state: "
                            )),
                        "{name} on {value:?}: {text}"
                    );
                    assert_eq!(snapshot(&mut c, "victim"), before, "{name} on {value:?}");
                }
                Ok(reply) => {
                    ok += 1;
                    check_reply(
                        &[name.as_bytes().to_vec(), value.clone()],
                        &reply,
                        &Leases::default(),
                    );
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
