//! The functions edition beside the module, on one server (see
//! `common::editions`): the same random calls in step, every reply and
//! every byte compared; every error path driven on both with the same
//! inputs; the library's shadow switch; its exact arithmetic against wide
//! integers; memory per limiter.
//!
//! These tests need the module and run in its run (`RL_EDITION=module`, the
//! default); the editions' own runs skip them.

mod common;

use common::editions::{disagreement, past_the_library_range, SideBySide, Step, EDITIONS};
use common::Rng;
use redis::Value;

/// The bytes of each argument.
fn bytes(args: &[String]) -> Vec<Vec<u8>> {
    args.iter().map(|a| a.as_bytes().to_vec()).collect()
}

/// The algorithms, by command and `RL.ALL` name, and whether they take WAIT.
const ALGORITHMS: [(&str, &str, bool); 5] = [
    ("RL.GCRA", "GCRA", true),
    ("RL.TOKEN_BUCKET", "TOKEN_BUCKET", true),
    ("RL.FIXED", "FIXED", false),
    ("RL.SLIDING_LOG", "SLIDING_LOG", true),
    ("RL.SLIDING_COUNTER", "SLIDING_COUNTER", false),
];

/// The keys of each algorithm (and of the leases), three each, so that
/// limits meet the states earlier calls left.
fn key_of(pool: &str, i: usize) -> String {
    format!("d:{pool}:{i}")
}

/// A generator of calls: the same calls for the same seed, whatever the
/// replies (a lease argument names an earlier acquisition by its position,
/// resolved when the call is made).
struct Calls {
    rng: Rng,
    /// The parameters each key was last given (most calls keep them, so
    /// that limits fill; some change them, as a redeploy would).
    params: std::collections::HashMap<String, Vec<String>>,
}

/// One generated call: its arguments (a lease as a placeholder) and keys.
#[derive(Clone, Debug)]
enum Arg {
    Text(String),
    /// One of the last leases taken (`n` picks which), or a number no
    /// lease has when none was taken yet.
    Lease(u64),
    /// The key of that lease, or now and then another lease key.
    LeaseKey(u64),
}

struct Call {
    args: Vec<Arg>,
    keys: Vec<String>,
}

impl Calls {
    fn below(&mut self, n: usize) -> usize {
        self.rng.below(n)
    }

    fn chance(&mut self, percent: usize) -> bool {
        self.rng.below(100) < percent
    }

    /// A duration in the call's unit: milliseconds (1 ms to 1 s, so that
    /// refills, windows, blocks and deadlines come and go between batches),
    /// or whole seconds.
    fn duration(&mut self, ms: bool) -> String {
        if ms {
            let choices = [1, 3, 5, 10, 20, 50, 100, 250, 1000];
            self.rng.pick(&choices).to_string()
        } else {
            (1 + self.below(2)).to_string()
        }
    }

    /// A count that divides time evenly, or not (GCRA's two stored forms,
    /// the bucket's grains).
    fn count(&mut self) -> String {
        if self.chance(15) {
            let odd = [7, 11, 13, 1000, 999_983];
            self.rng.pick(&odd).to_string()
        } else {
            (1 + self.below(4)).to_string()
        }
    }

    /// The parameters of `alg` for `key`: those it had, mostly.
    fn params_for(&mut self, key: &str, alg: &str, ms: bool) -> Vec<String> {
        if let Some(p) = self.params.get(key).cloned() {
            if !self.chance(10) && p.last().map(String::as_str) == Some(if ms { "ms" } else { "s" }) {
                return p[..p.len() - 1].to_vec();
            }
        }
        let mut p = match alg {
            "GCRA" => vec![self.below(5).to_string(), self.count(), self.duration(ms)],
            "TOKEN_BUCKET" => vec![(1 + self.below(5)).to_string(), self.count(), self.duration(ms)],
            _ => vec![(1 + self.below(5)).to_string(), self.duration(ms)],
        };
        p.push(if ms { "ms" } else { "s" }.to_string());
        self.params.insert(key.to_string(), p.clone());
        p.pop();
        p
    }

    /// A tag: a few names (so that entries of one instant share them), one
    /// with a NUL, one of the longest the setting allows; now and then
    /// none at all, or one too long (errors).
    fn tag(&mut self) -> String {
        match self.below(40) {
            0 => String::new(),
            1 => "t".repeat(65),
            2 => "t".repeat(64),
            3 => "nul\0byte".into(),
            n => ["a", "b", "alice", "B"][n % 4].into(),
        }
    }

    /// `[quantity] [options]` of a rate command or RL.ALL whose limits are
    /// at most `limit`; `reserves`: every limit takes WAIT; `tags`: its
    /// sliding logs take TAG (other commands are given it now and then:
    /// an error).
    fn request(&mut self, ms: bool, reserves: bool, limit: usize, tags: bool) -> Vec<String> {
        let mut out = Vec::new();
        if self.chance(60) {
            let q = match self.below(10) {
                0 => 0,
                1 => 100 + self.below(2000),
                _ => self.below(limit + 2),
            };
            out.push(q.to_string());
        }
        // Options as groups (a word, and its value), in any order.
        let mut options: Vec<Vec<String>> = Vec::new();
        let one = |w: &str| vec![w.to_string()];
        if ms {
            options.push(one(if self.chance(90) { "MS" } else { "ms" }));
        }
        if self.chance(15) {
            options.push(one("PEEK"));
        }
        let way = self.below(12);
        match way {
            0 => options.push(one("REFUND")),
            1 => options.push(one(if self.chance(50) { "FORCE" } else { "force" })),
            2 | 3 if reserves || self.chance(10) => {
                let wait = if self.chance(30) {
                    "0".to_string()
                } else {
                    self.duration(ms)
                };
                options.push(vec!["WAIT".into(), wait]);
            }
            4 => options.push(one("AT_MOST")),
            _ => {}
        }
        if way != 0 && way != 1 && self.chance(20) {
            options.push(vec!["BLOCK".into(), self.duration(ms)]);
        }
        // Tagged entries, beside untagged ones on the same keys (REFUND with
        // TAG is an error: a refund of a tagged log is an untagged call).
        if (tags && self.chance(40)) || self.chance(1) {
            let word = if self.chance(90) { "TAG" } else { "tag" };
            options.push(vec![word.into(), self.tag()]);
        }
        // Now and then an option that makes the call an error.
        if self.chance(3) {
            let bad = [
                "REFUND", "FORCE", "WAIT", "BLOCK", "AT_MOST", "FAST", "BLOCK 0", "WAIT -1",
            ];
            options.push(self.rng.pick(&bad).split(' ').map(String::from).collect());
        }
        for i in (1..options.len()).rev() {
            let j = self.below(i + 1);
            options.swap(i, j);
        }
        out.extend(options.into_iter().flatten());
        out
    }

    /// A key of `pool`; now and then one of another algorithm's, a list or
    /// a string that is no limiter.
    fn key(&mut self, pool: &str) -> String {
        match self.below(100) {
            0 => "d:list".into(),
            1 => "d:junk".into(),
            2 | 3 => {
                let other = self.rng.pick(&ALGORITHMS).1.to_string();
                key_of(&other, self.below(3))
            }
            _ => key_of(pool, self.below(3)),
        }
    }

    /// An `RL.LOG` of a sliding log's key (now and then another's): a
    /// window, MS, BY TAG and COUNT in any order.
    fn log(&mut self, ms: bool) -> Call {
        let key = self.key("SLIDING_LOG");
        let mut options: Vec<Vec<String>> = Vec::new();
        if ms {
            options.push(vec![if self.chance(90) { "MS" } else { "ms" }.into()]);
        }
        if self.chance(50) {
            options.push(vec![
                "BY".into(),
                if self.chance(90) { "TAG" } else { "tag" }.into(),
            ]);
        }
        if self.chance(30) {
            options.push(vec!["COUNT".into(), (1 + self.below(4)).to_string()]);
        }
        if self.chance(3) {
            let bad = ["BY", "BY x", "COUNT 0", "COUNT", "MS", "FAST"];
            options.push(self.rng.pick(&bad).split(' ').map(String::from).collect());
        }
        for i in (1..options.len()).rev() {
            let j = self.below(i + 1);
            options.swap(i, j);
        }
        let window = match self.below(10) {
            0 => "1000000000".into(),
            _ => self.duration(ms),
        };
        let mut args = vec!["RL.LOG".to_string(), key.clone(), window];
        args.extend(options.into_iter().flatten());
        Call {
            args: args.into_iter().map(Arg::Text).collect(),
            keys: vec![key],
        }
    }

