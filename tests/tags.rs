//! Who caused it (SPEC 19) on a live server: `TAG` on the sliding log and
//! `RL.ALL`, `RL.LOG` with and without `BY TAG`, `RL.INSPECT` of every
//! kind of state, their errors (which change nothing), the bytes a log
//! without tags keeps, what the release before tags makes of a tagged log,
//! read-only replicas, `COMMAND DOCS`, ACL categories and `INFO`.
//!
//! Windows are an hour and fixed windows 10^9 s, so that no reply depends
//! on when a call runs; instants are checked against the server's clock
//! read around the calls.

mod common;

use common::{
    cmd, error, five, in_edition, raises_the_cap, server_micros, snapshot, tested, Edition, Server,
};
use redis::{Connection, Value};

const HOUR_US: u64 = 3_600_000_000;

/// One item of `RL.LOG`: instant (µs), units, tag.
type Entry = (u64, u64, Option<Vec<u8>>);

fn tag(t: &str) -> Option<Vec<u8>> {
    Some(t.as_bytes().to_vec())
}

fn int(v: &Value) -> u64 {
    match v {
        Value::Int(i) => u64::try_from(*i).unwrap_or_else(|_| panic!("negative: {i}")),
        other => panic!("not an integer: {other:?}"),
    }
}

fn bulk_or_nil(v: &Value) -> Option<Vec<u8>> {
    match v {
        Value::Nil => None,
        Value::BulkString(b) => Some(b.clone()),
        other => panic!("neither a bulk string nor nil: {other:?}"),
    }
}

fn items(v: Value) -> Vec<Vec<Value>> {
    match v {
        Value::Array(items) => items
            .into_iter()
            .map(|item| match item {
                Value::Array(fields) => fields,
                other => panic!("not an array: {other:?}"),
            })
            .collect(),
        other => panic!("not an array: {other:?}"),
    }
}

/// `RL.LOG key window ...` (no `BY TAG`).
fn log(c: &mut Connection, args: &[&str]) -> Vec<Entry> {
    let v: Value = cmd(&[&["RL.LOG"], args].concat())
        .query(c)
        .unwrap_or_else(|e| panic!("{args:?}: {e}"));
    items(v)
        .into_iter()
        .map(|f| {
            assert_eq!(f.len(), 3, "{f:?}");
            (int(&f[0]), int(&f[1]), bulk_or_nil(&f[2]))
        })
        .collect()
}

/// `RL.LOG key window ... BY TAG`.
fn by_tag(c: &mut Connection, args: &[&str]) -> Vec<(Option<Vec<u8>>, u64)> {
    let v: Value = cmd(&[&["RL.LOG"], args, &["BY", "TAG"]].concat())
        .query(c)
        .unwrap_or_else(|e| panic!("{args:?}: {e}"));
    items(v)
        .into_iter()
        .map(|f| {
            assert_eq!(f.len(), 2, "{f:?}");
            (bulk_or_nil(&f[0]), int(&f[1]))
        })
        .collect()
}

/// `RL.INSPECT key`: the names and values in order (a flat array, or a
/// map under RESP3), `None` for nil.
fn inspect(c: &mut Connection, key: &str) -> Option<Vec<(String, Value)>> {
    let v: Value = cmd(&["RL.INSPECT", key])
        .query(c)
        .unwrap_or_else(|e| panic!("RL.INSPECT {key}: {e}"));
    fields(v)
}

fn fields(v: Value) -> Option<Vec<(String, Value)>> {
    let name = |v: &Value| match v {
        Value::BulkString(b) => String::from_utf8(b.clone()).expect("a UTF-8 name"),
        Value::SimpleString(s) => s.clone(),
        other => panic!("not a name: {other:?}"),
    };
    match v {
        Value::Nil => None,
        Value::Array(flat) => {
            assert_eq!(flat.len() % 2, 0, "{flat:?}");
            Some(flat.chunks(2).map(|p| (name(&p[0]), p[1].clone())).collect())
        }
        Value::Map(pairs) => Some(pairs.into_iter().map(|(k, v)| (name(&k), v)).collect()),
        other => panic!("not a map: {other:?}"),
    }
}

/// The names of `fields`, in order.
fn names(fields: &[(String, Value)]) -> Vec<&str> {
    fields.iter().map(|(n, _)| n.as_str()).collect()
}

