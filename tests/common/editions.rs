//! The module, the library and its scripts on one server, side by
//! side: the same call made on each in one `MULTI`/`EXEC` (database 0 for
//! the module, 1 for the library, 2 for the scripts, the same key names in
//! each), then each key's bytes and absolute expiry.
//!
//! Inside one transaction the module's clock
//! (`RedisModule_CachedMicroseconds`) and the library's `TIME` are one
//! instant on Redis 7.2+ and Valkey; [`SideBySide::one_instant`] says
//! whether this server does so, checked on it. Redis 7.0 reads the clock
//! per command: there the editions cannot be compared at one instant, only
//! on what does not depend on it; each call then starts from the module's
//! state, copied into the other databases first (without an expiry: a
//! function or script decides whether a key has expired at its own start,
//! later than the module).

use super::{edition, function_of, library_source, tested, Edition, Server};
use redis::{Connection, ConnectionLike, Value};
use std::collections::HashMap;

/// The databases of the three editions: module, library, scripts.
pub const DATABASES: [&str; 3] = ["0", "1", "2"];
pub const EDITIONS: [&str; 3] = ["module", "library", "scripts"];

pub struct SideBySide {
    pub server: Server,
    pub con: Connection,
    /// Whether one transaction is one instant for the module and a function.
    pub one_instant: bool,
    /// Whether each step first copies the module's keys into the other
    /// editions' databases (where calls are not at one instant, their
    /// states would drift apart by the microseconds between them).
    sync: bool,
    /// The SHA1 of each script.
    shas: HashMap<String, String>,
    /// How far [`SideBySide::effects`] has read the AOF, and the database
    /// its last `SELECT` named.
    aof_read: usize,
    aof_db: usize,
    /// Each command's arity as the server checks it before queuing the
    /// command in a transaction (`COMMAND INFO`), read once a command.
    arities: HashMap<Vec<u8>, i64>,
}

/// The commands each edition's database received in the AOF, in order.
pub type Effects = [Vec<Vec<Vec<u8>>>; 3];

/// One call, as the module's command (`RL.GCRA key ...`) or a plain command
/// made the same in each database (`DEL key`), and the keys whose bytes
/// and expiry are compared after it.
#[derive(Debug, Clone)]
pub struct Step {
    pub args: Vec<Vec<u8>>,
    pub keys: Vec<Vec<u8>>,
}

/// What each edition answered and left: the reply, then each key's value
/// (`GET`'s reply) and absolute expiry (`PEXPIRETIME`'s).
#[derive(Debug, Clone)]
pub struct Outcome {
    pub replies: [Value; 3],
    pub states: [Vec<(Value, Value)>; 3],
}

impl SideBySide {
    /// A server with the module, the library (`library`: its source) and
    /// the scripts of the library in the repository. `None` in a run of
    /// another edition (these tests need the module, and run in its run),
    /// and on a server without Functions (Redis 6.x: there the scripts
    /// edition runs the whole suite on its own, `RL_EDITION=scripts`).
    pub fn start(library: &str) -> Option<SideBySide> {
        if edition() != Edition::Module || !tested().has_functions() {
            return None;
        }
        // The AOF shows each edition's effects ([`SideBySide::effects`]).
        let server = Server::start_with(
            &[
                "--appendonly",
                "yes",
                "--appendfsync",
                "no",
                "--lazyfree-lazy-expire",
                "yes",
            ],
            true,
        );
        let mut con = server.client();
        let _: String = redis::cmd("FUNCTION")
            .arg("LOAD")
            .arg("REPLACE")
            .arg(library)
            .query(&mut con)
            .expect("FUNCTION LOAD");
        let mut shas = HashMap::new();
        for (name, body) in super::scripts() {
            let sha: String = redis::cmd("SCRIPT")
                .arg("LOAD")
                .arg(body)
                .query(&mut con)
                .expect("SCRIPT LOAD");
            shas.insert(name, sha);
        }
        let mut both = SideBySide {
            server,
            con,
            one_instant: false,
            sync: false,
            shas,
            aof_read: 0,
            aof_db: 0,
            arities: HashMap::new(),
        };
        both.one_instant = both.probe_instant();
        both.sync = !both.one_instant;
        Some(both)
    }

    /// The library as it is in the repository.
    pub fn start_default() -> Option<SideBySide> {
        SideBySide::start(&library_source())
    }