    /// An `RL.INSPECT` of any key: a limiter of each kind, blocked or not,
    /// leases, another type, a string that is no limiter.
    fn inspect(&mut self) -> Call {
        let key = match self.below(6) {
            0 => key_of("lease", self.below(3)),
            _ => {
                let pool = self.rng.pick(&ALGORITHMS).1.to_string();
                self.key(&pool)
            }
        };
        Call {
            args: vec![Arg::Text("RL.INSPECT".into()), Arg::Text(key.clone())],
            keys: vec![key],
        }
    }

    fn next(&mut self) -> Call {
        let text = |v: Vec<String>| v.into_iter().map(Arg::Text).collect::<Vec<_>>();
        let ms = self.chance(85);
        match self.below(23) {
            // A limiter of one algorithm.
            0..=11 => {
                let (command, alg, reserves) = *self.rng.pick(&ALGORITHMS);
                let key = self.key(alg);
                let params = self.params_for(&key, alg, ms);
                let limit: usize = params[0].parse().unwrap_or(1) + 1;
                let mut args = vec![command.to_string(), key.clone()];
                args.extend(params);
                args.extend(self.request(ms, reserves, limit, alg == "SLIDING_LOG"));
                Call {
                    args: text(args),
                    keys: vec![key],
                }
            }
            // Several at once.
            12..=14 => {
                let n = 1 + self.below(3);
                let mut keys: Vec<String> = Vec::new();
                let mut specs = Vec::new();
                let mut reserves = true;
                let mut logs = false;
                for _ in 0..n {
                    let (_, alg, takes_wait) = *self.rng.pick(&ALGORITHMS);
                    logs |= alg == "SLIDING_LOG";
                    let key = if self.chance(3) && !keys.is_empty() {
                        keys[0].clone() // a key given twice
                    } else {
                        key_of(alg, self.below(3))
                    };
                    reserves &= takes_wait;
                    specs.push(alg.to_string());
                    specs.extend(self.params_for(&key, alg, ms));
                    keys.push(key);
                }
                let mut args = vec!["RL.ALL".to_string(), n.to_string()];
                args.extend(keys.iter().cloned());
                args.extend(specs);
                let tags = logs || self.chance(20);
                args.extend(self.request(ms, reserves, 6, tags));
                let mut seen = std::collections::HashSet::new();
                keys.retain(|k| seen.insert(k.clone()));
                Call {
                    args: text(args),
                    keys,
                }
            }
            // Leases.
            15..=17 => {
                let key = key_of("lease", self.below(3));
                let mut args = vec![
                    Arg::Text("RL.CONCURRENCY".into()),
                    Arg::Text(key.clone()),
                    Arg::Text((1 + self.below(4)).to_string()),
                    Arg::Text(self.duration(ms)),
                ];
                if self.chance(50) {
                    args.push(Arg::Text(self.below(6).to_string()));
                }
                if ms {
                    args.push(Arg::Text("MS".into()));
                }
                if self.chance(10) {
                    args.push(Arg::Text("PEEK".into()));
                }
                Call {
                    args,
                    keys: vec![key],
                }
            }
            // What a key holds: a log's entries, any limiter's state.
            20 => self.log(ms),
            21 | 22 => self.inspect(),
            // A lease given back or renewed (its key is known when the call
            // is made).
            18 => {
                let n = self.rng.next();
                Call {
                    args: vec![Arg::Text("RL.RELEASE".into()), Arg::LeaseKey(n), Arg::Lease(n)],
                    keys: Vec::new(),
                }
            }
            _ => {
                let n = self.rng.next();
                let mut args = vec![
                    Arg::Text("RL.RENEW".into()),
                    Arg::LeaseKey(n),
                    Arg::Lease(n),
                    Arg::Text(self.duration(ms)),
                ];
                if ms {
                    args.push(Arg::Text("MS".into()));
                }
                Call {
                    args,
                    keys: Vec::new(),
                }
            }
        }
    }
}

/// What the run saw, to show it covered what it should.
#[derive(Default, Debug)]
struct Coverage {
    allowed: usize,
    refused: usize,
    reserved: usize,
    granted_part: usize,
    errors: usize,
    leases: usize,
    released: usize,
    renewed: usize,
    /// Calls on a key past the functions edition's range (not compared).
    past_range: usize,
    /// RL.LOG replies with entries, with a tag among them, and by tag.
    logs: usize,
    tagged_logs: usize,
    by_tag: usize,
    /// RL.INSPECT replies of a state, of a blocked key.
    inspected: usize,
    inspected_blocks: usize,
}

impl Coverage {
    fn count(&mut self, command: &str, args: &[String], reply: &Value) {
        let upper: Vec<String> = args.iter().map(|a| a.to_ascii_uppercase()).collect();
        if command == "RL.LOG" || command == "RL.INSPECT" {
            match reply {
                Value::ServerError(_) => self.errors += 1,
                Value::Array(items) if command == "RL.LOG" && !items.is_empty() => {
                    self.logs += 1;
                    let by = upper.iter().any(|a| a == "BY");
                    self.by_tag += usize::from(by);
                    let tagged = items.iter().any(|item| match item {
                        Value::Array(fields) => {
                            matches!(fields.get(if by { 0 } else { 2 }), Some(Value::BulkString(_)))
                        }
                        _ => false,
                    });
                    self.tagged_logs += usize::from(tagged);
                }
                Value::Array(items) if command == "RL.INSPECT" => {
                    self.inspected += 1;
                    let blocked = items
                        .iter()
                        .any(|v| matches!(v, Value::BulkString(b) if b == b"blocked_until_us"));
                    self.inspected_blocks += usize::from(blocked);
                }
                _ => {}
            }
            return;
        }
        match reply {
            Value::ServerError(_) => self.errors += 1,
            Value::Int(n) if *n > 0 && command == "RL.RELEASE" => self.released += 1,
            Value::Int(n) if *n > 0 && command == "RL.RENEW" => self.renewed += 1,
            Value::Array(items) => {
                let int = |i: usize| match items.get(i) {
                    Some(Value::Int(v)) => *v,
                    _ => -9,
                };
                if int(0) == 1 {
                    self.refused += 1;
                } else {
                    self.allowed += 1;
                    if upper.iter().any(|a| a == "WAIT") && int(3) > 0 {
                        self.reserved += 1;
                    }
                }
                if command == "RL.CONCURRENCY" && int(5) > 0 {
                    self.leases += 1;
                }
                if upper.iter().any(|a| a == "AT_MOST") {
                    let granted = int(items.len() - 1);
                    let quantity = upper.iter().find_map(|a| a.parse::<i64>().ok()).unwrap_or(1);
                    if granted > 0 && granted < quantity {
                        self.granted_part += 1;
                    }
                }
            }
            _ => {}
        }
    }
}

