//! The rate pipeline on in-memory keys at exact instants: what it answers,
//! what it stores and replicates, and that an error changes nothing.

use crate::error::CommandError;
use crate::memory::{Memory, Value};
use crate::registry;
use crate::reply::{Outcome, Reply};
use rl_core::Instant;

/// A second boundary well inside the 56-bit window starts (November 2025).
const T0: u64 = 1_763_700_000_000_000;
const SEC: u64 = 1_000_000;

/// Run a registered rate command at `now` (µs).
fn call(memory: &mut Memory, now: u64, args: &[&str]) -> Result<Reply, CommandError> {
    let args: Vec<&[u8]> = args.iter().map(|a| a.as_bytes()).collect();
    memory.command(&args);
    let row = registry::COMMANDS
        .iter()
        .find(|row| row.command.name.as_bytes().eq_ignore_ascii_case(args[0]))
        .expect("a command");
    registry::run(row, &args, Instant::from_micros(now), memory)
}

/// The integers of a decision's reply, and how the call ended.
fn decided(memory: &mut Memory, now: u64, args: &[&str]) -> (Vec<i64>, Outcome) {
    match call(memory, now, args) {
        Ok(reply @ Reply::Decision { outcome, .. }) => (reply.fields().to_vec(), outcome),
        other => panic!("{args:?}: {other:?}"),
    }
}

fn five(memory: &mut Memory, now: u64, args: &[&str]) -> [i64; 5] {
    let (fields, outcome) = decided(memory, now, args);
    assert_ne!(outcome, Outcome::Refund, "{args:?}");
    fields.try_into().unwrap_or_else(|f| panic!("{args:?}: {f:?}"))
}

/// One call of each rate command on the key `k`.
const EVERY_COMMAND: [&[&str]; 5] = [
    &["RL.GCRA", "k", "4", "1", "60"],
    &["RL.TOKEN_BUCKET", "k", "5", "1", "60"],
    &["RL.FIXED", "k", "5", "60"],
    &["RL.SLIDING_LOG", "k", "5", "60"],
    &["RL.SLIDING_COUNTER", "k", "5", "60"],
];

#[test]
fn gcra_answers_as_redis_cell_documents() {
    // redis-cell's README: 15 30 60 is 16 at once, then one every 2 s.
    let mut m = Memory::default();
    let gcra = ["RL.GCRA", "user123", "15", "30", "60"];
    assert_eq!(five(&mut m, T0, &gcra), [0, 16, 15, -1, 2]);
    assert_eq!(five(&mut m, T0, &gcra), [0, 16, 14, -1, 4]);
    let ten = ["RL.GCRA", "user123", "15", "30", "60", "10"];
    assert_eq!(five(&mut m, T0, &ten), [0, 16, 4, -1, 24]);
    assert_eq!(five(&mut m, T0, &ten), [1, 16, 4, 12, 24]);
    // 12 s later exactly, the same request passes.
    assert_eq!(five(&mut m, T0 + 12 * SEC, &ten), [0, 16, 0, -1, 32]);
    // The state is the TAT, T0 + 44 s, in ticks of 1/840 µs, and the key
    // expires then.
    let entry = m.get(b"user123").unwrap();
    let ticks = (T0 + 44 * SEC) * 840;
    assert_eq!(
        entry.value,
        Value::String([&[b'G'][..], &ticks.to_le_bytes()].concat())
    );
    assert_eq!(entry.expire_at_ms, Some((T0 + 44 * SEC) / 1000));
}

#[test]
fn peek_answers_as_the_call_would_and_changes_nothing() {
    for args in EVERY_COMMAND {
        let mut m = Memory::default();
        five(&mut m, T0, args);
        let before = m.get(b"k");
        m.take_replicated();
        let peek: Vec<&str> = args.iter().copied().chain(["2", "PEEK"]).collect();
        let peeked = five(&mut m, T0 + SEC, &peek);
        assert_eq!(m.get(b"k"), before, "{args:?}");
        assert!(m.take_replicated().is_empty(), "{args:?}");
        // A query (quantity 0) changes nothing either.
        let query: Vec<&str> = args.iter().copied().chain(["0"]).collect();
        five(&mut m, T0 + SEC, &query);
        assert_eq!(m.get(b"k"), before, "{args:?}");
        assert!(m.take_replicated().is_empty(), "{args:?}");
        // The real call at the same instant answers what PEEK said.
        let real: Vec<&str> = args.iter().copied().chain(["2"]).collect();
        assert_eq!(five(&mut m, T0 + SEC, &real), peeked, "{args:?}");
        assert_ne!(m.get(b"k"), before, "{args:?}");
        assert_eq!(m.take_replicated().len(), 1, "{args:?}");
    }
}

#[test]
fn a_refusal_writes_nothing() {
    for args in EVERY_COMMAND {
        let mut m = Memory::default();
        let all: Vec<&str> = args.iter().copied().chain(["5"]).collect();
        assert_eq!(five(&mut m, T0, &all)[0], 0, "{args:?}");
        let before = m.get(b"k");
        m.take_replicated();
        assert_eq!(five(&mut m, T0 + 1, args)[0], 1, "{args:?}");
        assert_eq!(m.get(b"k"), before, "{args:?}");
        assert!(m.take_replicated().is_empty(), "{args:?}");
    }
}

#[test]
fn corrupt_states_and_other_types_are_errors_that_change_nothing() {
    // Each algorithm's own state, and garbage, under every other algorithm.
    let mut states = Vec::new();
    for args in EVERY_COMMAND {
        let mut m = Memory::default();
        five(&mut m, T0, args);
        states.push((args[0], m.get(b"k").unwrap().value));
    }
    states.push(("garbage", Value::String(b"hello".to_vec())));
    states.push(("empty string", Value::String(Vec::new())));
    for (written_by, value) in &states {
        for args in EVERY_COMMAND {
            if args[0] == *written_by {
                continue;
            }
            let mut m = Memory::default();
            m.set(b"k", value.clone(), Some(7));
            let error = call(&mut m, T0, args).unwrap_err().to_string();
            // Another algorithm's state is named as such; garbage as what
            // this algorithm expected.
            let expected = if written_by.starts_with("RL.") {
                format!(
                    "ERR key 'k' holds an {written_by} state, not an {} one (use another key, or DEL it to start over)",
                    args[0]
                )
            } else {
                format!("ERR key 'k' does not hold a valid {} state: ", args[0])
            };
            assert!(
                error.starts_with(&expected),
                "{args:?} on {written_by}'s state: {error}"
            );
            assert_eq!(m.get(b"k").unwrap().value, *value);
            assert_eq!(m.get(b"k").unwrap().expire_at_ms, Some(7));
            assert!(m.take_replicated().is_empty());
        }
    }
    for args in EVERY_COMMAND {
        let mut m = Memory::default();
        m.set(b"k", Value::Other, None);
        assert_eq!(call(&mut m, T0, args), Err(CommandError::WrongType));
        assert!(m.take_replicated().is_empty());
    }
}

#[test]
fn argument_errors_touch_nothing() {
    let mut m = Memory::default();
    m.set(b"k", Value::String(b"untouched".to_vec()), None);
    for (args, expected) in [
        (
            &["RL.GCRA", "k", "1", "1"][..],
            "ERR wrong number of arguments for 'rl.gcra' command",
        ),
        (
            &["RL.GCRA", "k", "1", "0", "1"],
            "ERR count must be an integer from 1 to 1000000000",
        ),
        (
            &["RL.FIXED", "k", "1", "1", "FAST"],
            "ERR syntax error: unknown option 'FAST' (expected MS, PEEK, REFUND, FORCE, WAIT, AT_MOST or BLOCK)",
        ),
        (
            &["RL.SLIDING_LOG", "k", "10001", "1"],
            "ERR limit must be an integer from 1 to 10000 (CONFIG SET ratelimit.sliding_log_max_limit raises the cap, up to 1000000)",
        ),
        (
            &["RL.SLIDING_LOG", "k", "0", "1"],
            "ERR limit must be an integer from 1 to 10000",
        ),
        (
            &["RL.GCRA", "k", "1", "1", "1", "MS", "5"],
            "ERR syntax error: unknown option '5' (expected MS, PEEK, REFUND, FORCE, WAIT, AT_MOST or BLOCK; quantity comes right after the parameters, before any option)",
        ),
        (
            &["RL.TOKEN_BUCKET", "k", "1", "1", "1000000000001", "MS"],
            "ERR refill_period must be an integer from 1 to 1000000000000",
        ),
    ] {
        assert_eq!(call(&mut m, T0, args).unwrap_err().to_string(), expected);
    }
    assert_eq!(m.get(b"k").unwrap().value, Value::String(b"untouched".to_vec()));
    assert!(m.take_replicated().is_empty());
}

