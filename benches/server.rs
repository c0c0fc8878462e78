//! Server-level benchmark: one redis-server with the module, driven by
//! `redis-benchmark`, comparing in the same run
//! - the baselines `INCR` and `SET key <19 digits> PXAT <ms>`,
//! - each `RL.*` command,
//! - the same algorithm as a hand-written Lua script (`benches/lua/`, run
//!   with `SCRIPT LOAD` + `EVALSHA`),
//! - the functions edition (`functions/ratelimit.lua`, `FUNCTION LOAD`):
//!   each command as `FCALL rl_<name>`, and its lease and refund pairs,
//!   and the same through each function's script (`EVALSHA`, the scripts
//!   built from the library as `functions/build.py --out` writes them),
//! - redis-cell's `CL.THROTTLE` when `RL_CELL_MODULE` points at its `.so`,
//!
//! on one key and on 100,000 random keys, at pipeline 1 and 16; and leases,
//! as acquire+release pairs (`RL.CONCURRENCY` then `RL.RELEASE` of its lease,
//! against the same on a sorted set in Lua), by a small driver of its own
//! since each release needs the id its acquire answered. Reports the
//! median requests/s of interleaved rounds, the ratio to `INCR`, the server's
//! microseconds per call (`INFO commandstats`), `MEMORY USAGE` per limiter and
//! replication bytes per request; with `RL_BENCH_CALLGRIND=1` also the
//! instructions per call inside Redis's `call()` (callgrind, a fresh server
//! per workload, random keys, pipeline 16), including two reference commands
//! of `benches/floor` (built here with `cargo build --release -p rl-floor`):
//! the server calls a limiter command makes to write a new key, with no
//! logic, directly and with the integer encoding.
//!
//! ```sh
//! cargo bench --bench server            # writes benches/results/latest.{json,md,svg}
//! ```
//!
//! Environment: `RL_SERVER_BIN` (default `redis-server`), `RL_BENCH_ROUNDS`
//! (default 5), `RL_BENCH_REQUESTS` (requests per pipelined run, default
//! 200000; a run at pipeline 1 makes a fifth of them), `RL_CELL_MODULE`,
//! `RL_BENCH_CALLGRIND`, `RL_BENCH_CALLGRIND_RUNS` (callgrind runs per
//! workload, whose median counts; default 3), `RL_BENCH_ONLY`
//! (comma-separated parts of workload names: run only those, and INCR),
//! `RL_BENCH_CALLGRIND_LONG_ONLY=1` (callgrind only the 60-second rows),
//! `RL_BENCH_BEFORE` (a directory with an earlier revision's `ratelimit.lua`
//! and `scripts/rl_gcra.lua`: its FCALL rows and that script's, beside).

// The integration tests' harness, for its table of the module's commands.
#[path = "../tests/common/mod.rs"]
mod common;

use serde::Serialize;
use std::collections::BTreeMap;
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

#[derive(Clone)]
struct Workload {
    name: String,
    /// The command-stats entry that measures it (`cmdstat_<this>`).
    stat: String,
    /// Arguments for redis-benchmark; `{key}` is the limiter's key, and
    /// `{period}` every period or window (seconds): 1, or 60 for the
    /// variants with long periods.
    args: Vec<String>,
    /// Always on one key, whatever the run's keys: a workload whose calls
    /// must find the state the first ones left (a refusal, a block).
    one_key: bool,
    /// Commands run on that key before the measured calls (their cost is
    /// spread over 20,000 calls or more: below one instruction a call).
    setup: Vec<Vec<String>>,
}

impl Workload {
    /// Its arguments with `key` and the period `period` in place.
    fn args(&self, key: &str, period: &str) -> Vec<String> {
        self.args
            .iter()
            .map(|a| a.replace("{key}", key).replace("{period}", period))
            .collect()
    }

    /// Whether it touches one key, `{key}` itself.
    fn one_key(&self) -> bool {
        self.args.iter().filter(|a| a.contains("{key}")).count() == 1
            && self.args.iter().any(|a| a == "{key}")
    }
}

#[derive(Serialize)]
struct Measurement {
    workload: String,
    keys: &'static str,
    pipeline: u32,
    requests_per_second_median: f64,
    requests_per_second_rounds: Vec<f64>,
    ratio_to_incr: f64,
    server_usec_per_call: f64,
}

#[derive(Serialize)]
struct Report {
    machine: BTreeMap<&'static str, String>,
    requests_per_run: u64,
    rounds: usize,
    throughput: Vec<Measurement>,
    instructions_per_call: BTreeMap<String, f64>,
    memory_usage_bytes: BTreeMap<String, i64>,
    replication_bytes_per_request: BTreeMap<String, f64>,
    lease_pairs: Vec<PairMeasurement>,
    pacing: Option<Pacing>,
}

/// Workers that share one `RL.GCRA` key with `WAIT`, each doing its work
/// after sleeping the wait the reply gives: the rate they achieve and the
/// most work that started in any one-second span.
#[derive(Serialize)]
struct Pacing {
    connections: usize,
    /// The limiter: `max_burst`, units per second.
    max_burst: u64,
    per_second: u64,
    seconds: f64,
    units: usize,
    achieved_per_second: f64,
    deviation_percent: f64,
    most_in_one_second: usize,
    /// What GCRA allows in any one-second span: the burst, and a second's
    /// worth.
    allowed_in_one_second: u64,
    refused: usize,
}

#[derive(Serialize)]
struct PairMeasurement {
    workload: String,
    /// The Lua workload it is measured against (empty for Lua's own).
    versus: String,
    keys: &'static str,
    pipeline: usize,
    pairs_per_second_median: f64,
    pairs_per_second_rounds: Vec<f64>,
    server_usec_per_pair: f64,
}

/// Whether `RL_BENCH_ONLY` (comma-separated parts of names; INCR, the
/// baseline, always runs) selects a workload: all when it is unset.
fn selected(name: &str) -> bool {
    std::env::var("RL_BENCH_ONLY").map_or(true, |only| only.split(',').any(|part| name.contains(part)))
}