    /// A lease taken on a new key by each edition in one transaction: its
    /// id is the instant each read (the key is new), so equal ids mean one
    /// instant.
    fn probe_instant(&mut self) -> bool {
        let key = b"side-by-side:probe".to_vec();
        let step = Step {
            args: ["RL.CONCURRENCY", "side-by-side:probe", "1", "1"]
                .iter()
                .map(|a| a.as_bytes().to_vec())
                .collect(),
            keys: vec![key.clone()],
        };
        let outcome = self.run(std::slice::from_ref(&step)).remove(0);
        let ids: Vec<Option<i64>> = outcome
            .replies
            .iter()
            .map(|r| match r {
                Value::Array(items) => match items.get(5) {
                    Some(Value::Int(id)) => Some(*id),
                    _ => None,
                },
                _ => None,
            })
            .collect();
        assert!(ids.iter().all(|id| id.is_some_and(|id| id > 0)), "{outcome:?}");
        self.run(&[Step {
            args: vec![b"DEL".to_vec(), key.clone()],
            keys: vec![key],
        }]);
        ids[0] == ids[1] && ids[1] == ids[2]
    }

    /// The call of `args` in edition `e` (0 module, 1 library, 2 scripts).
    pub fn form(&self, e: usize, args: &[Vec<u8>]) -> Vec<Vec<u8>> {
        let name = args
            .first()
            .map(|a| String::from_utf8_lossy(a).into_owned())
            .unwrap_or_default();
        let Some(function) = function_of(&name).filter(|_| e > 0) else {
            return args.to_vec();
        };
        let mut out: Vec<Vec<u8>> = if e == 1 {
            vec![b"FCALL".to_vec(), function.clone().into_bytes()]
        } else {
            let sha = self.shas.get(&function).expect("a script per function");
            vec![b"EVALSHA".to_vec(), sha.clone().into_bytes()]
        };
        if function != "rl_all" {
            out.push(if args.len() > 1 {
                b"1".to_vec()
            } else {
                b"0".to_vec()
            });
        }
        out.extend(args[1..].iter().cloned());
        out
    }

    /// Run `steps` (pipelined): each in one transaction on every edition.
    pub fn run(&mut self, steps: &[Step]) -> Vec<Outcome> {
        // A step the server refuses to queue (its arity) runs apart, in its
        // place: read after the rest of the batch, its keys would show what
        // later steps wrote.
        let mut out = Vec::with_capacity(steps.len());
        let mut from = 0;
        for (i, step) in steps.iter().enumerate() {
            if self.refused_in_a_transaction(step) {
                out.extend(self.run_queued(&steps[from..i]));
                out.push(self.apart(step));
                from = i + 1;
            }
        }
        out.extend(self.run_queued(&steps[from..]));
        out
    }

    /// Whether the server would refuse `step`'s command in a transaction
    /// for its number of arguments (Redis 7.0+ and Valkey check a module
    /// command's declared arity; Redis 6.x leaves it to the module, which
    /// answers the same error when the command runs).
    fn refused_in_a_transaction(&mut self, step: &Step) -> bool {
        if !tested().checks_arity() {
            return false;
        }
        let name = step.args[0].to_ascii_lowercase();
        let arity = match self.arities.get(&name) {
            Some(arity) => *arity,
            None => {
                let info: Value = redis::cmd("COMMAND")
                    .arg("INFO")
                    .arg(&name[..])
                    .query(&mut self.con)
                    .expect("COMMAND INFO");
                let arity = match &info {
                    Value::Array(entries) => match entries.first() {
                        Some(Value::Array(fields)) => match fields.get(1) {
                            Some(Value::Int(arity)) => *arity,
                            _ => 0,
                        },
                        _ => 0,
                    },
                    _ => 0,
                };
                self.arities.insert(name, arity);
                arity
            }
        };
        let argc = step.args.len() as i64;
        if arity >= 0 {
            arity != 0 && argc != arity
        } else {
            argc < -arity
        }
    }

    /// Steps none of which the server refuses to queue: each in one
    /// transaction, all in one pipeline.
    fn run_queued(&mut self, steps: &[Step]) -> Vec<Outcome> {
        if steps.is_empty() {
            return Vec::new();
        }
        let mut pipe = redis::pipe();
        let mut expected = 0;
        for step in steps {
            pipe.cmd("MULTI");
            self.queue_sync(&mut pipe, step);
            for (e, db) in DATABASES.iter().enumerate() {
                self.queue(&mut pipe, e, db, step);
            }
            pipe.cmd("SELECT").arg(0);
            pipe.cmd("EXEC");
            expected += 3 + self.sync_len(step) + DATABASES.len() * (2 + 2 * step.keys.len());
        }
        let raw = self
            .con
            .req_packed_commands(&pipe.get_packed_pipeline(), 0, expected)
            .expect("the pipeline");
        let mut out = Vec::with_capacity(steps.len());
        let mut at = 0;
        for step in steps {
            let n = 3 + self.sync_len(step) + DATABASES.len() * (2 + 2 * step.keys.len());
            let answers = &raw[at..at + n];
            at += n;
            match &answers[n - 1] {
                Value::Array(results) => out.push(split(&results[self.sync_len(step)..], step.keys.len())),
                other => panic!("{step:?}: EXEC answered {other:?}"),
            }
        }
        out
    }