#[test]
fn a_sliding_log_replicates_only_what_changed() {
    let mut m = Memory::default();
    let log = ["RL.SLIDING_LOG", "log", "100", "60"];
    // Up to 7 entries (64 bytes) the whole value, as one SET .. PXAT.
    for i in 0..7 {
        five(&mut m, T0 + i, &log);
        let replicated = m.take_replicated();
        assert_eq!(replicated.len(), 1);
        assert!(replicated[0].starts_with("SET log L"), "{replicated:?}");
    }
    // Beyond, the new entry alone and the new expiry.
    let now = T0 + 7;
    five(&mut m, now, &log);
    let Some(Value::String(value)) = m.get(b"log").map(|e| e.value) else {
        panic!("no log");
    };
    assert_eq!(value.len(), 5 + 8 * 8);
    assert_eq!(&value[5 + 7 * 8..], &now.to_le_bytes());
    let expiry = (now + 60 * SEC).div_ceil(1000);
    assert_eq!(
        m.take_replicated(),
        vec![
            format!("SETRANGE log 61 {}", String::from_utf8_lossy(&now.to_le_bytes())),
            format!("PEXPIREAT log {expiry}"),
        ]
    );
}

#[test]
fn a_clock_that_steps_back_admits_nothing_extra() {
    let mut m = Memory::default();
    // GCRA keeps its TAT: a request judged at an earlier instant counts
    // from the TAT, not from the earlier now.
    let gcra = ["RL.GCRA", "g", "1", "1", "10"];
    assert_eq!(five(&mut m, T0 + 100 * SEC, &gcra), [0, 2, 1, -1, 10]);
    assert_eq!(five(&mut m, T0 + 50 * SEC, &gcra), [1, 2, 0, 50, 60]);
    assert_eq!(five(&mut m, T0 + 100 * SEC, &gcra), [0, 2, 0, -1, 20]);
    // The sliding log logs a unit at its own instant, before the entry
    // from the future, which counts and stays the newest.
    let log = ["RL.SLIDING_LOG", "l", "2", "10"];
    assert_eq!(five(&mut m, T0 + 100 * SEC, &log), [0, 2, 1, -1, 10]);
    assert_eq!(five(&mut m, T0 + 90 * SEC, &log), [0, 2, 0, -1, 20]);
    let Some(Value::String(value)) = m.get(b"l").map(|e| e.value) else {
        panic!("no log");
    };
    let both = [(T0 + 90 * SEC).to_le_bytes(), (T0 + 100 * SEC).to_le_bytes()];
    assert_eq!(&value[5..], &both.concat()[..]);
    assert_eq!(five(&mut m, T0 + 95 * SEC, &log), [1, 2, 0, 5, 15]);
    // Its own window over, the earlier one is out.
    assert_eq!(five(&mut m, T0 + 100 * SEC, &log), [0, 2, 0, -1, 10]);
    // A fixed window written in a later window stays in force.
    let fixed = ["RL.FIXED", "f", "1", "10"];
    assert_eq!(five(&mut m, T0 + 100 * SEC, &fixed), [0, 1, 0, -1, 10]);
    assert_eq!(five(&mut m, T0 + 95 * SEC, &fixed), [1, 1, 0, 15, 15]);
}

#[test]
fn gcra_states_of_earlier_releases_are_read_and_rewritten() {
    let mut m = Memory::default();
    // The released plain form: the TAT, T0 + 10 s, in 1/840 µs ticks, as
    // `SET` stored it; 1 per 10 s, bursts of 2.
    let ticks = (T0 + 10 * SEC) * 840;
    m.set(b"g", Value::String(ticks.to_string().into_bytes()), Some(0));
    let gcra = ["RL.GCRA", "g", "1", "1", "10"];
    assert_eq!(five(&mut m, T0, &gcra), [0, 2, 0, -1, 20]);
    let new_ticks = (T0 + 20 * SEC) * 840;
    assert_eq!(
        m.get(b"g").unwrap().value,
        Value::String([&[b'G'][..], &new_ticks.to_le_bytes()].concat())
    );
    // The released fraction form: 17 per second, the TAT 1/17 s ahead.
    let units = T0 * 17 + 1_000_000;
    m.set(b"h", Value::String(format!("{units}/17").into_bytes()), Some(0));
    let h = ["RL.GCRA", "h", "0", "17", "1"];
    assert_eq!(five(&mut m, T0, &[&h[..], &["PEEK"]].concat()), [1, 1, 0, 1, 1]);
    let later = T0 + SEC / 17 + 1;
    assert_eq!(five(&mut m, later, &h)[..3], [0, 1, 0]);
    let Some(Value::String(value)) = m.get(b"h").map(|e| e.value) else {
        panic!("no state");
    };
    assert_eq!((value[0], value.len()), (b'g', 19));
}

#[test]
fn every_write_expires_when_the_limiter_is_rested() {
    // One unit at T0 + 123 µs (T0 is on a minute boundary): rested 60 s
    // later, but for the window algorithms, whose windows end on the
    // boundaries (the sliding counter's unit weighs in the next window too).
    let now = T0 + 123;
    let rested = [
        now + 60 * SEC,
        now + 60 * SEC,
        T0 + 60 * SEC,
        now + 60 * SEC,
        T0 + 120 * SEC,
    ];
    for (args, rested) in EVERY_COMMAND.iter().zip(rested) {
        let mut m = Memory::default();
        let reply = five(&mut m, now, args);
        assert_eq!(reply[4], (rested - now).div_ceil(SEC) as i64, "{args:?}");
        // Rounded up to the millisecond, never early.
        assert_eq!(
            m.get(b"k").unwrap().expire_at_ms,
            Some(rested.div_ceil(1000)),
            "{args:?}"
        );
    }
}

fn six(memory: &mut Memory, now: u64, args: &[&str]) -> [i64; 6] {
    let (fields, outcome) = decided(memory, now, args);
    assert_ne!(outcome, Outcome::Refund, "{args:?}");
    fields.try_into().unwrap_or_else(|f| panic!("{args:?}: {f:?}"))
}

#[test]
fn all_decides_every_limit_at_once_and_writes_only_when_all_allow() {
    let mut m = Memory::default();
    // 3 per 10 s and 5 per 60 s (both windows start at T0).
    let both = ["RL.ALL", "2", "s", "m", "FIXED", "3", "10", "FIXED", "5", "60"];
    assert_eq!(six(&mut m, T0, &both), [0, 3, 2, -1, 10, 1]);
    assert_eq!(
        six(&mut m, T0, &[&both[..], &["2"]].concat()),
        [0, 3, 0, -1, 10, 1]
    );
    assert_eq!(m.take_replicated().len(), 4);
    // The short window refuses: nothing is counted in the long one either.
    let before = (m.get(b"s"), m.get(b"m"));
    assert_eq!(six(&mut m, T0 + SEC, &both), [1, 3, 0, 9, 9, 1]);
    assert_eq!((m.get(b"s"), m.get(b"m")), before);
    assert!(m.take_replicated().is_empty());
    // In the next short window the long one binds: 2 of 5 left, then none.
    assert_eq!(
        six(&mut m, T0 + 10 * SEC, &[&both[..], &["2"]].concat()),
        [0, 5, 0, -1, 50, 2]
    );
    assert_eq!(six(&mut m, T0 + 11 * SEC, &both), [1, 5, 0, 49, 49, 2]);
    // Each key holds what its own command would have written.
    let mut alone = Memory::default();
    five(&mut alone, T0, &["RL.FIXED", "m", "5", "60", "3"]);
    five(&mut alone, T0 + 10 * SEC, &["RL.FIXED", "m", "5", "60", "2"]);
    assert_eq!(m.get(b"m"), alone.get(b"m"));
}