fn field<'a>(fields: &'a [(String, Value)], name: &str) -> &'a Value {
    &fields
        .iter()
        .find(|(n, _)| n == name)
        .unwrap_or_else(|| panic!("no {name} in {fields:?}"))
        .1
}

fn kind(fields: &[(String, Value)]) -> Option<Vec<u8>> {
    bulk_or_nil(field(fields, "kind"))
}

fn get(c: &mut Connection, key: &str) -> Vec<u8> {
    cmd(&["GET", key]).query(c).expect("GET")
}

/// A call of the sliding log (limit 10, an hour) on `key` with `extra`.
fn take(c: &mut Connection, key: &str, extra: &[&str]) -> common::Reply {
    five(c, &[&["RL.SLIDING_LOG", key, "10", "3600"], extra].concat())
}

#[test]
fn each_unit_carries_its_tag_and_the_log_answers_by_instant_and_by_tag() {
    let s = Server::start();
    let mut c = s.client();
    let before = server_micros(&mut c);
    take(&mut c, "ip", &["2", "TAG", "alice"]);
    take(&mut c, "ip", &["1"]);
    take(&mut c, "ip", &["3", "TAG", "bob"]);
    // Forced past nothing, reserved for later, granted in part: each logs
    // its units with the tag.
    take(&mut c, "ip", &["1", "FORCE", "TAG", "carol"]);
    let (granted, units) = common::six(
        &mut c,
        &[
            "RL.SLIDING_LOG",
            "ip",
            "10",
            "3600",
            "5",
            "AT_MOST",
            "TAG",
            "dave",
        ],
    );
    assert_eq!((granted.counts(), units), ((false, 10, 0), 3));
    let after = server_micros(&mut c);
    let entries = log(&mut c, &["ip", "3600"]);
    let shape: Vec<(u64, Option<Vec<u8>>)> = entries.iter().map(|(_, u, t)| (*u, t.clone())).collect();
    // Newest first, one item per call (each a tag of its own, or none).
    assert_eq!(
        shape,
        vec![
            (3, tag("dave")),
            (1, tag("carol")),
            (3, tag("bob")),
            (1, None),
            (2, tag("alice"))
        ]
    );
    let instants: Vec<u64> = entries.iter().map(|e| e.0).collect();
    assert!(instants.windows(2).all(|w| w[0] >= w[1]), "{instants:?}");
    assert!(
        instants.iter().all(|t| (before..=after).contains(t)),
        "{instants:?}"
    );

    assert_eq!(
        by_tag(&mut c, &["ip", "3600"]),
        vec![
            (tag("bob"), 3),
            (tag("dave"), 3),
            (tag("alice"), 2),
            (None, 1),
            (tag("carol"), 1)
        ]
    );
    // COUNT keeps the first items.
    assert_eq!(
        by_tag(&mut c, &["ip", "3600", "COUNT", "2"]),
        vec![(tag("bob"), 3), (tag("dave"), 3)]
    );
    assert_eq!(log(&mut c, &["ip", "3600", "COUNT", "1"]), entries[..1].to_vec());
    // The options in any order and case, the window in milliseconds.
    assert_eq!(log(&mut c, &["ip", "3600000", "count", "5", "ms"]), entries);

    let fields = inspect(&mut c, "ip").expect("a log");
    assert_eq!(
        names(&fields),
        ["kind", "entries", "tagged", "oldest_us", "newest_us", "pttl"]
    );
    assert_eq!(kind(&fields), tag("sliding_log"));
    assert_eq!(int(field(&fields, "entries")), 10);
    assert_eq!(int(field(&fields, "tagged")), 9);
    assert_eq!(int(field(&fields, "oldest_us")), entries[4].0);
    assert_eq!(int(field(&fields, "newest_us")), entries[0].0);
    let pttl = int(field(&fields, "pttl"));
    assert!((3_590_000..=3_600_001).contains(&pttl), "{pttl}");
}