    /// The commands that copy the module's keys over the others' (when
    /// [`SideBySide::sync`]), and how many they are.
    fn queue_sync(&self, pipe: &mut redis::Pipeline, step: &Step) {
        if self.sync {
            // The copies never expire: the module decides at the
            // transaction's instant, a function or script at its own start
            // (later), where a key due in between would be gone for it
            // alone.
            queue_copies(pipe, &step.keys, true);
        }
    }

    /// Copy the module's `keys` (or their absence) over the library's and
    /// the scripts', expiry and all, and drop the copies' own effects.
    pub fn copy_module_keys(&mut self, keys: &[Vec<u8>]) {
        let mut pipe = redis::pipe();
        queue_copies(&mut pipe, keys, false);
        pipe.query::<()>(&mut self.con).expect("the copies");
        self.effects();
    }

    fn sync_len(&self, step: &Step) -> usize {
        if self.sync {
            (DATABASES.len() - 1) * (4 + 3 * step.keys.len())
        } else {
            0
        }
    }

    fn queue(&self, pipe: &mut redis::Pipeline, e: usize, db: &str, step: &Step) {
        pipe.cmd("SELECT").arg(db);
        let form = self.form(e, &step.args);
        let mut call = redis::cmd(&String::from_utf8_lossy(&form[0]));
        for a in &form[1..] {
            call.arg(&a[..]);
        }
        pipe.add_command(call);
        for key in &step.keys {
            pipe.cmd("GET").arg(&key[..]);
            pipe.cmd("PEXPIRETIME").arg(&key[..]);
        }
    }

    /// A step whose transaction the server would refuse (a call of the
    /// wrong arity, which runs nothing): each edition's call on its own, then
    /// every key read in one transaction (one instant, so that a key
    /// expiring meanwhile is gone from every database alike).
    fn apart(&mut self, step: &Step) -> Outcome {
        let mut replies: Vec<Value> = Vec::new();
        for (e, db) in DATABASES.iter().enumerate() {
            let form = self.form(e, &step.args);
            let mut call = redis::cmd(&String::from_utf8_lossy(&form[0]));
            for a in &form[1..] {
                call.arg(&a[..]);
            }
            let mut pipe = redis::pipe();
            pipe.cmd("SELECT").arg(*db);
            pipe.add_command(call);
            pipe.cmd("SELECT").arg(0);
            let raw = self
                .con
                .req_packed_commands(&pipe.get_packed_pipeline(), 0, 3)
                .expect("a call");
            replies.push(raw[1].clone());
        }
        let mut pipe = redis::pipe();
        pipe.cmd("MULTI");
        for db in DATABASES {
            pipe.cmd("SELECT").arg(db);
            for key in &step.keys {
                pipe.cmd("GET").arg(&key[..]);
                pipe.cmd("PEXPIRETIME").arg(&key[..]);
            }
        }
        pipe.cmd("SELECT").arg(0);
        pipe.cmd("EXEC");
        let per = 1 + 2 * step.keys.len();
        let n = 3 + DATABASES.len() * per;
        let raw = self
            .con
            .req_packed_commands(&pipe.get_packed_pipeline(), 0, n)
            .expect("the keys");
        let Value::Array(results) = &raw[n - 1] else {
            panic!("{step:?}: EXEC answered {:?}", raw[n - 1]);
        };
        let states: Vec<Vec<(Value, Value)>> = (0..DATABASES.len())
            .map(|e| {
                results[e * per + 1..(e + 1) * per]
                    .chunks(2)
                    .map(|p| (p[0].clone(), p[1].clone()))
                    .collect()
            })
            .collect();
        Outcome {
            replies: [replies[0].clone(), replies[1].clone(), replies[2].clone()],
            states: [states[0].clone(), states[1].clone(), states[2].clone()],
        }
    }