/// RL.ALL records a reservation at the latest of every limit's earliest
/// instant, so a limit may hold one with room before it: units taken and
/// granted there alone are logged at their own instant, and leave the
/// window before the reservation does.
#[test]
fn units_taken_before_a_reservation_of_all_are_logged_now() {
    let mut m = Memory::default();
    assert_eq!(
        five(&mut m, T0, &["RL.SLIDING_LOG", "b", "1", "10"]),
        [0, 1, 0, -1, 10]
    );
    let both = [
        "RL.ALL",
        "2",
        "a",
        "b",
        "SLIDING_LOG",
        "5",
        "10",
        "SLIDING_LOG",
        "1",
        "10",
        "WAIT",
        "20",
    ];
    assert_eq!(six(&mut m, T0, &both), [0, 1, 0, 10, 20, 2]);
    let a = ["RL.SLIDING_LOG", "a", "5", "10"];
    assert_eq!(five(&mut m, T0 + SEC, &a), [0, 5, 3, -1, 19]);
    assert_eq!(
        six(&mut m, T0 + SEC, &with(&a, &["9", "AT_MOST"])),
        [0, 5, 0, -1, 19, 3]
    );
    // Ten seconds on, only the reservation counts.
    assert_eq!(five(&mut m, T0 + 11 * SEC, &with(&a, &["0"])), [0, 5, 4, -1, 9]);
}

#[test]
fn all_and_the_single_command_are_the_same_limiter() {
    let mut m = Memory::default();
    let single = ["RL.GCRA", "k", "9", "10", "1"];
    let all = ["RL.ALL", "1", "k", "gcra", "9", "10", "1"];
    for (i, now) in [T0, T0 + 1, T0 + 50_000, T0 + 50_001, T0 + 99_999]
        .into_iter()
        .enumerate()
    {
        let reply = if i % 2 == 0 {
            five(&mut m, now, &single)
        } else {
            six(&mut m, now, &all)[..5].try_into().unwrap()
        };
        let mut alone = Memory::default();
        if let Some(entry) = m.get(b"k") {
            alone.set(b"k", entry.value, entry.expire_at_ms);
        }
        // The next call answers the same either way.
        assert_eq!(
            five(&mut alone, now + 1, &[&single[..], &["PEEK"]].concat()),
            six(&mut m, now + 1, &[&all[..], &["PEEK"]].concat())[..5],
            "{reply:?}"
        );
    }
}

#[test]
fn all_names_its_binding_limit() {
    let mut m = Memory::default();
    // Allowed: the fewest remaining binds (ties: the first).
    let args = [
        "RL.ALL",
        "3",
        "a",
        "b",
        "c",
        "TOKEN_BUCKET",
        "10",
        "1",
        "1",
        "FIXED",
        "4",
        "60",
        "SLIDING_LOG",
        "4",
        "120",
    ];
    assert_eq!(six(&mut m, T0, &args), [0, 4, 3, -1, 60, 2]);
    assert_eq!(m.take_replicated().len(), 3);
    // Refused by two: the longer wait binds (the log's unit leaves its
    // window later than the fixed window ends), so that waiting it suffices.
    assert_eq!(
        six(&mut m, T0 + SEC, &[&args[..], &["4"]].concat()),
        [1, 4, 3, 119, 119, 3]
    );
    // More than two limits allow can never pass: the first of those binds.
    assert_eq!(
        six(&mut m, T0 + SEC, &[&args[..], &["5"]].concat()),
        [1, 4, 3, -1, 59, 2]
    );
    // A query and PEEK answer the same way and change nothing.
    assert_eq!(
        six(&mut m, T0 + SEC, &[&args[..], &["0"]].concat()),
        [0, 4, 3, -1, 59, 2]
    );
    assert_eq!(
        six(&mut m, T0 + SEC, &[&args[..], &["3", "PEEK"]].concat()),
        [0, 4, 0, -1, 59, 2]
    );
    assert!(m.take_replicated().is_empty());
}

#[test]
fn all_errors_name_the_limit_and_change_nothing() {
    let mut m = Memory::default();
    m.set(b"list", Value::Other, None);
    m.set(b"bad", Value::String(b"nonsense".to_vec()), Some(9));
    five(&mut m, T0, &["RL.FIXED", "ok", "5", "60"]);
    m.take_replicated();
    let before = m.keys.borrow().clone();
    for (args, expected) in [
        (&["RL.ALL", "0", "ok", "FIXED", "1", "1"][..], "ERR numkeys must be an integer from 1 to 100"),
        (&["RL.ALL", "-1", "ok", "FIXED", "1", "1"], "ERR numkeys must be an integer from 1 to 100"),
        (&["RL.ALL", "x", "ok", "FIXED", "1", "1"], "ERR numkeys must be an integer from 1 to 100"),
        (
            &["RL.ALL", "5", "ok", "FIXED", "1", "1"],
            "ERR numkeys is 5, but 1 key was given before the first algorithm ('FIXED')",
        ),
        // Keys come first: here `FIXED` and `1` would be keys, and `1` no
        // algorithm; the error says what went wrong instead.
        (
            &["RL.ALL", "3", "ok", "FIXED", "1", "1"],
            "ERR numkeys is 3, but 1 key was given before the first algorithm ('FIXED')",
        ),
        (
            &["RL.ALL", "1", "ok", "n", "fixed", "1", "1"],
            "ERR numkeys is 1, but 2 keys were given before the first algorithm ('fixed')",
        ),
        (
            &["RL.ALL", "2", "ok", "1", "2"],
            "ERR limit 1: unknown algorithm '2' (expected GCRA, TOKEN_BUCKET, FIXED, SLIDING_LOG or SLIDING_COUNTER)",
        ),
        (
            &["RL.ALL", "1", "ok", "1", "2"],
            "ERR limit 1: unknown algorithm '1' (expected GCRA, TOKEN_BUCKET, FIXED, SLIDING_LOG or SLIDING_COUNTER)",
        ),
        (&["RL.ALL", "2", "ok", "n", "FIXED", "1", "1"], "ERR numkeys is 2, but fewer keys and limits follow"),
        (&["RL.ALL", "2", "ok", "n", "FIXED", "1", "1", "GCRA", "1", "1"], "ERR numkeys is 2, but fewer keys and limits follow"),
        (&["RL.ALL", "2", "ok", "ok", "FIXED", "1", "1", "FIXED", "1", "1"], "ERR key 'ok' is given twice"),
        (
            &["RL.ALL", "2", "ok", "n", "FIXED", "1", "1", "LEAKY", "1", "1"],
            "ERR limit 2: unknown algorithm 'LEAKY' (expected GCRA, TOKEN_BUCKET, FIXED, SLIDING_LOG or SLIDING_COUNTER)",
        ),
        (
            &["RL.ALL", "2", "ok", "n", "FIXED", "5", "60", "SLIDING_COUNTER", "5", "0"],
            "ERR limit 2 (SLIDING_COUNTER): window must be an integer from 1 to 1000000000",
        ),
        (
            &["RL.ALL", "1", "ok", "SLIDING_LOG", "10001", "1"],
            "ERR limit 1 (SLIDING_LOG): limit must be an integer from 1 to 10000 (CONFIG SET ratelimit.sliding_log_max_limit raises the cap, up to 1000000)",
        ),
        (&["RL.ALL", "1", "ok", "FIXED", "5", "60", "FAST"], "ERR syntax error: unknown option 'FAST' (expected MS, PEEK, REFUND, FORCE, WAIT, AT_MOST, BLOCK or TAG)"),
        (&["RL.ALL", "1", "ok", "FIXED", "5", "60", "-1"], "ERR quantity must be an integer from 0 to 1000000000"),
        (
            &["RL.ALL", "2", "ok", "list", "FIXED", "5", "60", "FIXED", "5", "60"],
            "WRONGTYPE Operation against a key holding the wrong kind of value",
        ),
        (
            &["RL.ALL", "2", "ok", "bad", "FIXED", "5", "60", "GCRA", "5", "1", "60"],
            "ERR key 'bad' does not hold a valid RL.GCRA state: expected a theoretical arrival time",
        ),
        (
            &["RL.ALL", "2", "ok", "ok2", "GCRA", "5", "1", "60", "FIXED", "5", "60"],
            "ERR key 'ok' holds an RL.FIXED state, not an RL.GCRA one (use another key, or DEL it to start over)",
        ),
    ] {
        assert_eq!(call(&mut m, T0, args).unwrap_err().to_string(), expected, "{args:?}");
        assert_eq!(*m.keys.borrow(), before, "{args:?}");
        assert!(m.take_replicated().is_empty(), "{args:?}");
    }
}

fn integer(memory: &mut Memory, now: u64, args: &[&str]) -> i64 {
    match call(memory, now, args) {
        Ok(Reply::Integer(v)) => v,
        other => panic!("{args:?}: {other:?}"),
    }
}