#[test]
fn a_reservation_is_logged_at_its_instant_and_the_window_counts_back_from_now() {
    let s = Server::start();
    let mut c = s.client();
    take(&mut c, "r", &["10", "TAG", "early"]);
    let before = server_micros(&mut c);
    let reserved = five(
        &mut c,
        &[
            "RL.SLIDING_LOG",
            "r",
            "10",
            "3600",
            "1",
            "WAIT",
            "7200",
            "TAG",
            "late",
        ],
    );
    let after = server_micros(&mut c);
    assert!(!reserved.blocked && reserved.retry_after > 0, "{reserved:?}");
    let entries = log(&mut c, &["r", "3600"]);
    assert_eq!(entries.len(), 2, "{entries:?}");
    let (at, units, late) = &entries[0];
    assert_eq!((*units, late.clone()), (1, tag("late")));
    // An hour after the ten that fill the window.
    assert!(
        (before + HOUR_US - 1_000_000..=after + HOUR_US).contains(at),
        "{at}"
    );
    assert_eq!((entries[1].1, entries[1].2.clone()), (10, tag("early")));
    // A window of a millisecond, once the server's clock has moved past the
    // ten entries by more than that: only the reservation is counted.
    let early = entries[1].0;
    while server_micros(&mut c) <= early + 1_000 {
        std::thread::yield_now();
    }
    assert_eq!(log(&mut c, &["r", "1", "MS"]), entries[..1].to_vec());
    assert_eq!(by_tag(&mut c, &["r", "1", "MS"]), vec![(tag("late"), 1)]);
}

#[test]
fn a_log_that_holds_no_tag_keeps_the_untagged_bytes() {
    let s = Server::start();
    let mut c = s.client();
    five(&mut c, &["RL.SLIDING_LOG", "k", "2", "3600"]);
    assert_eq!(get(&mut c, "k")[0], b'L');
    five(&mut c, &["RL.SLIDING_LOG", "k", "2", "3600", "1", "TAG", "t"]);
    let tagged = get(&mut c, "k");
    assert_eq!(tagged[0], b'l');
    // 'l', two entries, two instants, then the records: none, then "t".
    assert_eq!(tagged[1..5], [2, 0, 0, 0]);
    assert_eq!(tagged[21..], [0, 0, 1, 0, b't']);
    // The tagged unit is refunded: the log holds no tag again, and is the
    // untagged log, linear, its one instant the first.
    five(&mut c, &["RL.SLIDING_LOG", "k", "2", "3600", "1", "REFUND"]);
    let untagged = get(&mut c, "k");
    assert_eq!(untagged[..5], [b'L', 0, 0, 0, 0]);
    assert_eq!(untagged[5..], tagged[5..13]);
    // Entries in the window are kept; once out of it, the oldest beyond
    // the limit go: a tagged unit pushed out leaves the untagged log.
    pushed_out(&mut c, "p");
    let pushed = get(&mut c, "p");
    assert_eq!(pushed[..5], [b'L', 0, 0, 0, 0]);
    assert_eq!(pushed.len(), 5 + 8);
    let fields = inspect(&mut c, "p").expect("a log");
    assert_eq!(
        (int(field(&fields, "entries")), int(field(&fields, "tagged"))),
        (1, 0)
    );
}