fn env_or<T: std::str::FromStr>(name: &str, default: T) -> T {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

fn module_path() -> PathBuf {
    if let Ok(p) = std::env::var("RL_MODULE") {
        return PathBuf::from(p);
    }
    let exe = std::env::current_exe().unwrap();
    let deps = exe.parent().unwrap();
    [
        deps.join("libredis_ratelimit.so"),
        deps.parent().unwrap().join("libredis_ratelimit.so"),
    ]
    .into_iter()
    .find(|p| p.exists())
    .expect("the module is built next to the bench binary")
}

/// The reference module of `benches/floor`, next to this module (built by
/// [`build_floor_module`]), if it is there.
fn floor_module() -> Option<PathBuf> {
    let path = module_path().with_file_name("librl_floor.so");
    path.exists().then_some(path)
}

/// Build `benches/floor` in the release profile, next to the module.
fn build_floor_module() {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let built = Command::new(cargo)
        .args(["build", "--release", "--quiet", "-p", "rl-floor"])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .status()
        .is_ok_and(|s| s.success());
    if !built {
        eprintln!("could not build benches/floor: the floor rows are left out");
    }
}

/// The reference workloads of `benches/floor` (see its crate documentation).
fn floor_workloads() -> Vec<Workload> {
    if floor_module().is_none() {
        return Vec::new();
    }
    [(FLOOR_DIRECT, "FLOOR.DIRECT"), (FLOOR_INTEGER, "FLOOR.INTEGER")]
        .iter()
        .map(|(name, command)| Workload {
            name: name.to_string(),
            stat: command.to_lowercase(),
            args: vec![command.to_string(), "{key}".to_string()],
            one_key: false,
            setup: Vec::new(),
        })
        .collect()
}

const FLOOR_DIRECT: &str = "floor: new key, key API (no logic)";
const FLOOR_INTEGER: &str = "floor: new key, integer encoding (no logic)";

struct Server {
    child: Child,
    port: u16,
    dir: PathBuf,
}

impl Server {
    fn start(prefix: &[&str], extra: &[&str]) -> Server {
        Server::start_module(prefix, extra, &module_path())
    }

    /// [`Server::start`] with `module` loaded instead of this build's.
    fn start_module(prefix: &[&str], extra: &[&str], module: &Path) -> Server {
        let port = free_port();
        let dir = std::env::temp_dir().join(format!("rl-bench-{}-{port}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let bin = std::env::var("RL_SERVER_BIN").unwrap_or_else(|_| "redis-server".into());
        let (program, mut args): (String, Vec<String>) = match prefix.split_first() {
            Some((p, rest)) => (
                p.to_string(),
                rest.iter().map(|s| s.to_string()).chain([bin]).collect(),
            ),
            None => (bin, vec![]),
        };
        args.extend(
            [
                "--port",
                &port.to_string(),
                "--bind",
                "127.0.0.1",
                "--save",
                "",
                "--appendonly",
                "no",
            ]
            .iter()
            .map(|s| s.to_string()),
        );
        args.extend(["--dir".to_string(), dir.to_string_lossy().into_owned()]);
        args.extend(["--loadmodule".to_string(), module.to_string_lossy().into_owned()]);
        if let Ok(cell) = std::env::var("RL_CELL_MODULE") {
            args.extend(["--loadmodule".to_string(), cell]);
        }
        args.extend(extra.iter().map(|s| s.to_string()));
        let child = Command::new(program)
            .args(&args)
            .current_dir(&dir)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("start the server");
        let server = Server { child, port, dir };
        let deadline = Instant::now() + Duration::from_secs(60);
        while server.query(&["PING"]).as_deref() != Some("PONG") {
            assert!(Instant::now() < deadline, "the server did not start");
            std::thread::sleep(Duration::from_millis(50));
        }
        server
    }

    fn connection(&self) -> redis::Connection {
        redis::Client::open(format!("redis://127.0.0.1:{}/", self.port))
            .unwrap()
            .get_connection()
            .unwrap()
    }

    fn query(&self, args: &[&str]) -> Option<String> {
        let mut con = redis::Client::open(format!("redis://127.0.0.1:{}/", self.port))
            .ok()?
            .get_connection()
            .ok()?;
        let mut cmd = redis::cmd(args[0]);
        cmd.arg(&args[1..]);
        cmd.query::<String>(&mut con).ok()
    }

    fn info_field(&self, section: &str, field: &str) -> Option<String> {
        let info = self.query(&["INFO", section])?;
        info.lines()
            .find_map(|l| l.strip_prefix(&format!("{field}:")).map(|v| v.trim().to_string()))
    }

    fn stop(mut self) {
        let _ = self.query(&["SHUTDOWN", "NOSAVE"]);
        let deadline = Instant::now() + Duration::from_secs(120);
        while Instant::now() < deadline {
            if let Ok(Some(_)) = self.child.try_wait() {
                break;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// `redis-benchmark` on `workload` with every period `period` (seconds);
/// returns requests per second.
fn benchmark(
    port: u16,
    workload: &Workload,
    requests: u64,
    pipeline: u32,
    random: bool,
    period: &str,
) -> f64 {
    let random = random && !workload.one_key;
    let key = if random { "user:__rand_int__" } else { "user:one" };
    if !workload.setup.is_empty() {
        let mut con = redis::Client::open(format!("redis://127.0.0.1:{port}/"))
            .and_then(|c| c.get_connection())
            .expect("a connection for the setup");
        for command in &workload.setup {
            let command: Vec<String> = command.iter().map(|a| a.replace("{key}", key)).collect();
            let _: redis::Value = redis::cmd(&command[0])
                .arg(&command[1..])
                .query(&mut con)
                .expect("the setup");
        }
    }
    let args = workload.args(key, period);
    let mut cmd = Command::new("redis-benchmark");
    cmd.args(["-p", &port.to_string(), "-n", &requests.to_string(), "-c", "50"])
        .args(["-P", &pipeline.to_string(), "--csv"]);
    if random {
        cmd.args(["-r", "100000"]);
    }
    let out = cmd
        .args(&args)
        .output()
        .expect("redis-benchmark (apt-get install redis-tools)");
    let text = String::from_utf8_lossy(&out.stdout);
    // CSV: "test","rps",...: the last line carries the numbers.
    text.lines()
        .last()
        .and_then(|l| l.split(',').nth(1))
        .and_then(|v| v.trim_matches('"').parse().ok())
        .unwrap_or_else(|| panic!("no result from redis-benchmark for {}: {text}", workload.name))
}

/// A workload of pairs: a call on `{key}` (an acquisition: its reply's
/// last integer, positive, is the lease), then one that gives back what it
/// took (a release of `{lease}`, or a refund) on the same key.
struct Leases {
    name: &'static str,
    acquire: Vec<String>,
    release: Vec<String>,
    /// The command-stats entries of its commands (`cmdstat_<this>`).
    stats: Vec<&'static str>,
    /// The Lua workload it is measured against (empty for Lua's own).
    versus: &'static str,
    /// What the second call must answer (its last integer), if fixed.
    released: Option<i64>,
}

/// Connections of the lease driver, each a thread (a few, on a machine of
/// two cores): every one keeps `pipeline` leases in flight, so that at
/// pipeline 16 they hold 96 of one key's 100 units.
const LEASE_CONNECTIONS: u64 = 6;

/// The leases' limit and timeout (s): 100, as the other rows, and long
/// enough that no lease ends before its release.
const LEASE_LIMIT: &str = "100";
const LEASE_TIMEOUT: &str = "60";

fn lease_workloads(server: &Server) -> Vec<Leases> {
    let strings = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
    let lua_dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("benches/lua");
    let mut con = server.connection();
    let mut load = |file: &str| -> String {
        let script = std::fs::read_to_string(lua_dir.join(file)).unwrap();
        redis::cmd("SCRIPT")
            .arg("LOAD")
            .arg(&script)
            .query(&mut con)
            .unwrap()
    };
    let (acquire, release) = (load("concurrency_acquire.lua"), load("concurrency_release.lua"));
    let (gcra, gcra_refund) = (load("gcra.lua"), load("gcra_refund.lua"));
    // The functions' scripts, built from the library.
    let scripts = load_scripts(server, &common::scripts());
    // A GCRA limit of 100 (the other rows' rate) and a minute: the pairs'
    // units are back before the next batch.
    let gcra_params = ["99", "100", "60"];
    let with = |head: &[&str], tail: &[&str]| strings(&[head, &gcra_params, tail].concat());
    vec![
        Leases {
            name: LEASES,
            acquire: strings(&["RL.CONCURRENCY", "{key}", LEASE_LIMIT, LEASE_TIMEOUT]),
            release: strings(&["RL.RELEASE", "{key}", "{lease}"]),
            stats: vec!["rl.concurrency", "rl.release"],
            versus: LUA_LEASES,
            released: Some(1),
        },
        Leases {
            name: REFUNDS,
            acquire: with(&["RL.GCRA", "{key}"], &[]),
            release: with(&["RL.GCRA", "{key}"], &["1", "REFUND"]),
            stats: vec!["rl.gcra"],
            versus: LUA_REFUNDS,
            released: None,
        },
        Leases {
            name: FCALL_LEASES,
            acquire: strings(&[
                "FCALL",
                "rl_concurrency",
                "1",
                "{key}",
                LEASE_LIMIT,
                LEASE_TIMEOUT,
            ]),
            release: strings(&["FCALL", "rl_release", "1", "{key}", "{lease}"]),
            stats: vec!["fcall"],
            versus: LUA_LEASES,
            released: Some(1),
        },
        Leases {
            name: FCALL_REFUNDS,
            acquire: with(&["FCALL", "rl_gcra", "1", "{key}"], &[]),
            release: with(&["FCALL", "rl_gcra", "1", "{key}"], &["1", "REFUND"]),
            stats: vec!["fcall"],
            versus: LUA_REFUNDS,
            released: None,
        },
        Leases {
            name: SCRIPT_LEASES,
            acquire: strings(&[
                "EVALSHA",
                &scripts["rl_concurrency"],
                "1",
                "{key}",
                LEASE_LIMIT,
                LEASE_TIMEOUT,
            ]),
            release: strings(&["EVALSHA", &scripts["rl_release"], "1", "{key}", "{lease}"]),
            stats: vec!["evalsha"],
            versus: LUA_LEASES,
            released: Some(1),
        },
        Leases {
            name: SCRIPT_REFUNDS,
            acquire: with(&["EVALSHA", &scripts["rl_gcra"], "1", "{key}"], &[]),
            release: with(&["EVALSHA", &scripts["rl_gcra"], "1", "{key}"], &["1", "REFUND"]),
            stats: vec!["evalsha"],
            versus: LUA_REFUNDS,
            released: None,
        },
        Leases {
            name: LUA_REFUNDS,
            acquire: with(&["EVALSHA", &gcra, "1", "{key}"], &[]),
            release: with(&["EVALSHA", &gcra_refund, "1", "{key}"], &["1"]),
            stats: vec!["evalsha"],
            versus: "",
            released: None,
        },
        Leases {
            name: LUA_LEASES,
            acquire: strings(&[
                "EVALSHA",
                &acquire,
                "2",
                "{key}",
                "{key}:id",
                LEASE_LIMIT,
                LEASE_TIMEOUT,
            ]),
            release: strings(&["EVALSHA", &release, "1", "{key}", "{lease}"]),
            stats: vec!["evalsha"],
            versus: "",
            released: Some(1),
        },
    ]
}

const LEASES: &str = "RL.CONCURRENCY + RL.RELEASE";
const FCALL_LEASES: &str = "FCALL rl_concurrency + rl_release";
const FCALL_REFUNDS: &str = "FCALL rl_gcra + rl_gcra REFUND";
const SCRIPT_LEASES: &str = "EVALSHA rl_concurrency + rl_release";
const SCRIPT_REFUNDS: &str = "EVALSHA rl_gcra + rl_gcra REFUND";
const LUA_LEASES: &str = "Lua sorted set: acquire + release";
const REFUNDS: &str = "RL.GCRA + RL.GCRA REFUND";
const LUA_REFUNDS: &str = "Lua gcra + gcra_refund";

/// One argument of a lease command, RESP-encoded once: literal bytes, or
/// the key (followed by a suffix) or the lease, filled in per call.
enum Part {
    Literal(Vec<u8>),
    Key(Vec<u8>),
    Lease,
}

/// A lease command, ready to append to a pipeline in RESP.
struct Template(Vec<Part>);

impl Template {
    fn new(args: &[String]) -> Template {
        let mut parts = vec![Part::Literal(format!("*{}\r\n", args.len()).into_bytes())];
        for a in args {
            parts.push(match (a.as_str(), a.strip_prefix("{key}")) {
                ("{lease}", _) => Part::Lease,
                (_, Some(suffix)) => Part::Key(suffix.as_bytes().to_vec()),
                _ => {
                    assert!(!a.contains('{'), "a placeholder inside an argument: {a}");
                    Part::Literal(format!("${}\r\n{a}\r\n", a.len()).into_bytes())
                }
            });
        }
        Template(parts)
    }

    fn append(&self, buf: &mut Vec<u8>, key: &[u8], lease: i64) {
        use std::io::Write as _;
        for part in &self.0 {
            match part {
                Part::Literal(bytes) => buf.extend_from_slice(bytes),
                Part::Key(suffix) => {
                    let _ = write!(buf, "${}\r\n", key.len() + suffix.len());
                    buf.extend_from_slice(key);
                    buf.extend_from_slice(suffix);
                    buf.extend_from_slice(b"\r\n");
                }
                Part::Lease => {
                    let (mut digits, mut at, mut n) = ([0u8; 20], 20, lease.unsigned_abs());
                    loop {
                        at -= 1;
                        digits[at] = b'0' + (n % 10) as u8;
                        n /= 10;
                        if n == 0 {
                            break;
                        }
                    }
                    let _ = write!(buf, "${}\r\n", 20 - at + usize::from(lease < 0));
                    if lease < 0 {
                        buf.push(b'-');
                    }
                    buf.extend_from_slice(&digits[at..]);
                    buf.extend_from_slice(b"\r\n");
                }
            }
        }
    }
}

/// Read one reply of integers: an integer, or an array of them (its last).
/// Parsed from the bytes in place, so that the driver, which shares the
/// machine with the server, spends as little as it can.
fn read_integer_reply(r: &mut impl std::io::BufRead, line: &mut Vec<u8>) -> i64 {
    let mut next = |line: &mut Vec<u8>| -> (u8, i64) {
        line.clear();
        r.read_until(b'\n', line).expect("read a reply");
        let digits = line.get(1..line.len().saturating_sub(2)).unwrap_or_default();
        let (negative, digits) = match digits.split_first() {
            Some((b'-', rest)) => (true, rest),
            _ => (false, digits),
        };
        let value = digits.iter().try_fold(0i64, |v, &d| {
            d.is_ascii_digit().then(|| v * 10 + i64::from(d - b'0'))
        });
        match (line.first(), value) {
            (Some(&kind @ (b':' | b'*')), Some(v)) if !digits.is_empty() => {
                (kind, if negative { -v } else { v })
            }
            _ => panic!("unexpected reply: {}", String::from_utf8_lossy(line)),
        }
    };
    match next(line) {
        (b'*', n) => {
            let mut last = 0;
            for _ in 0..n {
                last = next(line).1;
            }
            last
        }
        (_, v) => v,
    }
}

/// Acquire+release pairs per second (only acquires with `release` false):
/// `connections` connections, each sending `pipeline` acquires, reading
/// their leases, then sending their releases; keys random among 100,000 or
/// one key.
fn lease_pairs(port: u16, w: &Leases, pairs: u64, pipeline: usize, random: bool, release: bool) -> f64 {
    let started = Instant::now();
    let connections = LEASE_CONNECTIONS;
    let (acquire, release_args) = (Template::new(&w.acquire), Template::new(&w.release));
    let (acquire, release_args, released) = (&acquire, &release_args, w.released);
    let total: u64 = std::thread::scope(|scope| {
        let threads: Vec<_> = (0..connections)
            .map(|t| {
                scope.spawn(move || {
                    let stream = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
                    stream.set_nodelay(true).unwrap();
                    let mut reader = std::io::BufReader::new(stream.try_clone().unwrap());
                    let mut writer = stream;
                    let mut x: u64 = 0x9e37_79b9_7f4a_7c15 ^ (t + 1);
                    let (mut done, mut buf, mut line) = (0, Vec::new(), Vec::new());
                    let mut keys = vec![*b"user:000000"; pipeline];
                    let mut leases = vec![0i64; pipeline];
                    while done < pairs / connections {
                        buf.clear();
                        for key in keys.iter_mut() {
                            x ^= x << 13;
                            x ^= x >> 7;
                            x ^= x << 17;
                            let mut n = if random { x % 100_000 } else { 0 };
                            for digit in key[5..].iter_mut().rev() {
                                *digit = b'0' + (n % 10) as u8;
                                n /= 10;
                            }
                            acquire.append(&mut buf, key, 0);
                        }
                        std::io::Write::write_all(&mut writer, &buf).unwrap();
                        for lease in leases.iter_mut() {
                            *lease = read_integer_reply(&mut reader, &mut line);
                        }
                        assert!(leases.iter().all(|&l| l > 0), "a lease was refused: {leases:?}");
                        if release {
                            buf.clear();
                            for (key, &lease) in keys.iter().zip(&leases) {
                                release_args.append(&mut buf, key, lease);
                            }
                            std::io::Write::write_all(&mut writer, &buf).unwrap();
                            for _ in 0..pipeline {
                                let answer = read_integer_reply(&mut reader, &mut line);
                                if let Some(expected) = released {
                                    assert_eq!(answer, expected, "a release freed nothing");
                                }
                            }
                        }
                        done += pipeline as u64;
                    }
                    done
                })
            })
            .collect();
        threads.into_iter().map(|t| t.join().unwrap()).sum()
    });
    total as f64 / started.elapsed().as_secs_f64()
}

/// The pacing run: `connections` workers, one key at `per_second` with a
/// burst of `max_burst + 1`, `WAIT 2000` ms, for `seconds`.
fn pacing(port: u16, connections: usize, max_burst: u64, per_second: u64, seconds: u64) -> Pacing {
    let key = format!("pace:{}", std::process::id());
    let args: Vec<String> = [
        "RL.GCRA",
        &key,
        &max_burst.to_string(),
        &per_second.to_string(),
        "1000",
        "MS",
        "WAIT",
        "2000",
    ]
    .iter()
    .map(|a| a.to_string())
    .collect();
    let started = Instant::now();
    let deadline = started + Duration::from_secs(seconds);
    let (mut starts, refused): (Vec<Duration>, usize) = std::thread::scope(|scope| {
        let workers: Vec<_> = (0..connections)
            .map(|_| {
                let args = &args;
                scope.spawn(move || {
                    let mut con = redis::Client::open(format!("redis://127.0.0.1:{port}/"))
                        .and_then(|c| c.get_connection())
                        .expect("a connection");
                    let (mut starts, mut refused) = (Vec::new(), 0);
                    while Instant::now() < deadline {
                        let reply: Vec<i64> = redis::cmd(&args[0]).arg(&args[1..]).query(&mut con).unwrap();
                        let wait = Duration::from_millis(u64::try_from(reply[3]).unwrap_or(0));
                        if reply[0] == 1 {
                            refused += 1;
                            std::thread::sleep(wait);
                            continue;
                        }
                        // The work: it starts once the wait is over.
                        std::thread::sleep(wait);
                        let at = started.elapsed();
                        if at < Duration::from_secs(seconds) {
                            starts.push(at);
                        }
                    }
                    (starts, refused)
                })
            })
            .collect();
        workers.into_iter().map(|w| w.join().unwrap()).fold(
            (Vec::new(), 0),
            |(mut all, refused), (starts, more)| {
                all.extend(starts);
                (all, refused + more)
            },
        )
    });
    starts.sort();
    let mut most = 0;
    let mut first = 0;
    for (last, at) in starts.iter().enumerate() {
        while *at - starts[first] >= Duration::from_secs(1) {
            first += 1;
        }
        most = most.max(last + 1 - first);
    }
    let achieved = starts.len() as f64 / seconds as f64;
    Pacing {
        connections,
        max_burst,
        per_second,
        seconds: seconds as f64,
        units: starts.len(),
        achieved_per_second: achieved,
        deviation_percent: 100.0 * (achieved - per_second as f64) / per_second as f64,
        most_in_one_second: most,
        allowed_in_one_second: max_burst + 1 + per_second,
        refused,
    }
}

fn median(v: &[f64]) -> f64 {
    let mut s = v.to_vec();
    s.sort_by(f64::total_cmp);
    s[s.len() / 2]
}

fn workloads(server: &Server) -> Vec<Workload> {
    let w = |name: &str, stat: &str, args: &[&str]| Workload {
        name: name.into(),
        stat: stat.into(),
        args: args.iter().map(|s| s.to_string()).collect(),
        one_key: false,
        setup: Vec::new(),
    };
    let far_future = "4102444800000";
    let mut list = vec![
        w("INCR", "incr", &["INCR", "{key}"]),
        w(
            "SET .. PXAT",
            "set",
            &["SET", "{key}", "1763700000000000123", "PXAT", far_future],
        ),
    ];
    // Every command the module registers by default, at one rate: bursts
    // of 100, and 100 per period.
    let rate = |sample: &common::Sample| sample.rate(100, "{period}");
    for sample in common::rate_commands() {
        let mut args = vec![sample.name, "{key}"];
        let params = rate(sample);
        args.extend(params.iter().map(String::as_str));
        list.push(w(sample.name, &sample.lower(), &args));
    }
    // Penalties: a request with BLOCK on random keys (mostly allowed: it
    // costs what plain RL.GCRA costs, plus the option), and the same call
    // on one key, refused by the limiter alone, or blocked by a first call
    // with BLOCK (a call on a blocked key costs what a plain refusal
    // costs: it reads the block and writes nothing).
    list.push(w(
        GCRA_BLOCK,
        "rl.gcra",
        &["RL.GCRA", "{key}", "99", "100", "{period}", "BLOCK", "600"],
    ));
    // Pacing, charges and partial grants, on random keys (mostly allowed
    // at once: each costs what plain RL.GCRA costs, plus its option).
    // (`AT_MOST` asks for 3: beside it, the same request without the
    // option. A key that took 3 units lives three times as long as one that
    // took 1, and more live keys cost the server more per call whatever the
    // command.)
    for (name, extra) in [
        (GCRA_WAIT, &["WAIT", "5"][..]),
        (GCRA_FORCE, &["1", "FORCE"]),
        (GCRA_THREE, &["3"]),
        (GCRA_AT_MOST, &["3", "AT_MOST"]),
    ] {
        let mut args = vec!["RL.GCRA", "{key}", "99", "100", "{period}"];
        args.extend_from_slice(extra);
        list.push(w(name, "rl.gcra", &args));
    }
    // A sliding log whose units carry a tag (a user id of 16 bytes):
    // beside the plain `RL.SLIDING_LOG` row.
    list.push(w(
        LOG_TAGGED,
        "rl.sliding_log",
        &[
            "RL.SLIDING_LOG",
            "{key}",
            "100",
            "{period}",
            "TAG",
            "user:00000012345",
        ],
    ));
    // A hot key: every connection draws units from one limiter that never
    // runs dry (a billion a second), one unit a call, or a hundred.
    for (name, extra) in [(HOT_ONE, &[][..]), (HOT_BATCH, &["100", "AT_MOST"])] {
        let mut args = vec!["RL.GCRA", "{key}", "999999999", "1000000000", "1"];
        args.extend_from_slice(extra);
        list.push(Workload {
            one_key: true,
            ..w(name, "rl.gcra", &args)
        });
    }
    let refused = ["RL.GCRA", "{key}", "0", "1", "3600"];
    let owned = |args: &[&str]| args.iter().map(|a| a.to_string()).collect::<Vec<_>>();
    for (name, setup) in [
        (GCRA_REFUSED, vec![owned(&refused)]),
        (
            GCRA_BLOCKED,
            vec![
                owned(&refused),
                owned(&[&refused[..], &["BLOCK", "3600"]].concat()),
            ],
        ),
    ] {
        list.push(Workload {
            one_key: true,
            setup,
            ..w(name, "rl.gcra", &refused)
        });
    }
    // The same algorithms in Lua, where `benches/lua` has them.
    let lua_dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("benches/lua");
    for sample in common::rate_commands() {
        let lower = sample.lower();
        let file = lower.strip_prefix("rl.").unwrap_or(&lower);
        let Ok(script) = std::fs::read_to_string(lua_dir.join(format!("{file}.lua"))) else {
            continue;
        };
        let params = rate(sample);
        let mut con = server.connection();
        let sha: String = redis::cmd("SCRIPT")
            .arg("LOAD")
            .arg(&script)
            .query(&mut con)
            .unwrap();
        let mut args = vec!["EVALSHA", sha.as_str(), "1", "{key}"];
        args.extend(params.iter().map(String::as_str));
        list.push(w(&format!("Lua {file}"), "evalsha", &args));
    }
    // The functions edition (functions/ratelimit.lua): the same calls as
    // FCALL, beside the module's commands and the hand-written scripts.
    let library =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("functions/ratelimit.lua"))
            .expect("functions/ratelimit.lua");
    function_load(server, &library, "functions/ratelimit.lua");
    for sample in common::rate_commands() {
        let function = common::function_of(sample.name).expect("a function per command");
        let params = rate(sample);
        let mut args = vec!["FCALL", function.as_str(), "1", "{key}"];
        args.extend(params.iter().map(String::as_str));
        list.push(w(&format!("FCALL {function}"), "fcall", &args));
    }
    // rl_gcra with each option the module's rows take (mostly allowed at
    // once, on random keys).
    for (name, extra) in [
        (GCRA_BLOCK, &["BLOCK", "600"][..]),
        (GCRA_WAIT, &["WAIT", "5"]),
        (GCRA_FORCE, &["1", "FORCE"]),
        (GCRA_THREE, &["3"]),
        (GCRA_AT_MOST, &["3", "AT_MOST"]),
    ] {
        let mut args = vec!["FCALL", "rl_gcra", "1", "{key}", "99", "100", "{period}"];
        args.extend_from_slice(extra);
        let option = name.trim_start_matches("RL.GCRA");
        list.push(w(&format!("FCALL rl_gcra{option}"), "fcall", &args));
    }
    list.push(w(
        "FCALL rl_concurrency",
        "fcall",
        &["FCALL", "rl_concurrency", "1", "{key}", "100", "{period}"],
    ));
    list.push(w(
        FCALL_ALL_FIXED,
        "fcall",
        &[
            "FCALL", "rl_all", "3", "{key}:a", "{key}:b", "{key}:c", "FIXED", "100", "{period}", "FIXED",
            "100", "{period}", "FIXED", "100", "{period}",
        ],
    ));
    list.push(w(
        FCALL_ALL_MIXED,
        "fcall",
        &[
            "FCALL",
            "rl_all",
            "2",
            "{key}:g",
            "{key}:l",
            "GCRA",
            "99",
            "100",
            "{period}",
            "SLIDING_LOG",
            "100",
            "{period}",
        ],
    ));
    // Each function's script (built from the library, as a user loads it
    // for EVALSHA): every FCALL row again, as `EVALSHA <script>`.
    let shas = load_scripts(server, &common::scripts());
    let fcalls: Vec<Workload> = list.iter().filter(|w| w.args[0] == "FCALL").cloned().collect();
    for f in &fcalls {
        list.push(as_script(f, "EVALSHA ", &shas[&f.args[1]]));
    }
    // An earlier revision's library and scripts, when RL_BENCH_BEFORE names
    // a directory holding them (ratelimit.lua, scripts/rl_gcra.lua): every
    // FCALL row again on that library, and EVALSHA of its rl_gcra script.
    if let Ok(dir) = std::env::var("RL_BENCH_BEFORE") {
        let dir = Path::new(&dir);
        let library =
            std::fs::read_to_string(dir.join("ratelimit.lua")).expect("RL_BENCH_BEFORE/ratelimit.lua");
        // Loaded beside the current library: its name and its functions'
        // renamed (the load fails if a name is left as it was).
        let renamed = library
            .replacen("#!lua name=ratelimit", "#!lua name=ratelimit_before", 1)
            .replace("register_function('rl_", "register_function('before_rl_")
            .replace("function_name = 'rl_", "function_name = 'before_rl_");
        function_load(server, &renamed, "RL_BENCH_BEFORE/ratelimit.lua");
        for f in &fcalls {
            let mut before = f.clone();
            before.name = f.name.replacen("FCALL ", BEFORE_FCALL, 1);
            before.args[1] = format!("before_{}", f.args[1]);
            list.push(before);
        }
        let script = std::fs::read_to_string(dir.join("scripts/rl_gcra.lua"))
            .expect("RL_BENCH_BEFORE/scripts/rl_gcra.lua");
        let shas = load_scripts(server, &[("rl_gcra".to_string(), script)]);
        let gcra = fcalls
            .iter()
            .find(|f| f.name == "FCALL rl_gcra")
            .expect("FCALL rl_gcra");
        list.push(as_script(gcra, BEFORE_EVALSHA, &shas["rl_gcra"]));
    }
    // Leases taken and never released (they end at the period's end): the
    // acquire alone, on the redis-benchmark rows; pairs are driven apart.
    let acquire_lua = std::fs::read_to_string(lua_dir.join("concurrency_acquire.lua")).unwrap();
    let sha: String = redis::cmd("SCRIPT")
        .arg("LOAD")
        .arg(&acquire_lua)
        .query(&mut server.connection())
        .unwrap();
    list.push(w(
        "RL.CONCURRENCY",
        "rl.concurrency",
        &["RL.CONCURRENCY", "{key}", "100", "{period}"],
    ));
    list.push(w(
        "Lua concurrency_acquire",
        "evalsha",
        &["EVALSHA", &sha, "2", "{key}", "{key}:id", "100", "{period}"],
    ));
    // Several limits in one decision: three fixed windows (against three
    // RL.FIXED calls, and the same all-or-nothing check in Lua), and a GCRA
    // limit with a sliding log (against one call of each, and Lua).
    list.push(w(
        ALL_FIXED,
        "rl.all",
        &[
            "RL.ALL", "3", "{key}:a", "{key}:b", "{key}:c", "FIXED", "100", "{period}", "FIXED", "100",
            "{period}", "FIXED", "100", "{period}",
        ],
    ));
    list.push(w(
        ALL_MIXED,
        "rl.all",
        &[
            "RL.ALL",
            "2",
            "{key}:g",
            "{key}:l",
            "GCRA",
            "99",
            "100",
            "{period}",
            "SLIDING_LOG",
            "100",
            "{period}",
        ],
    ));
    // Three fixed windows: the hand-written script and the two bounds of
    // docs/performance.md take the same keys and arguments.
    let three_keys: &[&str] = &["{key}:a", "{key}:b", "{key}:c"];
    let three_windows: &[&str] = &["100", "{period}", "100", "{period}", "100", "{period}"];
    for (name, file, keys, params) in [
        (LUA_ALL_FIXED, "all_fixed", three_keys, three_windows),
        (
            LUA_ALL_MIXED,
            "all_gcra_sliding_log",
            &["{key}:g", "{key}:l"],
            &["99", "100", "{period}", "100", "{period}"],
        ),
        (LUA_ALL_FLOOR, "all_calls_floor", three_keys, three_windows),
        (LUA_ALL_LEAST, "all_fixed_least", three_keys, three_windows),
    ] {
        let script = std::fs::read_to_string(lua_dir.join(format!("{file}.lua"))).unwrap();
        let mut con = server.connection();
        let sha: String = redis::cmd("SCRIPT")
            .arg("LOAD")
            .arg(&script)
            .query(&mut con)
            .unwrap();
        let count = keys.len().to_string();
        let mut args = vec!["EVALSHA", sha.as_str(), count.as_str()];
        args.extend_from_slice(keys);
        args.extend_from_slice(params);
        list.push(w(name, "evalsha", &args));
    }
    // redis-cell's own command, with the grammar the module's drop-in copies.
    if std::env::var("RL_CELL_MODULE").is_ok() {
        let cell = common::sample("CL.THROTTLE");
        let mut args = vec![cell.name, "{key}"];
        let params = rate(cell);
        args.extend(params.iter().map(String::as_str));
        list.push(w("CL.THROTTLE (redis-cell)", &cell.lower(), &args));
    }
    list
}

/// `FUNCTION LOAD REPLACE` of a library (`what` names it in a failure).
fn function_load(server: &Server, library: &str, what: &str) {
    let loaded: redis::RedisResult<String> = redis::cmd("FUNCTION")
        .arg("LOAD")
        .arg("REPLACE")
        .arg(library)
        .query(&mut server.connection());
    if let Err(e) = loaded {
        panic!("FUNCTION LOAD of {what}: {e}");
    }
}

/// `SCRIPT LOAD` of each (name, text): the SHA1 of each name.
fn load_scripts(server: &Server, scripts: &[(String, String)]) -> BTreeMap<String, String> {
    let mut con = server.connection();
    scripts
        .iter()
        .map(|(name, text)| {
            let sha: String = redis::cmd("SCRIPT")
                .arg("LOAD")
                .arg(text)
                .query(&mut con)
                .unwrap();
            (name.clone(), sha)
        })
        .collect()
}

/// An FCALL row as `EVALSHA sha` of the function's script, its name's
/// "FCALL " replaced by `prefix`.
fn as_script(f: &Workload, prefix: &str, sha: &str) -> Workload {
    let mut args = f.args.clone();
    args[0] = "EVALSHA".into();
    args[1] = sha.into();
    Workload {
        name: f.name.replacen("FCALL ", prefix, 1),
        stat: "evalsha".into(),
        args,
        ..f.clone()
    }
}

/// Name prefixes of the rows of `RL_BENCH_BEFORE`, an earlier revision's
/// library and rl_gcra script.
const BEFORE_FCALL: &str = "before: FCALL ";
const BEFORE_EVALSHA: &str = "before: EVALSHA ";

/// The period of the throughput runs and the base instruction counts (s).
const PERIOD: &str = "1";
/// The long period (s): no limiter expires during a run.
const LONG_PERIOD: &str = "60";

/// Keys, random or not, period (s) and pipelines of the throughput runs.
/// The last is the targets' condition: 100,000 limiters that all live
/// through the run, so every call reads and updates a state, as the
/// callgrind counts with a minute's period.
const THROUGHPUT: [(&str, bool, &str, &[u32]); 3] = [
    ("one key", false, PERIOD, &[1, 16]),
    ("100,000 random keys", true, PERIOD, &[1, 16]),
    (RANDOM_LONG, true, LONG_PERIOD, &[16]),
];
const RANDOM_LONG: &str = "100,000 random keys, 60 s";
const GCRA_BLOCK: &str = "RL.GCRA .. BLOCK 600";
const GCRA_WAIT: &str = "RL.GCRA .. WAIT 5";
const GCRA_FORCE: &str = "RL.GCRA .. 1 FORCE";
const GCRA_THREE: &str = "RL.GCRA .. 3";
const GCRA_AT_MOST: &str = "RL.GCRA .. 3 AT_MOST";
const LOG_TAGGED: &str = "RL.SLIDING_LOG .. TAG (16 bytes)";
/// The prefix of a row measured on the module `RL_BENCH_BEFORE_MODULE`
/// names (an earlier build), beside the same row on this one.
const BEFORE_MODULE: &str = "before: ";
const HOT_ONE: &str = "hot key: RL.GCRA, 1 unit a call";
const HOT_BATCH: &str = "hot key: RL.GCRA .. 100 AT_MOST";
const GCRA_REFUSED: &str = "RL.GCRA refused (one key)";
const GCRA_BLOCKED: &str = "RL.GCRA on a blocked key (one key)";
const ALL_FIXED: &str = "RL.ALL: 3 FIXED";
const ALL_MIXED: &str = "RL.ALL: GCRA + SLIDING_LOG";
const LUA_ALL_FIXED: &str = "Lua all: 3 fixed";
const LUA_ALL_MIXED: &str = "Lua all: gcra + sliding_log";
/// Not a limiter: only the server calls RL.ALL of three new keys needs.
const LUA_ALL_FLOOR: &str = "Lua floor: TIME, MGET, 3 SET";
/// Not a limiter: the least Lua deciding three fixed windows, no checks.
const LUA_ALL_LEAST: &str = "Lua least: 3 fixed, no checks";
const FCALL_ALL_FIXED: &str = "FCALL rl_all: 3 FIXED";
const FCALL_ALL_MIXED: &str = "FCALL rl_all: GCRA + SLIDING_LOG";

/// A field of a command's `INFO commandstats` line (`usec`: its total
/// microseconds since the last RESETSTAT; `usec_per_call`).
fn command_stat(server: &Server, stat: &str, field: &str) -> f64 {
    let line = server
        .info_field("commandstats", &format!("cmdstat_{stat}"))
        .unwrap_or_default();
    line.split(',')
        .find_map(|kv| kv.strip_prefix(field)?.strip_prefix('='))
        .and_then(|v| v.parse().ok())
        .unwrap_or(f64::NAN)
}

/// Instructions executed inside `call()` in a fresh server under callgrind,
/// while `drive` runs against it. Every run loads the scripts (a workload
/// needs them in its own server), so an empty run's total includes that
/// setup too and the difference is the workload's calls alone (script
/// hashes depend only on the scripts' text).
fn callgrind_total(out_dir: &Path, tag: &str, module: &Path, drive: &dyn Fn(&Server)) -> f64 {
    let file = out_dir.join(format!("{tag}.out"));
    let file_arg = format!("--callgrind-out-file={}", file.display());
    // The floor module only here: the throughput runs load what a user's
    // server would.
    let floor = floor_module().map(|p| p.to_string_lossy().into_owned());
    let extra: Vec<&str> = floor.iter().flat_map(|p| ["--loadmodule", p.as_str()]).collect();
    let server = Server::start_module(
        &["valgrind", "--tool=callgrind", "--toggle-collect=call", &file_arg],
        &extra,
        module,
    );
    workloads(&server);
    lease_workloads(&server);
    drive(&server);
    server.stop();
    let text = std::fs::read_to_string(&file).unwrap_or_default();
    text.lines()
        .find_map(|l| l.strip_prefix("summary:").or_else(|| l.strip_prefix("totals:")))
        .and_then(|v| v.split_whitespace().next())
        .and_then(|v| v.parse().ok())
        .unwrap_or(f64::NAN)
}

/// Instructions per call with callgrind: a fresh server per workload,
/// `requests` calls on random keys at pipeline 16, minus the cost of a run
/// with the same setup and no calls. Leases: a run of acquires alone and
/// one of acquire+release pairs give the acquire and the release.
fn instructions_per_call(list: &[Workload], leases: &[Leases], requests: u64) -> BTreeMap<String, f64> {
    let out_dir = std::env::temp_dir().join(format!("rl-callgrind-{}", std::process::id()));
    std::fs::create_dir_all(&out_dir).unwrap();
    // Random keys land in the server's hash tables differently from run to
    // run (its hash seed is random too): a count varies by about 1% between
    // runs of one workload. The median of a few runs is stable to a few
    // tenths of a percent.
    let runs: usize = env_or("RL_BENCH_CALLGRIND_RUNS", 3);
    let module = module_path();
    let median_total = |out_dir: &Path, tag: &str, drive: &dyn Fn(&Server)| {
        let totals: Vec<f64> = (0..runs.max(1))
            .map(|run| callgrind_total(out_dir, &format!("{tag}.{run}"), &module, drive))
            .collect();
        median(&totals)
    };
    let baseline = median_total(&out_dir, "empty", &|_| {});
    let mut result = BTreeMap::new();
    let mut record = |name: String, value: f64| {
        eprintln!("callgrind: {name}: {value:.0} instructions per call");
        result.insert(name, value.round());
    };
    // An earlier build of the module, when RL_BENCH_BEFORE_MODULE names
    // it: each of the module's own rows that it can run is measured on both,
    // run by run in turn (so a slower moment of the machine falls on both),
    // each against its own empty run.
    let before = std::env::var("RL_BENCH_BEFORE_MODULE").ok().map(PathBuf::from);
    let compared =
        |w: &Workload| before.is_some() && w.args[0].starts_with("RL.") && !w.args.iter().any(|a| a == "TAG");
    let before_baseline = before.as_ref().map(|b| {
        let totals: Vec<f64> = (0..runs.max(1))
            .map(|run| callgrind_total(&out_dir, &format!("before-empty.{run}"), b, &|_| {}))
            .collect();
        median(&totals)
    });
    for (i, w) in list.iter().enumerate() {
        let drive = |server: &Server| {
            benchmark(server.port, w, requests, 16, true, PERIOD);
        };
        match (&before, before_baseline) {
            (Some(earlier), Some(earlier_baseline)) if compared(w) => {
                let (mut now, mut then) = (Vec::new(), Vec::new());
                for run in 0..runs.max(1) {
                    now.push(callgrind_total(&out_dir, &format!("w{i}.{run}"), &module, &drive));
                    then.push(callgrind_total(&out_dir, &format!("b{i}.{run}"), earlier, &drive));
                }
                record(w.name.clone(), (median(&now) - baseline) / requests as f64);
                record(
                    format!("{BEFORE_MODULE}{}", w.name),
                    (median(&then) - earlier_baseline) / requests as f64,
                );
            }
            _ => {
                let total = median_total(&out_dir, &format!("w{i}"), &drive);
                record(w.name.clone(), (total - baseline) / requests as f64);
            }
        }
    }
    for (i, l) in leases.iter().enumerate() {
        let runs = [false, true].map(|release| {
            median_total(&out_dir, &format!("l{i}{release}"), &|server| {
                // The server's own copy of the workload: its scripts' hashes
                // are the same.
                lease_pairs(server.port, l, requests, 16, true, release);
            })
        });
        let n = requests as f64;
        record(format!("{}{ACQUIRE}", l.name), (runs[0] - baseline) / n);
        record(format!("{}{RELEASE}", l.name), (runs[1] - runs[0]) / n);
        record(format!("{}{PAIR}", l.name), (runs[1] - baseline) / n);
    }
    let _ = std::fs::remove_dir_all(&out_dir);
    result
}

/// Suffixes of the lease instruction counts: an acquire, a release (on a
/// key holding the lease), and the pair.
const ACQUIRE: &str = ": acquire";
const RELEASE: &str = ": release";
const PAIR: &str = ": pair";

fn main() {
    if std::env::var("RL_BENCH_CALLGRIND").is_ok_and(|v| v == "1") {
        build_floor_module();
    }
    let rounds: usize = env_or("RL_BENCH_ROUNDS", 5);
    let requests: u64 = env_or("RL_BENCH_REQUESTS", 200_000);
    let server = Server::start(&[], &[]);
    let list: Vec<Workload> = workloads(&server)
        .into_iter()
        .filter(|w| w.name == "INCR" || selected(&w.name))
        .collect();

    let mut throughput = Vec::new();
    for (keys, random, period, pipelines) in THROUGHPUT {
        for &pipeline in pipelines {
            let n = if pipeline == 1 { requests / 5 } else { requests };
            let mut rounds_rps: Vec<Vec<f64>> = vec![Vec::new(); list.len()];
            let mut usec: Vec<Vec<f64>> = vec![Vec::new(); list.len()];
            // Interleaved: every round runs every workload once, so a noisy
            // moment of the machine touches all of them alike.
            for _ in 0..rounds {
                for (i, w) in list.iter().enumerate() {
                    server.query(&["FLUSHALL"]);
                    server.query(&["CONFIG", "RESETSTAT"]);
                    rounds_rps[i].push(benchmark(server.port, w, n, pipeline, random, period));
                    usec[i].push(command_stat(&server, &w.stat, "usec_per_call"));
                }
            }
            let incr = median(&rounds_rps[0]);
            for (i, w) in list.iter().enumerate() {
                let m = median(&rounds_rps[i]);
                eprintln!("{keys}, pipeline {pipeline}: {}: {m:.0} requests/s", w.name);
                throughput.push(Measurement {
                    workload: w.name.clone(),
                    keys,
                    pipeline,
                    requests_per_second_median: m,
                    requests_per_second_rounds: rounds_rps[i].clone(),
                    ratio_to_incr: m / incr,
                    server_usec_per_call: median(&usec[i]),
                });
            }
        }
    }

    // Leases: acquire+release pairs, the module against Lua, interleaved.
    let leases: Vec<Leases> = lease_workloads(&server)
        .into_iter()
        .filter(|l| selected(l.name))
        .collect();
    let mut lease_pairs_report = Vec::new();
    for (keys, random) in [("one key", false), ("100,000 random keys", true)] {
        for pipeline in [1usize, 16] {
            let n = if pipeline == 1 {
                requests / 10
            } else {
                requests / 2
            };
            let mut rounds_pps: Vec<Vec<f64>> = vec![Vec::new(); leases.len()];
            let mut usec: Vec<Vec<f64>> = vec![Vec::new(); leases.len()];
            for _ in 0..rounds {
                for (i, l) in leases.iter().enumerate() {
                    server.query(&["FLUSHALL"]);
                    server.query(&["CONFIG", "RESETSTAT"]);
                    rounds_pps[i].push(lease_pairs(server.port, l, n, pipeline, random, true));
                    let total: f64 = l
                        .stats
                        .iter()
                        .map(|stat| command_stat(&server, stat, "usec"))
                        .sum();
                    usec[i].push(total / n as f64);
                }
            }
            for (i, l) in leases.iter().enumerate() {
                let m = median(&rounds_pps[i]);
                eprintln!("{keys}, pipeline {pipeline}: {}: {m:.0} pairs/s", l.name);
                lease_pairs_report.push(PairMeasurement {
                    workload: l.name.to_string(),
                    versus: l.versus.to_string(),
                    keys,
                    pipeline,
                    pairs_per_second_median: m,
                    pairs_per_second_rounds: rounds_pps[i].clone(),
                    server_usec_per_pair: median(&usec[i]),
                });
            }
        }
    }

    // Pacing: 20 workers share one key at 200 per second with WAIT.
    let paced = selected("pacing").then(|| {
        server.query(&["FLUSHALL"]);
        let p = pacing(server.port, 20, 9, 200, 10);
        eprintln!(
            "pacing: {} units in {} s: {:.1}/s ({:+.2}%), at most {} in any second (allowed {})",
            p.units,
            p.seconds,
            p.achieved_per_second,
            p.deviation_percent,
            p.most_in_one_second,
            p.allowed_in_one_second
        );
        p
    });

    // Memory per limiter and replication bytes per request.
    let mut memory = BTreeMap::new();
    let mut con = server.connection();
    for w in list.iter().filter(|w| {
        (w.name.starts_with("RL.") || w.name.starts_with("Lua") || w.name.starts_with("FCALL")) && w.one_key()
    }) {
        let _: () = redis::cmd("FLUSHALL").query(&mut con).unwrap();
        for _ in 0..2 {
            let args = w.args("user:000001", PERIOD);
            let _: redis::Value = redis::cmd(&args[0]).arg(&args[1..]).query(&mut con).unwrap();
        }
        let bytes: i64 = redis::cmd("MEMORY")
            .arg("USAGE")
            .arg("user:000001")
            .query(&mut con)
            .unwrap_or(-1);
        memory.insert(w.name.clone(), bytes);
    }
    let replica = {
        let port = server.port.to_string();
        let rep = Server::start(&[], &["--replicaof", "127.0.0.1", &port]);
        let deadline = Instant::now() + Duration::from_secs(30);
        while rep.info_field("replication", "master_link_status").as_deref() != Some("up") {
            assert!(Instant::now() < deadline, "replica never synced");
            std::thread::sleep(Duration::from_millis(50));
        }
        rep
    };
    let mut replication = BTreeMap::new();
    for w in &list {
        server.query(&["FLUSHALL"]);
        let before: f64 = server
            .info_field("replication", "master_repl_offset")
            .unwrap()
            .parse()
            .unwrap();
        benchmark(server.port, w, 10_000, 16, true, PERIOD);
        let after: f64 = server
            .info_field("replication", "master_repl_offset")
            .unwrap()
            .parse()
            .unwrap();
        replication.insert(w.name.clone(), ((after - before) / 10_000.0).round());
    }
    replica.stop();
    let version = server.info_field("server", "redis_version").unwrap_or_default();
    server.stop();

    let instructions = if std::env::var("RL_BENCH_CALLGRIND").is_ok_and(|v| v == "1") {
        // RL_BENCH_CALLGRIND_LONG_ONLY=1: only the 60-second rows (and
        // those without a period), for a shorter run.
        let long_only = std::env::var("RL_BENCH_CALLGRIND_LONG_ONLY").is_ok_and(|v| v == "1");
        let mut all: Vec<Workload> = list
            .iter()
            .filter(|w| !long_only || !w.args.iter().any(|a| a == "{period}"))
            .cloned()
            .collect();
        all.extend(long_period_variants(&list));
        all.extend(floor_workloads());
        instructions_per_call(&all, &leases, 20_000)
    } else {
        BTreeMap::new()
    };

    let mut machine = BTreeMap::new();
    let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    let model = cpuinfo
        .lines()
        .find_map(|l| l.strip_prefix("model name"))
        .unwrap_or("")
        .trim_start_matches([' ', '\t', ':']);
    machine.insert("cpu", model.to_string());
    machine.insert(
        "cores",
        std::thread::available_parallelism()
            .map(|n| n.get().to_string())
            .unwrap_or_default(),
    );
    machine.insert("server", format!("redis_version {version}"));
    let report = Report {
        machine,
        requests_per_run: requests,
        rounds,
        throughput,
        instructions_per_call: instructions,
        memory_usage_bytes: memory,
        replication_bytes_per_request: replication,
        lease_pairs: lease_pairs_report,
        pacing: paced,
    };
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("benches/results");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join("latest.json"),
        serde_json::to_string_pretty(&report).unwrap(),
    )
    .unwrap();
    std::fs::write(dir.join("latest.md"), markdown(&report)).unwrap();
    std::fs::write(dir.join("throughput.svg"), chart(&report)).unwrap();
    println!("{}", markdown(&report));
}

/// Suffix of the workloads that use a 60-second period or window.
const LONG: &str = " (60 s)";

/// Every limiter workload again with 60-second periods and windows instead
/// of one second: then no limiter expires during a callgrind run, however
/// slowly it goes, and every call on a new key inserts one (the one-second
/// workloads see some keys expire and return).
fn long_period_variants(list: &[Workload]) -> Vec<Workload> {
    list.iter()
        .filter(|w| w.args.iter().any(|a| a == "{period}"))
        .map(|w| Workload {
            name: format!("{}{LONG}", w.name),
            args: w.args("{key}", LONG_PERIOD),
            ..w.clone()
        })
        .collect()
}

fn markdown(r: &Report) -> String {
    let mut s = format!(
        "Machine: {} ({} cores), {}; {} rounds, medians; {} requests per pipelined run.\n\n",
        r.machine["cpu"], r.machine["cores"], r.machine["server"], r.rounds, r.requests_per_run
    );
    s.push_str(&targets(r));
    s.push_str(&scripts_table(r));
    s.push_str(
        "| workload | keys | pipeline | requests/s | vs INCR | server µs/call |\n|---|---|---|---|---|---|\n",
    );
    for m in &r.throughput {
        s.push_str(&format!(
            "| {} | {} | {} | {:.0} | {:.2} | {:.2} |\n",
            m.workload,
            m.keys,
            m.pipeline,
            m.requests_per_second_median,
            m.ratio_to_incr,
            m.server_usec_per_call
        ));
    }
    s.push_str("\n| workload | MEMORY USAGE (user:000001) | replication bytes/request | instructions/call |\n|---|---|---|---|\n");
    for (name, bytes) in &r.memory_usage_bytes {
        let repl = r
            .replication_bytes_per_request
            .get(name)
            .copied()
            .unwrap_or(f64::NAN);
        let ins = r
            .instructions_per_call
            .get(name)
            .map_or("not measured".to_string(), |v| format!("{v:.0}"));
        s.push_str(&format!("| {name} | {bytes} | {repl:.0} | {ins} |\n"));
    }
    let long: Vec<_> = r
        .instructions_per_call
        .iter()
        .filter(|(n, _)| n.ends_with(LONG))
        .collect();
    if !long.is_empty() {
        s.push_str("\nInstructions per call with a 60-second period or window (no limiter expires during the run):\n\n| workload | instructions/call |\n|---|---|\n");
        for (name, ins) in long {
            s.push_str(&format!("| {name} | {ins:.0} |\n"));
        }
    }
    // Several limits in one RL.ALL, against the separate calls and Lua.
    let inst = |name: String| r.instructions_per_call.get(&name).copied();
    let mut all_rows = String::new();
    for (suffix, periods) in [("", "1 s"), (LONG, "60 s")] {
        let comparisons = [
            (
                ALL_FIXED,
                inst(format!("RL.FIXED{suffix}")).map(|f| 3.0 * f),
                "three RL.FIXED",
                LUA_ALL_FIXED,
            ),
            (
                ALL_MIXED,
                inst(format!("RL.GCRA{suffix}"))
                    .zip(inst(format!("RL.SLIDING_LOG{suffix}")))
                    .map(|(g, l)| g + l),
                "RL.GCRA + RL.SLIDING_LOG",
                LUA_ALL_MIXED,
            ),
        ];
        for (all, separate, separate_name, lua) in comparisons {
            let (Some(all_ins), Some(separate), Some(lua_ins)) = (
                inst(format!("{all}{suffix}")),
                separate,
                inst(format!("{lua}{suffix}")),
            ) else {
                continue;
            };
            all_rows.push_str(&format!(
                "| {all} | {periods} | {all_ins:.0} | {separate_name}: {separate:.0} | {:.3} | {lua_ins:.0} | {:.3} |\n",
                all_ins / separate,
                all_ins / lua_ins
            ));
        }
    }
    if !all_rows.is_empty() {
        s.push_str("\nSeveral limits in one RL.ALL, instructions per call, against the separate calls and the same all-or-nothing check in Lua:\n\n| workload | periods | RL.ALL | separate calls | ratio | Lua | ratio |\n|---|---|---|---|---|---|---|\n");
        s.push_str(&all_rows);
    }
    if let Some(p) = &r.pacing {
        s.push_str(&format!(
            "\nPacing: {} connections share one `RL.GCRA` key ({} per second, `max_burst` {}) with `WAIT 2000 MS`, each doing its work after sleeping the `retry_after` of its reply, for {} s: {} units, {:.1} per second ({:+.2}% of {}); at most {} started in any one-second span (GCRA allows {}); {} refused.\n",
            p.connections,
            p.per_second,
            p.max_burst,
            p.seconds,
            p.units,
            p.achieved_per_second,
            p.deviation_percent,
            p.per_second,
            p.most_in_one_second,
            p.allowed_in_one_second,
            p.refused
        ));
    }
    // Leases: pairs per second, and instructions against the sliding log.
    if !r.lease_pairs.is_empty() {
        s.push_str("\nPairs: a lease taken and released (`RL.CONCURRENCY` then `RL.RELEASE` of its lease; the same on a sorted set in Lua), and a unit taken and refunded (`RL.GCRA` then `RL.GCRA .. 1 REFUND`; Lua's GCRA and a refund script), limit 100, 6 connections; the server's µs per pair shows its own cost (the driver, on the same two cores, limits the pairs/s):\n\n| workload | keys | pipeline | pairs/s | vs Lua | server µs/pair |\n|---|---|---|---|---|---|\n");
        for m in &r.lease_pairs {
            let versus = if m.versus.is_empty() {
                &m.workload
            } else {
                &m.versus
            };
            let lua = r
                .lease_pairs
                .iter()
                .find(|l| &l.workload == versus && l.keys == m.keys && l.pipeline == m.pipeline)
                .map_or(f64::NAN, |l| l.pairs_per_second_median);
            s.push_str(&format!(
                "| {} | {} | {} | {:.0} | {:.2} | {:.2} |\n",
                m.workload,
                m.keys,
                m.pipeline,
                m.pairs_per_second_median,
                m.pairs_per_second_median / lua,
                m.server_usec_per_pair
            ));
        }
    }
    // Pairs, instructions per call: each of ours against a single command
    // at the same limit (60 s) and its Lua counterpart.
    for (ours_name, lua_name, reference, title) in [
        (
            LEASES,
            LUA_LEASES,
            "RL.SLIDING_LOG",
            "Leases, instructions per call (random keys, pipeline 16, 60-second timeouts), against `RL.SLIDING_LOG` at the same limit (60 s) and the Lua sorted set",
        ),
        (
            REFUNDS,
            LUA_REFUNDS,
            "RL.GCRA",
            "Refunds, instructions per call (random keys, pipeline 16, a minute's period): the take, the refund right after it, against `RL.GCRA` (60 s) and Lua's GCRA and refund",
        ),
    ] {
        let reference_ins = inst(format!("{reference}{LONG}"));
        let rows: Vec<_> = [ACQUIRE, RELEASE, PAIR]
            .iter()
            .filter_map(|part| {
                let ours = inst(format!("{ours_name}{part}"))?;
                let lua = inst(format!("{lua_name}{part}"))?;
                Some((part.trim_start_matches(": "), ours, lua))
            })
            .collect();
        if rows.is_empty() {
            continue;
        }
        s.push_str(&format!(
            "\n{title}:\n\n| call | {ours_name} | vs {reference} | Lua | vs Lua |\n|---|---|---|---|---|\n"
        ));
        for (part, ours, lua) in rows {
            let per_call = reference_ins.map_or(f64::NAN, |l| {
                if part == "pair" {
                    ours / (2.0 * l)
                } else {
                    ours / l
                }
            });
            s.push_str(&format!(
                "| {part} | {ours:.0} | {per_call:.3} | {lua:.0} | {:.3} |\n",
                ours / lua
            ));
        }
    }
    let floor: Vec<_> = [FLOOR_DIRECT, FLOOR_INTEGER]
        .iter()
        .filter_map(|name| r.instructions_per_call.get(*name).map(|ins| (name, ins)))
        .collect();
    if !floor.is_empty() {
        s.push_str("\nThe floor: the server calls a limiter command makes to write a new key (open, store, absolute expiry, replicated `SET .. PXAT`, five-integer reply), with no parsing, decision or encoding (`benches/floor`):\n\n| workload | instructions/call |\n|---|---|\n");
        for (name, ins) in floor {
            s.push_str(&format!("| {name} | {ins:.0} |\n"));
        }
    }
    s
}

/// The issues' targets, each computed from this run's figures: what is
/// compared, the ratio, the bound, and whether it holds.
/// Each script's instruction count beside its function's: (EVALSHA row,
/// FCALL row), the 60-second rows and the pairs.
fn script_rows(r: &Report) -> Vec<(String, String)> {
    let mut rows: Vec<(String, String)> = r
        .instructions_per_call
        .keys()
        .filter(|name| name.starts_with("EVALSHA ") && name.ends_with(LONG))
        .map(|name| (name.clone(), name.replacen("EVALSHA ", "FCALL ", 1)))
        .collect();
    for (script, function) in [(SCRIPT_LEASES, FCALL_LEASES), (SCRIPT_REFUNDS, FCALL_REFUNDS)] {
        rows.push((format!("{script}{PAIR}"), format!("{function}{PAIR}")));
    }
    rows.retain(|(s, f)| r.instructions_per_call.contains_key(s) && r.instructions_per_call.contains_key(f));
    rows
}

/// The functions edition's table: each function through FCALL and its
/// script through EVALSHA, and an earlier revision's when measured
/// (RL_BENCH_BEFORE).
fn scripts_table(r: &Report) -> String {
    let inst = |name: &str| r.instructions_per_call.get(name).copied();
    let rows = script_rows(r);
    if rows.is_empty() {
        return String::new();
    }
    let mut s = String::from(
        "\nThe functions edition: instructions per call, FCALL of the library and EVALSHA of each function's script (60 s, random keys):\n\n\
         | workload | FCALL | EVALSHA | EVALSHA / FCALL | before: FCALL | FCALL / before | before: EVALSHA |\n|---|---|---|---|---|---|---|\n",
    );
    let show = |v: Option<f64>| v.map_or(String::new(), |v| format!("{v:.0}"));
    for (script, function) in rows {
        let (f, e) = (inst(&function), inst(&script));
        let before = inst(&function.replacen("FCALL ", BEFORE_FCALL, 1));
        let before_script = inst(&function.replacen("FCALL ", BEFORE_EVALSHA, 1));
        s.push_str(&format!(
            "| {} | {} | {} | {} | {} | {} | {} |\n",
            function.trim_start_matches("FCALL "),
            show(f),
            show(e),
            e.zip(f).map_or(String::new(), |(e, f)| format!("{:.3}", e / f)),
            show(before),
            f.zip(before)
                .map_or(String::new(), |(f, b)| format!("{:.4}", f / b)),
            show(before_script),
        ));
    }
    s
}

fn targets(r: &Report) -> String {
    let inst = |name: &str| r.instructions_per_call.get(name).copied();
    let rps = |name: &str, keys: &str| {
        r.throughput
            .iter()
            .find(|m| m.workload == name && m.keys == keys && m.pipeline == 16)
            .map(|m| m.requests_per_second_median)
    };
    let rps_at = |name: &str, keys: &str, pipeline: u32| {
        r.throughput
            .iter()
            .find(|m| m.workload == name && m.keys == keys && m.pipeline == pipeline)
            .map(|m| m.requests_per_second_median)
    };
    let pairs = |name: &str, keys: &str| {
        r.lease_pairs
            .iter()
            .find(|m| m.workload == name && m.keys == keys && m.pipeline == 16)
            .map(|m| m.pairs_per_second_median)
    };
    let long = |name: &str| inst(&format!("{name}{LONG}"));
    let cell = "CL.THROTTLE (redis-cell)";
    // (what, ratio, bound, at most)
    let mut rows: Vec<(String, Option<f64>, f64, bool)> = vec![
        (
            "instructions: RL.GCRA / CL.THROTTLE 0.5.0 (60 s)".into(),
            long("RL.GCRA").zip(long(cell)).map(|(a, b)| a / b),
            0.65,
            true,
        ),
        (
            "instructions: RL.GCRA / RL.FIXED (60 s)".into(),
            long("RL.GCRA").zip(long("RL.FIXED")).map(|(a, b)| a / b),
            1.05,
            true,
        ),
        (
            format!("requests/s: RL.GCRA / CL.THROTTLE 0.5.0 ({RANDOM_LONG}, pipeline 16)"),
            rps("RL.GCRA", RANDOM_LONG)
                .zip(rps(cell, RANDOM_LONG))
                .map(|(a, b)| a / b),
            1.4,
            false,
        ),
        (
            format!("requests/s: RL.GCRA / Lua gcra ({RANDOM_LONG}, pipeline 16)"),
            rps("RL.GCRA", RANDOM_LONG)
                .zip(rps("Lua gcra", RANDOM_LONG))
                .map(|(a, b)| a / b),
            3.0,
            false,
        ),
        (
            format!("instructions: {GCRA_BLOCK} / RL.GCRA (60 s)"),
            long(GCRA_BLOCK).zip(long("RL.GCRA")).map(|(a, b)| a / b),
            1.05,
            true,
        ),
        (
            format!("instructions: {GCRA_WAIT} / RL.GCRA (60 s)"),
            long(GCRA_WAIT).zip(long("RL.GCRA")).map(|(a, b)| a / b),
            1.05,
            true,
        ),
        (
            format!("instructions: {GCRA_FORCE} / RL.GCRA (60 s)"),
            long(GCRA_FORCE).zip(long("RL.GCRA")).map(|(a, b)| a / b),
            1.05,
            true,
        ),
        (
            format!("instructions: {GCRA_AT_MOST} / {GCRA_THREE} (60 s)"),
            long(GCRA_AT_MOST).zip(long(GCRA_THREE)).map(|(a, b)| a / b),
            1.05,
            true,
        ),
        (
            "units/s: a hot key, 100 AT_MOST / 1 unit a call (50 connections, pipeline 1)".into(),
            rps_at(HOT_BATCH, "one key", 1)
                .zip(rps_at(HOT_ONE, "one key", 1))
                .map(|(a, b)| 100.0 * a / b),
            20.0,
            false,
        ),
        (
            "pacing: |achieved - 200| per second, % (20 connections, WAIT)".into(),
            r.pacing.as_ref().map(|p| p.deviation_percent.abs()),
            2.0,
            true,
        ),
        (
            "pacing: most started in any second / what GCRA allows".into(),
            r.pacing
                .as_ref()
                .map(|p| p.most_in_one_second as f64 / p.allowed_in_one_second as f64),
            1.0,
            true,
        ),
        (
            "instructions: RL.GCRA on a blocked key / a plain refusal (one key)".into(),
            inst(GCRA_BLOCKED).zip(inst(GCRA_REFUSED)).map(|(a, b)| a / b),
            1.0,
            true,
        ),
        (
            "instructions: RL.ALL of 3 fixed / three RL.FIXED (60 s)".into(),
            long(ALL_FIXED).zip(long("RL.FIXED")).map(|(a, b)| a / (3.0 * b)),
            0.9,
            true,
        ),
        (
            "instructions: RL.ALL of 3 fixed / Lua (60 s)".into(),
            long(ALL_FIXED).zip(long(LUA_ALL_FIXED)).map(|(a, b)| a / b),
            0.5,
            true,
        ),
    ];
    rows.push((
        format!("instructions: {LOG_TAGGED} / RL.SLIDING_LOG (60 s)"),
        long(LOG_TAGGED).zip(long("RL.SLIDING_LOG")).map(|(a, b)| a / b),
        1.1,
        true,
    ));
    // Against an earlier build (RL_BENCH_BEFORE_MODULE), in the same run.
    if long(&format!("{BEFORE_MODULE}RL.SLIDING_LOG")).is_some() {
        rows.push((
            "instructions: RL.SLIDING_LOG / the same on the earlier build (60 s)".into(),
            long("RL.SLIDING_LOG")
                .zip(long(&format!("{BEFORE_MODULE}RL.SLIDING_LOG")))
                .map(|(a, b)| a / b),
            1.01,
            true,
        ));
    }
    for part in [ACQUIRE, RELEASE] {
        rows.push((
            format!(
                "instructions: lease {} / RL.SLIDING_LOG (60 s)",
                part.trim_start_matches(": ")
            ),
            inst(&format!("{LEASES}{part}"))
                .zip(long("RL.SLIDING_LOG"))
                .map(|(a, b)| a / b),
            1.1,
            true,
        ));
    }
    // The functions edition: each function at most the hand-written
    // script of its algorithm (which is neither exact nor has an option),
    // RL.ALL of three fixed windows at most 0.6 of the script's.
    for (function, script) in [
        ("FCALL rl_gcra", "Lua gcra"),
        ("FCALL rl_token_bucket", "Lua token_bucket"),
        ("FCALL rl_fixed", "Lua fixed"),
        ("FCALL rl_sliding_log", "Lua sliding_log"),
        ("FCALL rl_sliding_counter", "Lua sliding_counter"),
        ("FCALL rl_concurrency", "Lua concurrency_acquire"),
        (FCALL_ALL_MIXED, LUA_ALL_MIXED),
    ] {
        rows.push((
            format!("instructions: {function} / {script} (60 s)"),
            long(function).zip(long(script)).map(|(a, b)| a / b),
            1.0,
            true,
        ));
    }
    rows.push((
        format!("instructions: {FCALL_ALL_FIXED} / {LUA_ALL_FIXED} (60 s)"),
        long(FCALL_ALL_FIXED).zip(long(LUA_ALL_FIXED)).map(|(a, b)| a / b),
        0.6,
        true,
    ));
    for (pair, script) in [(FCALL_LEASES, LUA_LEASES), (FCALL_REFUNDS, LUA_REFUNDS)] {
        rows.push((
            format!("instructions: {pair} / {script}"),
            inst(&format!("{pair}{PAIR}"))
                .zip(inst(&format!("{script}{PAIR}")))
                .map(|(a, b)| a / b),
            1.0,
            true,
        ));
    }
    // The scripts: each at most 1.25 times its function (SPEC 17).
    for (script, function) in script_rows(r) {
        rows.push((
            format!("instructions: {script} / {function}"),
            inst(&script).zip(inst(&function)).map(|(a, b)| a / b),
            1.25,
            true,
        ));
    }
    for keys in ["one key", "100,000 random keys"] {
        rows.push((
            format!("pairs/s: lease taken and released / Lua sorted set ({keys}, pipeline 16)"),
            pairs(LEASES, keys)
                .zip(pairs(LUA_LEASES, keys))
                .map(|(a, b)| a / b),
            4.0,
            false,
        ));
    }
    let mut s =
        String::from("Targets, from this run:\n\n| measure | ratio | target | met |\n|---|---|---|---|\n");
    let mut any = false;
    for (what, ratio, bound, at_most) in rows {
        let Some(ratio) = ratio else { continue };
        any = true;
        let (sign, met) = if at_most {
            ("≤", ratio <= bound)
        } else {
            ("≥", ratio >= bound)
        };
        let met = if met { "yes" } else { "no" };
        s.push_str(&format!("| {what} | {ratio:.3} | {sign} {bound} | {met} |\n"));
    }
    s.push('\n');
    // What any library's RL.ALL of three new keys pays: the floor script's
    // calls alone, and the least script that decides, against the
    // hand-written script.
    let of_script = |name: &str| long(name).zip(long(LUA_ALL_FIXED)).map(|(a, b)| a / b);
    for (name, what) in [
        (
            LUA_ALL_FLOOR,
            "The server calls alone that RL.ALL of three new keys needs in Lua",
        ),
        (
            LUA_ALL_LEAST,
            "The least Lua that decides three fixed windows, checking nothing",
        ),
    ] {
        if let Some(ratio) = of_script(name) {
            s.push_str(&format!(
                "{what} ({name}, 60 s): {ratio:.3} of {LUA_ALL_FIXED}'s instructions in this run.\n\n"
            ));
        }
    }
    if any {
        s
    } else {
        String::new()
    }
}

/// Requests/s relative to INCR, random keys, pipeline 16, as horizontal bars.
fn chart(r: &Report) -> String {
    let rows: Vec<&Measurement> = r
        .throughput
        .iter()
        .filter(|m| m.keys == "100,000 random keys" && m.pipeline == 16)
        .collect();
    let (w, row_h, label_w) = (720.0, 24.0, 220.0);
    let h = 40.0 + row_h * rows.len() as f64;
    let max = rows.iter().map(|m| m.ratio_to_incr).fold(1.0, f64::max);
    let mut s = format!(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{w}\" height=\"{h}\" font-family=\"sans-serif\" font-size=\"12\">\n<rect width=\"{w}\" height=\"{h}\" fill=\"white\"/>\n<text x=\"10\" y=\"18\" font-weight=\"bold\">Throughput relative to INCR (100,000 random keys, pipeline 16; medians)</text>\n"
    );
    for (i, m) in rows.iter().enumerate() {
        let y = 30.0 + row_h * i as f64;
        let len = (w - label_w - 70.0) * m.ratio_to_incr / max;
        let color = if m.workload.starts_with("RL.") {
            "#2b6cb0"
        } else if m.workload.starts_with("Lua") {
            "#c05621"
        } else {
            "#718096"
        };
        s.push_str(&format!(
            "<text x=\"{}\" y=\"{}\" text-anchor=\"end\">{}</text>\n<rect x=\"{label_w}\" y=\"{y}\" width=\"{len:.1}\" height=\"{}\" fill=\"{color}\"/>\n<text x=\"{:.1}\" y=\"{}\">{:.2}</text>\n",
            label_w - 6.0,
            y + 14.0,
            m.workload,
            row_h - 6.0,
            label_w + len + 4.0,
            y + 14.0,
            m.ratio_to_incr
        ));
    }
    s.push_str("</svg>\n");
    s
}