#[test]
fn leases_are_taken_released_and_renewed() {
    let mut m = Memory::default();
    let take = |q: &'static str| ["RL.CONCURRENCY", "jobs", "3", "60", q];
    // Two units for a minute: the lease id is the instant, in µs.
    assert_eq!(six(&mut m, T0, &take("2")), [0, 3, 1, -1, 60, T0 as i64]);
    assert_eq!(m.get(b"jobs").unwrap().expire_at_ms, Some((T0 + 60 * SEC) / 1000));
    // One more 10 s later; then the key is full, and the first lease's end,
    // 50 s away, frees enough for two.
    let second = T0 + 10 * SEC;
    assert_eq!(six(&mut m, second, &take("1")), [0, 3, 0, -1, 60, second as i64]);
    m.take_replicated();
    assert_eq!(six(&mut m, second, &take("2")), [1, 3, 0, 50, 60, 0]);
    // A query and PEEK take nothing and write nothing.
    assert_eq!(six(&mut m, second, &take("0")), [0, 3, 0, -1, 60, 0]);
    assert_eq!(
        six(
            &mut m,
            second,
            &["RL.CONCURRENCY", "jobs", "3", "60", "1", "PEEK"]
        ),
        [1, 3, 0, 50, 60, 0]
    );
    assert!(m.take_replicated().is_empty());
    // Released, the first lease frees its two units, once.
    assert_eq!(
        integer(&mut m, second, &["RL.RELEASE", "jobs", &T0.to_string()]),
        2
    );
    assert_eq!(
        integer(&mut m, second, &["RL.RELEASE", "jobs", &T0.to_string()]),
        0
    );
    assert_eq!(integer(&mut m, second, &["RL.RELEASE", "jobs", "12345"]), 0);
    // The key now expires when the second lease ends.
    assert_eq!(
        m.get(b"jobs").unwrap().expire_at_ms,
        Some((second + 60 * SEC) / 1000)
    );
    // Renewed 30 s later for two minutes; past its deadline it could not be.
    let renew = ["RL.RENEW", "jobs", &second.to_string(), "120"].map(String::from);
    let renew: Vec<&str> = renew.iter().map(String::as_str).collect();
    assert_eq!(integer(&mut m, second + 30 * SEC, &renew), 1);
    assert_eq!(
        m.get(b"jobs").unwrap().expire_at_ms,
        Some((second + 150 * SEC) / 1000)
    );
    assert_eq!(integer(&mut m, second + 150 * SEC, &renew), 0);
    // Every lease has ended and the clock has passed the last id: the next
    // write (a release finds nothing, so the next lease) starts afresh.
    let later = second + 200 * SEC;
    assert_eq!(six(&mut m, later, &take("3")), [0, 3, 0, -1, 60, later as i64]);
    assert_eq!(
        integer(&mut m, later + 1, &["RL.RELEASE", "jobs", &later.to_string()]),
        3
    );
    assert_eq!(
        m.get(b"jobs"),
        None,
        "nothing live, no id can repeat: the key is gone"
    );
    assert_eq!(m.take_replicated().last().map(String::as_str), Some("DEL jobs"));
}

#[test]
fn lease_ids_never_repeat_within_one_instant() {
    let mut m = Memory::default();
    let take = ["RL.CONCURRENCY", "k", "10", "1"];
    let ids: Vec<i64> = (0..3).map(|_| six(&mut m, T0, &take)[5]).collect();
    assert_eq!(ids, [T0 as i64, T0 as i64 + 1, T0 as i64 + 2]);
    for id in &ids {
        assert_eq!(integer(&mut m, T0, &["RL.RELEASE", "k", &id.to_string()]), 1);
    }
    // Nothing is held, but the key outlives its last id: the next lease in
    // the same instant gets a new one.
    assert_eq!(m.get(b"k").unwrap().expire_at_ms, Some((T0 + 3).div_ceil(1000)));
    assert_eq!(six(&mut m, T0, &take)[5], T0 as i64 + 3);
}

#[test]
fn leases_are_appended_and_renewed_in_place() {
    let mut m = Memory::default();
    let take = ["RL.CONCURRENCY", "k", "100", "60"];
    for i in 0..3 {
        six(&mut m, T0 + i, &take);
    }
    m.take_replicated();
    // A value over 64 bytes: the new record (which holds the new last id)
    // travels alone.
    six(&mut m, T0 + 3, &take);
    let replicated = m.take_replicated();
    assert_eq!(replicated.len(), 2, "{replicated:?}");
    assert!(replicated[0].starts_with("SETRANGE k 69 "), "{replicated:?}");
    assert_eq!(
        replicated[1],
        format!("PEXPIREAT k {}", (T0 + 3 + 60 * SEC).div_ceil(1000))
    );
    assert_eq!(
        integer(&mut m, T0 + 4, &["RL.RENEW", "k", &(T0 + 1).to_string(), "90"]),
        1
    );
    let replicated = m.take_replicated();
    assert!(replicated[0].starts_with("SETRANGE k 37 "), "{replicated:?}");
}

#[test]
fn lease_errors_change_nothing() {
    let mut m = Memory::default();
    five(&mut m, T0, &["RL.FIXED", "fixed", "5", "60"]);
    six(&mut m, T0, &["RL.CONCURRENCY", "jobs", "3", "60"]);
    m.set(b"list", Value::Other, None);
    m.take_replicated();
    let before = m.keys.borrow().clone();
    for (args, expected) in [
        (&["RL.CONCURRENCY", "jobs", "0", "60"][..], "ERR limit must be an integer from 1 to 10000"),
        (
            &["RL.CONCURRENCY", "jobs", "10001", "60"],
            "ERR limit must be an integer from 1 to 10000 (CONFIG SET ratelimit.concurrency_max_limit raises the cap, up to 1000000)",
        ),
        (&["RL.CONCURRENCY", "jobs", "3", "0"], "ERR timeout must be an integer from 1 to 1000000000"),
        (&["RL.CONCURRENCY", "jobs", "3", "1000000000001", "MS"], "ERR timeout must be an integer from 1 to 1000000000000"),
        (&["RL.CONCURRENCY", "jobs", "3", "60", "FAST"], "ERR syntax error: unknown option 'FAST' (expected MS or PEEK)"),
        (&["RL.CONCURRENCY", "jobs", "3"], "ERR wrong number of arguments for 'rl.concurrency' command"),
        (&["RL.RELEASE", "jobs", "0"], "ERR lease must be an integer from 1 to 9223372036854775807"),
        (&["RL.RELEASE", "jobs", "-5"], "ERR lease must be an integer from 1 to 9223372036854775807"),
        (&["RL.RELEASE", "jobs", "abc"], "ERR lease must be an integer from 1 to 9223372036854775807"),
        (&["RL.RENEW", "jobs", "1", "60", "PEEK"], "ERR syntax error: 'rl.renew' does not take PEEK (it takes MS)"),
        (&["RL.RENEW", "jobs", "1", "0"], "ERR timeout must be an integer from 1 to 1000000000"),
        (
            &["RL.CONCURRENCY", "fixed", "3", "60"],
            "ERR key 'fixed' holds an RL.FIXED state, not an RL.CONCURRENCY one (use another key, or DEL it to start over)",
        ),
        (
            &["RL.RELEASE", "fixed", "5"],
            "ERR key 'fixed' holds an RL.FIXED state, not an RL.CONCURRENCY one (use another key, or DEL it to start over)",
        ),
        (
            &["RL.FIXED", "jobs", "5", "60"],
            "ERR key 'jobs' holds an RL.CONCURRENCY state, not an RL.FIXED one (use another key, or DEL it to start over)",
        ),
        (&["RL.RENEW", "list", "1", "60"], "WRONGTYPE Operation against a key holding the wrong kind of value"),
    ] {
        assert_eq!(call(&mut m, T0 + 1, args).unwrap_err().to_string(), expected, "{args:?}");
        assert_eq!(*m.keys.borrow(), before, "{args:?}");
        assert!(m.take_replicated().is_empty(), "{args:?}");
    }
}

/// A refund's answer: the integers of a query after it.
fn refund(memory: &mut Memory, now: u64, args: &[&str]) -> Vec<i64> {
    let (fields, outcome) = decided(memory, now, args);
    assert_eq!(outcome, Outcome::Refund, "{args:?}");
    fields
}

