//! Test harness: starts a real `redis-server` (or `valkey-server`) with the
//! module loaded, on a free loopback port, in its own temporary directory;
//! the process is killed when the guard drops.
//!
//! - `RL_SERVER_BIN`: the server binary (default `redis-server`).
//! - `RL_MODULE`: the module's `.so` (default: the one cargo just built).
//! - `RL_EDITION`: which edition answers the rate and lease commands:
//!   `module` (the default), `functions` (the library of
//!   `functions/ratelimit.lua`, on a server without the module: every
//!   `RL.*` command a test sends goes as `FCALL rl_*`) or `scripts` (the
//!   generated `functions/scripts/*.lua`, through `EVALSHA`). Tests about
//!   the module itself (INFO, CONFIG, COMMAND DOCS, module arguments) run
//!   on the module alone: they start with `if common::module_only() {
//!   return; }`.
#![allow(dead_code)]

use std::net::TcpListener;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

/// Which edition answers the rate and lease commands (`RL_EDITION`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Edition {
    Module,
    Functions,
    Scripts,
}

pub fn edition() -> Edition {
    match std::env::var("RL_EDITION").as_deref() {
        Ok("functions") => Edition::Functions,
        Ok("scripts") => Edition::Scripts,
        Ok("module") | Ok("") | Err(_) => Edition::Module,
        Ok(other) => panic!("RL_EDITION={other}: expected module, functions or scripts"),
    }
}

/// Whether this run is of an edition other than the module's: a test about
/// the module itself returns at once (it has run on the module's own run).
pub fn module_only() -> bool {
    edition() != Edition::Module
}

/// The repository's root.
pub fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The functions library's source.
pub fn library_source() -> String {
    std::fs::read_to_string(repo().join("functions/ratelimit.lua")).expect("functions/ratelimit.lua")
}

/// The function (and generated script) of a module command: `rl_gcra` for
/// `RL.GCRA`; `None` for anything else.
pub fn function_of(command: &str) -> Option<String> {
    let lower = command.to_ascii_lowercase();
    let name = lower.strip_prefix("rl.")?;
    const NAMES: [&str; 9] = [
        "gcra",
        "token_bucket",
        "fixed",
        "sliding_log",
        "sliding_counter",
        "all",
        "concurrency",
        "release",
        "renew",
    ];
    NAMES.contains(&name).then(|| format!("rl_{name}"))
}

/// The SHA1 of each generated script, as `SCRIPT LOAD` answered it.
static SHAS: OnceLock<std::collections::HashMap<String, String>> = OnceLock::new();

/// Load the edition under test into a server started without the module:
/// the library, or every generated script.
pub fn load_edition(con: &mut redis::Connection) {
    match edition() {
        Edition::Module => {}
        Edition::Functions => {
            let _: String = redis::cmd("FUNCTION")
                .arg("LOAD")
                .arg("REPLACE")
                .arg(library_source())
                .query(con)
                .expect("FUNCTION LOAD of functions/ratelimit.lua");
        }
        Edition::Scripts => {
            let dir = repo().join("functions/scripts");
            let mut shas = std::collections::HashMap::new();
            for entry in std::fs::read_dir(&dir).expect("functions/scripts") {
                let path = entry.expect("a script").path();
                let name = path
                    .file_stem()
                    .and_then(|s| s.to_str())
                    .unwrap_or_default()
                    .to_string();
                let body = std::fs::read_to_string(&path).expect("a script's text");
                let sha: String = redis::cmd("SCRIPT")
                    .arg("LOAD")
                    .arg(body)
                    .query(con)
                    .expect("SCRIPT LOAD");
                shas.insert(name, sha);
            }
            let _ = SHAS.set(shas);
        }
    }
}