    /// The effects each edition's calls wrote to the AOF (as to a replica)
    /// since the last time, by database: every command but `MULTI`/`EXEC`
    /// and `SELECT`, and but the `UNLINK` of a key's expiry (the server
    /// expires keys with `lazyfree-lazy-expire`, so an expiry is an `UNLINK`
    /// and a write's deletion a `DEL`: an expiry comes when the server's
    /// cycle reaches each database, not with a call).
    pub fn effects(&mut self) -> Effects {
        let dir = self.server.dir.join("appendonlydir");
        let mut incr: Vec<_> = std::fs::read_dir(&dir)
            .expect("appendonlydir")
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.to_string_lossy().ends_with(".incr.aof"))
            .collect();
        incr.sort();
        let path = incr.pop().expect("an incremental AOF");
        let bytes = std::fs::read(&path).expect("the AOF");
        let mut out: Effects = Default::default();
        let mut at = self.aof_read;
        while let Some((command, next)) = resp_command(&bytes, at) {
            at = next;
            let name = String::from_utf8_lossy(&command[0]).to_ascii_uppercase();
            match name.as_str() {
                "SELECT" => self.aof_db = String::from_utf8_lossy(&command[1]).parse().expect("a database"),
                "MULTI" | "EXEC" | "UNLINK" => {}
                _ if self.aof_db < 3 => out[self.aof_db].push(command),
                _ => {}
            }
        }
        self.aof_read = at;
        out
    }

    /// `MEMORY USAGE` of `key` in edition `e`'s database.
    pub fn memory_usage(&mut self, e: usize, key: &str) -> i64 {
        let mut pipe = redis::pipe();
        pipe.cmd("SELECT").arg(DATABASES[e]);
        pipe.cmd("MEMORY").arg("USAGE").arg(key);
        pipe.cmd("SELECT").arg(0);
        let (_, usage, _): (String, i64, String) = pipe.query(&mut self.con).expect("MEMORY USAGE");
        usage
    }
}

/// The command (an array of bulk strings) at `at` in an AOF, and where the
/// next starts; `None` at the end or before a command not yet all written.
fn resp_command(bytes: &[u8], at: usize) -> Option<(Vec<Vec<u8>>, usize)> {
    let line = |from: usize| -> Option<(&[u8], usize)> {
        let end = from + bytes.get(from..)?.windows(2).position(|w| w == b"\r\n")?;
        Some((&bytes[from..end], end + 2))
    };
    let number = |text: &[u8]| -> usize { String::from_utf8_lossy(text).parse().expect("a length") };
    let (head, mut at) = line(at)?;
    assert_eq!(head.first(), Some(&b'*'), "an AOF command");
    let mut command = Vec::new();
    for _ in 0..number(&head[1..]) {
        let (len, from) = line(at)?;
        assert_eq!(len.first(), Some(&b'$'), "a bulk string");
        let n = number(&len[1..]);
        command.push(bytes.get(from..from + n)?.to_vec());
        at = from + n + 2;
        if at > bytes.len() {
            return None;
        }
    }
    Some((command, at))
}

/// One edition's part of EXEC's results: SELECT's OK, the reply, then the
/// keys' values and expiries.
fn split_one(results: &[Value], keys: usize) -> (Value, Vec<(Value, Value)>) {
    let reply = results[1].clone();
    let states = results[2..2 + 2 * keys]
        .chunks(2)
        .map(|p| (p[0].clone(), p[1].clone()))
        .collect();
    (reply, states)
}

fn split(results: &[Value], keys: usize) -> Outcome {
    let per = 2 + 2 * keys;
    let parts: Vec<(Value, Vec<(Value, Value)>)> =
        (0..3).map(|e| split_one(&results[e * per..], keys)).collect();
    Outcome {
        replies: [parts[0].0.clone(), parts[1].0.clone(), parts[2].0.clone()],
        states: [parts[0].1.clone(), parts[1].1.clone(), parts[2].1.clone()],
    }
}

/// The commands that copy the module's `keys` (database 0) over the other
/// editions' databases, the absent ones too; with `persist`, the copies
/// keep no expiry. Each database: `SELECT`, a `DEL` per key, `SELECT 0`, a
/// `COPY` per key, then with `persist` `SELECT`, a `PERSIST` per key,
/// `SELECT 0`.
fn queue_copies(pipe: &mut redis::Pipeline, keys: &[Vec<u8>], persist: bool) {
    for db in &DATABASES[1..] {
        pipe.cmd("SELECT").arg(*db);
        for key in keys {
            pipe.cmd("DEL").arg(&key[..]);
        }
        pipe.cmd("SELECT").arg(0);
        for key in keys {
            pipe.cmd("COPY").arg(&key[..]).arg(&key[..]).arg("DB").arg(*db);
        }
        if persist {
            pipe.cmd("SELECT").arg(*db);
            for key in keys {
                pipe.cmd("PERSIST").arg(&key[..]);
            }
            pipe.cmd("SELECT").arg(0);
        }
    }
}

