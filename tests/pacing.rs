//! Pacing, charges and partial grants on a real server: what only a server
//! can show. `WAIT` records reservations that every later call sees, and
//! is refused on the window algorithms; `FORCE` records a debt that later
//! calls wait out, with the key's expiry covering it; `AT_MOST` answers the
//! units granted; all of them in RL.ALL; reservations and debts reach a
//! replica without the module and the AOF byte for byte. (The decisions
//! themselves are checked at exact instants by rl-core's tests and the
//! unit tests.)

mod common;

use common::{
    all, cmd, error, five, in_time, info_field, rate_commands, retry, server_micros, snapshot, Server,
    AOF_ALWAYS, ATTEMPTS,
};

/// The integers of a reply (five, six or seven).
fn integers(con: &mut redis::Connection, args: &[&str]) -> Vec<i64> {
    cmd(args).query(con).unwrap_or_else(|e| panic!("{args:?}: {e}"))
}

/// One a second with no burst: each call with `WAIT 3` takes the next free
/// second, answered as the wait; the fourth would wait 4 s and is refused;
/// a plain call sees the reservations. The same on the token bucket and
/// the sliding log (one in any second).
#[test]
fn wait_reserves_the_next_free_slots() {
    let s = Server::start();
    let mut c = s.client();
    for params in [
        &["RL.GCRA", "k:gcra", "0", "1", "1"][..],
        &["RL.TOKEN_BUCKET", "k:tb", "1", "1", "1"],
        &["RL.SLIDING_LOG", "k:log", "1", "1"],
    ] {
        let with = |extra: &[&'static str]| [params, extra].concat();
        let replies = in_time(&mut c, 500_000, "four reservations", |c| {
            [
                integers(c, &with(&["WAIT", "3"])),
                integers(c, &with(&["WAIT", "3"])),
                integers(c, &with(&["WAIT", "3"])),
                integers(c, &with(&["WAIT", "3"])),
                integers(c, &with(&[])),
                integers(c, &with(&["0"])),
            ]
        });
        assert_eq!(
            replies,
            [
                vec![0, 1, 0, -1, 1],
                vec![0, 1, 0, 1, 2],
                vec![0, 1, 0, 2, 3],
                vec![0, 1, 0, 3, 4],
                vec![1, 1, 0, 4, 4],
                vec![0, 1, 0, -1, 4],
            ],
            "{params:?}"
        );
        let refused = integers(&mut c, &with(&["WAIT", "2"]));
        assert_eq!(refused[..3], [1, 1, 0], "{params:?}");
        assert!((1..=2).contains(&refused[3]), "{params:?}: {refused:?}");
    }
    // The windows cannot hold a later window's requests.
    for name in ["RL.FIXED", "RL.SLIDING_COUNTER"] {
        assert_eq!(
            error(&mut c, &[name, "w", "1", "1", "WAIT", "3"]),
            format!(
                "ERR WAIT does not work with {name}: a window cannot hold a later window's requests (WAIT works with RL.GCRA, RL.TOKEN_BUCKET and RL.SLIDING_LOG)"
            )
        );
    }
    if common::module_only() {
        return; // the rest reads INFO, which counts the module's calls alone
    }
    // Three reservations a run (a run repeats if it was too slow).
    let reserved = info_field(&mut c, "ratelimit", "ratelimit_gcra_reserved");
    assert!(reserved >= 3 && reserved % 3 == 0, "{reserved}");
}

/// A sliding log with a reservation pending logs a forced unit now, not at
/// the reservation's instant: a second on, that unit has left the window,
/// only the reservation counts, and the next unit passes. (Units were
/// logged at the newest entry's instant, up to the wait late, refusing
/// it.)
#[test]
fn a_sliding_log_logs_units_now_beside_a_reservation() {
    const W: u64 = 1_000_000;
    let s = Server::start();
    let mut c = s.client();
    let log = |extra: &[&'static str]| [&["RL.SLIDING_LOG", "k", "2", "1000"][..], extra].concat();
    let (first, later) = retry(
        ATTEMPTS,
        "a second between the force and the reservation's end",
        |_| {
            // Two taken at t0, one reserved at t0 + W, one forced now: all
            // within [before, after].
            let (first, before, after) = in_time(&mut c, 100_000, "take, reserve, force", |c| {
                let before = server_micros(c);
                let replies = [
                    integers(c, &log(&["2", "MS"])),
                    integers(c, &log(&["1", "MS", "WAIT", "2000"])),
                    integers(c, &log(&["1", "MS", "FORCE"])),
                ];
                (replies, before, server_micros(c))
            });
            // Once the forced unit has left the window, before the reservation
            // has.
            while server_micros(&mut c) < after + W {
                std::thread::sleep(std::time::Duration::from_millis(5));
            }
            let at = server_micros(&mut c);
            let replies = [
                integers(&mut c, &log(&["1", "MS"])),
                integers(&mut c, &log(&["1", "MS"])),
            ];
            let end = server_micros(&mut c);
            let ms = |micros: u64| i64::try_from(micros.div_ceil(1_000)).unwrap();
            // The reservation leaves at t0 + 2W, t0 in [before, after]; the
            // unit that passes is rested W after it, and the refused call
            // comes at most `end - at` after it.
            (end < before + 2 * W).then(|| {
                (
                    first,
                    (
                        replies,
                        ms(before + 2 * W - end)..=ms(after + 2 * W - at),
                        ms(W.saturating_sub(end - at))..=ms(W),
                    ),
                )
            })
        },
    );
    let [taken, reserved, forced] = first;
    assert_eq!(taken, [0, 2, 0, -1, 1000]);
    assert_eq!(reserved[..3], [0, 2, 0]);
    assert!((900..=1000).contains(&reserved[3]), "{reserved:?}");
    assert!((1900..=2000).contains(&reserved[4]), "{reserved:?}");
    assert_eq!(forced[..4], [0, 2, 0, -1]);
    assert!((1900..=2000).contains(&forced[4]), "{forced:?}");
    let ([passed, refused], reservation_leaves, rested) = later;
    assert_eq!(passed, [0, 2, 0, -1, 1000]);
    // Now the reservation and that unit fill the window: the next waits
    // for the reservation to leave it.
    assert_eq!(refused[..3], [1, 2, 0], "{refused:?}");
    assert!(
        reservation_leaves.contains(&refused[3]),
        "{refused:?} {reservation_leaves:?}"
    );
    assert!(rested.contains(&refused[4]), "{refused:?} {rested:?}");
}

/// FORCE on every algorithm: recorded past the limit, later calls refused
/// until the debt is paid, the key's expiry covering it; `remaining` 0.
#[test]
fn force_records_a_debt_on_every_algorithm() {
    let s = Server::start();
    let mut c = s.client();
    for sample in rate_commands() {
        let key = format!("llm:{}", sample.lower());
        let params = sample.rate(10, "60");
        let mut args = vec![sample.name, key.as_str()];
        args.extend(params.iter().map(String::as_str));
        let before = server_micros(&mut c);
        let forced = five(&mut c, &[&args[..], &["25", "FORCE"]].concat());
        assert_eq!(
            (forced.blocked, forced.limit, forced.remaining, forced.retry_after),
            (false, 10, 0, -1),
            "{}",
            sample.name
        );
        let refused = five(&mut c, &args);
        assert!(
            refused.blocked && refused.remaining == 0,
            "{}: {refused:?}",
            sample.name
        );
        // The expiry covers the debt: the key lives until it is rested
        // (`reset` rounded up to the second; less the time since the call).
        let pttl: i64 = cmd(&["PTTL", &key]).query(&mut c).unwrap();
        let elapsed = i64::try_from((server_micros(&mut c) - before).div_ceil(1000)).unwrap();
        assert!(
            pttl > (forced.reset - 1) * 1000 - elapsed && pttl <= forced.reset * 1000 + 1,
            "{}: pttl {pttl}, reset {}",
            sample.name,
            forced.reset
        );
        if common::module_only() {
            continue; // INFO counts the module's calls alone
        }
        assert_eq!(
            info_field(
                &mut c,
                "ratelimit",
                &format!("ratelimit_{}_forced", sample.lower().trim_start_matches("rl."))
            ),
            25
        );
    }
    // GCRA, exactly: 25 forced at 10 per minute with a burst of 10 is a
    // minute and a half of debt; the next unit in 96 s.
    let replies = in_time(&mut c, 500_000, "a debt", |c| {
        [
            integers(c, &["RL.GCRA", "debt", "9", "10", "60", "25", "FORCE"]),
            integers(c, &["RL.GCRA", "debt", "9", "10", "60"]),
        ]
    });
    assert_eq!(replies, [vec![0, 10, 0, -1, 150], vec![1, 10, 0, 96, 150]]);
    // Past the bound, and a sliding log past its setting: errors that
    // record nothing.
    for _ in 0..4 {
        five(&mut c, &["RL.GCRA", "deep", "0", "1", "1", "1000000000", "FORCE"]);
    }
    let before = snapshot(&mut c, "deep");
    assert_eq!(
        error(&mut c, &["RL.GCRA", "deep", "0", "1", "1", "1", "FORCE"]),
        "ERR FORCE would leave key 'deep' holding more than 4000000000 units, debt included (nothing was recorded)"
    );
    assert_eq!(snapshot(&mut c, "deep"), before);
    assert_eq!(
        error(&mut c, &["RL.SLIDING_LOG", "long", "5", "60", "10001", "FORCE"]),
        "ERR the sliding log of key 'long' would hold 10001 entries, more than ratelimit.sliding_log_max_limit (10000) allows (nothing was recorded)"
    );
    assert_eq!(snapshot(&mut c, "long"), (None, -2));
}

/// AT_MOST grants what remains, up to the quantity, and says how many in a
/// sixth integer (a seventh with RL.ALL, after the position).
#[test]
fn at_most_grants_and_says_how_many() {
    let s = Server::start();
    let mut c = s.client();
    for sample in rate_commands() {
        let key = format!("hot:{}", sample.lower());
        let params = sample.rate(10, "3600");
        let mut args = vec![sample.name, key.as_str()];
        args.extend(params.iter().map(String::as_str));
        let batch = |c: &mut redis::Connection, n: &str| integers(c, &[&args[..], &[n, "AT_MOST"]].concat());
        let first = batch(&mut c, "4");
        assert_eq!(
            (first.len(), first[0], first[2], first[5]),
            (6, 0, 6, 4),
            "{}",
            sample.name
        );
        let second = batch(&mut c, "100");
        assert_eq!((second[0], second[2], second[5]), (0, 0, 6), "{}", sample.name);
        let none = batch(&mut c, "100");
        assert_eq!((none[0], none[5]), (1, 0), "{}", sample.name);
        assert_eq!(batch(&mut c, "0").len(), 6, "{}", sample.name);
    }
    let seven = integers(
        &mut c,
        &[
            "RL.ALL", "2", "{u}:a", "{u}:b", "FIXED", "10", "3600", "GCRA", "2", "1", "3600", "5", "AT_MOST",
        ],
    );
    assert_eq!(seven[..3], [0, 3, 0]);
    assert_eq!(seven[5..], [2, 3]);
    if common::module_only() {
        return; // the rest reads INFO, which counts the module's calls alone
    }
    assert_eq!(info_field(&mut c, "ratelimit", "ratelimit_all_granted"), 3);
}

/// RL.ALL with WAIT reserves every limit at the latest of their instants,
/// and with FORCE records a debt on every limit.
#[test]
fn all_waits_and_forces_on_every_limit() {
    let s = Server::start();
    let mut c = s.client();
    let pace = [
        "RL.ALL",
        "2",
        "{p}:s",
        "{p}:h",
        "GCRA",
        "0",
        "1",
        "1",
        "SLIDING_LOG",
        "2",
        "3600",
        "WAIT",
        "5",
    ];
    let replies = in_time(&mut c, 500_000, "paced", |c| {
        [integers(c, &pace), integers(c, &pace), integers(c, &pace)]
    });
    assert_eq!(
        replies,
        [
            vec![0, 1, 0, -1, 1, 1],
            // The burst limit is free in a second, the log now: both record
            // at the later instant, and the burst limit binds.
            vec![0, 1, 0, 1, 2, 1],
            // The hourly log is full for an hour: refused past the wait,
            // nothing recorded anywhere.
            vec![1, 2, 0, 3595, 3601, 2],
        ]
    );
    let llm = [
        "RL.ALL",
        "2",
        "{t}:rpm",
        "{t}:tpm",
        "GCRA",
        "59",
        "60",
        "60",
        "TOKEN_BUCKET",
        "10000",
        "1",
        "3600",
    ];
    let reserved = integers(&mut c, &[&llm[..], &["4000"]].concat());
    assert_eq!(
        reserved[..4],
        [1, 60, 60, -1],
        "4000 requests at once is more than 60"
    );
    let (reply, position) = all(&mut c, &[&llm[..], &["4000", "FORCE"]].concat());
    assert_eq!((reply.blocked, reply.remaining, position), (false, 0, 1));
    let tokens: i64 = integers(&mut c, &["RL.TOKEN_BUCKET", "{t}:tpm", "10000", "1", "3600", "0"])[2];
    assert_eq!(tokens, 6000);
}

/// Reservations and debts are written as effects: a replica without the
/// module and an AOF replay hold the master's bytes and expiries.
#[test]
fn reservations_and_debts_replicate_and_survive_an_aof_replay() {
    let mut master = Server::master(&AOF_ALWAYS);
    let replica = Server::replica_of(&master, false);
    let mut m = master.client();
    for args in [
        &["RL.GCRA", "r:gcra", "0", "1", "10", "WAIT", "60"][..],
        &["RL.TOKEN_BUCKET", "r:tb", "1", "1", "10", "WAIT", "60"],
        &["RL.SLIDING_LOG", "r:log", "1", "10", "WAIT", "60"],
    ] {
        for _ in 0..3 {
            assert!(!five(&mut m, args).blocked, "{args:?}");
        }
    }
    for sample in rate_commands() {
        let key = format!("d:{}", sample.lower());
        // An hour's period: a fixed window's key expires at the end of its
        // epoch-aligned window, which a minute's period put within the
        // test's own second once in a while (a key gone from the replica).
        let params = sample.rate(5, "3600");
        let mut args = vec![sample.name, key.as_str()];
        args.extend(params.iter().map(String::as_str));
        args.extend(["12", "FORCE"]);
        five(&mut m, &args);
    }
    let keys: Vec<String> = cmd(&["KEYS", "*"]).query(&mut m).unwrap();
    assert_eq!(keys.len(), 8, "{keys:?}");
    let on_master: Vec<_> = keys.iter().map(|k| snapshot(&mut m, k)).collect();
    let replicated: i64 = cmd(&["WAIT", "1", "5000"]).query(&mut m).unwrap();
    assert_eq!(replicated, 1);
    let mut r = replica.client();
    let on_replica: Vec<_> = keys.iter().map(|k| snapshot(&mut r, k)).collect();
    assert_eq!(on_replica, on_master);
    drop(m);
    master.crash_and_restart();
    let mut m = master.client();
    let replayed: Vec<_> = keys.iter().map(|k| snapshot(&mut m, k)).collect();
    assert_eq!(replayed, on_master);
}

/// The options with what they exclude, and where they do not belong:
/// errors that change nothing.
#[test]
fn option_errors() {
    let s = Server::start();
    let mut c = s.client();
    five(&mut c, &["RL.GCRA", "k", "1", "1", "60"]);
    let before = snapshot(&mut c, "k");
    for (args, expected) in [
        (
            &["RL.GCRA", "k", "1", "1", "60", "WAIT", "5", "AT_MOST"][..],
            "ERR syntax error: WAIT and AT_MOST cannot be combined (each says how the units are taken: choose one)",
        ),
        (
            &["RL.GCRA", "k", "1", "1", "60", "FORCE", "REFUND"],
            "ERR syntax error: REFUND and FORCE cannot be combined (each says how the units are taken: choose one)",
        ),
        (
            &["RL.GCRA", "k", "1", "1", "60", "FORCE", "BLOCK", "60"],
            "ERR syntax error: FORCE and BLOCK cannot be combined (a forced request is never refused)",
        ),
        (
            &["RL.GCRA", "k", "1", "1", "60", "WAIT", "1000000001"],
            "ERR WAIT max_wait must be an integer from 0 to 1000000000",
        ),
        (
            &["RL.CONCURRENCY", "j", "1", "60", "WAIT", "5"],
            "ERR syntax error: 'rl.concurrency' does not take WAIT (it takes MS or PEEK)",
        ),
        (
            &["RL.CONCURRENCY", "j", "1", "60", "FORCE"],
            "ERR syntax error: 'rl.concurrency' does not take FORCE (it takes MS or PEEK)",
        ),
        (
            &["RL.ALL", "1", "k", "FIXED", "1", "60", "AT_MOST", "FORCE"],
            "ERR syntax error: FORCE and AT_MOST cannot be combined (each says how the units are taken: choose one)",
        ),
    ] {
        assert_eq!(error(&mut c, args), expected, "{args:?}");
        assert_eq!(snapshot(&mut c, "k"), before);
    }
}

/// `FORCE` and `AT_MOST` take `quantity`'s default, 1, as every request
/// does: the same replies and states as with `1` given; and `COMMAND DOCS`
/// (Redis 7.0+) shows `quantity` as optional before them.
#[test]
fn force_and_at_most_default_to_one_unit() {
    let s = Server::start();
    let mut c = s.client();
    // A window of 10^9 s: nothing ends during the test, and both keys share
    // the window, so their replies are equal field for field but the times
    // left in the window, which depend on when each call ran: `reset`, and
    // a refusal's `retry_after` (compared as refused or not, -1 or not).
    let w = "1000000000";
    let but_reset = |mut reply: Vec<i64>| {
        reply.remove(4);
        reply[3] = reply[3].signum();
        reply
    };
    for option in ["FORCE", "AT_MOST"] {
        let (bare, one) = (format!("bare:{option}"), format!("one:{option}"));
        let mut replies = Vec::new();
        for _ in 0..3 {
            let implied = integers(&mut c, &["RL.FIXED", &bare, "2", w, option]);
            let given = integers(&mut c, &["RL.FIXED", &one, "2", w, "1", option]);
            assert_eq!(but_reset(implied.clone()), but_reset(given), "{option}");
            replies.push(implied[..3].to_vec());
        }
        let expected = match option {
            // Forced past the limit: allowed, remaining 0.
            "FORCE" => vec![vec![0, 2, 1], vec![0, 2, 0], vec![0, 2, 0]],
            // A grant of 1, then 1, then none (refused).
            _ => vec![vec![0, 2, 1], vec![0, 2, 0], vec![1, 2, 0]],
        };
        assert_eq!(replies, expected, "{option}");
        assert_eq!(snapshot(&mut c, &bare).0, snapshot(&mut c, &one).0, "{option}");
    }
    // The three forced units are recorded: a query says the window is full.
    assert_eq!(
        integers(&mut c, &["RL.FIXED", "bare:FORCE", "2", w, "0"])[..3],
        [0, 2, 0]
    );
    if common::module_only() {
        return; // the module's COMMAND DOCS
    }
    for name in ["rl.gcra", "rl.all"] {
        let Some(docs) = common::command_docs(&mut c, name) else {
            continue;
        };
        let quantity = docs
            .find("\"quantity\"")
            .unwrap_or_else(|| panic!("{name}: no quantity in {docs}"));
        let next = docs[quantity..]
            .find("\"name\"")
            .map_or(docs.len(), |at| quantity + at);
        assert!(
            docs[quantity..next].contains("optional"),
            "{name}: quantity is not optional: {}",
            &docs[quantity..next]
        );
    }
}