/// The same random calls on the module, the library and the scripts, in
/// step: every option, every algorithm, RL.ALL, leases, keys of another
/// algorithm or type, parameters changed on a key, durations of 1 ms to 2 s
/// so that refills, windows, blocks, reservations and deadlines come and go
/// during the run. After each call, the replies and every key's bytes and
/// expiry must be equal. `RL_DIFF_SEED` replays a run's calls, and
/// `RL_DIFF_STEPS` sets their number (default 20,000).
#[test]
fn the_editions_agree_call_for_call() {
    let Some(mut both) = SideBySide::start_default() else {
        return; // needs the module and Functions: runs in the module's run on 7.0+
    };
    let seed = std::env::var("RL_DIFF_SEED")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(0x51de_b51d_e000 ^ u64::from(std::process::id()));
    println!("seed {seed} (RL_DIFF_SEED={seed} replays these calls)");
    let total: usize = std::env::var("RL_DIFF_STEPS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(20_000);
    if !both.one_instant {
        println!(
            "this server reads the clock per command inside a transaction: each call starts from the module's state, and only errors and their texts are compared"
        );
    }
    for db in common::editions::DATABASES {
        let mut pipe = redis::pipe();
        pipe.cmd("SELECT").arg(db);
        pipe.cmd("RPUSH").arg("d:list").arg("x");
        pipe.cmd("SET").arg("d:junk").arg("not a limiter");
        pipe.cmd("SELECT").arg(0);
        pipe.query::<()>(&mut both.con).unwrap();
    }
    // The effects of the calls (what the AOF and a replica receive): the
    // editions write alike, not only the same bytes (a value set whole, or
    // patched in place).
    both.effects();
    let mut calls = Calls {
        rng: Rng(seed.max(1)),
        params: Default::default(),
    };
    // The leases taken so far (by the module; the editions must agree).
    let mut leases: Vec<(String, i64)> = Vec::new();
    let mut coverage = Coverage::default();
    let batch = 50;
    let mut done = 0;
    while done < total {
        let generated: Vec<Call> = (0..batch).map(|_| calls.next()).collect();
        let steps: Vec<(Vec<String>, Step)> = generated
            .iter()
            .map(|call| {
                // The last leases taken: `n` picks one.
                let recent = |n: u64| {
                    let len = leases.len();
                    (len > 0).then(|| &leases[len - 1 - (n as usize) % len.min(8)])
                };
                let args: Vec<String> = call
                    .args
                    .iter()
                    .map(|a| {
                        match (
                            a,
                            recent(match a {
                                Arg::Lease(n) | Arg::LeaseKey(n) => *n,
                                Arg::Text(_) => 0,
                            }),
                        ) {
                            (Arg::Text(t), _) => t.clone(),
                            (Arg::Lease(n), None) => (1 + n % 20).to_string(),
                            (Arg::Lease(_), Some((_, id))) => id.to_string(),
                            // Now and then another key (where that lease is
                            // not, and must not be freed).
                            (Arg::LeaseKey(n), Some((key, _))) if n % 5 != 0 => key.clone(),
                            (Arg::LeaseKey(n), _) => key_of("lease", (*n / 5 % 3) as usize),
                        }
                    })
                    .collect();
                let keys = match call.keys.is_empty() {
                    true => vec![args[1].as_bytes().to_vec()],
                    false => call.keys.iter().map(|k| k.as_bytes().to_vec()).collect(),
                };
                (
                    args.clone(),
                    Step {
                        args: bytes(&args),
                        keys,
                    },
                )
            })
            .collect();
        let only: Vec<Step> = steps.iter().map(|(_, s)| s.clone()).collect();
        let outcomes = both.run(&only);
        // Keys the module took past the functions edition's range in this
        // batch (a debt of centuries, through FORCE and changed rates): the
        // editions part there by design (docs/functions.md, "Ranges"), so
        // the rest of the batch does not compare them, and the library's
        // and the scripts' databases get the module's copies after it.
        let mut past_range: Vec<Vec<u8>> = Vec::new();
        for (i, ((args, step), outcome)) in steps.iter().zip(&outcomes).enumerate() {
            let at = done + i;
            if step.keys.iter().any(|k| past_range.contains(k)) {
                if let Some(text) = outcome
                    .replies
                    .iter()
                    .find_map(common::editions::lua_runtime_error)
                {
                    panic!(
                        "seed {seed}, call {at}: {}: a Lua runtime error: {text}",
                        args.join(" ")
                    );
                }
                coverage.past_range += 1;
                continue;
            }
            if let Some(what) = disagreement(outcome, both.one_instant) {
                let ms = args.iter().any(|a| a.eq_ignore_ascii_case("MS"));
                if past_the_library_range(outcome, if ms { 1000 } else { 1_000_000 }) {
                    past_range.extend(step.keys.iter().cloned());
                    coverage.past_range += 1;
                    continue;
                }
                panic!("seed {seed}, call {at}: {}: {what}", args.join(" "));
            }
            coverage.count(&args[0], args, &outcome.replies[0]);
            if args[0] == "RL.CONCURRENCY" {
                if let Value::Array(items) = &outcome.replies[0] {
                    if let Some(Value::Int(id)) = items.get(5) {
                        if *id > 0 {
                            leases.push((args[1].clone(), *id));
                        }
                    }
                }
            }
        }
        let effects = both.effects();
        if !past_range.is_empty() {
            both.copy_module_keys(&past_range);
        }
        for e in 1..3 {
            if both.one_instant && past_range.is_empty() && effects[e] != effects[0] {
                let show = |list: &[Vec<Vec<u8>>], from: usize| {
                    list.iter()
                        .skip(from)
                        .take(4)
                        .map(|c| {
                            c.iter()
                                .map(|a| String::from_utf8_lossy(a))
                                .collect::<Vec<_>>()
                                .join(" ")
                        })
                        .collect::<Vec<_>>()
                        .join("; ")
                };
                let first = effects[0]
                    .iter()
                    .zip(&effects[e])
                    .position(|(a, b)| a != b)
                    .unwrap_or(effects[0].len().min(effects[e].len()));
                panic!(
                    "seed {seed}, calls {done} to {}: the {}'s effects differ from the module's, from the {first}th: {} against {}; the calls: {}",
                    done + batch - 1,
                    EDITIONS[e],
                    show(&effects[e], first),
                    show(&effects[0], first),
                    steps.iter().map(|(a, _)| a.join(" ")).collect::<Vec<_>>().join("; ")
                );
            }
        }
        done += batch;
    }
    println!("{total} calls: {coverage:?}");
    // The run went where it should: every kind of answer, many times.
    let c = &coverage;
    for (what, n) in [
        ("allowed", c.allowed),
        ("refused", c.refused),
        ("reservations", c.reserved),
        ("partial grants", c.granted_part),
        ("errors", c.errors),
        ("leases", c.leases),
        ("releases", c.released),
        ("renewals", c.renewed),
        ("logs read", c.logs),
        ("logs with a tag", c.tagged_logs),
        ("logs by tag", c.by_tag),
        ("states inspected", c.inspected),
        ("blocks inspected", c.inspected_blocks),
    ] {
        assert!(
            n >= total / 1000,
            "only {n} {what} in {total} calls: {coverage:?}"
        );
    }
}

/// Tokens at and past every range's bounds, and tokens that are no number.
const BOUNDS: [&str; 26] = [
    "",
    "-1",
    "0",
    "1",
    "+1",
    " 1",
    "1 ",
    "1.5",
    "1e3",
    "abc",
    "01",
    "-0",
    "9999",
    "10000",
    "10001",
    "999999999",
    "1000000000",
    "1000000001",
    "1000000000000",
    "1000000000001",
    "1000000000000000",
    "1000000000000001",
    "9007199254740993",
    "9223372036854775807",
    "9223372036854775808",
    "18446744073709551616",
];

/// The options, alone and with a value, as the grammar's table knows them.
const OPTION_GROUPS: [&str; 15] = [
    "MS", "PEEK", "REFUND", "FORCE", "WAIT 1", "AT_MOST", "BLOCK 1", "ms", "wait 0", "Block 2", "FAST",
    "WAIT", "TAG t", "tag u", "TAG",
];

/// Every error path of every command, driven with the same inputs on the
/// module, the library and the scripts: numbers at and past each range's
/// bounds (every parameter, quantity, WAIT and BLOCK, in seconds and in
/// MS), every pair of options (the table of exclusions), options a command
/// does not take, missing values, arities, RL.ALL's numkeys, algorithms and
/// keys, lease ids, states of another algorithm or type or corrupt, a debt
/// past the deepest and a sliding log past its cap. Each must answer the
/// same error text (the library's settings hint aside), or the same reply;
/// the library may refuse only with an error naming its own range. The
/// texts come from each edition's own table (src/error.rs, the library's
/// messages): this compares them, rather than trusting two copies.
#[test]
fn every_error_path_answers_alike() {
    let Some(mut both) = SideBySide::start_default() else {
        return; // needs the module and Functions: runs in the module's run on 7.0+
    };
    let mut inputs: Vec<Vec<String>> = Vec::new();
    let owned = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<String>>();
    let rates = [
        ("RL.GCRA", vec!["2", "1", "3600"]),
        ("RL.TOKEN_BUCKET", vec!["3", "1", "3600"]),
        ("RL.FIXED", vec!["3", "3600"]),
        ("RL.SLIDING_LOG", vec!["3", "3600"]),
        ("RL.SLIDING_COUNTER", vec!["3", "3600"]),
    ];
    for (command, params) in &rates {
        for unit in [None, Some("MS")] {
            // Each parameter at each bound; then the quantity.
            for p in 0..=params.len() {
                for token in BOUNDS {
                    let mut args = vec![command.to_string(), "KEY".into()];
                    for (i, v) in params.iter().enumerate() {
                        args.push(if i == p { token.to_string() } else { v.to_string() });
                    }
                    if p == params.len() {
                        args.push(token.to_string());
                    }
                    args.extend(unit.map(String::from));
                    inputs.push(args);
                }
            }
            // WAIT and BLOCK at each bound.
            for option in ["WAIT", "BLOCK"] {
                for token in BOUNDS {
                    let mut args = vec![command.to_string(), "KEY".into()];
                    args.extend(params.iter().map(|s| s.to_string()));
                    args.extend(unit.map(String::from));
                    args.extend([option.to_string(), token.to_string()]);
                    inputs.push(args);
                }
            }
        }
        // Every pair of options, in both orders, with a quantity or none.
        for a in OPTION_GROUPS {
            for b in OPTION_GROUPS {
                for quantity in [None, Some("2")] {
                    let mut args = vec![command.to_string(), "KEY".into()];
                    args.extend(params.iter().map(|s| s.to_string()));
                    args.extend(quantity.map(String::from));
                    args.extend(a.split(' ').map(String::from));
                    args.extend(b.split(' ').map(String::from));
                    inputs.push(args);
                }
            }
        }
        // Too few arguments, and a number among the options.
        for n in 0..params.len() {
            let mut args = vec![command.to_string(), "KEY".into()];
            args.extend(params[..n].iter().map(|s| s.to_string()));
            inputs.push(args);
        }
        inputs.push(vec![command.to_string()]);
        let mut args = vec![command.to_string(), "KEY".into()];
        args.extend(params.iter().map(|s| s.to_string()));
        args.extend(owned(&["MS", "2"]));
        inputs.push(args);
        // A tag of every length about the setting's bound, and of any bytes.
        for tag in [
            "",
            "x",
            "\0",
            "\x7f\x01",
            &"t".repeat(64),
            &"t".repeat(65),
            &"t".repeat(1025),
        ] {
            let mut args = vec![command.to_string(), "KEY".into()];
            args.extend(params.iter().map(|s| s.to_string()));
            args.extend(["2".to_string(), "TAG".into(), tag.to_string()]);
            inputs.push(args);
        }
    }
    // Several limits at once.
    let specs: [&[&str]; 5] = [
        &["GCRA", "2", "1", "3600"],
        &["TOKEN_BUCKET", "3", "1", "3600"],
        &["FIXED", "3", "3600"],
        &["SLIDING_LOG", "3", "3600"],
        &["SLIDING_COUNTER", "3", "3600"],
    ];
    for spec in specs {
        for p in 1..spec.len() {
            for token in BOUNDS {
                let mut args = owned(&["RL.ALL", "2", "{a}KEY", "{a}KEY2", "FIXED", "5", "60"]);
                for (i, v) in spec.iter().enumerate() {
                    args.push(if i == p { token.to_string() } else { v.to_string() });
                }
                inputs.push(args);
            }
        }
        for tail in [
            &["WAIT", "1"][..],
            &["2", "MS", "FORCE", "BLOCK", "1"],
            &["PEEK", "PEEK"],
            &["FAST"],
            &["2", "TAG", "x"],
            &["TAG"],
            &["TAG", ""],
            &["REFUND", "TAG", "x"],
            &["TAG", "x", "tag", "y"],
        ] {
            let mut args = owned(&["RL.ALL", "2", "{a}KEY", "{a}KEY2", "GCRA", "2", "1", "60"]);
            args.extend(spec.iter().map(|s| s.to_string()));
            args.extend(owned(tail));
            inputs.push(args);
        }
    }
    for args in [
        &["RL.ALL", "0", "GCRA", "2", "1", "60"][..],
        &["RL.ALL", "1", "{a}KEY", "{a}KEY2", "GCRA", "2", "1", "60"],
        &[
            "RL.ALL", "2", "{a}KEY", "GCRA", "2", "1", "60", "GCRA", "2", "1", "60",
        ],
        &[
            "RL.ALL", "2", "{a}KEY", "{a}KEY", "GCRA", "2", "1", "60", "GCRA", "2", "1", "60",
        ],
        &["RL.ALL", "2", "{a}KEY", "{a}KEY2", "GCRA", "2", "1", "60"],
        &[
            "RL.ALL", "2", "{a}KEY", "{a}KEY2", "GCRA", "2", "1", "60", "LEAKY", "2", "60",
        ],
        &[
            "RL.ALL", "2", "{a}KEY", "{a}KEY2", "GCRA", "2", "1", "60", "FIXED", "2",
        ],
        &["RL.ALL", "1", "{a}KEY", "gcra", "2", "1", "60", "Fixed"],
        &["RL.ALL", "1", "{a}KEY"],
        &["RL.ALL", "1", "{a}KEY", "GCRA"],
    ] {
        inputs.push(owned(args));
    }
    let hundred_and_one: Vec<String> = std::iter::once("RL.ALL".to_string())
        .chain(std::iter::once("101".to_string()))
        .chain((0..101).map(|i| format!("{{a}}KEY{i}")))
        .chain(owned(&["GCRA", "2", "1", "60"]))
        .collect();
    inputs.push(hundred_and_one);
    // Leases.
    for unit in [None, Some("MS")] {
        for token in BOUNDS {
            for (p, base) in [(2, ["5", "60"]), (3, ["5", "60"])] {
                let mut args = owned(&["RL.CONCURRENCY", "KEY"]);
                args.extend(base.iter().enumerate().map(|(i, v)| {
                    if i + 2 == p {
                        token.to_string()
                    } else {
                        v.to_string()
                    }
                }));
                args.extend(unit.map(String::from));
                inputs.push(args);
            }
            let mut args = owned(&["RL.CONCURRENCY", "KEY", "5", "60", token]);
            args.extend(unit.map(String::from));
            inputs.push(args);
            inputs.push(owned(&["RL.RELEASE", "KEY", token]));
            let mut args = owned(&["RL.RENEW", "KEY", token, "60"]);
            args.extend(unit.map(String::from));
            inputs.push(args);
            let mut args = owned(&["RL.RENEW", "KEY", "1", token]);
            args.extend(unit.map(String::from));
            inputs.push(args);
        }
    }
    for group in OPTION_GROUPS {
        let mut args = owned(&["RL.CONCURRENCY", "KEY", "5", "60"]);
        args.extend(group.split(' ').map(String::from));
        inputs.push(args);
        let mut args = owned(&["RL.RENEW", "KEY", "1", "60"]);
        args.extend(group.split(' ').map(String::from));
        inputs.push(args);
        inputs.push(owned(&["RL.RELEASE", "KEY", "1", group]));
    }
    for args in [
        &["RL.CONCURRENCY", "KEY", "5"][..],
        &["RL.CONCURRENCY", "KEY"],
        &["RL.RELEASE", "KEY"],
        &["RL.RENEW", "KEY", "1"],
        &["RL.CONCURRENCY"],
        &["RL.RELEASE"],
        &["RL.RENEW"],
    ] {
        inputs.push(owned(args));
    }
    // RL.LOG: the window at every bound (in seconds and in MS), COUNT
    // likewise, BY without TAG or with another word, every option twice,
    // unknown words, arities; RL.INSPECT's arities.
    for unit in [None, Some("MS")] {
        for token in BOUNDS {
            let mut args = owned(&["RL.LOG", "KEY", token]);
            args.extend(unit.map(String::from));
            inputs.push(args);
            let mut args = owned(&["RL.LOG", "KEY", "60", "COUNT", token]);
            args.extend(unit.map(String::from));
            inputs.push(args);
        }
    }
    for tail in [
        &[][..],
        &["BY"],
        &["BY", "x"],
        &["BY", "tag"],
        &["by", "TAG", "BY", "TAG"],
        &["BY", "TAG", "BY"],
        &["COUNT"],
        &["COUNT", "2", "COUNT", "3"],
        &["MS", "ms"],
        &["FAST"],
        &["TAG"],
        &["2"],
        &["COUNT", "x", "BY"],
        &["BY", "x", "COUNT", "0"],
        &["COUNT", "0", "FAST"],
        &["MS", "BY", "TAG", "COUNT", "1"],
    ] {
        let mut args = owned(&["RL.LOG", "KEY", "60"]);
        args.extend(owned(tail));
        inputs.push(args);
        let mut args = owned(&["RL.LOG", "KEY", "0"]);
        args.extend(owned(tail));
        inputs.push(args);
    }
    for args in [
        &["RL.LOG", "KEY"][..],
        &["RL.LOG"],
        &["RL.INSPECT"],
        &["RL.INSPECT", "KEY", "x"],
        &["RL.INSPECT", "KEY"],
    ] {
        inputs.push(owned(args));
    }
    // States: of another algorithm, of another type, corrupt.
    let states: [(&str, &[&str]); 30] = [
        ("gcra", &["RL.GCRA", "s:gcra", "2", "1", "3600"]),
        ("bucket", &["RL.TOKEN_BUCKET", "s:bucket", "3", "1", "3600"]),
        ("fixed", &["RL.FIXED", "s:fixed", "3", "3600"]),
        ("log", &["RL.SLIDING_LOG", "s:log", "3", "3600"]),
        ("counter", &["RL.SLIDING_COUNTER", "s:counter", "3", "3600"]),
        ("leases", &["RL.CONCURRENCY", "s:leases", "3", "3600"]),
        ("list", &["RPUSH", "s:list", "x"]),
        ("junk", &["SET", "s:junk", "not a limiter"]),
        ("short", &["SET", "s:short", "G\x01\x02"]),
        (
            "log-order",
            &[
                "SET",
                "s:log-order",
                "L\x00\x00\x00\x00\x02\x00\x00\x00\x00\x00\x00\x00\x01\x00\x00\x00\x00\x00\x00\x00",
            ],
        ),
        ("block", &["SET", "s:block", "B\x01"]),
        ("tat", &["SET", "s:tat", "12/0"]),
        ("empty", &["SET", "s:empty", ""]),
        ("header", &["SET", "s:header", "B\x00\x00\x00\x00\x00\x00\x00"]),
        (
            "header-log",
            &["SET", "s:header-log", "B\x00\x00\x00\x00\x00\x00\x00L\x00\x00\x00\x00"],
        ),
        (
            "header-junk",
            &["SET", "s:header-junk", "B\x00\x00\x00\x00\x00\x00\x00junk"],
        ),
        ("tagged", &["RL.SLIDING_LOG", "s:tagged", "3", "3600", "2", "TAG", "t"]),
        ("tagged-short", &["SET", "s:tagged-short", "l\x01\x00\x00"]),
        ("tagged-empty", &["SET", "s:tagged-empty", "l\x00\x00\x00\x00"]),
        (
            "tagged-no-instant",
            &["SET", "s:tagged-no-instant", "l\x01\x00\x00\x00\x00\x00"],
        ),
        (
            "tagged-no-record",
            &["SET", "s:tagged-no-record", "l\x01\x00\x00\x00\x01\x00\x00\x00\x00\x00\x00\x00"],
        ),
        (
            "tagged-record-short",
            &["SET", "s:tagged-record-short", "l\x01\x00\x00\x00\x01\x00\x00\x00\x00\x00\x00\x00\x02\x00a"],
        ),
        (
            "tagged-record-long",
            &["SET", "s:tagged-record-long", "l\x01\x00\x00\x00\x01\x00\x00\x00\x00\x00\x00\x00\x00\x00a"],
        ),
        (
            "tagged-1025",
            &["SET", "s:tagged-1025", "l\x01\x00\x00\x00\x01\x00\x00\x00\x00\x00\x00\x00\x01\x04a"],
        ),
        (
            "tagged-order",
            &[
                "SET",
                "s:tagged-order",
                "l\x02\x00\x00\x00\x02\x00\x00\x00\x00\x00\x00\x00\x01\x00\x00\x00\x00\x00\x00\x00\x01\x00a\x00\x00",
            ],
        ),
        (
            "tagged-untagged",
            &[
                "SET",
                "s:tagged-untagged",
                "l\x02\x00\x00\x00\x01\x00\x00\x00\x00\x00\x00\x00\x02\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00",
            ],
        ),
        (
            "tagged-blocked",
            &[
                "SET",
                "s:tagged-blocked",
                "B\x00\x00\x00\x00\x00\x00\x00l\x01\x00\x00\x00\x01\x00\x00\x00\x00\x00\x00\x00\x01\x00a",
            ],
        ),
        ("tagged-junk", &["SET", "s:tagged-junk", "ljunk"]),
        // Reservations far ahead (the year 2128: every entry counted), of
        // two instants, their tags interleaved: RL.LOG's items per instant
        // and tag, in the order first met, and COUNT within an instant.
        (
            "tagged-ahead",
            &[
                "SET",
                "s:tagged-ahead",
                concat!(
                    "l\x06\x00\x00\x00",
                    "pppppp\x11\x00pppppp\x11\x00qppppp\x11\x00",
                    "qppppp\x11\x00qppppp\x11\x00qppppp\x11\x00",
                    "\x01\x00a\x00\x00\x01\x00b\x01\x00a\x01\x00b\x00\x00"
                ),
            ],
        ),
        // An untagged ring whose oldest entry is in slot 1.
        (
            "ring",
            &[
                "SET",
                "s:ring",
                "L\x01\x00\x00\x00rppppp\x11\x00pppppp\x11\x00qppppp\x11\x00",
            ],
        ),
    ];
    let setup: Vec<Step> = states
        .iter()
        .map(|(_, args)| Step {
            args: bytes(&owned(args)),
            keys: vec![args[1].as_bytes().to_vec()],
        })
        .collect();
    both.run(&setup);
    for (name, _) in &states {
        let key = format!("s:{name}");
        for (command, params) in &rates {
            let mut args = vec![command.to_string(), key.clone()];
            args.extend(params.iter().map(|s| s.to_string()));
            inputs.push(args);
        }
        inputs.push(vec![
            "RL.CONCURRENCY".into(),
            key.clone(),
            "3".into(),
            "60".into(),
        ]);
        inputs.push(vec!["RL.RELEASE".into(), key.clone(), "1".into()]);
        inputs.push(vec![
            "RL.ALL".into(),
            "1".into(),
            key.clone(),
            "FIXED".into(),
            "3".into(),
            "60".into(),
        ]);
        inputs.push(vec!["RL.INSPECT".into(), key.clone()]);
        inputs.push(vec!["RL.LOG".into(), key.clone(), "1000000000".into()]);
        inputs.push(owned(&["RL.LOG", &key, "1000000000", "BY", "TAG"]));
        for count in ["1", "2", "3", "4"] {
            inputs.push(owned(&["RL.LOG", &key, "1", "MS", "COUNT", count]));
            inputs.push(owned(&["RL.LOG", &key, "1", "BY", "TAG", "COUNT", count]));
        }
        // Read, then written by each kind of call: a tag, none, a refund.
        for tail in [
            &["TAG", "u"][..],
            &[],
            &["REFUND"],
            &["2", "REFUND"],
            &["PEEK", "TAG", "v"],
        ] {
            let mut args = owned(&["RL.SLIDING_LOG", &key, "3", "3600"]);
            args.extend(owned(tail));
            inputs.push(args);
        }
        inputs.push(vec!["RL.INSPECT".into(), key.clone()]);
        inputs.push(owned(&["RL.LOG", &key, "1000000000", "COUNT", "2"]));
    }
    // The deepest debt, and a sliding log past its cap.
    for _ in 0..5 {
        inputs.push(owned(&[
            "RL.GCRA",
            "debt",
            "0",
            "1000000",
            "1",
            "1000000000",
            "MS",
            "FORCE",
        ]));
    }
    inputs.push(owned(&["RL.SLIDING_LOG", "long", "3", "60", "10001", "FORCE"]));
    inputs.push(owned(&["RL.SLIDING_LOG", "long", "3", "60", "10000", "FORCE"]));
    inputs.push(owned(&["RL.SLIDING_LOG", "long", "3", "60", "1", "FORCE"]));
    inputs.push(owned(&[
        "RL.ALL",
        "1",
        "long",
        "SLIDING_LOG",
        "3",
        "60",
        "1",
        "FORCE",
    ]));

    // Each input on a key of its own (KEY), or on the key it names.
    let steps: Vec<(Vec<String>, Step)> = inputs
        .iter()
        .enumerate()
        .map(|(i, args)| {
            let args: Vec<String> = args
                .iter()
                .map(|a| a.replace("KEY", &format!("e:{i}:")))
                .collect();
            let keys: Vec<String> = match args[0].as_str() {
                "RL.ALL" => {
                    let n = args.get(1).and_then(|n| n.parse::<usize>().ok()).unwrap_or(0);
                    args.iter()
                        .skip(2)
                        .take(n.min(args.len().saturating_sub(2)))
                        .cloned()
                        .collect()
                }
                _ => args.get(1).cloned().into_iter().collect(),
            };
            let keys: Vec<Vec<u8>> = keys.iter().map(|k: &String| k.as_bytes().to_vec()).collect();
            (
                args.clone(),
                Step {
                    args: bytes(&args),
                    keys,
                },
            )
        })
        .collect();
    let (mut errors, mut replies, mut own_range) = (0, 0, 0);
    let mut texts = std::collections::BTreeSet::new();
    for chunk in steps.chunks(200) {
        let only: Vec<Step> = chunk.iter().map(|(_, s)| s.clone()).collect();
        for ((args, _), outcome) in chunk.iter().zip(both.run(&only)) {
            let module = common::editions::error_of(&outcome.replies[0]);
            let library = common::editions::error_of(&outcome.replies[1]);
            if module.is_none()
                && library
                    .as_deref()
                    .is_some_and(|t| t.contains("functions edition"))
            {
                own_range += 1;
                assert_eq!(
                    library,
                    common::editions::error_of(&outcome.replies[2]),
                    "{args:?}"
                );
                continue;
            }
            if let Some(what) = disagreement(&outcome, both.one_instant) {
                panic!("{}: {what}", args.join(" "));
            }
            match module {
                Some(text) => {
                    errors += 1;
                    // The text less what names the input itself.
                    texts.insert(text.split('\'').next().unwrap_or_default().to_string());
                }
                None => replies += 1,
            }
        }
    }
    println!(
        "{} inputs: {errors} errors alike ({} kinds), {replies} replies alike, {own_range} refused by the functions edition alone (its range)",
        steps.len(),
        texts.len()
    );
    assert!(
        errors > 1000 && texts.len() > 40,
        "{errors} errors, {} kinds: {texts:#?}",
        texts.len()
    );
}

/// The library's exact arithmetic (its parts `exact` and `limbs`, taken from
/// the library as it is) run by the server's Lua through `EVAL`, with a
/// harness that applies one helper to each input.
fn arithmetic_script() -> String {
    let source = common::library_source();
    let part = |name: &str| -> String {
        let marker = format!("-- part: {name}\n");
        let start = source
            .find(&marker)
            .unwrap_or_else(|| panic!("the library's part {name}"));
        let end = source[start + marker.len()..]
            .find("-- part: ")
            .map_or(source.len(), |e| start + marker.len() + e);
        source[start..end].to_string()
    };
    let constants: String = part("bounds")
        .lines()
        .filter(|l| l.starts_with("local TWO"))
        .map(|l| format!("{l}\n"))
        .collect();
    let section = format!("{}{}", part("exact"), part("limbs"));
    format!(
        r#"
local floor, byte, char, concat = math.floor, string.byte, string.char, table.concat
local pack, unpack = struct.pack, struct.unpack
local function max(a, b) if a > b then return a end return b end
{constants}
{section}
local function n(s) return tonumber(s) end
local function limbs(s)
  local out = {{}}
  for d in string.gmatch(s, '%d+') do out[#out + 1] = tonumber(d) end
  return out
end
local function show(l)
  local out = {{}}
  for i = 1, #l do out[i] = string.format('%.0f', l[i]) end
  return concat(out, ',')
end
local function num(v) if v == nil then return 'nil' end return string.format('%.0f', v) end
local op, out = ARGV[1], {{}}
local i = 2
while i <= #ARGV do
  if op == 'muldivmod' then
    local q, r = muldivmod(n(ARGV[i]), n(ARGV[i + 1]), n(ARGV[i + 2]))
    out[#out + 1] = num(q) .. ' ' .. num(r)
    i = i + 3
  elseif op == 'muladd' then
    out[#out + 1] = show(limbs_muladd(n(ARGV[i]), n(ARGV[i + 1]), n(ARGV[i + 2]), n(ARGV[i + 3])))
    i = i + 4
  elseif op == 'negate' then
    out[#out + 1] = show(limbs_negate(limbs(ARGV[i])))
    i = i + 1
  elseif op == 'divmod' then
    local q, r = limbs_divmod(limbs(ARGV[i]), n(ARGV[i + 1]))
    out[#out + 1] = show(q) .. ' ' .. num(r)
    i = i + 2
  elseif op == 'value' then
    out[#out + 1] = num(limbs_value(limbs(ARGV[i])))
    i = i + 1
  elseif op == 'compare' then
    out[#out + 1] = num(limbs_compare(limbs(ARGV[i]), limbs(ARGV[i + 1])))
    i = i + 2
  elseif op == 'bytes' then
    local l = limbs(ARGV[i])
    local s = limbs_bytes(l)
    local back = limbs_from_bytes(s, 1, #s)
    out[#out + 1] = show(back) .. ' ' .. num(#s)
    i = i + 1
  elseif op == 'u64' then
    local v = n(ARGV[i])
    local s = u64_bytes(v)
    local le = {{}}
    for k = 1, #s do le[k] = string.format('%d', byte(s, k)) end
    out[#out + 1] = concat(le, ',') .. ' ' .. num(u64_at(s, 1))
    i = i + 1
  elseif op == 'u64_at' then
    local s = ''
    for d in string.gmatch(ARGV[i], '%d+') do s = s .. char(tonumber(d)) end
    out[#out + 1] = num(u64_at(s, 1))
    i = i + 1
  end
end
return out
"#
    )
}

/// A random integer of a random width of at most `bits` bits.
fn random_bits(rng: &mut Rng, bits: u32) -> u128 {
    let width = 1 + (rng.next() % u64::from(bits)) as u32;
    (u128::from(rng.next()) << 64 | u128::from(rng.next())) >> (128 - width)
}

/// The 16-bit limbs of `v`, little-endian, `count` of them.
fn limbs_of(v: u128, count: usize) -> Vec<u128> {
    (0..count).map(|i| (v >> (16 * i)) & 0xffff).collect()
}

fn show(limbs: &[u128]) -> String {
    limbs.iter().map(|l| l.to_string()).collect::<Vec<_>>().join(",")
}

/// The library's `muldivmod` (floor(a * b / d) and the remainder, `nil` at
/// 2^53 or more) and its limb helpers (multiply-add into 96 and 112 bits,
/// two's complement, division by a small divisor, value, comparison, bytes,
/// u64 fields) against Rust's 128-bit integers: every combination of the
/// edges (0, 1, 2, 2^26, 2^32 - 1, 2^32, 2^52 - 1, 2^52, 2^53 - 2, 2^53 - 1,
/// and the divisors the library meets: 840, 10^6, periods of a year) and
/// 20,000 random inputs of every bit width per helper, run by the server's
/// own Lua (`EVAL`), exact on every one.
#[test]
fn the_exact_arithmetic_agrees_with_wide_integers() {
    if common::module_only() {
        return; // one run is enough: it needs no module, only EVAL
    }
    let s = common::Server::start();
    let mut c = s.client();
    let script = arithmetic_script();
    let two53: u128 = 1 << 53;
    let run = |c: &mut redis::Connection, op: &str, args: &[String]| -> Vec<String> {
        let mut out = Vec::new();
        let per = match op {
            "muldivmod" => 3,
            "muladd" => 4,
            "divmod" | "compare" => 2,
            _ => 1,
        };
        for chunk in args.chunks(per * 1000) {
            let mut cmd = redis::cmd("EVAL");
            cmd.arg(&script).arg(0).arg(op).arg(chunk);
            let answers: Vec<String> = cmd.query(c).unwrap_or_else(|e| panic!("{op}: {e}"));
            out.extend(answers);
        }
        out
    };
    let mut rng = Rng(0x2545_f491_4f6c_dd1d);
    let edges: Vec<u128> = vec![
        0,
        1,
        2,
        3,
        1 << 26,
        (1 << 32) - 1,
        1 << 32,
        (1 << 52) - 1,
        1 << 52,
        (1 << 53) - 2,
        (1 << 53) - 1,
        840,
        1_000_000,
        31_536_000_000_000,
        999_999_937,
    ];
    let mut checked = 0;

    // muldivmod: a, b < 2^53, 1 <= d < 2^53.
    let mut cases: Vec<(u128, u128, u128)> = Vec::new();
    for &a in &edges {
        for &b in &edges {
            for &d in edges.iter().filter(|&&d| d > 0) {
                cases.push((a, b, d));
            }
        }
    }
    for _ in 0..20_000 {
        let (a, b, d) = (
            random_bits(&mut rng, 53),
            random_bits(&mut rng, 53),
            random_bits(&mut rng, 53).max(1),
        );
        cases.push((a, b, d));
    }
    let args: Vec<String> = cases
        .iter()
        .flat_map(|(a, b, d)| [a, b, d].map(|v| v.to_string()))
        .collect();
    for ((a, b, d), got) in cases.iter().zip(run(&mut c, "muldivmod", &args)) {
        let (q, r) = (a * b / d, a * b % d);
        let expected = if q >= two53 {
            "nil nil".to_string()
        } else {
            format!("{q} {r}")
        };
        assert_eq!(got, expected, "muldivmod({a}, {b}, {d})");
        checked += 1;
    }

    // limbs_muladd: a * b + c into 7 limbs (a, b, c < 2^53), and into 6
    // where the result fits 96 bits.
    let mut cases: Vec<(u128, u128, u128, usize)> = Vec::new();
    for &a in &edges {
        for &b in &edges {
            cases.push((a, b, (1 << 53) - 1, 7));
            cases.push((a, b, 0, 7));
        }
    }
    for _ in 0..20_000 {
        let (a, b, c) = (
            random_bits(&mut rng, 53),
            random_bits(&mut rng, 53),
            random_bits(&mut rng, 53),
        );
        let count = if a * b + c < 1 << 96 { 6 } else { 7 };
        cases.push((a, b, c, count));
    }
    let args: Vec<String> = cases
        .iter()
        .flat_map(|(a, b, c, n)| [a.to_string(), b.to_string(), c.to_string(), n.to_string()])
        .collect();
    for ((a, b, cc, n), got) in cases.iter().zip(run(&mut c, "muladd", &args)) {
        assert_eq!(
            got,
            show(&limbs_of(a * b + cc, *n)),
            "limbs_muladd({a}, {b}, {cc}, {n})"
        );
        checked += 1;
    }

    // limbs_negate (96 bits), limbs_value, limbs_bytes and back.
    let mut values: Vec<u128> = edges.clone();
    values.extend([(1 << 64) - 1, 1 << 64, (1 << 95) + 1, (1 << 96) - 1]);
    for _ in 0..20_000 {
        values.push(random_bits(&mut rng, 96));
    }
    let args: Vec<String> = values.iter().map(|v| show(&limbs_of(*v, 6))).collect();
    for (v, got) in values.iter().zip(run(&mut c, "negate", &args)) {
        let negated = ((1u128 << 96) - v) % (1 << 96);
        assert_eq!(got, show(&limbs_of(negated, 6)), "limbs_negate({v})");
        checked += 1;
    }
    for (v, got) in values.iter().zip(run(&mut c, "value", &args)) {
        let expected = if *v >= two53 {
            "nil".to_string()
        } else {
            v.to_string()
        };
        assert_eq!(got, expected, "limbs_value({v})");
        checked += 1;
    }
    for (v, got) in values.iter().zip(run(&mut c, "bytes", &args)) {
        assert_eq!(got, format!("{} 12", show(&limbs_of(*v, 6))), "limbs_bytes({v})");
        checked += 1;
    }

    // limbs_divmod: up to 112 bits by 1 <= d < 2^37.
    let mut cases: Vec<(u128, u128)> = Vec::new();
    for &v in &values {
        for d in [1u128, 2, 3, 840, 1_000_000, (1 << 37) - 1] {
            cases.push((v, d));
        }
    }
    for _ in 0..20_000 {
        cases.push((random_bits(&mut rng, 112), random_bits(&mut rng, 37).max(1)));
    }
    let args: Vec<String> = cases
        .iter()
        .flat_map(|(v, d)| [show(&limbs_of(*v, 7)), d.to_string()])
        .collect();
    for ((v, d), got) in cases.iter().zip(run(&mut c, "divmod", &args)) {
        assert_eq!(
            got,
            format!("{} {}", show(&limbs_of(v / d, 7)), v % d),
            "limbs_divmod({v}, {d})"
        );
        checked += 1;
    }

    // limbs_compare.
    let mut cases: Vec<(u128, u128)> = Vec::new();
    for _ in 0..20_000 {
        let a = random_bits(&mut rng, 112);
        let b = match rng.below(3) {
            0 => a,
            1 => a ^ (1 << (rng.next() % 112)),
            _ => random_bits(&mut rng, 112),
        };
        cases.push((a, b));
    }
    let args: Vec<String> = cases
        .iter()
        .flat_map(|(a, b)| [show(&limbs_of(*a, 7)), show(&limbs_of(*b, 7))])
        .collect();
    for ((a, b), got) in cases.iter().zip(run(&mut c, "compare", &args)) {
        let expected = match a.cmp(b) {
            std::cmp::Ordering::Less => "-1",
            std::cmp::Ordering::Equal => "0",
            std::cmp::Ordering::Greater => "1",
        };
        assert_eq!(got, expected, "limbs_compare({a}, {b})");
        checked += 1;
    }

    // u64 fields: written little-endian, read back; read from any 8 bytes,
    // nil at 2^53 or more.
    let mut cases: Vec<u128> = edges.iter().copied().filter(|v| *v < two53).collect();
    for _ in 0..20_000 {
        cases.push(random_bits(&mut rng, 53));
    }
    let args: Vec<String> = cases.iter().map(|v| v.to_string()).collect();
    for (v, got) in cases.iter().zip(run(&mut c, "u64", &args)) {
        let le: Vec<String> = (*v as u64).to_le_bytes().iter().map(|b| b.to_string()).collect();
        assert_eq!(got, format!("{} {v}", le.join(",")), "u64_bytes({v})");
        checked += 1;
    }
    let mut cases: Vec<u64> = vec![0, (1 << 53) - 1, 1 << 53, u64::MAX];
    for _ in 0..20_000 {
        cases.push(rng.next() >> (rng.next() % 64));
    }
    let args: Vec<String> = cases
        .iter()
        .map(|v| {
            v.to_le_bytes()
                .iter()
                .map(|b| b.to_string())
                .collect::<Vec<_>>()
                .join(",")
        })
        .collect();
    for (v, got) in cases.iter().zip(run(&mut c, "u64_at", &args)) {
        let expected = if u128::from(*v) >= two53 {
            "nil".to_string()
        } else {
            v.to_string()
        };
        assert_eq!(got, expected, "u64_at({v})");
        checked += 1;
    }
    println!("{checked} results of the library's exact arithmetic, each equal to the wide integers'");
}

/// The library's shadow switch (`shadow = true` in its settings table, the
/// library loaded again), beside the module's `ratelimit.shadow yes` and
/// beside the scripts, which keep the table as it is (enforcing): every
/// refusal of the rate functions and `rl_all` (plain, with BLOCK, past a
/// WAIT, a partial grant of none, PEEK) is answered as the enforcing
/// scripts answer it but allowed (`blocked` 0, `retry_after` -1, the other
/// fields as for the refusal), records nothing and starts no block (the
/// key's bytes and expiry as before the call), exactly as the module
/// answers and stores (where one transaction is one instant); allowed
/// requests are recorded as ever, and leases still refuse.
#[test]
fn the_library_shadow_switch() {
    let source = common::library_source();
    assert_eq!(
        source.matches("  shadow = false,\n").count(),
        1,
        "the settings table's shadow"
    );
    let Some(mut both) = SideBySide::start(&source.replace("  shadow = false,\n", "  shadow = true,\n"))
    else {
        return; // needs the module and Functions: runs in the module's run on 7.0+
    };
    let _: () = redis::cmd("CONFIG")
        .arg("SET")
        .arg("ratelimit.shadow")
        .arg("yes")
        .query(&mut both.con)
        .unwrap();
    let owned = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<String>>();
    let rates: [(&str, &str, &[&str], bool); 5] = [
        ("RL.GCRA", "GCRA", &["0", "1", "3600"], true),
        ("RL.TOKEN_BUCKET", "TOKEN_BUCKET", &["1", "1", "3600"], true),
        ("RL.FIXED", "FIXED", &["1", "3600"], false),
        ("RL.SLIDING_LOG", "SLIDING_LOG", &["1", "3600"], true),
        ("RL.SLIDING_COUNTER", "SLIDING_COUNTER", &["1", "3600"], false),
    ];
    let int = |v: &Value, i: usize| match v {
        Value::Array(items) => match items.get(i) {
            Some(Value::Int(n)) => *n,
            other => panic!("{v:?}: field {i} is {other:?}"),
        },
        other => panic!("not a reply: {other:?}"),
    };
    let mut shadowed = 0;
    for (command, alg, params, reserves) in rates {
        let mut variants: Vec<Vec<&str>> =
            vec![vec![], vec!["BLOCK", "600"], vec!["2", "AT_MOST"], vec!["PEEK"]];
        if reserves {
            variants.push(vec!["WAIT", "1"]);
            variants.push(vec!["WAIT", "1", "BLOCK", "600"]);
        }
        for (v, extra) in variants.iter().enumerate() {
            for all in [false, true] {
                let key = format!("shadow:{alg}:{v}:{all}");
                let call = |extra: &[&str]| -> Vec<String> {
                    let mut args = if all {
                        owned(&["RL.ALL", "1", &key, alg])
                    } else {
                        owned(&[command, &key])
                    };
                    args.extend(owned(params));
                    args.extend(owned(extra));
                    args
                };
                let step = |args: &[String]| Step {
                    args: bytes(args),
                    keys: vec![key.as_bytes().to_vec()],
                };
                let (first, second) = (call(&[]), call(extra));
                let outcomes = both.run(&[step(&first), step(&second)]);
                let (taken, refused) = (&outcomes[0], &outcomes[1]);
                // The first call is allowed and recorded by all.
                for (e, edition) in EDITIONS.iter().enumerate() {
                    assert_eq!(int(&taken.replies[e], 0), 0, "{first:?} in the {edition}");
                    assert!(
                        matches!(taken.states[e][0].0, Value::BulkString(_)),
                        "{first:?}: recorded"
                    );
                }
                // The enforcing scripts refuse the second; the library
                // answers the same fields but allowed, and writes nothing.
                let (Value::Array(enforced), Value::Array(library)) =
                    (&refused.replies[2], &refused.replies[1])
                else {
                    panic!("{second:?}: {refused:?}");
                };
                assert_eq!(int(&refused.replies[2], 0), 1, "{second:?}: the scripts refuse");
                let mut expected = enforced.clone();
                expected[0] = Value::Int(0);
                expected[3] = Value::Int(-1);
                if !both.one_instant {
                    // Not at one instant: `reset` may differ by the unit
                    // the microseconds between the two calls cross.
                    assert!((int(&refused.replies[1], 4) - int(&refused.replies[2], 4)).abs() <= 1);
                    expected[4] = library[4].clone();
                }
                assert_eq!(library, &expected, "{second:?}: the library's shadowed refusal");
                // (Where calls are not at one instant, each starts from the
                // module's state, copied without an expiry.)
                let before: Vec<(Value, Value)> = if both.one_instant {
                    taken.states[1].clone()
                } else {
                    taken.states[0]
                        .iter()
                        .map(|(v, _)| (v.clone(), Value::Int(-1)))
                        .collect()
                };
                assert_eq!(
                    refused.states[1], before,
                    "{second:?}: the library recorded nothing"
                );
                if both.one_instant {
                    assert_eq!(
                        refused.replies[1], refused.replies[0],
                        "{second:?}: as the module answers"
                    );
                    assert_eq!(
                        refused.states[1], refused.states[0],
                        "{second:?}: as the module stores"
                    );
                }
                shadowed += 1;
            }
        }
    }
    // Leases are not affected.
    let lease = owned(&["RL.CONCURRENCY", "shadow:leases", "1", "60"]);
    let step = Step {
        args: bytes(&lease),
        keys: vec![b"shadow:leases".to_vec()],
    };
    let outcomes = both.run(&[step.clone(), step]);
    for (e, edition) in EDITIONS.iter().enumerate() {
        assert_eq!(int(&outcomes[0].replies[e], 0), 0, "{edition}");
        assert_eq!(
            int(&outcomes[1].replies[e], 0),
            1,
            "{edition}: a lease still refuses"
        );
    }
    println!("{shadowed} refusals shadowed alike");
}

/// The library's `tag_max_bytes` (its settings table, the library loaded
/// again) beside the module's `ratelimit.tag_max_bytes`, at the ceiling and
/// at the floor: the same tags taken (`rl_sliding_log`, `rl_all`) and
/// refused, with the same error but for the hint, and the same bytes. (The
/// scripts keep the table as it is: not compared here.)
#[test]
fn the_library_tag_max_bytes_setting() {
    let source = common::library_source();
    let default = "    tag_max_bytes = 64,\n";
    assert_eq!(
        source.matches(default).count(),
        1,
        "the settings table's tag_max_bytes"
    );
    for cap in ["1024", "1"] {
        let library = source.replace(default, &format!("    tag_max_bytes = {cap},\n"));
        let Some(mut both) = SideBySide::start(&library) else {
            return; // needs the module and Functions: runs in the module's run on 7.0+
        };
        let _: () = redis::cmd("CONFIG")
            .arg("SET")
            .arg("ratelimit.tag_max_bytes")
            .arg(cap)
            .query(&mut both.con)
            .unwrap();
        let (mut taken, mut refused) = (0, 0);
        for len in [1usize, 2, 64, 65, 1024, 1025] {
            let tag = "t".repeat(len);
            let key = format!("tag:{cap}:{len}");
            let calls = [
                vec!["RL.SLIDING_LOG", &key, "5", "3600", "2", "TAG", &tag],
                vec!["RL.SLIDING_LOG", &key, "5", "3600"],
                vec!["RL.ALL", "1", &key, "SLIDING_LOG", "5", "3600", "TAG", &tag],
                vec!["RL.LOG", &key, "3600", "BY", "TAG"],
            ];
            for args in calls {
                let args: Vec<String> = args.iter().map(|a| a.to_string()).collect();
                let outcome = both.run(&[Step {
                    args: bytes(&args),
                    keys: vec![key.as_bytes().to_vec()],
                }]);
                let outcome = &outcome[0];
                let show = format!("{} ... (a tag of {len} bytes, cap {cap})", args[..4].join(" "));
                assert_eq!(
                    common::editions::comparable(&outcome.replies[0]),
                    common::editions::comparable(&outcome.replies[1]),
                    "{show}"
                );
                if both.one_instant {
                    assert_eq!(outcome.states[0], outcome.states[1], "{show}");
                }
                match common::editions::error_of(&outcome.replies[0]) {
                    Some(text) => {
                        assert!(
                            text.starts_with(&format!("ERR TAG value must be 1 to {cap} bytes")),
                            "{show}: {text}"
                        );
                        refused += 1;
                    }
                    None => taken += 1,
                }
            }
        }
        let expected = if cap == "1" { 5 } else { 1 };
        assert_eq!(refused, expected * 2, "cap {cap}: {taken} taken");
    }
}

/// `MEMORY USAGE` of one limiter of each algorithm (and of 1,000 leases)
/// written by the module and by the library with the same calls: the same
/// bytes, so at most the 1.5 times of SPEC 17; printed, to be the table of
/// docs/performance.md.
#[test]
fn memory_per_limiter_of_each_edition() {
    let Some(mut both) = SideBySide::start_default() else {
        return; // needs the module and Functions: runs in the module's run on 7.0+
    };
    let kind = {
        let mut c = both.server.client();
        common::ServerKind::of(&mut c)
    };
    let limiters: [(&str, &[&str], usize); 6] = [
        ("GCRA", &["RL.GCRA", "user:000001", "15", "1", "3600"], 17),
        (
            "token bucket",
            &["RL.TOKEN_BUCKET", "user:000002", "16", "1", "3600"],
            17,
        ),
        (
            "fixed window",
            &["RL.FIXED", "user:000003", "100", "1000000000"],
            2,
        ),
        (
            "sliding counter",
            &["RL.SLIDING_COUNTER", "user:000004", "100", "1000000000"],
            2,
        ),
        (
            "sliding log, 1,000 entries",
            &["RL.SLIDING_LOG", "user:000005", "1000", "3600"],
            1001,
        ),
        (
            "1,000 leases",
            &["RL.CONCURRENCY", "user:000006", "1000", "3600"],
            1001,
        ),
    ];
    println!(
        "MEMORY USAGE on {} (bytes): module, library, scripts",
        kind.name()
    );
    for (name, args, calls) in limiters {
        let step = Step {
            args: args.iter().map(|a| a.as_bytes().to_vec()).collect(),
            keys: vec![args[1].as_bytes().to_vec()],
        };
        for chunk in vec![step; calls].chunks(200) {
            let outcomes = both.run(chunk);
            if both.one_instant {
                for o in &outcomes {
                    assert_eq!(o.states[0], o.states[1], "{name}: the same bytes");
                }
            }
        }
        let usage: Vec<i64> = (0..3).map(|e| both.memory_usage(e, args[1])).collect();
        println!("| {name} | {} | {} | {} |", usage[0], usage[1], usage[2]);
        for e in 1..3 {
            assert!(
                usage[e] * 2 <= usage[0] * 3,
                "{name}: the {} takes {} bytes, the module {}",
                EDITIONS[e],
                usage[e],
                usage[0]
            );
        }
    }
}