/// The arguments that send `args` (a module command) to the edition under
/// test: `FCALL rl_gcra 1 key ...`, `EVALSHA <sha> 1 key ...`, or as they
/// are (the module, or a command that is not the module's).
pub fn translate(args: &[&str]) -> Vec<String> {
    let plain = || args.iter().map(|a| a.to_string()).collect();
    let edition = edition();
    if edition == Edition::Module || args.is_empty() {
        return plain();
    }
    let Some(function) = function_of(args[0]) else {
        return plain();
    };
    let mut out: Vec<String> = match edition {
        Edition::Functions => vec!["FCALL".into(), function.clone()],
        _ => {
            let sha = SHAS
                .get()
                .and_then(|m| m.get(&function))
                .unwrap_or_else(|| panic!("no generated script for {function}: was the edition loaded?"));
            vec!["EVALSHA".into(), sha.clone()]
        }
    };
    if function != "rl_all" {
        // One key, when the command names one (RL.ALL names its numkeys).
        out.push(if args.len() > 1 { "1" } else { "0" }.into());
    }
    out.extend(args[1..].iter().map(|a| a.to_string()));
    out
}

pub struct Server {
    child: Child,
    pub port: u16,
    pub dir: PathBuf,
    args: Vec<String>,
}

static NEXT: AtomicUsize = AtomicUsize::new(0);

pub fn server_bin() -> String {
    std::env::var("RL_SERVER_BIN").unwrap_or_else(|_| "redis-server".to_string())
}

/// The module built by cargo for this test run (debug or release, whichever
/// profile the tests run in), unless `RL_MODULE` names another.
pub fn module_path() -> PathBuf {
    if let Ok(p) = std::env::var("RL_MODULE") {
        return PathBuf::from(p);
    }
    // Cargo builds the cdylib next to the test binaries (target/<profile>/deps)
    // when it builds the library for the integration tests.
    let exe = std::env::current_exe().expect("test binary path");
    let deps = exe.parent().expect("target/<profile>/deps");
    let beside = deps.join("libredis_ratelimit.so");
    if beside.exists() {
        return beside;
    }
    deps.parent().unwrap_or(deps).join("libredis_ratelimit.so")
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free loopback port")
}

impl Server {
    /// A server with the module loaded.
    pub fn start() -> Server {
        Server::start_with(&[], true)
    }

    /// A server with extra `--name value` arguments, with or without the module.
    pub fn start_with(extra: &[&str], with_module: bool) -> Server {
        for _attempt in 0..5 {
            if let Some(server) = Server::try_start(extra, with_module) {
                return server;
            }
        }
        panic!(
            "could not start {} (is it installed? set RL_SERVER_BIN)",
            server_bin()
        );
    }