/// The instants the functions edition computes: up to 6 * 10^15 µs after
/// the epoch (the year 2160), where the module goes on.
pub const LIBRARY_INSTANTS: i64 = 6_000_000_000_000_000;

/// Whether a step's disagreement is the functions edition's range: the
/// library or the scripts refused with its range error where the module's
/// reply (times in `unit` µs) names an instant past it.
pub fn past_the_library_range(outcome: &Outcome, unit: i64) -> bool {
    let refused = outcome.replies[1..]
        .iter()
        .any(|r| error_of(r).is_some_and(|t| t.contains("beyond the functions edition's range")));
    let Value::Array(items) = &outcome.replies[0] else {
        return false;
    };
    let int = |i: usize| match items.get(i) {
        Some(Value::Int(v)) => *v,
        _ => 0,
    };
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_micros() as i64);
    refused && now.saturating_add(int(3).max(int(4)).saturating_mul(unit)) >= LIBRARY_INSTANTS
}

/// Whether the editions agree on a step: the same reply (errors in the
/// library's words) and the same bytes and expiry on every key; `None`
/// when they do, else what differs.
pub fn disagreement(outcome: &Outcome, exact: bool) -> Option<String> {
    for (e, edition) in EDITIONS.iter().enumerate().skip(1) {
        let (a, b) = (comparable(&outcome.replies[0]), comparable(&outcome.replies[e]));
        let replies_differ = if exact {
            a != b
        } else {
            // Not at one instant: only the errors and their texts (the
            // states drift apart by the microseconds between the calls).
            error_of(&outcome.replies[0]).map(|t| library_words(&t)) != error_of(&outcome.replies[e])
        };
        if replies_differ {
            return Some(format!(
                "the {edition} answered {:?}, the module {:?}",
                outcome.replies[e], outcome.replies[0]
            ));
        }
        if exact && outcome.states[0] != outcome.states[e] {
            let show = |s: &[(Value, Value)]| {
                s.iter()
                    .map(|(v, t)| format!("{} expiring at {t:?}", hex(v)))
                    .collect::<Vec<_>>()
                    .join("; ")
            };
            return Some(format!(
                "the {edition} left {}, the module {}",
                show(&outcome.states[e]),
                show(&outcome.states[0])
            ));
        }
    }
    outcome
        .replies
        .iter()
        .find_map(lua_runtime_error)
        .map(|t| format!("a Lua runtime error reached the client: {t}"))
}

/// An error's text as the library words it: the hint of a number past a
/// setting's cap names the library's table rather than `CONFIG SET` (the
/// one wording the editions do not share).
pub fn library_words(text: &str) -> String {
    let mut out = text.to_string();
    for setting in ["sliding_log_max_limit", "concurrency_max_limit", "tag_max_bytes"] {
        out = out.replace(
            &format!("(CONFIG SET ratelimit.{setting} raises the cap"),
            &format!("(the {setting} setting at the top of the library raises the cap"),
        );
    }
    out
}

/// A reply made comparable across editions: an error as its text in the
/// library's words, anything else as it is.
pub fn comparable(v: &Value) -> Value {
    match v {
        Value::ServerError(e) => Value::SimpleString(library_words(&format!(
            "{} {}",
            e.code(),
            e.details().unwrap_or_default()
        ))),
        Value::Array(items) => Value::Array(items.iter().map(comparable).collect()),
        other => other.clone(),
    }
}

/// The error text of a reply, if it is one.
pub fn error_of(v: &Value) -> Option<String> {
    match v {
        Value::ServerError(e) => Some(format!("{} {}", e.code(), e.details().unwrap_or_default())),
        _ => None,
    }
}

/// Texts that only a Lua runtime error shows: never in a reply.
pub const LUA_RUNTIME: [&str; 6] = [
    "attempt to",
    "user_function",
    "@user_script",
    "user_script:",
    "stack traceback",
    "internal error",
];

/// Whether a reply is, or holds, an error with a Lua runtime error's text.
pub fn lua_runtime_error(v: &Value) -> Option<String> {
    match v {
        Value::ServerError(_) => {
            let text = error_of(v).unwrap_or_default();
            LUA_RUNTIME.iter().any(|t| text.contains(t)).then_some(text)
        }
        Value::Array(items) => items.iter().find_map(lua_runtime_error),
        _ => None,
    }
}

/// A value's bytes in hex, for a failure's message.
pub fn hex(v: &Value) -> String {
    match v {
        Value::BulkString(b) => b.iter().map(|x| format!("{x:02x}")).collect(),
        other => format!("{other:?}"),
    }
}