/// A log of `key` (limit 1, a window of a second) whose tagged unit was
/// pushed out by an untagged one, once the server's clock had left it out
/// of the window. The key then lives a second more: long enough to read it
/// back on a loaded machine.
fn pushed_out(c: &mut Connection, key: &str) {
    five(c, &["RL.SLIDING_LOG", key, "1", "1", "1", "TAG", "t"]);
    let logged = server_micros(c);
    assert_eq!(get(c, key)[0], b'l');
    while server_micros(c) <= logged + 1_000_000 {
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    assert!(!five(c, &["RL.SLIDING_LOG", key, "1", "1", "1"]).blocked);
}

#[test]
fn all_tags_what_its_sliding_logs_log() {
    let s = Server::start();
    let mut c = s.client();
    let (reply, binding) = common::all(
        &mut c,
        &[
            "RL.ALL",
            "2",
            "a:log",
            "a:gcra",
            "SLIDING_LOG",
            "5",
            "3600",
            "GCRA",
            "4",
            "1",
            "3600",
            "2",
            "TAG",
            "u1",
        ],
    );
    assert_eq!((reply.counts(), binding), ((false, 5, 3), 1));
    assert_eq!(by_tag(&mut c, &["a:log", "3600"]), vec![(tag("u1"), 2)]);
    // The GCRA's state is what an untagged call writes.
    let gcra = inspect(&mut c, "a:gcra").expect("a GCRA");
    assert_eq!(names(&gcra), ["kind", "tat_us", "pttl"]);
    assert_eq!(kind(&gcra), tag("gcra"));
}

#[test]
fn inspect_decodes_every_kind_of_state() {
    let s = Server::start();
    let mut c = s.client();
    assert_eq!(inspect(&mut c, "missing"), None);

    let before = server_micros(&mut c);
    five(&mut c, &["RL.GCRA", "i:gcra", "4", "1", "3600", "2"]);
    five(&mut c, &["RL.TOKEN_BUCKET", "i:tb", "5", "1", "3600", "2"]);
    five(&mut c, &["RL.FIXED", "i:fixed", "5", "1000000000", "3"]);
    five(
        &mut c,
        &["RL.SLIDING_COUNTER", "i:counter", "5", "1000000000", "4"],
    );
    five(&mut c, &["RL.SLIDING_LOG", "i:log", "5", "3600", "2"]);
    let (_, first) = common::six(&mut c, &["RL.CONCURRENCY", "i:leases", "5", "3600", "1"]);
    let (_, second) = common::six(&mut c, &["RL.CONCURRENCY", "i:leases", "5", "1800", "2"]);
    let after = server_micros(&mut c);
    let around = |offset: u64| (before + offset)..=(after + offset);

    let gcra = inspect(&mut c, "i:gcra").unwrap();
    assert_eq!(names(&gcra), ["kind", "tat_us", "pttl"]);
    // Two units of an hour each past a TAT of now.
    let tat = int(field(&gcra, "tat_us"));
    assert!(around(2 * HOUR_US).contains(&tat), "{tat}");

    let tb = inspect(&mut c, "i:tb").unwrap();
    assert_eq!(names(&tb), ["kind", "tokens", "updated_us", "pttl"]);
    assert_eq!(kind(&tb), tag("token_bucket"));
    assert_eq!(int(field(&tb, "tokens")), 3);
    assert!(around(0).contains(&int(field(&tb, "updated_us"))));

    let fixed = inspect(&mut c, "i:fixed").unwrap();
    assert_eq!(names(&fixed), ["kind", "window_start_us", "count", "pttl"]);
    assert_eq!(kind(&fixed), tag("fixed"));
    // Windows of 10^9 s start at multiples of 10^15 µs: the one of 2001.
    assert_eq!(int(field(&fixed, "window_start_us")), 1_000_000_000_000_000);
    assert_eq!(int(field(&fixed, "count")), 3);

    let counter = inspect(&mut c, "i:counter").unwrap();
    assert_eq!(
        names(&counter),
        ["kind", "window_start_us", "previous", "current", "pttl"]
    );
    assert_eq!(kind(&counter), tag("sliding_counter"));
    assert_eq!(int(field(&counter, "window_start_us")), 1_000_000_000_000_000);
    assert_eq!(
        (int(field(&counter, "previous")), int(field(&counter, "current"))),
        (0, 4)
    );

    let log = inspect(&mut c, "i:log").unwrap();
    assert_eq!((int(field(&log, "entries")), int(field(&log, "tagged"))), (2, 0));
    assert_eq!(field(&log, "oldest_us"), field(&log, "newest_us"));

    let leases = inspect(&mut c, "i:leases").unwrap();
    assert_eq!(
        names(&leases),
        ["kind", "leases", "units", "next_deadline_us", "last_id", "pttl"]
    );
    assert_eq!(kind(&leases), tag("concurrency"));
    assert_eq!(
        (int(field(&leases, "leases")), int(field(&leases, "units"))),
        (2, 3)
    );
    // The second lease's deadline, half an hour away, is the next.
    let next = int(field(&leases, "next_deadline_us"));
    assert!(around(HOUR_US / 2).contains(&next), "{next}");
    assert_eq!(int(field(&leases, "last_id")), u64::try_from(second).unwrap());
    assert!(second > first);
    // A released lease is no longer counted.
    assert_eq!(
        common::integer(&mut c, &["RL.RELEASE", "i:leases", &second.to_string()]),
        2
    );
    let leases = inspect(&mut c, "i:leases").unwrap();
    assert_eq!(
        (int(field(&leases, "leases")), int(field(&leases, "units"))),
        (1, 1)
    );
    assert!(around(HOUR_US).contains(&int(field(&leases, "next_deadline_us"))));

    // A block over a limiter that rests: the header alone, no kind.
    let end = after + HOUR_US;
    let header = [&[b'B'][..], &end.to_le_bytes()[..7]].concat();
    let _: () = redis::cmd("SET")
        .arg("i:rested")
        .arg(&header)
        .query(&mut c)
        .unwrap();
    let rested = inspect(&mut c, "i:rested").unwrap();
    assert_eq!(names(&rested), ["kind", "blocked_until_us", "pttl"]);
    assert_eq!(field(&rested, "kind"), &Value::Nil);
    assert_eq!(int(field(&rested, "blocked_until_us")), end);
    assert_eq!(field(&rested, "pttl"), &Value::Int(-1));
    // A block over a fixed window: its fields, then the block's end.
    five(&mut c, &["RL.FIXED", "i:blocked", "1", "1000000000", "1"]);
    let started = server_micros(&mut c);
    let blocked = five(
        &mut c,
        &["RL.FIXED", "i:blocked", "1", "1000000000", "1", "BLOCK", "600"],
    );
    let ended = server_micros(&mut c);
    assert!(blocked.blocked);
    let block = inspect(&mut c, "i:blocked").unwrap();
    assert_eq!(
        names(&block),
        ["kind", "window_start_us", "count", "blocked_until_us", "pttl"]
    );
    let until = int(field(&block, "blocked_until_us"));
    assert!(
        (started + 600_000_000..=ended + 600_000_000).contains(&until),
        "{until}"
    );
    // A block over a log: its fields, then the block's end.
    five(
        &mut c,
        &["RL.SLIDING_LOG", "i:blog", "1", "3600", "1", "TAG", "x"],
    );
    let refused = five(
        &mut c,
        &[
            "RL.SLIDING_LOG",
            "i:blog",
            "1",
            "3600",
            "1",
            "BLOCK",
            "7200",
            "TAG",
            "x",
        ],
    );
    assert!(refused.blocked);
    let blog = inspect(&mut c, "i:blog").unwrap();
    assert_eq!(
        names(&blog),
        [
            "kind",
            "entries",
            "tagged",
            "oldest_us",
            "newest_us",
            "blocked_until_us",
            "pttl"
        ]
    );
    assert_eq!(by_tag(&mut c, &["i:blog", "3600"]), vec![(tag("x"), 1)]);
}

#[test]
fn what_is_no_limiter_answers_an_error_and_nothing_changes() {
    let s = Server::start();
    let mut c = s.client();
    let _: () = cmd(&["SET", "plain", "hello"]).query(&mut c).unwrap();
    let _: () = cmd(&["SET", "empty", ""]).query(&mut c).unwrap();
    let _: () = cmd(&["SET", "bad:log", "Lxx"]).query(&mut c).unwrap();
    let _: () = cmd(&["SET", "bad:tagged", "l\u{1}\0\0\0"]).query(&mut c).unwrap();
    let _: () = cmd(&["SET", "bad:block", "B12"]).query(&mut c).unwrap();
    let _: () = cmd(&["RPUSH", "list", "x"]).query(&mut c).unwrap();
    five(&mut c, &["RL.GCRA", "gcra", "4", "1", "3600"]);
    let no_limiter =
        |key: &str, problem: &str| format!("ERR key '{key}' does not hold a limiter's state: {problem}");
    assert_eq!(
        error(&mut c, &["RL.INSPECT", "plain"]),
        no_limiter("plain", "its first byte is no limiter's")
    );
    assert_eq!(
        error(&mut c, &["RL.INSPECT", "empty"]),
        no_limiter("empty", "its first byte is no limiter's")
    );
    assert_eq!(
        error(&mut c, &["RL.INSPECT", "bad:block"]),
        no_limiter("bad:block", "expected 'B' and a 7-byte instant before the state")
    );
    assert_eq!(
        error(&mut c, &["RL.INSPECT", "bad:log"]),
        "ERR key 'bad:log' does not hold a valid RL.SLIDING_LOG state: expected 'L', a 4-byte ring position and 8-byte instants"
    );
    let tagged_shape = "ERR key 'bad:tagged' does not hold a valid RL.SLIDING_LOG state: expected 'l', an entry count, its 8-byte instants and as many tags";
    assert_eq!(error(&mut c, &["RL.INSPECT", "bad:tagged"]), tagged_shape);
    assert_eq!(error(&mut c, &["RL.LOG", "bad:tagged", "60"]), tagged_shape);
    assert_eq!(
        error(
            &mut c,
            &["RL.SLIDING_LOG", "bad:tagged", "5", "60", "1", "TAG", "t"]
        ),
        tagged_shape
    );
    let wrongtype = "WRONGTYPE Operation against a key holding the wrong kind of value";
    assert_eq!(error(&mut c, &["RL.INSPECT", "list"]), wrongtype);
    assert_eq!(error(&mut c, &["RL.LOG", "list", "60"]), wrongtype);
    assert_eq!(
        error(&mut c, &["RL.LOG", "gcra", "60"]),
        "ERR key 'gcra' holds an RL.GCRA state, not an RL.SLIDING_LOG one (use another key, or DEL it to start over)"
    );
    // A missing key, or a block alone: nothing logged.
    assert_eq!(log(&mut c, &["missing", "60"]), vec![]);
    assert_eq!(by_tag(&mut c, &["missing", "60"]), vec![]);
}

#[test]
fn bad_input_is_refused_with_a_clear_error_and_changes_nothing() {
    let s = Server::start();
    let mut c = s.client();
    take(&mut c, "k", &["2", "TAG", "alice"]);
    let before = snapshot(&mut c, "k");
    let long = "x".repeat(65);
    let too_long = format!(
        "ERR TAG value must be 1 to 64 bytes {}",
        raises_the_cap("tag_max_bytes", 1024)
    );
    let cases: Vec<(Vec<&str>, String)> = vec![
        (vec!["RL.SLIDING_LOG", "k", "10", "3600", "1", "TAG", ""], too_long.clone()),
        (vec!["RL.SLIDING_LOG", "k", "10", "3600", "1", "TAG", &long], too_long.clone()),
        (
            vec!["RL.ALL", "1", "k", "SLIDING_LOG", "10", "3600", "TAG", &long],
            too_long.clone(),
        ),
        (
            vec!["RL.SLIDING_LOG", "k", "10", "3600", "1", "TAG"],
            "ERR syntax error: TAG needs a value (TAG value)".into(),
        ),
        (
            vec!["RL.SLIDING_LOG", "k", "10", "3600", "1", "TAG", "a", "TAG", "b"],
            "ERR syntax error: TAG is given twice".into(),
        ),
        (
            vec!["RL.SLIDING_LOG", "k", "10", "3600", "1", "REFUND", "TAG", "a"],
            "ERR syntax error: REFUND and TAG cannot be combined (a refund gives back the newest units, whoever logged them)"
                .into(),
        ),
        (
            vec!["RL.GCRA", "k", "4", "1", "3600", "1", "TAG", "a"],
            "ERR syntax error: 'rl.gcra' does not take TAG (it takes MS, PEEK, REFUND, FORCE, WAIT, AT_MOST or BLOCK)"
                .into(),
        ),
        (
            vec!["RL.SLIDING_LOG", "k", "10", "3600", "1", "NAG", "a"],
            "ERR syntax error: unknown option 'NAG' (expected MS, PEEK, REFUND, FORCE, WAIT, AT_MOST, BLOCK or TAG)"
                .into(),
        ),
        (
            vec!["RL.LOG", "k", "0"],
            "ERR window must be an integer from 1 to 1000000000".into(),
        ),
        (
            vec!["RL.LOG", "k", "60", "COUNT", "0"],
            "ERR COUNT count must be an integer from 1 to 1000000000".into(),
        ),
        (
            vec!["RL.LOG", "k", "60", "COUNT", "1000000001"],
            "ERR COUNT count must be an integer from 1 to 1000000000".into(),
        ),
        (
            vec!["RL.LOG", "k", "60", "COUNT"],
            "ERR syntax error: COUNT needs a value (COUNT count)".into(),
        ),
        (
            vec!["RL.LOG", "k", "60", "BY"],
            "ERR syntax error: BY needs a value (TAG)".into(),
        ),
        (
            vec!["RL.LOG", "k", "60", "BY", "USER"],
            "ERR syntax error: BY takes only TAG, got 'USER'".into(),
        ),
        (
            vec!["RL.LOG", "k", "60", "TAG"],
            "ERR syntax error: unknown option 'TAG' (expected MS, BY TAG or COUNT)".into(),
        ),
        (
            vec!["RL.LOG", "k", "60", "COUNT", "1", "COUNT", "2"],
            "ERR syntax error: COUNT is given twice".into(),
        ),
        (
            vec!["RL.LOG", "k", "60", "BY", "TAG", "by", "tag"],
            "ERR syntax error: BY TAG is given twice".into(),
        ),
        (
            vec!["RL.LOG", "k"],
            "ERR wrong number of arguments for 'rl.log' command".into(),
        ),
        (
            vec!["RL.INSPECT", "k", "k"],
            "ERR wrong number of arguments for 'rl.inspect' command".into(),
        ),
    ];
    for (args, expected) in cases {
        let got = error(&mut c, &args);
        assert_eq!(got, in_edition(&expected), "{args:?}");
        assert_eq!(snapshot(&mut c, "k"), before, "{args:?} changed the key");
    }
}

#[test]
fn the_tag_limit_is_a_setting() {
    if common::edition() != Edition::Module {
        // The functions edition's limit is in its settings table (edited,
        // then loaded again): its default is checked above.
        return;
    }
    let s = Server::start();
    let mut c = s.client();
    let long = "y".repeat(1024);
    common::set_setting(&mut c, "tag_max_bytes", "1024");
    take(&mut c, "k", &["1", "TAG", &long]);
    assert_eq!(by_tag(&mut c, &["k", "60"]), vec![(Some(long.into_bytes()), 1)]);
    let longer = "y".repeat(1025);
    assert_eq!(
        error(
            &mut c,
            &["RL.SLIDING_LOG", "k", "10", "3600", "1", "TAG", &longer]
        ),
        format!(
            "ERR TAG value must be 1 to 1024 bytes {}",
            raises_the_cap("tag_max_bytes", 1024)
        )
    );
}

#[test]
fn the_read_commands_run_on_a_read_only_replica() {
    // The module, and the library (which a replica gets from its master);
    // each script would have to be loaded on the replica first.
    if common::edition() == Edition::Scripts {
        return;
    }
    let master = Server::master(&[]);
    let mut m = master.client();
    let replica = Server::replica_of(&master, true);
    let mut r = replica.client();
    take(&mut m, "rep", &["3", "TAG", "alice"]);
    let acked: i64 = cmd(&["WAIT", "1", "5000"]).query(&mut m).unwrap();
    assert_eq!(acked, 1);
    assert_eq!(by_tag(&mut r, &["rep", "3600"]), vec![(tag("alice"), 3)]);
    assert_eq!(log(&mut r, &["rep", "3600"]), log(&mut m, &["rep", "3600"]));
    let on_replica = inspect(&mut r, "rep").unwrap();
    assert_eq!(kind(&on_replica), tag("sliding_log"));
    assert_eq!(int(field(&on_replica, "tagged")), 3);
    // What writes is refused there.
    assert!(error(&mut r, &["RL.SLIDING_LOG", "rep", "10", "3600"]).starts_with("READONLY"));
}

#[test]
fn the_read_commands_are_documented_read_only_and_counted() {
    if common::edition() != Edition::Module {
        return;
    }
    let s = Server::start();
    let mut c = s.client();
    let kind = tested();
    for name in ["rl.log", "rl.inspect"] {
        let info: Value = cmd(&["COMMAND", "INFO", name]).query(&mut c).unwrap();
        let text = format!("{info:?}");
        assert!(text.contains("readonly"), "{name}: {text}");
        assert!(!text.contains("write"), "{name}: {text}");
        if let Some(docs) = common::command_docs(&mut c, name) {
            assert!(docs.contains("key_spec_index"), "{name}: {docs}");
        }
    }
    if kind.has_module_acl_categories() {
        let read: Vec<String> = cmd(&["ACL", "CAT", "read"]).query(&mut c).unwrap();
        assert!(read.contains(&"rl.log".to_string()) && read.contains(&"rl.inspect".to_string()));
        let write: Vec<String> = cmd(&["ACL", "CAT", "write"]).query(&mut c).unwrap();
        assert!(!write.contains(&"rl.log".to_string()) && !write.contains(&"rl.inspect".to_string()));
    }
    if kind.has_command_docs() {
        // The key spec says the key is read only.
        let specs: Value = cmd(&["COMMAND", "INFO", "rl.log"]).query(&mut c).unwrap();
        let text = format!("{specs:?}");
        assert!(text.contains("RO") && !text.contains("RW"), "{text}");
    }
    take(&mut c, "k", &["1", "TAG", "a"]);
    log(&mut c, &["k", "60"]);
    error(&mut c, &["RL.LOG", "k", "0"]);
    inspect(&mut c, "k");
    let count = |c: &mut Connection, field: &str| common::info_field(c, "ratelimit", field);
    assert_eq!(
        (
            count(&mut c, "ratelimit_log_calls"),
            count(&mut c, "ratelimit_log_errors")
        ),
        (2, 1)
    );
    assert_eq!(count(&mut c, "ratelimit_inspect_calls"), 1);
}

#[test]
fn inspect_is_a_map_under_resp3() {
    if common::edition() != Edition::Module || !tested().has_command_docs() {
        // Maps arrive with Redis 7.0's module API; the functions edition
        // answers the flat array to every client (docs/functions.md).
        return;
    }
    let s = Server::start();
    let mut c = s.client();
    take(&mut c, "m", &["1", "TAG", "a"]);
    let url = format!("{}?protocol=resp3", s.url());
    let mut c3 = redis::Client::open(url).unwrap().get_connection().unwrap();
    let v: Value = cmd(&["RL.INSPECT", "m"]).query(&mut c3).unwrap();
    assert!(matches!(v, Value::Map(_)), "{v:?}");
    let flat = inspect(&mut c, "m").unwrap();
    assert_eq!(names(&fields(v).unwrap()), names(&flat));
}

/// The module of the release before tags (`RL_RELEASED_MODULE`, built by
/// `.ci/released`): it refuses a tagged log with an error and leaves it
/// as it is, and reads a log that no longer holds a tag.
#[test]
fn the_release_before_tags_refuses_a_tagged_log_and_reads_an_untagged_one() {
    if common::edition() != Edition::Module {
        return;
    }
    let Ok(released) = std::env::var("RL_RELEASED_MODULE") else {
        assert!(
            std::env::var("CI").is_err(),
            "CI runs this test with RL_RELEASED_MODULE (bash .ci/released)"
        );
        eprintln!("skipped: set RL_RELEASED_MODULE=$(bash .ci/released) to run it");
        return;
    };
    let new = Server::start();
    let mut n = new.client();
    take(&mut n, "t", &["2", "TAG", "alice"]);
    let tagged = get(&mut n, "t");
    pushed_out(&mut n, "u");
    let untagged = get(&mut n, "u");
    assert_eq!(untagged[0], b'L');

    let old = Server::start_with(&["--loadmodule", &released], false);
    let mut o = old.client();
    let _: () = redis::cmd("SET").arg("t").arg(&tagged[..]).query(&mut o).unwrap();
    let _: () = redis::cmd("SET")
        .arg("u")
        .arg(&untagged[..])
        .query(&mut o)
        .unwrap();
    assert_eq!(
        common::error_text(
            &redis::cmd("RL.SLIDING_LOG")
                .arg(&["t", "10", "3600"])
                .query::<Value>(&mut o)
                .unwrap_err()
        ),
        "ERR key 't' does not hold a valid RL.SLIDING_LOG state: expected 'L', a 4-byte ring position and 8-byte instants"
    );
    let after: Vec<u8> = redis::cmd("GET").arg("t").query(&mut o).unwrap();
    assert_eq!(after, tagged);
    // The log whose tag was pushed out: its one entry, read in a window of
    // an hour.
    let v: Vec<i64> = redis::cmd("RL.SLIDING_LOG")
        .arg(&["u", "3", "3600", "0"])
        .query(&mut o)
        .unwrap();
    assert_eq!(v[..3], [0, 3, 2]);
}