    fn try_start(extra: &[&str], with_module: bool) -> Option<Server> {
        let port = free_port();
        let n = NEXT.fetch_add(1, Ordering::SeqCst);
        let dir = std::env::temp_dir().join(format!("rl-test-{}-{n}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).ok()?;
        let mut args: Vec<String> = vec![
            "--port".into(),
            port.to_string(),
            "--bind".into(),
            "127.0.0.1".into(),
            "--save".into(),
            "".into(),
            "--appendonly".into(),
            "no".into(),
            "--daemonize".into(),
            "no".into(),
            "--logfile".into(),
            "server.log".into(),
            "--dir".into(),
            dir.to_string_lossy().into_owned(),
        ];
        if with_module && edition() == Edition::Module {
            let module = module_path();
            assert!(module.exists(), "module not built at {}", module.display());
            args.push("--loadmodule".into());
            args.push(module.to_string_lossy().into_owned());
        }
        args.extend(extra.iter().map(|s| s.to_string()));
        let child = Server::spawn(&dir, &args)?;
        let mut server = Server {
            child,
            port,
            dir,
            args,
        };
        if !server.wait_ready() {
            return None;
        }
        // A replica has the master's library by replication (and a
        // replica promoted later needs the scripts in its own cache).
        if with_module && (edition() == Edition::Scripts || !extra.contains(&"--replicaof")) {
            load_edition(&mut server.client());
        }
        Some(server)
    }

    fn spawn(dir: &PathBuf, args: &[String]) -> Option<Child> {
        Command::new(server_bin())
            .current_dir(dir)
            .args(args)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .ok()
    }

    fn wait_ready(&mut self) -> bool {
        let deadline = Instant::now() + Duration::from_secs(20);
        while Instant::now() < deadline {
            if let Ok(Some(_)) = self.child.try_wait() {
                return false; // exited: port taken, or a bad argument
            }
            if let Ok(mut c) = self.try_client() {
                // While loading a dataset the server answers LOADING.
                if redis::cmd("PING").query::<String>(&mut c).is_ok() {
                    return true;
                }
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        false
    }

    /// Kill the server with SIGKILL (no shutdown, no final save) and start it
    /// again on the same port, directory and arguments.
    pub fn crash_and_restart(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        for _attempt in 0..50 {
            if let Some(child) = Server::spawn(&self.dir, &self.args) {
                self.child = child;
                if self.wait_ready() {
                    // The scripts' cache is gone, and so is the library
                    // of a server without persistence: load again (the
                    // same library again changes nothing).
                    if !self.args.iter().any(|a| a == "--replicaof") {
                        load_edition(&mut self.client());
                    }
                    return;
                }
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        panic!("could not restart the server: {}", self.log());
    }

    pub fn url(&self) -> String {
        format!("redis://127.0.0.1:{}/", self.port)
    }

    fn try_client(&self) -> redis::RedisResult<redis::Connection> {
        redis::Client::open(self.url())?.get_connection_with_timeout(Duration::from_secs(5))
    }

    pub fn client(&self) -> redis::Connection {
        self.try_client().expect("connect to the test server")
    }

    pub fn log(&self) -> String {
        std::fs::read_to_string(self.dir.join("server.log")).unwrap_or_default()
    }

    /// A master for replication tests: the module loaded, `extra` options,
    /// and a full sync that starts at once (no diskless delay).
    pub fn master(extra: &[&str]) -> Server {
        let mut args = vec!["--repl-diskless-sync-delay", "0"];
        args.extend_from_slice(extra);
        Server::start_with(&args, true)
    }

    /// A replica of `master`, with or without the module, returned once its
    /// link to the master is up.
    pub fn replica_of(master: &Server, with_module: bool) -> Server {
        let port = master.port.to_string();
        let replica = Server::start_with(&["--replicaof", "127.0.0.1", &port], with_module);
        let mut r = replica.client();
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            let info: String = cmd(&["INFO", "replication"]).query(&mut r).unwrap();
            if info.lines().any(|l| l.trim() == "master_link_status:up") {
                return replica;
            }
            assert!(
                Instant::now() < deadline,
                "replica never synced: {}",
                replica.log()
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

/// An AOF's text without the functions library's source (its `FUNCTION
/// LOAD` is in the AOF, and it names the module's commands), lower case.
pub fn aof_commands(aof: &[u8]) -> String {
    let text = String::from_utf8_lossy(aof).to_lowercase();
    if edition() == Edition::Functions {
        return text.replace(&library_source().to_lowercase(), "");
    }
    text
}

/// The hint of the error for a number past a setting's cap: how that
/// edition raises it.
pub fn raises_the_cap(setting: &str, ceiling: u64) -> String {
    match edition() {
        Edition::Module => format!("(CONFIG SET ratelimit.{setting} raises the cap, up to {ceiling})"),
        _ => format!("(the {setting} setting at the top of the library raises the cap, up to {ceiling})"),
    }
}

/// A module error text as the edition under test words it: the hint of a
/// capped number names the library's settings table instead of `CONFIG
/// SET`.
pub fn in_edition(expected: &str) -> String {
    let mut out = expected.to_string();
    for setting in ["sliding_log_max_limit", "concurrency_max_limit"] {
        let module = raises_the_cap(setting, 1_000_000);
        let ours = match edition() {
            Edition::Module => module.clone(),
            _ => format!("(the {setting} setting at the top of the library raises the cap, up to 1000000)"),
        };
        out = out.replace(
            &format!("(CONFIG SET ratelimit.{setting} raises the cap, up to 1000000)"),
            &ours,
        );
    }
    out
}

/// Options that make every write reach the AOF before the reply.
pub const AOF_ALWAYS: [&str; 4] = ["--appendonly", "yes", "--appendfsync", "always"];

impl Drop for Server {
    /// A clean `SHUTDOWN NOSAVE` first (so a server run under valgrind can
    /// write its report), then SIGKILL if it is still there after a while.
    fn drop(&mut self) {
        if let Ok(mut c) = self.try_client() {
            let _ = redis::cmd("SHUTDOWN").arg("NOSAVE").query::<()>(&mut c);
        }
        let deadline = Instant::now() + Duration::from_secs(30);
        while Instant::now() < deadline {
            if let Ok(Some(_)) = self.child.try_wait() {
                break;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// A module command's start for the edition under test, to which the
/// caller adds the key (or `numkeys` and the keys) and the arguments as
/// they are: `RL.GCRA`, `FCALL rl_gcra 1` or `EVALSHA <sha> 1`.
pub fn command(name: &str) -> redis::Cmd {
    // The name and a placeholder key, then without the key.
    let mut start = translate(&[name, "key"]);
    start.pop();
    let mut c = redis::cmd(&start[0]);
    c.arg(&start[1..]);
    c
}

/// Build a command from string arguments: a module command goes to the
/// edition under test (see [`translate`]).
pub fn cmd(args: &[&str]) -> redis::Cmd {
    let args = translate(args);
    let mut c = redis::cmd(&args[0]);
    for a in &args[1..] {
        c.arg(a);
    }
    c
}

/// A command's reply, its five integers named (the README's "Common to every
/// command"), so that a failing assertion says which field differs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Reply {
    pub blocked: bool,
    pub limit: i64,
    pub remaining: i64,
    pub retry_after: i64,
    pub reset: i64,
}

impl Reply {
    /// An allowed request: `retry_after` is always -1.
    pub const fn allowed(limit: i64, remaining: i64, reset: i64) -> Reply {
        Reply {
            blocked: false,
            limit,
            remaining,
            retry_after: -1,
            reset,
        }
    }

    /// A refused request: nothing was consumed; `retry_after` -1 means never.
    pub const fn refused(limit: i64, remaining: i64, retry_after: i64, reset: i64) -> Reply {
        Reply {
            blocked: true,
            limit,
            remaining,
            retry_after,
            reset,
        }
    }

    /// `(blocked, limit, remaining)`: the fields that do not depend on when
    /// the call ran, for tests whose times do.
    pub const fn counts(&self) -> (bool, i64, i64) {
        (self.blocked, self.limit, self.remaining)
    }

    /// Every field but `reset`, for a reply whose `reset` depends on where
    /// the call fell in a window (checked apart, against a range).
    pub const fn without_reset(&self) -> (bool, i64, i64, i64) {
        (self.blocked, self.limit, self.remaining, self.retry_after)
    }
}

/// The integers as the server sent them: exactly five, `blocked` 0 or 1.
impl TryFrom<Vec<i64>> for Reply {
    type Error = String;

    fn try_from(v: Vec<i64>) -> Result<Reply, String> {
        let [blocked, limit, remaining, retry_after, reset] = v[..] else {
            return Err(format!("not five integers: {v:?}"));
        };
        let blocked = match blocked {
            0 => false,
            1 => true,
            _ => return Err(format!("blocked is neither 0 nor 1: {v:?}")),
        };
        Ok(Reply {
            blocked,
            limit,
            remaining,
            retry_after,
            reset,
        })
    }
}

/// So that a pipeline's or a cluster client's replies parse as `Reply`.
impl redis::FromRedisValue for Reply {
    fn from_redis_value(v: &redis::Value) -> redis::RedisResult<Reply> {
        let integers: Vec<i64> = redis::from_redis_value(v)?;
        Reply::try_from(integers).map_err(|e| (redis::ErrorKind::TypeError, "not a reply", e).into())
    }
}

/// Run a command that must reply with five integers.
pub fn five(con: &mut redis::Connection, args: &[&str]) -> Reply {
    let v: Vec<i64> = cmd(args).query(con).unwrap_or_else(|e| panic!("{args:?}: {e}"));
    Reply::try_from(v).unwrap_or_else(|e| panic!("{args:?}: {e}"))
}

/// Run any command of the module that answers a decision: its five
/// integers (for `RL.ALL`, the binding limit's five).
pub fn reply(con: &mut redis::Connection, args: &[&str]) -> Reply {
    let v: Vec<i64> = cmd(args).query(con).unwrap_or_else(|e| panic!("{args:?}: {e}"));
    assert!(matches!(v.len(), 5 | 6), "{args:?}: {v:?}");
    Reply::try_from(v[..5].to_vec()).unwrap_or_else(|e| panic!("{args:?}: {e}"))
}

/// Run a command that answers six integers: the five, then its own (the
/// binding limit's position for `RL.ALL`, the lease for `RL.CONCURRENCY`).
pub fn six(con: &mut redis::Connection, args: &[&str]) -> (Reply, i64) {
    let v: Vec<i64> = cmd(args).query(con).unwrap_or_else(|e| panic!("{args:?}: {e}"));
    let [a, b, c, d, e, sixth] = v[..] else {
        panic!("{args:?}: not six integers: {v:?}");
    };
    let reply = Reply::try_from(vec![a, b, c, d, e]).unwrap_or_else(|e| panic!("{args:?}: {e}"));
    (reply, sixth)
}

/// Run a command that answers one integer (`RL.RELEASE`, `RL.RENEW`).
pub fn integer(con: &mut redis::Connection, args: &[&str]) -> i64 {
    cmd(args).query(con).unwrap_or_else(|e| panic!("{args:?}: {e}"))
}

/// Run `RL.ALL`: the binding limit's reply and its position (1-based).
pub fn all(con: &mut redis::Connection, args: &[&str]) -> (Reply, i64) {
    six(con, args)
}

/// Run a command that must fail; returns the full error text.
pub fn error(con: &mut redis::Connection, args: &[&str]) -> String {
    match cmd(args).query::<redis::Value>(con) {
        Ok(v) => panic!("{args:?}: expected an error, got {v:?}"),
        Err(e) => error_text(&e),
    }
}

/// The error as the server sent it: `CODE message`.
pub fn error_text(e: &redis::RedisError) -> String {
    match (e.code(), e.detail()) {
        (Some(code), Some(detail)) => format!("{code} {detail}"),
        (Some(code), None) => code.to_string(),
        _ => e.to_string(),
    }
}

/// A key's serialized value and absolute expiry, to prove nothing changed.
pub fn snapshot(con: &mut redis::Connection, key: &str) -> (Option<Vec<u8>>, i64) {
    let dump: Option<Vec<u8>> = cmd(&["DUMP", key]).query(con).expect("DUMP");
    let pexpiretime: i64 = cmd(&["PEXPIRETIME", key]).query(con).expect("PEXPIRETIME");
    (dump, pexpiretime)
}

/// The server's clock, in milliseconds.
pub fn server_millis(con: &mut redis::Connection) -> i64 {
    let (secs, micros): (i64, i64) = cmd(&["TIME"]).query(con).expect("TIME");
    secs * 1000 + micros / 1000
}

/// The server's clock, in microseconds.
pub fn server_micros(con: &mut redis::Connection) -> u64 {
    let (secs, micros): (u64, u64) = cmd(&["TIME"]).query(con).expect("TIME");
    secs * 1_000_000 + micros
}

/// A call bracketed by the server's clock: (reply, before µs, after µs). The
/// command's own instant lies between the two.
pub fn timed(con: &mut redis::Connection, args: &[&str]) -> (Reply, u64, u64) {
    let before = server_micros(con);
    let reply = five(con, args);
    let after = server_micros(con);
    (reply, before, after)
}

/// `ceil((at - now) / unit)` for every `now` in `[before, after]`: the
/// reply's time field must lie in this range.
pub fn until(at_micros: u64, before: u64, after: u64, unit_micros: u64) -> std::ops::RangeInclusive<i64> {
    let ceil = |now: u64| i64::try_from(at_micros.saturating_sub(now).div_ceil(unit_micros)).unwrap();
    ceil(after)..=ceil(before)
}

/// An integer field of `INFO`.
pub fn info_field(con: &mut redis::Connection, section: &str, field: &str) -> i64 {
    let info: String = cmd(&["INFO", section]).query(con).expect("INFO");
    info.lines()
        .find_map(|l| l.strip_prefix(&format!("{field}:")))
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or_else(|| panic!("no {field} in INFO {section}"))
}

/// How many times a scenario whose exact replies assume that it ran within a
/// time budget is tried before the test gives up.
pub const ATTEMPTS: usize = 5;

/// `scenario`, bracketed by the server's clock: `Some(result)` only if less
/// than `budget_micros` passed from just before its first command to just
/// after its last, so that any two of its commands ran less than that apart.
pub fn within<R>(
    con: &mut redis::Connection,
    budget_micros: u64,
    scenario: impl FnOnce(&mut redis::Connection) -> R,
) -> Option<R> {
    let before = server_micros(con);
    let result = scenario(con);
    let after = server_micros(con);
    (after.saturating_sub(before) < budget_micros).then_some(result)
}

/// `attempt(1)`, `attempt(2)`, ... until one returns `Some`, at most
/// `attempts` times; then the test fails, saying what did not hold.
pub fn retry<R>(attempts: usize, what: &str, mut attempt: impl FnMut(usize) -> Option<R>) -> R {
    for n in 1..=attempts {
        if let Some(result) = attempt(n) {
            return result;
        }
    }
    panic!(
        "{what}: the timing this scenario's exact replies need did not hold in any of {attempts} attempts"
    );
}

/// `scenario` on an empty database (`FLUSHALL` first), run again until one
/// run takes less than `budget_micros` of server time (see `within`), at
/// most `ATTEMPTS` times. Its result is that run's: assert on it afterwards,
/// never inside `scenario`.
pub fn in_time<R>(
    con: &mut redis::Connection,
    budget_micros: u64,
    what: &str,
    mut scenario: impl FnMut(&mut redis::Connection) -> R,
) -> R {
    retry(ATTEMPTS, &format!("{what} (within {budget_micros} µs)"), |_| {
        cmd(&["FLUSHALL"]).query::<()>(con).expect("FLUSHALL");
        within(con, budget_micros, &mut scenario)
    })
}

/// `commands` in one MULTI/EXEC with TIME first and last: their replies, if
/// less than `budget_micros` passed between the two TIMEs (so between any two
/// of the commands' instants, when the server reads the clock per command).
pub fn transaction_within(
    con: &mut redis::Connection,
    budget_micros: u64,
    commands: &[&[&str]],
) -> Option<Vec<Reply>> {
    let mut pipe = redis::pipe();
    pipe.atomic().cmd("TIME");
    for args in commands {
        pipe.add_command(cmd(args));
    }
    pipe.cmd("TIME");
    let mut replies: Vec<redis::Value> = pipe.query(con).expect("MULTI/EXEC");
    let micros = |v: &redis::Value| {
        let (secs, micros): (u64, u64) = redis::from_redis_value(v).expect("TIME");
        secs * 1_000_000 + micros
    };
    let after = micros(&replies.pop().expect("the last TIME"));
    let before = micros(&replies.remove(0));
    (after.saturating_sub(before) < budget_micros).then(|| {
        replies
            .iter()
            .zip(commands)
            .map(|(v, args)| redis::from_redis_value(v).unwrap_or_else(|e| panic!("{args:?}: {e}")))
            .collect()
    })
}

/// Which server a test runs against, read from `INFO server`: what it is
/// and its version. Tests that depend on how the server represents values
/// (shared objects, `MEMORY USAGE`) ask it what to expect.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ServerKind {
    pub valkey: bool,
    pub version: (u32, u32, u32),
}

impl ServerKind {
    pub fn of(con: &mut redis::Connection) -> ServerKind {
        let info: String = cmd(&["INFO", "server"]).query(con).expect("INFO server");
        let field = |name: &str| {
            info.lines()
                .find_map(|l| l.strip_prefix(&format!("{name}:")))
                .map(|v| v.trim().to_string())
        };
        let valkey = field("server_name").is_some_and(|n| n == "valkey");
        let text = if valkey { field("valkey_version") } else { None }
            .or_else(|| field("redis_version"))
            .expect("a version in INFO server");
        let mut parts = text.split('.').map(|p| p.parse::<u32>().unwrap_or(0));
        let mut next = || parts.next().unwrap_or(0);
        ServerKind {
            valkey,
            version: (next(), next(), next()),
        }
    }

    /// Redis before 8 keeps a key's value in an object of its own, which
    /// several keys may hold (Redis's shared integers, the module's shared
    /// first states). Redis 8 and Valkey keep each value with its key:
    /// nothing is shared.
    pub fn shares_values(&self) -> bool {
        !self.valkey && self.version.0 < 8
    }

    /// Whether modules may add ACL categories (Redis 7.4+, Valkey).
    pub fn has_module_acl_categories(&self) -> bool {
        self.valkey || self.version >= (7, 4, 0)
    }

    /// `MEMORY USAGE` of one limiter of each algorithm, key `user:00000N`,
    /// as this server reports it (see the README's "Supported servers");
    /// `None` for a server not measured here.
    /// `None` too when `RL_SERVER_ALLOCATOR=replaced` says the server runs
    /// under a tool that replaces its allocator (valgrind: `.ci/valgrind`),
    /// which reports other sizes.
    pub fn memory(&self) -> Option<Memory> {
        if std::env::var("RL_SERVER_ALLOCATOR").is_ok_and(|v| v == "replaced") {
            return None;
        }
        let m = |gcra, token_bucket, fixed, sliding_counter, sliding_log_1000, leases_1000| Memory {
            gcra,
            token_bucket,
            fixed,
            sliding_counter,
            sliding_log_1000,
            leases_1000,
        };
        match (self.valkey, self.version.0, self.version.1) {
            // Debian's 7.0.15 (jemalloc): a key and its value are apart.
            (false, 7, 0) => Some(m(72, 88, 72, 88, 8248, 20536)),
            // One object per key, the value embedded where it fits.
            (false, 8, 2) => Some(m(56, 72, 56, 64, 8232, 20520)),
            // The C library's malloc, one object per key.
            (true, 8, 1) | (true, 9, 1) => Some(m(64, 80, 64, 64, 8064, 20064)),
            _ => None,
        }
    }

    pub fn name(&self) -> String {
        let (a, b, c) = self.version;
        format!("{} {a}.{b}.{c}", if self.valkey { "Valkey" } else { "Redis" })
    }
}

/// `MEMORY USAGE` in bytes of one limiter per algorithm (GCRA in its
/// usual form; a sliding log holding 1,000 entries), and of 1,000 leases.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Memory {
    pub gcra: i64,
    pub token_bucket: i64,
    pub fixed: i64,
    pub sliding_counter: i64,
    pub sliding_log_1000: i64,
    /// `RL.CONCURRENCY` holding 1,000 leases.
    pub leases_1000: i64,
}

/// One of the module's commands and a sample call of it. Every suite that
/// covers all the commands loops over [`COMMANDS`], so that a command added
/// to the module is added to every suite here, once.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Sample {
    /// As clients send it (`COMMAND` lists it in lower case: [`Sample::lower`]).
    pub name: &'static str,
    /// Its parameters, between the key and the quantity, as `COMMAND DOCS`
    /// names them. The first is the burst size, the last a duration.
    pub params: &'static [&'static str],
    /// Valid values of `params`: a limit of [`SAMPLE_LIMIT`], and nothing
    /// refills or ends during a test (one unit an hour; epoch-aligned
    /// windows of 10^9 s, whose next boundary is in 2033).
    pub args: &'static [&'static str],
    /// Whether it takes `MS` and `PEEK` (redis-cell's grammar has no options).
    pub options: bool,
    /// The module arguments that register it; none: it always is.
    pub load_with: &'static [&'static str],
    /// Where its keys are and what it answers.
    pub grammar: Grammar,
}

/// How a command names its keys, and what it answers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Grammar {
    /// `name key params... [quantity] [options]`: five integers.
    Rate,
    /// `name numkeys key... limits... [quantity] [options]`: six integers.
    Keys,
    /// `name key limit timeout [quantity] [options]`: six integers (the
    /// five, then the lease).
    Lease,
    /// `name key lease ...`: an integer.
    LeaseOp,
}

/// The `limit` in the reply to every sample's `args`.
pub const SAMPLE_LIMIT: i64 = 3;

pub const COMMANDS: [Sample; 10] = [
    Sample {
        name: "RL.GCRA",
        params: &["max_burst", "count", "period"],
        args: &["2", "1", "3600"],
        options: true,
        load_with: &[],
        grammar: Grammar::Rate,
    },
    Sample {
        name: "RL.TOKEN_BUCKET",
        params: &["capacity", "refill_count", "refill_period"],
        args: &["3", "1", "3600"],
        options: true,
        load_with: &[],
        grammar: Grammar::Rate,
    },
    Sample {
        name: "RL.FIXED",
        params: &["limit", "window"],
        args: &["3", "1000000000"],
        options: true,
        load_with: &[],
        grammar: Grammar::Rate,
    },
    Sample {
        name: "RL.SLIDING_LOG",
        params: &["limit", "window"],
        args: &["3", "3600"],
        options: true,
        load_with: &[],
        grammar: Grammar::Rate,
    },
    Sample {
        name: "RL.SLIDING_COUNTER",
        params: &["limit", "window"],
        args: &["3", "1000000000"],
        options: true,
        load_with: &[],
        grammar: Grammar::Rate,
    },
    // redis-cell's drop-in: opt-in, since it takes redis-cell's name.
    Sample {
        name: "CL.THROTTLE",
        params: &["max_burst", "count", "period"],
        args: &["2", "1", "3600"],
        options: false,
        load_with: &["cl_throttle", "yes"],
        grammar: Grammar::Rate,
    },
    // Work in flight: leases of an hour.
    Sample {
        name: "RL.CONCURRENCY",
        params: &["limit", "timeout"],
        args: &["3", "3600"],
        options: true,
        load_with: &[],
        grammar: Grammar::Lease,
    },
    // A lease given back or renewed: the sample names a lease never given.
    Sample {
        name: "RL.RELEASE",
        params: &["lease"],
        args: &["1"],
        options: false,
        load_with: &[],
        grammar: Grammar::LeaseOp,
    },
    Sample {
        name: "RL.RENEW",
        params: &["lease", "timeout"],
        args: &["1", "3600"],
        options: false,
        load_with: &[],
        grammar: Grammar::LeaseOp,
    },
    // Several limits, one decision: here one fixed window on the key.
    Sample {
        name: "RL.ALL",
        params: &["numkeys", "limit"],
        args: &["FIXED", "3", "1000000000"],
        options: true,
        load_with: &[],
        grammar: Grammar::Keys,
    },
];

impl Sample {
    /// The name as `COMMAND` lists it.
    pub fn lower(&self) -> String {
        self.name.to_lowercase()
    }

    /// `name key args... extra...`: the sample call on `key` (`RL.ALL 1 key
    /// args... extra...` for several keys).
    pub fn call<'a>(&self, key: &'a str, extra: &[&'a str]) -> Vec<&'a str> {
        let mut args = match self.grammar {
            Grammar::Keys => vec![self.name, "1", key],
            Grammar::Rate | Grammar::Lease | Grammar::LeaseOp => vec![self.name, key],
        };
        args.extend_from_slice(self.args);
        args.extend_from_slice(extra);
        args
    }

    /// Parameters for `limit` units at once and `limit` more per `duration`
    /// (a window of `limit` per `duration`), the same rate for every
    /// algorithm: `max_burst` is `limit - 1`, the last parameter `duration`,
    /// any other `limit`.
    pub fn rate(&self, limit: u64, duration: &str) -> Vec<String> {
        let last = self.params.len() - 1;
        self.params
            .iter()
            .enumerate()
            .map(|(i, &param)| match (i == last, param) {
                (true, _) => duration.to_string(),
                (false, "max_burst") => (limit - 1).to_string(),
                (false, _) => limit.to_string(),
            })
            .collect()
    }
}

/// The commands a server has when the module is loaded without arguments.
pub fn default_commands() -> impl Iterator<Item = &'static Sample> {
    COMMANDS.iter().filter(|s| s.load_with.is_empty())
}

/// The single-key rate commands a server has when the module is loaded
/// without arguments: one limiter on one key, five integers.
pub fn rate_commands() -> impl Iterator<Item = &'static Sample> {
    default_commands().filter(|s| s.grammar == Grammar::Rate)
}

/// The sample of `name`, for a test about that one command.
pub fn sample(name: &str) -> &'static Sample {
    COMMANDS
        .iter()
        .find(|s| s.name.eq_ignore_ascii_case(name))
        .unwrap_or_else(|| panic!("no {name} in COMMANDS"))
}

/// Module arguments that register every command of [`COMMANDS`].
pub fn load_all() -> Vec<&'static str> {
    COMMANDS
        .iter()
        .flat_map(|s| s.load_with.iter().copied())
        .collect()
}

/// A small deterministic PRNG (xorshift64*), so a failure replays exactly.
pub struct Rng(pub u64);

impl Rng {
    pub fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    pub fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }

    pub fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.below(items.len())]
    }
}