/// `args` with options appended.
fn with<'a>(args: &[&'a str], extra: &[&'a str]) -> Vec<&'a str> {
    args.iter().chain(extra).copied().collect()
}

#[test]
fn a_refund_gives_back_units_and_answers_a_query() {
    let gcra = ["RL.GCRA", "g", "4", "1", "60"];
    let cases: [(&[&str], [i64; 5], [i64; 5]); 5] = [
        // (command, after taking 3, after refunding 2)
        (&gcra, [0, 5, 2, -1, 180], [0, 5, 4, -1, 60]),
        (
            &["RL.TOKEN_BUCKET", "k", "5", "1", "60"],
            [0, 5, 2, -1, 180],
            [0, 5, 4, -1, 60],
        ),
        (
            &["RL.FIXED", "k", "5", "60"],
            [0, 5, 2, -1, 20],
            [0, 5, 4, -1, 20],
        ),
        (
            &["RL.SLIDING_LOG", "k", "5", "60"],
            [0, 5, 2, -1, 60],
            [0, 5, 4, -1, 60],
        ),
        (
            &["RL.SLIDING_COUNTER", "k", "5", "60"],
            [0, 5, 2, -1, 80],
            [0, 5, 4, -1, 80],
        ),
    ];
    for (command, taken, refunded) in cases {
        let mut m = Memory::default();
        // 40 s into a minute: the windows end in 20 s.
        let now = T0 + 40 * SEC;
        assert_eq!(five(&mut m, now, &with(command, &["3"])), taken, "{command:?}");
        m.take_replicated();
        let answer = refund(&mut m, now, &with(command, &["2", "REFUND"]));
        assert_eq!(answer, refunded, "{command:?}");
        // The state is written and replicated as after a consumption of one.
        let replicated = m.take_replicated();
        assert_eq!(replicated.len(), 1, "{command:?}: {replicated:?}");
        assert!(
            replicated[0].starts_with(&format!("SET {} ", command[1])),
            "{replicated:?}"
        );
        assert_eq!(five(&mut m, now, &with(command, &["0"])), refunded, "{command:?}");
    }
}

#[test]
fn a_refund_to_rested_deletes_the_key() {
    for command in EVERY_COMMAND {
        let mut m = Memory::default();
        five(&mut m, T0, &with(command, &["2"]));
        m.take_replicated();
        // More than was taken: floored at rested, and the key goes.
        let answer = refund(&mut m, T0, &with(command, &["3", "REFUND"]));
        assert_eq!(answer, [0, 5, 5, -1, 0], "{command:?}");
        assert_eq!(m.get(b"k"), None, "{command:?}");
        assert_eq!(m.take_replicated(), ["DEL k"], "{command:?}");
    }
}

#[test]
fn a_refund_that_changes_nothing_writes_nothing() {
    for command in EVERY_COMMAND {
        let mut m = Memory::default();
        // No key: a refund never creates one.
        assert_eq!(refund(&mut m, T0, &with(command, &["REFUND"])), [0, 5, 5, -1, 0]);
        assert_eq!(m.get(b"k"), None, "{command:?}");
        five(&mut m, T0, &with(command, &["2"]));
        m.take_replicated();
        let before = m.get(b"k");
        // A query, PEEK, and a limiter that has rested since.
        let peeked = refund(&mut m, T0, &with(command, &["2", "PEEK", "REFUND"]));
        assert_eq!(
            peeked,
            [0, 5, 5, -1, 0],
            "{command:?}: PEEK answers as the refund would"
        );
        refund(&mut m, T0, &with(command, &["0", "REFUND"]));
        refund(&mut m, T0 + 3600 * SEC, &with(command, &["1", "REFUND"]));
        assert_eq!(m.get(b"k"), before, "{command:?}");
        assert!(m.take_replicated().is_empty(), "{command:?}");
    }
}

#[test]
fn the_sliding_counter_refunds_the_current_window_then_the_previous() {
    let mut m = Memory::default();
    let counter = ["RL.SLIDING_COUNTER", "c", "10", "60"];
    let start = T0; // a minute boundary
    five(&mut m, start + 10 * SEC, &with(&counter, &["6"]));
    // Next window, 30 s in: the 6 weigh 3; 2 more now.
    five(&mut m, start + 90 * SEC, &with(&counter, &["2"]));
    // Refund 4: 2 from the current window, 2 from the previous (4 left,
    // weighing 2): 10 - 2 = 8 remaining.
    let answer = refund(&mut m, start + 90 * SEC, &with(&counter, &["4", "REFUND"]));
    assert_eq!(answer, [0, 10, 8, -1, 30]);
}

#[test]
fn a_long_sliding_log_refund_is_patched_in_place() {
    let mut m = Memory::default();
    let log = ["RL.SLIDING_LOG", "log", "10", "10"];
    // One unit a second in a 10-second window: a full ring of 10 (85
    // bytes) that has turned: entries at 3..12 s, the oldest in slot 3.
    for i in 0..13 {
        assert_eq!(five(&mut m, T0 + i * SEC, &log)[0], 0);
    }
    let at = T0 + 14 * SEC; // entries 5..12 s are in the window
    m.take_replicated();
    let answer = refund(&mut m, at, &with(&log, &["2", "REFUND"]));
    // The entries at 11 and 12 s go: 6 left (2 remaining + the 2 given
    // back); the newest left, at 10 s, leaves the window in 6 s.
    assert_eq!(answer, [0, 10, 4, -1, 6]);
    // The freed slots (1 and 2, just before the oldest) take an instant out
    // of the window and become the oldest: patched in place, with the
    // header, as a consumption is.
    assert_eq!(
        m.take_replicated()
            .iter()
            .map(|c| c.split(' ').take(3).collect::<Vec<_>>().join(" "))
            .collect::<Vec<_>>(),
        [
            "SETRANGE log 13",
            "SETRANGE log 0",
            &format!("PEXPIREAT log {}", (T0 + 20 * SEC) / 1000)
        ]
    );
    let Some(Value::String(value)) = m.get(b"log").map(|e| e.value) else {
        panic!("no log");
    };
    assert_eq!((value.len(), &value[1..5]), (85, &1u32.to_le_bytes()[..]));
    // The log answers as one of the remaining entries: four more fit now,
    // a fifth when the oldest counted one (5 s) leaves, at 15 s.
    assert_eq!(five(&mut m, at, &with(&log, &["4"])), [0, 10, 0, -1, 10]);
    assert_eq!(five(&mut m, at, &log), [1, 10, 0, 1, 10]);
}

#[test]
fn all_refunds_every_limit() {
    let mut m = Memory::default();
    let all = [
        "RL.ALL",
        "2",
        "{u}:a",
        "{u}:b",
        "FIXED",
        "5",
        "60",
        "SLIDING_LOG",
        "3",
        "60",
    ];
    let now = T0 + 40 * SEC;
    assert_eq!(six(&mut m, now, &with(&all, &["2"])), [0, 3, 1, -1, 60, 2]);
    m.take_replicated();
    // One back to each: the log (2 remaining) still binds.
    let answer = refund(&mut m, now, &with(&all, &["1", "REFUND"]));
    assert_eq!(answer, [0, 3, 2, -1, 60, 2]);
    assert_eq!(m.take_replicated().len(), 2);
    // More than is held: both rest, both keys go.
    let answer = refund(&mut m, now, &with(&all, &["5", "REFUND"]));
    assert_eq!(answer, [0, 3, 3, -1, 0, 2]);
    assert_eq!(m.take_replicated(), ["DEL {u}:a", "DEL {u}:b"]);
    assert_eq!((m.get(b"{u}:a"), m.get(b"{u}:b")), (None, None));
}

#[test]
fn refund_is_not_an_option_of_the_leases_or_cl_throttle() {
    let mut m = Memory::default();
    assert_eq!(
        call(&mut m, T0, &["RL.CONCURRENCY", "j", "3", "60", "REFUND"])
            .unwrap_err()
            .to_string(),
        "ERR syntax error: 'rl.concurrency' does not take REFUND (it takes MS or PEEK)"
    );
    assert!(m.get(b"j").is_none());
}

/// The block header a blocked key's value starts with: `B` and the block's
/// end in µs (7 bytes).
fn block_header(until: u64) -> Vec<u8> {
    let mut header = vec![b'B'];
    header.extend_from_slice(&until.to_le_bytes()[..7]);
    header
}

#[test]
fn a_refusal_with_block_blocks_the_key_in_its_own_state() {
    let mut m = Memory::default();
    let login = ["RL.GCRA", "k", "4", "5", "900", "BLOCK", "3600"];
    for _ in 0..5 {
        assert_eq!(five(&mut m, T0, &login)[0], 0);
    }
    let state = m.get(b"k").unwrap();
    m.take_replicated();
    // The sixth: blocked for an hour. The state is kept, behind the header;
    // the key expires when the block ends; replicas get the same bytes.
    assert_eq!(five(&mut m, T0, &login), [1, 5, 0, 3600, 3600]);
    let until = T0 + 3_600_000_000;
    let Value::String(old) = state.value else {
        panic!("a string")
    };
    let blocked = [block_header(until), old.clone()].concat();
    assert_eq!(m.get(b"k").unwrap().value, Value::String(blocked.clone()));
    assert_eq!(m.get(b"k").unwrap().expire_at_ms, Some(until / 1000));
    let replicated = m.take_replicated();
    assert_eq!(replicated.len(), 1);
    assert!(
        replicated[0].starts_with("SET k B") && replicated[0].ends_with(&format!(" PXAT {}", until / 1000))
    );
    // Refused while blocked, with or without BLOCK, PEEK or a query:
    // nothing is written or replicated, the block does not move.
    for (at, args) in [
        (T0 + 1_000_000, &login[..]),
        (T0 + 1_000_000, &["RL.GCRA", "k", "4", "5", "900"][..]),
        (T0 + 2_000_000, &["RL.GCRA", "k", "4", "5", "900", "PEEK"][..]),
        (T0 + 2_000_000, &["RL.GCRA", "k", "4", "5", "900", "0"][..]),
    ] {
        let reply = five(&mut m, at, args);
        let left = ((until - at) / 1_000_000) as i64;
        assert_eq!(reply, [1, 5, 0, left, left], "{args:?}");
        assert_eq!(m.get(b"k").unwrap().value, Value::String(blocked.clone()));
        assert!(m.take_replicated().is_empty());
    }
    // The first write after the block: the state alone again, as if the
    // block had never been.
    assert_eq!(five(&mut m, until, &login), [0, 5, 4, -1, 180]);
    let Value::String(after) = m.get(b"k").unwrap().value else {
        panic!("a string")
    };
    assert_eq!(after.len(), old.len());
    assert_eq!(after[0], b'G');
}

#[test]
fn a_refund_under_a_block_keeps_it_and_a_rested_limiter_keeps_the_header_alone() {
    let mut m = Memory::default();
    let gcra = ["RL.GCRA", "k", "1", "1", "60"];
    five(&mut m, T0, &gcra);
    five(&mut m, T0, &gcra);
    assert_eq!(
        five(&mut m, T0, &with(&gcra, &["BLOCK", "600"])),
        [1, 2, 0, 600, 600]
    );
    m.take_replicated();
    assert_eq!(
        refund(&mut m, T0 + 1_000_000, &with(&gcra, &["1", "REFUND"])),
        [0, 2, 0, -1, 599]
    );
    let Value::String(value) = m.get(b"k").unwrap().value else {
        panic!("a string")
    };
    assert_eq!(value[..8], block_header(T0 + 600_000_000)[..]);
    assert_eq!(m.get(b"k").unwrap().expire_at_ms, Some((T0 + 600_000_000) / 1000));
    // Everything back: the limiter is rested, the block stays alone.
    assert_eq!(
        refund(&mut m, T0 + 1_000_000, &with(&gcra, &["5", "REFUND"])),
        [0, 2, 0, -1, 599]
    );
    assert_eq!(
        m.get(b"k").unwrap().value,
        Value::String(block_header(T0 + 600_000_000))
    );
    assert_eq!(five(&mut m, T0 + 2_000_000, &gcra), [1, 2, 0, 598, 598]);
    // At the end: a fresh limiter.
    assert_eq!(five(&mut m, T0 + 600_000_000, &gcra), [0, 2, 1, -1, 60]);
}

#[test]
fn a_sliding_log_keeps_its_patches_behind_the_header() {
    let mut m = Memory::default();
    // A log of 20 in an hour: filled, then refused with BLOCK.
    let log = ["RL.SLIDING_LOG", "k", "20", "3600"];
    five(&mut m, T0, &with(&log, &["19"]));
    five(&mut m, T0 + 1, &with(&log, &["1"]));
    assert_eq!(
        five(&mut m, T0 + 2, &with(&log, &["BLOCK", "10"]))[..3],
        [1, 20, 0]
    );
    m.take_replicated();
    // A refund under the block patches the state behind the header.
    assert_eq!(
        refund(&mut m, T0 + 3, &with(&log, &["2", "REFUND"])),
        [0, 20, 0, -1, 3600]
    );
    let Value::String(value) = m.get(b"k").unwrap().value else {
        panic!("a string")
    };
    assert_eq!(value[..8], block_header(T0 + 2 + 10_000_000)[..]);
    let replicated = m.take_replicated();
    assert!(
        replicated.iter().any(|c| c.starts_with("SETRANGE k ")),
        "{replicated:?}"
    );
    // Once the block is over, a write drops the header: the log is whole.
    assert_eq!(five(&mut m, T0 + 10_000_002, &log)[..3], [0, 20, 1]);
    let Value::String(value) = m.get(b"k").unwrap().value else {
        panic!("a string")
    };
    // (A refund in place keeps the ring's 20 slots.)
    assert_eq!(value[0], b'L');
    assert_eq!(value.len(), 5 + 20 * 8);
}

#[test]
fn every_algorithm_reads_its_state_behind_a_block_and_names_a_foreign_one() {
    for args in EVERY_COMMAND {
        let mut m = Memory::default();
        five(&mut m, T0, &with(args, &["5"]));
        let own = five(&mut m, T0, &with(args, &["PEEK"]));
        let blocked = five(&mut m, T0, &with(args, &["BLOCK", "60"]));
        assert_eq!(blocked[..3], [1, 5, 0], "{args:?}");
        assert_eq!(blocked[3..], [own[3].max(60), own[4].max(60)], "{args:?}");
        // Another algorithm on the blocked key: named, not misread.
        let other = EVERY_COMMAND.iter().find(|o| o[0] != args[0]).unwrap();
        let error = call(&mut m, T0, other).unwrap_err().to_string();
        assert!(
            error.starts_with(&format!("ERR key 'k' holds an {} state", args[0])),
            "{error}"
        );
    }
}

#[test]
fn all_blocks_only_the_limits_that_refuse_and_counts_nothing() {
    let mut m = Memory::default();
    let all = [
        "RL.ALL", "3", "{u}:a", "{u}:b", "{u}:c", "FIXED", "1", "60", "FIXED", "5", "60", "GCRA", "0", "1",
        "60",
    ];
    five(&mut m, T0, &["RL.FIXED", "{u}:a", "1", "60"]);
    five(&mut m, T0, &["RL.GCRA", "{u}:c", "0", "1", "60"]);
    let before_b = m.get(b"{u}:b");
    m.take_replicated();
    // a and c refuse; c asks the longest wait (60 s) but a block of 600 s
    // is longer on both: the first of them binds.
    assert_eq!(
        six(&mut m, T0, &with(&all, &["BLOCK", "600"])),
        [1, 1, 0, 600, 600, 1]
    );
    for key in [&b"{u}:a"[..], b"{u}:c"] {
        let Value::String(value) = m.get(key).unwrap().value else {
            panic!("a string")
        };
        assert_eq!(value[..8], block_header(T0 + 600_000_000)[..]);
    }
    assert_eq!(m.get(b"{u}:b"), before_b);
    assert_eq!(m.take_replicated().len(), 2);
    // While a and c are blocked, b alone is counted nowhere either.
    assert_eq!(six(&mut m, T0 + 1_000_000, &all)[..2], [1, 1]);
    assert_eq!(m.get(b"{u}:b"), before_b);
    assert!(m.take_replicated().is_empty());
}

#[test]
fn wait_reserves_a_later_slot_and_stores_a_request_made_then() {
    let mut m = Memory::default();
    // One per second, no burst: the second call waits a second, the third
    // two; a fourth with a wait of 2 s is refused, 1 s short.
    let gcra = ["RL.GCRA", "k", "0", "1", "1"];
    let waiting = with(&gcra, &["WAIT", "2"]);
    assert_eq!(five(&mut m, T0, &waiting), [0, 1, 0, -1, 1]);
    assert_eq!(five(&mut m, T0, &waiting), [0, 1, 0, 1, 2]);
    assert_eq!(five(&mut m, T0, &waiting), [0, 1, 0, 2, 3]);
    let before = m.get(b"k");
    m.take_replicated();
    assert_eq!(five(&mut m, T0, &waiting), [1, 1, 0, 1, 3]);
    assert_eq!(m.get(b"k"), before);
    assert!(m.take_replicated().is_empty());
    // The reservation is what a request at T0 + 2 s stores: a TAT 3 s on.
    let mut at_t = Memory::default();
    five(&mut at_t, T0, &gcra);
    five(&mut at_t, T0 + 1_000_000, &gcra);
    five(&mut at_t, T0 + 2_000_000, &gcra);
    assert_eq!(at_t.get(b"k").unwrap().value, before.unwrap().value);
    // Milliseconds, and PEEK (which reserves nothing).
    let ms = ["RL.TOKEN_BUCKET", "b", "1", "1", "1000", "MS"];
    assert_eq!(five(&mut m, T0, &ms), [0, 1, 0, -1, 1000]);
    assert_eq!(
        five(&mut m, T0, &with(&ms, &["WAIT", "1500", "PEEK"])),
        [0, 1, 0, 1000, 2000]
    );
    assert_eq!(
        five(&mut m, T0, &with(&ms, &["WAIT", "1500"])),
        [0, 1, 0, 1000, 2000]
    );
    assert_eq!(
        five(&mut m, T0, &with(&ms, &["WAIT", "1500"])),
        [1, 1, 0, 500, 2000]
    );
}

#[test]
fn wait_is_for_the_algorithms_that_can_reserve() {
    let mut m = Memory::default();
    for (args, expected) in [
        (
            &["RL.FIXED", "k", "1", "60", "WAIT", "5"][..],
            "ERR WAIT does not work with RL.FIXED: a window cannot hold a later window's requests (WAIT works with RL.GCRA, RL.TOKEN_BUCKET and RL.SLIDING_LOG)",
        ),
        (
            &["RL.SLIDING_COUNTER", "k", "1", "60", "0", "WAIT", "5"],
            "ERR WAIT does not work with RL.SLIDING_COUNTER: a window cannot hold a later window's requests (WAIT works with RL.GCRA, RL.TOKEN_BUCKET and RL.SLIDING_LOG)",
        ),
        (
            &["RL.ALL", "2", "a", "b", "GCRA", "1", "1", "1", "FIXED", "1", "60", "WAIT", "5"],
            "ERR limit 2 (FIXED): WAIT does not work with RL.FIXED: a window cannot hold a later window's requests (WAIT works with RL.GCRA, RL.TOKEN_BUCKET and RL.SLIDING_LOG)",
        ),
        (
            &["RL.GCRA", "k", "1", "1", "1", "WAIT", "5", "FORCE"],
            "ERR syntax error: FORCE and WAIT cannot be combined (each says how the units are taken: choose one)",
        ),
        (
            &["RL.GCRA", "k", "1", "1", "1", "AT_MOST", "REFUND"],
            "ERR syntax error: REFUND and AT_MOST cannot be combined (each says how the units are taken: choose one)",
        ),
        (
            &["RL.GCRA", "k", "1", "1", "1", "FORCE", "BLOCK", "5"],
            "ERR syntax error: FORCE and BLOCK cannot be combined (a forced request is never refused)",
        ),
        (
            &["RL.GCRA", "k", "1", "1", "1", "WAIT", "-1"],
            "ERR WAIT max_wait must be an integer from 0 to 1000000000",
        ),
        (
            &["RL.GCRA", "k", "1", "1", "1", "WAIT"],
            "ERR syntax error: WAIT needs a value (WAIT max_wait)",
        ),
    ] {
        assert_eq!(call(&mut m, T0, args).unwrap_err().to_string(), expected, "{args:?}");
    }
    assert!(m.keys.borrow().is_empty());
    // WAIT and BLOCK go together: a refusal past the wait blocks.
    let gcra = ["RL.GCRA", "k", "0", "1", "10"];
    five(&mut m, T0, &gcra);
    assert_eq!(
        five(&mut m, T0, &with(&gcra, &["WAIT", "3", "BLOCK", "60"])),
        [1, 1, 0, 57, 60]
    );
    // Blocked: a reservation waits for the end of the block.
    assert_eq!(
        five(&mut m, T0 + 1_000_000, &with(&gcra, &["WAIT", "60"])),
        [0, 1, 0, 59, 69]
    );
}

#[test]
fn force_records_a_debt_on_every_algorithm() {
    for args in EVERY_COMMAND {
        let mut m = Memory::default();
        let forced = five(&mut m, T0, &with(args, &["12", "FORCE"]));
        assert_eq!(forced[..4], [0, 5, 0, -1], "{args:?}");
        // In debt: refused, and the key's expiry covers the debt.
        let refused = five(&mut m, T0, args);
        assert_eq!(refused[..3], [1, 5, 0], "{args:?}");
        let reset_ms = (T0 / 1000) + forced[4] as u64 * 1000;
        assert!(m.get(b"k").unwrap().expire_at_ms.unwrap() <= reset_ms, "{args:?}");
        assert!(
            m.get(b"k").unwrap().expire_at_ms.unwrap() + 1000 > reset_ms,
            "{args:?}"
        );
        // A refund pays part of it back.
        refund(&mut m, T0, &with(args, &["3", "REFUND"]));
    }
    // A sliding log past its setting, and a debt past the bound: errors
    // that record nothing.
    let mut m = Memory::default();
    assert_eq!(
        call(&mut m, T0, &["RL.SLIDING_LOG", "k", "5", "60", "10001", "FORCE"])
            .unwrap_err()
            .to_string(),
        "ERR the sliding log of key 'k' would hold 10001 entries, more than ratelimit.sliding_log_max_limit (10000) allows (nothing was recorded)"
    );
    // A PEEK of it answers the same; a reservation past the setting too: a
    // full log of 6,000 in a second and 6,000 more reserved a second on
    // would hold 12,000 entries.
    assert_eq!(
        call(&mut m, T0, &["RL.SLIDING_LOG", "k", "5", "60", "10001", "FORCE", "PEEK"])
            .unwrap_err()
            .to_string(),
        "ERR the sliding log of key 'k' would hold 10001 entries, more than ratelimit.sliding_log_max_limit (10000) allows (nothing was recorded)"
    );
    assert_eq!(m.get(b"k"), None);
    let log = ["RL.SLIDING_LOG", "w", "6000", "1", "6000"];
    assert_eq!(five(&mut m, T0, &log)[..3], [0, 6000, 0]);
    let full = m.get(b"w");
    for extra in [&["WAIT", "5"][..], &["WAIT", "5", "PEEK"]] {
        assert_eq!(
            call(&mut m, T0, &with(&log, extra)).unwrap_err().to_string(),
            "ERR the sliding log of key 'w' would hold 12000 entries, more than ratelimit.sliding_log_max_limit (10000) allows (nothing was recorded)",
            "{extra:?}"
        );
        assert_eq!(m.get(b"w"), full);
    }
    for _ in 0..4 {
        five(
            &mut m,
            T0,
            &["RL.GCRA", "g", "0", "1", "1", "1000000000", "FORCE"],
        );
    }
    let before = m.get(b"g");
    assert_eq!(
        call(&mut m, T0, &["RL.GCRA", "g", "0", "1", "1", "1", "FORCE"])
            .unwrap_err()
            .to_string(),
        "ERR FORCE would leave key 'g' holding more than 4000000000 units, debt included (nothing was recorded)"
    );
    assert_eq!(m.get(b"g"), before);
    assert!(m.get(b"k").is_none());
}

#[test]
fn at_most_grants_what_remains_and_says_how_many() {
    let mut m = Memory::default();
    let fixed = ["RL.FIXED", "k", "10", "60"];
    let (fields, _) = decided(&mut m, T0, &with(&fixed, &["4", "AT_MOST"]));
    assert_eq!(fields[..3], [0, 10, 6]);
    assert_eq!(fields[5], 4);
    let (fields, _) = decided(&mut m, T0, &with(&fixed, &["100", "AT_MOST"]));
    assert_eq!((fields[0], fields[2], fields[5]), (0, 0, 6));
    let (fields, outcome) = decided(&mut m, T0, &with(&fixed, &["100", "AT_MOST"]));
    assert_eq!((fields[0], fields[5], outcome), (1, 0, Outcome::Refused));
    // A query with AT_MOST: six integers too.
    assert_eq!(decided(&mut m, T0, &with(&fixed, &["0", "AT_MOST"])).0.len(), 6);
    // RL.ALL: the least of the grants, recorded on every limit; seven
    // integers.
    let all = [
        "RL.ALL", "2", "a", "b", "FIXED", "10", "60", "GCRA", "2", "1", "60", "5", "AT_MOST",
    ];
    let (fields, _) = decided(&mut m, T0, &all);
    assert_eq!(fields, [0, 3, 0, -1, 180, 2, 3]);
    assert_eq!(five(&mut m, T0, &["RL.FIXED", "a", "10", "60", "0"])[2], 7);
}

#[test]
fn all_waits_for_the_latest_of_its_limits() {
    let mut m = Memory::default();
    // A burst of 1 a second, and 2 in any 10 s.
    let all = [
        "RL.ALL",
        "2",
        "g",
        "l",
        "GCRA",
        "0",
        "1",
        "1",
        "SLIDING_LOG",
        "2",
        "10",
        "WAIT",
        "20",
    ];
    assert_eq!(six(&mut m, T0, &all), [0, 1, 0, -1, 1, 1]);
    // The GCRA limit is free in 1 s, the log has room: both at T0 + 1 s.
    assert_eq!(six(&mut m, T0, &all), [0, 1, 0, 1, 2, 1]);
    // The log is full until T0 + 10 s: it binds, and both record then.
    assert_eq!(six(&mut m, T0, &all), [0, 2, 0, 10, 20, 2]);
    assert_eq!(
        five(&mut m, T0, &["RL.GCRA", "g", "0", "1", "1", "0"]),
        [0, 1, 0, -1, 11]
    );
    // Past the wait: both are free at T0 + 11 s (the log when its entry of
    // T0 + 1 s leaves), 6 s past a wait of 5: refused, the first binds,
    // nothing recorded anywhere.
    let keys = m.keys.borrow().clone();
    let short = [&all[..12], &["5"]].concat();
    assert_eq!(six(&mut m, T0, &short), [1, 1, 0, 6, 11, 1]);
    assert_eq!(*m.keys.borrow(), keys);
}

/// A read command's reply (`RL.LOG`, `RL.INSPECT`).
fn value(memory: &mut Memory, now: u64, args: &[&str]) -> crate::reply::Value {
    match call(memory, now, args) {
        Ok(Reply::Value(v)) => *v,
        other => panic!("{args:?}: {other:?}"),
    }
}

fn entry(at: u64, units: i64, tag: Option<&str>) -> crate::reply::Value {
    use crate::reply::Value;
    Value::Array(vec![
        Value::int(at),
        Value::Integer(units),
        Value::bulk_or_nil(tag.map(str::as_bytes)),
    ])
}

#[test]
fn the_log_groups_units_by_instant_and_tag_and_counts_back_from_now() {
    use crate::reply::Value;
    let mut m = Memory::default();
    let log = ["RL.SLIDING_LOG", "ip", "10", "60"];
    let with = |extra: &[&'static str]| -> Vec<&'static str> {
        log.iter().copied().chain(extra.iter().copied()).collect()
    };
    five(&mut m, T0, &with(&["2", "TAG", "a"]));
    // Three calls at one instant: a, b, then a again.
    five(&mut m, T0 + SEC, &with(&["1", "TAG", "a"]));
    five(&mut m, T0 + SEC, &with(&["2", "TAG", "b"]));
    five(&mut m, T0 + SEC, &with(&["1", "TAG", "a"]));
    five(&mut m, T0 + 2 * SEC, &with(&["1"]));
    let now = T0 + 2 * SEC;
    let all = value(&mut m, now, &["RL.LOG", "ip", "60"]);
    let expected = vec![
        entry(T0 + 2 * SEC, 1, None),
        // The instant's items in the order of their newest unit: a's last
        // call came after b's.
        entry(T0 + SEC, 2, Some("a")),
        entry(T0 + SEC, 2, Some("b")),
        entry(T0, 2, Some("a")),
    ];
    assert_eq!(all, Value::Array(expected.clone()));
    // COUNT 2 reads the whole instant of T0 + 1 s, then keeps two items.
    assert_eq!(
        value(&mut m, now, &["RL.LOG", "ip", "60", "COUNT", "2"]),
        Value::Array(expected[..2].to_vec())
    );
    // A window of 2 s at T0 + 2 s counts what is after T0: not T0's units.
    assert_eq!(
        value(&mut m, now, &["RL.LOG", "ip", "2"]),
        Value::Array(expected[..3].to_vec())
    );
    assert_eq!(
        value(&mut m, now, &["RL.LOG", "ip", "2000", "MS", "BY", "TAG"]),
        Value::Array(vec![
            Value::Array(vec![Value::Bulk(b"a".to_vec()), Value::Integer(2)]),
            Value::Array(vec![Value::Bulk(b"b".to_vec()), Value::Integer(2)]),
            Value::Array(vec![Value::Nil, Value::Integer(1)]),
        ])
    );
    // The untagged first among equals; then by the tags' bytes.
    assert_eq!(
        value(&mut m, now, &["RL.LOG", "ip", "60", "BY", "TAG"]),
        Value::Array(vec![
            Value::Array(vec![Value::Bulk(b"a".to_vec()), Value::Integer(4)]),
            Value::Array(vec![Value::Bulk(b"b".to_vec()), Value::Integer(2)]),
            Value::Array(vec![Value::Nil, Value::Integer(1)]),
        ])
    );
    // Reading replicated and changed nothing.
    let before = m.get(b"ip");
    m.take_replicated();
    value(&mut m, now, &["RL.INSPECT", "ip"]);
    assert_eq!((m.get(b"ip"), m.take_replicated()), (before, vec![]));
}

#[test]
fn inspect_names_each_field_of_each_state() {
    use crate::reply::Value;
    let mut m = Memory::default();
    let map = |fields: Vec<(&'static str, Value)>| Value::Map(fields);
    let kind = |k: &str| Value::Bulk(k.as_bytes().to_vec());
    five(&mut m, T0, &["RL.GCRA", "g", "4", "3", "60", "2"]);
    // 3 per minute: an interval of 20 s, two units past a TAT of now.
    assert_eq!(
        value(&mut m, T0, &["RL.INSPECT", "g"]),
        map(vec![
            ("kind", kind("gcra")),
            ("tat_us", Value::int(T0 + 40 * SEC)),
            ("pttl", Value::int((T0 + 40 * SEC) / 1000)),
        ])
    );
    five(
        &mut m,
        T0,
        &["RL.TOKEN_BUCKET", "t", "5", "1", "60", "3", "FORCE"],
    );
    five(
        &mut m,
        T0,
        &["RL.TOKEN_BUCKET", "t", "5", "1", "60", "4", "FORCE"],
    );
    // 5 - 7: two tokens in debt; a third of a minute later, a third of a
    // token refilled: still -2 whole tokens (rounded down).
    let inspected = value(&mut m, T0 + 20 * SEC, &["RL.INSPECT", "t"]);
    let Value::Map(fields) = inspected else {
        panic!("{inspected:?}")
    };
    assert_eq!(
        fields[..3],
        [
            ("kind", kind("token_bucket")),
            ("tokens", Value::Integer(-2)),
            ("updated_us", Value::int(T0))
        ]
    );
    five(&mut m, T0 + 5 * SEC, &["RL.SLIDING_COUNTER", "c", "5", "60", "2"]);
    five(
        &mut m,
        T0 + 65 * SEC,
        &["RL.SLIDING_COUNTER", "c", "5", "60", "1"],
    );
    let Value::Map(fields) = value(&mut m, T0 + 65 * SEC, &["RL.INSPECT", "c"]) else {
        panic!()
    };
    // Windows start at multiples of 60 s (T0 is one): the second from T0 + 60 s.
    let start = (T0 + 65 * SEC) / (60 * SEC) * (60 * SEC);
    assert_eq!(
        fields[..4],
        [
            ("kind", kind("sliding_counter")),
            ("window_start_us", Value::int(start)),
            ("previous", Value::Integer(2)),
            ("current", Value::Integer(1)),
        ]
    );
    assert_eq!(value(&mut m, T0, &["RL.INSPECT", "missing"]), Value::Nil);
}
