//! Clusters that reshard, and replicas that load a full sync in the
//! background, while limiters are in use.
//!
//! - Resharding key by key (every server): the steps `redis-cli --cluster
//!   reshard` takes (`CLUSTER SETSLOT .. IMPORTING` and `MIGRATING`,
//!   `MIGRATE` a few keys at a time, `CLUSTER SETSLOT .. NODE`), with traffic
//!   between every two steps through a client that follows `MOVED` and
//!   `ASK`.
//! - Atomic slot migration (servers with `CLUSTER MIGRATESLOTS`: Valkey 9):
//!   a migration cancelled halfway, then one carried through, with traffic
//!   while each is under way.
//! - A replica with `repl-diskless-load swapdb` loads a full sync in the
//!   background, serving reads from its old data meanwhile, then holds the
//!   master's exact bytes.
//!
//! In both clusters every limiter, of every kind, admits exactly what the
//! same calls admit on one server beside the cluster (the twin). Nothing
//! refills or ends during a test (one unit an hour, windows of 10^9 s,
//! leases and blocks of an hour), so a key lost in a move (which would start
//! again, rested) or a key left behind and called on its old node would
//! admit more.

mod common;

use common::{cmd, error_text, Server, ServerKind, ATTEMPTS};
use redis::{Connection, ErrorKind, Value};
use std::collections::{BTreeSet, HashMap};
use std::io::Write;
use std::net::TcpListener;
use std::time::{Duration, Instant};

/// How long a cluster or a replica may take to reach a state polled for.
const DEADLINE: Duration = Duration::from_secs(30);

/// `check` until it returns `Some`, at most [`DEADLINE`]; then the test
/// fails, saying what did not happen.
fn poll<T>(what: &str, mut check: impl FnMut() -> Option<T>) -> T {
    let deadline = Instant::now() + DEADLINE;
    loop {
        if let Some(found) = check() {
            return found;
        }
        assert!(Instant::now() < deadline, "{what}: not within {DEADLINE:?}");
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// A line in the test output even when the test's own output is captured:
/// which part did not run on this server, and why.
fn note(text: &str) {
    let _ = writeln!(std::io::stderr().lock(), "resharding.rs: {text}");
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free loopback port")
}

fn strings(args: &[&str]) -> Vec<String> {
    args.iter().map(|a| a.to_string()).collect()
}

fn command(args: &[String]) -> redis::Cmd {
    let args: Vec<&str> = args.iter().map(|a| a.as_str()).collect();
    common::cmd(&args)
}

// ---------------------------------------------------------------------------
// A cluster of two masters

struct Node {
    server: Server,
    id: String,
    bus: u16,
}

impl Node {
    fn port(&self) -> u16 {
        self.server.port
    }

    fn query<T: redis::FromRedisValue>(&self, args: &[&str]) -> T {
        cmd(args)
            .query(&mut self.server.client())
            .unwrap_or_else(|e| panic!("{args:?} on {}: {}", self.port(), error_text(&e)))
    }

    /// The port of the node that serves `slot`, as this node sees it.
    fn owner(&self, slot: u16) -> Option<u16> {
        let ranges: Vec<Vec<Value>> = self.query(&["CLUSTER", "SLOTS"]);
        ranges.iter().find_map(|range| {
            let start: i64 = redis::from_redis_value(range.first()?).ok()?;
            let end: i64 = redis::from_redis_value(range.get(1)?).ok()?;
            let master: Vec<Value> = redis::from_redis_value(range.get(2)?).ok()?;
            let port: i64 = redis::from_redis_value(master.get(1)?).ok()?;
            let served = (start..=end).contains(&i64::from(slot));
            served.then(|| u16::try_from(port).ok())?
        })
    }

    fn keys_in_slot(&self, slot: u16) -> i64 {
        self.query(&["CLUSTER", "COUNTKEYSINSLOT", &slot.to_string()])
    }

    /// The keys of `slot` this node holds.
    fn keys_of_slot(&self, slot: u16) -> BTreeSet<String> {
        self.query(&["CLUSTER", "GETKEYSINSLOT", &slot.to_string(), "100000"])
    }

    /// A key's serialized value and absolute expiry here, `ASKING` first
    /// when the slot is being imported here.
    fn state(&self, key: &str, asking: bool) -> (Option<Vec<u8>>, i64) {
        let mut c = self.server.client();
        let mut pipe = redis::pipe();
        if asking {
            pipe.cmd("ASKING").ignore();
        }
        pipe.cmd("DUMP").arg(key);
        if asking {
            pipe.cmd("ASKING").ignore();
        }
        pipe.cmd("PEXPIRETIME").arg(key);
        pipe.query(&mut c)
            .unwrap_or_else(|e| panic!("{key} on {}: {}", self.port(), error_text(&e)))
    }
}

/// Two masters, each with the module: the first serves slots 0-8191, the
/// second 8192-16383.
struct Cluster {
    nodes: [Node; 2],
}

impl Cluster {
    fn start(extra: &[&str]) -> Cluster {
        let start = || {
            // A bus port of its own: the default, port + 10000, may be taken
            // or past 65535.
            let bus = free_port();
            let bus_arg = bus.to_string();
            let mut args = vec![
                "--cluster-enabled",
                "yes",
                "--cluster-config-file",
                "nodes.conf",
                "--cluster-node-timeout",
                "15000",
                "--cluster-port",
                &bus_arg,
            ];
            args.extend_from_slice(extra);
            let server = Server::start_with(&args, true);
            let id: String = cmd(&["CLUSTER", "MYID"]).query(&mut server.client()).unwrap();
            Node { server, id, bus }
        };
        let cluster = Cluster {
            nodes: [start(), start()],
        };
        let [a, b] = &cluster.nodes;
        let _: () = a.query(&["CLUSTER", "ADDSLOTSRANGE", "0", "8191"]);
        let _: () = b.query(&["CLUSTER", "ADDSLOTSRANGE", "8192", "16383"]);
        let (port, bus) = (b.port().to_string(), b.bus.to_string());
        let _: () = a.query(&["CLUSTER", "MEET", "127.0.0.1", &port, &bus]);
        poll("two nodes that agree on the slots", || {
            let agreed = cluster.nodes.iter().all(|n| {
                let info: String = n.query(&["CLUSTER", "INFO"]);
                info.contains("cluster_state:ok")
                    && n.owner(0) == Some(a.port())
                    && n.owner(16383) == Some(b.port())
            });
            agreed.then_some(())
        });
        cluster
    }

    /// A hash tag whose slot the first node serves: the keys of a test all
    /// carry it, so they move together.
    fn tag_on_first(&self) -> (String, u16) {
        (0..)
            .map(|i| format!("{{rl{i}}}"))
            .find_map(|tag| {
                let slot: i64 = self.nodes[0].query(&["CLUSTER", "KEYSLOT", &tag]);
                (slot < 8192).then_some((tag, slot as u16))
            })
            .expect("a tag in the first half")
    }
}

// ---------------------------------------------------------------------------
// A client that follows redirections by hand

/// Sends each command to the node that serves its slot, as a cluster
/// client does: on `MOVED` it learns the slot's new owner and sends the
/// command there; on `ASK` it sends `ASKING`, then the command, to the node
/// named, without learning anything. Any other reply, `TRYAGAIN` included,
/// is the caller's. Counts the redirections.
struct Driver {
    connections: HashMap<u16, Connection>,
    owners: HashMap<u16, u16>,
    moved: usize,
    asked: usize,
}

impl Driver {
    fn new(cluster: &Cluster) -> Driver {
        Driver {
            connections: cluster
                .nodes
                .iter()
                .map(|n| (n.port(), n.server.client()))
                .collect(),
            owners: HashMap::new(),
            moved: 0,
            asked: 0,
        }
    }

    fn call(&mut self, cluster: &Cluster, slot: u16, args: &[String]) -> redis::RedisResult<Value> {
        let mut port = *self
            .owners
            .entry(slot)
            .or_insert_with(|| cluster.nodes[0].owner(slot).expect("an owner"));
        let mut asking = false;
        let node = |e: &redis::RedisError| -> u16 {
            let (address, _) = e.redirect_node().expect("a redirection names a node");
            let (_, port) = address.rsplit_once(':').expect("host:port");
            port.parse().expect("a port")
        };
        for _redirection in 0..4 {
            let con = self.connections.get_mut(&port).expect("a node of the cluster");
            if asking {
                let _: () = cmd(&["ASKING"]).query(con)?;
            }
            match command(args).query::<Value>(con) {
                Err(e) if e.kind() == ErrorKind::Moved => {
                    port = node(&e);
                    self.owners.insert(slot, port);
                    self.moved += 1;
                    asking = false;
                }
                Err(e) if e.kind() == ErrorKind::Ask => {
                    port = node(&e);
                    self.asked += 1;
                    asking = true;
                }
                other => return other,
            }
        }
        panic!("{args:?}: redirected again and again");
    }
}

// ---------------------------------------------------------------------------
// The traffic: every kind of limiter, on the cluster and on its twin

/// Rate parameters under which nothing refills during a test: a limit of 4.
const RATES: [(&str, &str, &[&str]); 5] = [
    ("gcra", "RL.GCRA", &["3", "1", "3600"]),
    ("tb", "RL.TOKEN_BUCKET", &["4", "1", "3600"]),
    ("fixed", "RL.FIXED", &["4", "1000000000"]),
    ("log", "RL.SLIDING_LOG", &["4", "3600"]),
    ("counter", "RL.SLIDING_COUNTER", &["4", "1000000000"]),
];
const LIMIT: i64 = 4;
/// `RL.CONCURRENCY`'s limit here: leases of an hour.
const LEASES: i64 = 2;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    /// Five integers.
    Rate,
    /// `RL.ALL`: the binding limit's five, then its position.
    All,
    /// `RL.CONCURRENCY`: the five, then the lease (each server derives its
    /// ids from its own clock: compared as given or not).
    Lease,
    /// At its limit, then blocked for an hour, before any move.
    Blocked,
}

#[derive(Debug, Clone)]
struct Limiter {
    label: String,
    kind: Kind,
    keys: Vec<String>,
    call: Vec<String>,
    /// Created before any move; else first called while the slot moves.
    early: bool,
}

/// A call answered on the cluster and on the twin.
struct Answer {
    cluster: Vec<i64>,
    twin: Vec<i64>,
}

struct Traffic {
    slot: u16,
    limiters: Vec<Limiter>,
    _twin: Server,
    twin: Connection,
    /// Units admitted per limiter: (cluster, twin).
    admitted: HashMap<String, (i64, i64)>,
    /// The leases taken before any move, per key: (cluster's, twin's).
    leases: Vec<(String, Vec<(i64, i64)>)>,
    /// The blocked keys' values right after the block.
    blocks: Vec<(String, Vec<u8>)>,
}

impl Traffic {
    fn new(tag: &str, slot: u16) -> Traffic {
        let k = |name: &str| format!("{tag}:{name}");
        let mut limiters = Vec::new();
        for (short, name, params) in RATES {
            for (i, early) in [("0", true), ("1", true), ("2", true), ("3", true), ("new", false)] {
                let key = k(&format!("{short}:{i}"));
                limiters.push(Limiter {
                    label: key.clone(),
                    kind: Kind::Rate,
                    call: strings(&[&[name, key.as_str()], params].concat()),
                    keys: vec![key],
                    early,
                });
            }
            let key = k(&format!("blocked:{short}"));
            limiters.push(Limiter {
                label: key.clone(),
                kind: Kind::Blocked,
                call: strings(&[&[name, key.as_str()], params].concat()),
                keys: vec![key],
                early: true,
            });
        }
        // RL.ALL over two limits of one user, both of 4.
        for (i, early) in [
            ("0", true),
            ("1", true),
            ("2", true),
            ("3", true),
            ("fresh", false),
        ] {
            let keys = vec![k(&format!("all:{i}:a")), k(&format!("all:{i}:b"))];
            let mut call = strings(&["RL.ALL", "2", &keys[0], &keys[1]]);
            call.extend(strings(&[
                "GCRA",
                "3",
                "1",
                "3600",
                "SLIDING_COUNTER",
                "4",
                "1000000000",
            ]));
            limiters.push(Limiter {
                label: k(&format!("all:{i}")),
                kind: Kind::All,
                keys,
                call,
                early,
            });
        }
        for (i, early) in [("0", true), ("1", true), ("new", false)] {
            let key = k(&format!("lease:{i}"));
            limiters.push(Limiter {
                label: key.clone(),
                kind: Kind::Lease,
                call: strings(&["RL.CONCURRENCY", &key, &LEASES.to_string(), "3600"]),
                keys: vec![key],
                early,
            });
        }
        let twin = Server::start();
        Traffic {
            slot,
            limiters,
            twin: twin.client(),
            _twin: twin,
            admitted: HashMap::new(),
            leases: Vec::new(),
            blocks: Vec::new(),
        }
    }

    fn limiter(&self, label: &str) -> &Limiter {
        self.limiters
            .iter()
            .find(|l| l.label.ends_with(label))
            .unwrap_or_else(|| panic!("no limiter {label}"))
    }

    /// `args` on the cluster, then on the twin; `None` if the cluster
    /// answered `TRYAGAIN` (which wrote nothing: the twin is not called).
    /// The replies must agree: `blocked`, `limit` and `remaining` (and
    /// `RL.ALL`'s position, and whether a lease was given).
    fn both(
        &mut self,
        cluster: &Cluster,
        driver: &mut Driver,
        limiter: &Limiter,
        args: &[String],
    ) -> Option<Answer> {
        let on_cluster = match driver.call(cluster, self.slot, args) {
            Err(e) if e.kind() == ErrorKind::TryAgain => return None,
            Err(e) => panic!("{args:?}: {}", error_text(&e)),
            Ok(v) => redis::from_redis_value::<Vec<i64>>(&v).unwrap_or_else(|e| panic!("{args:?}: {e}")),
        };
        let on_twin: Vec<i64> = command(args)
            .query(&mut self.twin)
            .unwrap_or_else(|e| panic!("{args:?} on one server: {e}"));
        let comparable = |v: &[i64]| -> Vec<i64> {
            match limiter.kind {
                Kind::Rate | Kind::Blocked => v[..3].to_vec(),
                Kind::All => [&v[..3], &v[5..6]].concat(),
                Kind::Lease => vec![v[0], v[1], v[2], i64::from(v[5] > 0)],
            }
        };
        assert_eq!(
            comparable(&on_cluster),
            comparable(&on_twin),
            "{args:?}: {on_cluster:?} on the cluster, {on_twin:?} on one server"
        );
        let admitted = self.admitted.entry(limiter.label.clone()).or_default();
        admitted.0 += i64::from(on_cluster[0] == 0);
        admitted.1 += i64::from(on_twin[0] == 0);
        Some(Answer {
            cluster: on_cluster,
            twin: on_twin,
        })
    }

    /// Before any move: one call of every early limiter; both leases of
    /// each early lease key; every blocked key at its limit, then blocked.
    fn start(&mut self, cluster: &Cluster, driver: &mut Driver) {
        for limiter in self.limiters.clone().iter().filter(|l| l.early) {
            let call = &limiter.call;
            match limiter.kind {
                Kind::Rate | Kind::All => {
                    let answer = self.both(cluster, driver, limiter, call).expect("not moving yet");
                    assert_eq!(answer.cluster[0], 0, "{call:?}");
                }
                Kind::Lease => {
                    let held = (0..LEASES)
                        .map(|_| {
                            let answer = self.both(cluster, driver, limiter, call).expect("not moving yet");
                            assert!(answer.cluster[5] > 0 && answer.twin[5] > 0, "{call:?}");
                            (answer.cluster[5], answer.twin[5])
                        })
                        .collect();
                    self.leases.push((limiter.label.clone(), held));
                }
                Kind::Blocked => {
                    for _ in 0..LIMIT {
                        self.both(cluster, driver, limiter, call).expect("not moving yet");
                    }
                    let blocking = [call.clone(), strings(&["BLOCK", "3600"])].concat();
                    let answer = self
                        .both(cluster, driver, limiter, &blocking)
                        .expect("not moving yet");
                    assert_eq!(answer.cluster[..3], [1, LIMIT, 0], "{blocking:?}");
                    let value = self.value(cluster, driver, &limiter.label);
                    assert_eq!(value[0], b'B', "{}: {value:?}", limiter.label);
                    self.blocks.push((limiter.label.clone(), value));
                }
            }
        }
    }

    fn value(&self, cluster: &Cluster, driver: &mut Driver, key: &str) -> Vec<u8> {
        let v = driver
            .call(cluster, self.slot, &strings(&["GET", key]))
            .expect("GET");
        redis::from_redis_value(&v).expect("a value")
    }

    /// One call of every limiter. Returns the limiters answered `TRYAGAIN`.
    fn round(&mut self, cluster: &Cluster, driver: &mut Driver) -> BTreeSet<String> {
        let mut again = BTreeSet::new();
        for limiter in self.limiters.clone() {
            if self.both(cluster, driver, &limiter, &limiter.call).is_none() {
                again.insert(limiter.label.clone());
            }
        }
        again
    }

    /// `RL.RENEW` of the first lease taken on each early lease key, wherever
    /// the key is now.
    fn renew(&mut self, cluster: &Cluster, driver: &mut Driver) {
        for (key, held) in self.leases.clone() {
            let (lease, twin_lease) = held[0];
            let args = strings(&["RL.RENEW", &key, &lease.to_string(), "3600"]);
            let v = driver.call(cluster, self.slot, &args).expect("RL.RENEW");
            assert_eq!(redis::from_redis_value::<i64>(&v).unwrap(), 1, "{args:?}");
            let args = strings(&["RL.RENEW", &key, &twin_lease.to_string(), "3600"]);
            assert_eq!(
                command(&args).query::<i64>(&mut self.twin).unwrap(),
                1,
                "{args:?}"
            );
        }
    }

    /// After the move: the blocks and the leases taken before it are still
    /// there, the leases can be renewed and released on the new owner, and
    /// every limiter has admitted exactly what it does on one server.
    fn finish(&mut self, cluster: &Cluster, driver: &mut Driver) {
        for (key, before) in self.blocks.clone() {
            assert_eq!(
                self.value(cluster, driver, &key),
                before,
                "{key}: the block moved with the key"
            );
            // A query (quantity 0) answers `blocked` only on a blocked key,
            // with the time until the block ends.
            let limiter = self.limiter(&key).clone();
            let query = [limiter.call.clone(), strings(&["0"])].concat();
            let answer = self.both(cluster, driver, &limiter, &query).expect("moved");
            assert_eq!(answer.cluster[0], 1, "{key}: still blocked");
            assert!(
                (3000..=3600).contains(&answer.cluster[3]),
                "{key}: {:?}",
                answer.cluster
            );
        }
        for (key, held) in self.leases.clone() {
            let limiter = self.limiter(&key).clone();
            let peek = [limiter.call.clone(), strings(&["PEEK"])].concat();
            let answer = self.both(cluster, driver, &limiter, &peek).expect("moved");
            assert_eq!(
                answer.cluster[..3],
                [1, LEASES, 0],
                "{key}: both leases still held"
            );
            let ((renewed, renewed_twin), (released, released_twin)) = (held[0], held[1]);
            for (args, expected) in [
                (strings(&["RL.RENEW", &key, &renewed.to_string(), "7200"]), 1),
                (strings(&["RL.RELEASE", &key, &released.to_string()]), 1),
                (strings(&["RL.RELEASE", &key, &released.to_string()]), 0),
            ] {
                let v = driver.call(cluster, self.slot, &args).expect("moved");
                assert_eq!(redis::from_redis_value::<i64>(&v).unwrap(), expected, "{args:?}");
            }
            for (args, expected) in [
                (strings(&["RL.RENEW", &key, &renewed_twin.to_string(), "7200"]), 1),
                (strings(&["RL.RELEASE", &key, &released_twin.to_string()]), 1),
            ] {
                assert_eq!(
                    command(&args).query::<i64>(&mut self.twin).unwrap(),
                    expected,
                    "{args:?}"
                );
            }
        }
        // Enough rounds for every limiter to reach its limit; then one in
        // which every limiter refuses.
        for _ in 0..LIMIT {
            assert_eq!(
                self.round(cluster, driver),
                BTreeSet::new(),
                "no TRYAGAIN once moved"
            );
        }
        for limiter in self.limiters.clone() {
            let answer = self
                .both(cluster, driver, &limiter, &limiter.call)
                .expect("moved");
            assert_eq!(answer.cluster[0], 1, "{:?}: refused at the end", limiter.call);
        }
        for limiter in &self.limiters {
            let expected = match (limiter.kind, limiter.early) {
                (Kind::Lease, true) => LEASES + 1,
                (Kind::Lease, false) => LEASES,
                _ => LIMIT,
            };
            assert_eq!(
                self.admitted[&limiter.label],
                (expected, expected),
                "{}: units admitted (on the cluster, on one server)",
                limiter.label
            );
        }
        // Every key the twin holds, the new owner holds; the old one none.
        let twin_keys: i64 = cmd(&["DBSIZE"]).query(&mut self.twin).unwrap();
        let [source, target] = &cluster.nodes;
        assert_eq!(target.keys_in_slot(self.slot), twin_keys);
        poll("the old owner without the slot's keys", || {
            (source.keys_in_slot(self.slot) == 0).then_some(())
        });
    }
}

// ---------------------------------------------------------------------------
// Resharding key by key

/// `MIGRATE` `keys` from the first node to the second (the one-key form for
/// a single key, else `KEYS`), as `redis-cli --cluster reshard` does. Each
/// key arrives with the same bytes, and with an expiry no earlier than it
/// had and no later than the time `MIGRATE` took: it sends the time to
/// live, not the instant.
fn migrate(cluster: &Cluster, slot: u16, keys: &[String]) {
    let [source, target] = &cluster.nodes;
    let before: Vec<_> = keys.iter().map(|k| source.state(k, false)).collect();
    let port = target.port().to_string();
    let mut args = vec!["MIGRATE", "127.0.0.1", &port];
    match keys {
        [key] => args.extend([key.as_str(), "0", "10000"]),
        _ => {
            args.extend(["", "0", "10000", "KEYS"]);
            args.extend(keys.iter().map(String::as_str));
        }
    }
    let started = Instant::now();
    let reply: String = source.query(&args);
    let took_ms = i64::try_from(started.elapsed().as_millis()).unwrap() + 1;
    assert_eq!(reply, "OK", "{args:?}");
    let left = source.keys_of_slot(slot);
    for (key, (dump, at)) in keys.iter().zip(before) {
        assert!(dump.is_some() && at > 0, "{key}: {dump:?} {at}");
        let (dump_after, at_after) = target.state(key, true);
        assert_eq!(dump_after, dump, "{key}: the same bytes on the new node");
        assert!(
            (at..=at + took_ms).contains(&at_after),
            "{key}: expired at {at} ms, now at {at_after} ms ({took_ms} ms of MIGRATE)"
        );
        assert!(!left.contains(key), "{key}: still on the old node");
    }
}

/// `RL.ALL` over keys split between the two nodes while their slot moves
/// (some migrated, some not) is answered `TRYAGAIN` on both, and writes
/// nothing anywhere.
fn split_all_is_tryagain(cluster: &Cluster, slot: u16, limiter: &Limiter) {
    let [source, target] = &cluster.nodes;
    let on_source = source.keys_of_slot(slot);
    let states = || -> Vec<_> {
        limiter
            .keys
            .iter()
            .map(|k| match on_source.contains(k) {
                true => source.state(k, false),
                false => target.state(k, true),
            })
            .collect()
    };
    let split = limiter.keys.iter().filter(|k| on_source.contains(*k)).count();
    assert_eq!(split, 1, "{:?}: one key on each node", limiter.keys);
    let before = states();
    for (node, asking) in [(source, false), (target, true)] {
        let mut c = node.server.client();
        if asking {
            let _: () = cmd(&["ASKING"]).query(&mut c).unwrap();
        }
        let e = command(&limiter.call).query::<Value>(&mut c).unwrap_err();
        assert_eq!(
            e.code(),
            Some("TRYAGAIN"),
            "{:?} on {}: {e:?}",
            limiter.call,
            node.port()
        );
    }
    assert_eq!(states(), before, "{:?}: TRYAGAIN wrote nothing", limiter.call);
}

#[test]
fn limiters_stay_exact_while_a_slot_moves_key_by_key() {
    let cluster = Cluster::start(&[]);
    let (tag, slot) = cluster.tag_on_first();
    let [source, target] = &cluster.nodes;
    let mut driver = Driver::new(&cluster);
    let mut traffic = Traffic::new(&tag, slot);
    traffic.start(&cluster, &mut driver);
    assert_eq!((driver.moved, driver.asked), (0, 0));

    let s = slot.to_string();
    let _: () = target.query(&["CLUSTER", "SETSLOT", &s, "IMPORTING", &source.id]);
    let _: () = source.query(&["CLUSTER", "SETSLOT", &s, "MIGRATING", &target.id]);
    // Nothing moved yet: the existing keys answer on the old node; a new
    // key is made on the new one (ASK); RL.ALL over two new keys waits for
    // the end of the move (TRYAGAIN: the new node holds neither).
    let fresh = traffic.limiter("all:fresh").label.clone();
    assert_eq!(
        traffic.round(&cluster, &mut driver),
        BTreeSet::from([fresh.clone()])
    );
    assert!(
        driver.asked >= 7,
        "a new key is made where the slot goes: {}",
        driver.asked
    );

    // Half of the keys, among them one of each of two RL.ALL pairs.
    let k = |name: &str| format!("{tag}:{name}");
    let mut first: Vec<String> = ["all:0:a", "all:0:b", "all:1:a", "all:2:b", "lease:0"]
        .iter()
        .map(|n| k(n))
        .collect();
    for (short, _, _) in RATES {
        first.extend([k(&format!("{short}:0")), k(&format!("{short}:2"))]);
    }
    first.extend(["blocked:gcra", "blocked:fixed", "blocked:counter"].map(k));
    migrate(&cluster, slot, &first[..1]);
    for batch in first[1..].chunks(5) {
        migrate(&cluster, slot, batch);
    }
    let split = [traffic.limiter("all:1").clone(), traffic.limiter("all:2").clone()];
    for limiter in &split {
        split_all_is_tryagain(&cluster, slot, limiter);
    }
    let mut again = BTreeSet::from([fresh.clone()]);
    again.extend(split.iter().map(|l| l.label.clone()));
    assert_eq!(traffic.round(&cluster, &mut driver), again);
    // A lease on a moved key and one on a key not moved yet.
    traffic.renew(&cluster, &mut driver);

    // The rest, a few keys at a time, as long as the old node has any.
    loop {
        let left: Vec<String> = source.query(&["CLUSTER", "GETKEYSINSLOT", &s, "5"]);
        if left.is_empty() {
            break;
        }
        migrate(&cluster, slot, &left);
    }
    assert_eq!(traffic.round(&cluster, &mut driver), BTreeSet::from([fresh]));

    for node in [target, source] {
        let _: () = node.query(&["CLUSTER", "SETSLOT", &s, "NODE", &target.id]);
    }
    let moved = driver.moved;
    assert_eq!(traffic.round(&cluster, &mut driver), BTreeSet::new());
    assert_eq!(driver.moved, moved + 1, "the client learns the new owner once");
    traffic.finish(&cluster, &mut driver);
}

// ---------------------------------------------------------------------------
// Atomic slot migration

/// The slot migrations a node lists (`CLUSTER GETSLOTMIGRATIONS`), each
/// field as text.
fn migrations(node: &Node) -> Vec<HashMap<String, String>> {
    let jobs: Vec<Vec<Value>> = node.query(&["CLUSTER", "GETSLOTMIGRATIONS"]);
    let text = |v: &Value| match v {
        Value::Int(i) => i.to_string(),
        other => redis::from_redis_value::<String>(other).unwrap_or_default(),
    };
    jobs.iter()
        .map(|fields| fields.chunks(2).map(|kv| (text(&kv[0]), text(&kv[1]))).collect())
        .collect()
}

/// The state of the migration `name` on `node`, once it is one of `states`.
fn wait_for_state(node: &Node, name: &str, states: &[&str]) -> String {
    poll(
        &format!("migration {name} on {} in {states:?}", node.port()),
        || {
            let job = migrations(node).into_iter().find(|j| j["name"] == name)?;
            states
                .contains(&job["state"].as_str())
                .then(|| job["state"].clone())
        },
    )
}

/// Start moving `slot` from the first node to the second with
/// `CLUSTER MIGRATESLOTS`; its name, once it streams writes (the slot's
/// keys copied, the old node still serving it: `DEBUG SLOTMIGRATION
/// PREVENT-PAUSE` holds it there).
fn start_migration(cluster: &Cluster, slot: u16) -> String {
    let [source, target] = &cluster.nodes;
    let known: BTreeSet<String> = migrations(source)
        .into_iter()
        .map(|j| j["name"].clone())
        .collect();
    let s = slot.to_string();
    let ok: String = source.query(&[
        "CLUSTER",
        "MIGRATESLOTS",
        "SLOTSRANGE",
        &s,
        &s,
        "NODE",
        &target.id,
    ]);
    assert_eq!(ok, "OK");
    let name = poll("the new migration", || {
        migrations(source)
            .into_iter()
            .map(|j| j["name"].clone())
            .find(|n| !known.contains(n))
    });
    wait_for_state(source, &name, &["waiting-to-pause"]);
    // The slot's keys are on the new node already, not served there yet.
    assert_eq!(target.keys_in_slot(slot), source.keys_in_slot(slot));
    name
}

#[test]
fn limiters_stay_exact_through_atomic_slot_migrations() {
    let cluster = Cluster::start(&["--enable-debug-command", "yes"]);
    let [source, target] = &cluster.nodes;
    let kind = ServerKind::of(&mut source.server.client());
    let has: Vec<Value> = source.query(&["COMMAND", "INFO", "CLUSTER|MIGRATESLOTS"]);
    if !matches!(has.first(), Some(v) if *v != Value::Nil) {
        note(&format!(
            "atomic slot migration skipped: {} has no CLUSTER MIGRATESLOTS (Valkey 9.0+)",
            kind.name()
        ));
        return;
    }
    let (tag, slot) = cluster.tag_on_first();
    let mut driver = Driver::new(&cluster);
    let mut traffic = Traffic::new(&tag, slot);
    traffic.start(&cluster, &mut driver);
    // Limiters no call touches while the slot moves: their bytes and their
    // absolute expiry arrive as they were.
    let idle: Vec<String> = RATES
        .iter()
        .map(|(short, _, _)| format!("{tag}:idle:{short}"))
        .collect();
    for ((_, name, params), key) in RATES.iter().zip(&idle) {
        let call = strings(&[&[*name, key.as_str()], *params].concat());
        let _: Vec<i64> = redis::from_redis_value(&driver.call(&cluster, slot, &call).unwrap()).unwrap();
        let _: Vec<i64> = command(&call).query(&mut traffic.twin).unwrap();
    }
    let idle_before: Vec<_> = idle.iter().map(|k| source.state(k, false)).collect();

    for node in &cluster.nodes {
        let _: () = node.query(&["DEBUG", "SLOTMIGRATION", "PREVENT-PAUSE", "1"]);
    }
    // A migration cancelled halfway: the new node drops what it had
    // copied; the old one carries on, with every write made meanwhile.
    let name = start_migration(&cluster, slot);
    assert_eq!(traffic.round(&cluster, &mut driver), BTreeSet::new());
    let _: () = source.query(&["CLUSTER", "CANCELSLOTMIGRATIONS"]);
    assert_eq!(
        wait_for_state(source, &name, &["cancelled", "failed", "success"]),
        "cancelled"
    );
    assert_eq!(
        wait_for_state(target, &name, &["cancelled", "failed", "success"]),
        "failed"
    );
    poll("the new node without the cancelled copy", || {
        (target.keys_in_slot(slot) == 0).then_some(())
    });
    assert_eq!(source.owner(slot), Some(source.port()));
    assert_eq!(traffic.round(&cluster, &mut driver), BTreeSet::new());

    // Then one carried through: the writes made while it streams travel too.
    let name = start_migration(&cluster, slot);
    assert_eq!(traffic.round(&cluster, &mut driver), BTreeSet::new());
    traffic.renew(&cluster, &mut driver);
    for node in &cluster.nodes {
        let _: () = node.query(&["DEBUG", "SLOTMIGRATION", "PREVENT-PAUSE", "0"]);
    }
    wait_for_state(source, &name, &["success"]);
    wait_for_state(target, &name, &["success"]);
    poll("both nodes seeing the new owner", || {
        cluster
            .nodes
            .iter()
            .all(|n| n.owner(slot) == Some(target.port()))
            .then_some(())
    });
    let moved = driver.moved;
    assert_eq!(traffic.round(&cluster, &mut driver), BTreeSet::new());
    assert_eq!(driver.moved, moved + 1, "the client learns the new owner once");
    assert_eq!(driver.asked, 0, "no ASK: the slot has one owner at any time");
    traffic.finish(&cluster, &mut driver);
    for (key, before) in idle.iter().zip(idle_before) {
        assert_eq!(
            target.state(key, false),
            before,
            "{key}: the same bytes and expiry"
        );
    }
}

// ---------------------------------------------------------------------------
// Loading a full sync in the background

/// What a replica did while it loaded a full sync.
#[derive(Debug, PartialEq, Eq)]
enum Load {
    /// `async_loading:1`, with the marker's old value and the old key count
    /// read meanwhile.
    Background(Option<Vec<u8>>, i64),
    /// `loading:1`: the replica answered `LOADING` until it was done.
    Blocking,
}

fn info(c: &mut Connection, section: &str) -> HashMap<String, String> {
    let text: String = cmd(&["INFO", section]).query(c).expect("INFO");
    text.lines()
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.to_string(), v.trim().to_string()))
        .collect()
}

#[test]
fn a_swapdb_replica_loads_a_full_sync_in_the_background() {
    if common::module_only() {
        return; // the module's shared values
    }
    // A backlog as small as it gets, which a 256 KiB write overruns: the
    // replica, cut off, cannot continue where it stopped, and syncs anew
    // from the same master (the same history: the case that loads in the
    // background).
    let master = Server::master(&["--repl-backlog-size", "16384"]);
    let mut m = master.client();
    let port = master.port.to_string();
    let replica = Server::start_with(
        &[
            "--replicaof",
            "127.0.0.1",
            &port,
            "--repl-diskless-load",
            "swapdb",
        ],
        true,
    );
    let mut r = replica.client();
    let kind = ServerKind::of(&mut r);
    poll("the replica's first sync", || {
        (info(&mut r, "replication")["master_link_status"] == "up").then_some(())
    });
    // Limiters of every kind: a few hundred keys, each loaded `key-load-
    // delay` µs late, so that the load lasts long enough to be seen.
    for i in 0..150 {
        for (short, name, params) in RATES {
            let key = format!("{short}:{i}");
            let _: Vec<i64> = cmd(&[&[name, &key], params].concat()).query(&mut m).unwrap();
        }
        let lease = format!("lease:{i}");
        let _: Vec<i64> = cmd(&["RL.CONCURRENCY", &lease, "2", "3600"])
            .query(&mut m)
            .unwrap();
        let (a, b) = (format!("{{user:{i}}}:a"), format!("{{user:{i}}}:b"));
        let all = [
            "RL.ALL",
            "2",
            &a,
            &b,
            "GCRA",
            "3",
            "1",
            "3600",
            "SLIDING_LOG",
            "4",
            "3600",
        ];
        let _: Vec<i64> = cmd(&all).query(&mut m).unwrap();
    }
    for _ in 0..5 {
        let _: Vec<i64> = cmd(&["RL.GCRA", "blocked", "3", "1", "3600", "BLOCK", "3600"])
            .query(&mut m)
            .unwrap();
    }
    let marker = ["RL.FIXED", "marker", "1000000", "1000000000"];
    let _: Vec<i64> = cmd(&marker).query(&mut m).unwrap();
    let acked: i64 = cmd(&["WAIT", "1", "20000"]).query(&mut m).unwrap();
    assert_eq!(acked, 1);
    let has_async_loading = info(&mut r, "persistence").contains_key("async_loading");

    let mut delay_us = 1000;
    let full_syncs = |m: &mut Connection| info(m, "stats")["sync_full"].parse::<i64>().unwrap();
    let load = common::retry(ATTEMPTS, "seeing the replica load", |_| {
        let _: () = cmd(&["CONFIG", "SET", "key-load-delay", &delay_us.to_string()])
            .query(&mut r)
            .unwrap();
        // Let the replica answer between every few keys it loads.
        let _: () = cmd(&["CONFIG", "SET", "loading-process-events-interval-bytes", "1024"])
            .query(&mut r)
            .unwrap();
        let old: Option<Vec<u8>> = cmd(&["GET", "marker"]).query(&mut r).unwrap();
        let old_keys: i64 = cmd(&["DBSIZE"]).query(&mut r).unwrap();
        // Cut the replica off and overrun the backlog at once; the marker
        // changes, so that its old value tells the old data set.
        let mut pipe = redis::pipe();
        pipe.atomic()
            .cmd("CLIENT")
            .arg(&["KILL", "TYPE", "replica"])
            .ignore()
            .cmd(marker[0])
            .arg(&marker[1..])
            .ignore()
            .cmd("SET")
            .arg("filler")
            .arg(vec![b'x'; 256 * 1024])
            .ignore();
        let syncs = full_syncs(&mut m);
        let () = pipe.query(&mut m).unwrap();
        let offset = info(&mut m, "replication")["master_repl_offset"]
            .parse::<i64>()
            .unwrap();
        let load = poll("the replica's second full sync", || {
            let persistence = info(&mut r, "persistence");
            let flag = |name: &str| persistence.get(name).is_some_and(|v| v == "1");
            if flag("async_loading") {
                let during: Option<Vec<u8>> = cmd(&["GET", "marker"]).query(&mut r).unwrap();
                let keys: i64 = cmd(&["DBSIZE"]).query(&mut r).unwrap();
                assert_eq!(
                    (during.as_ref(), keys),
                    (old.as_ref(), old_keys),
                    "the old data set"
                );
                return Some(Some(Load::Background(during, keys)));
            }
            if flag("loading") {
                return Some(Some(Load::Blocking));
            }
            let replication = info(&mut r, "replication");
            let done = replication["master_link_status"] == "up"
                && replication
                    .get("slave_repl_offset")
                    .and_then(|o| o.parse::<i64>().ok())
                    >= Some(offset);
            done.then_some(None)
        });
        // Seen, or done unseen: a full sync faster than the polls (slower
        // next time), or a partial one (the backlog not yet trimmed).
        if load.is_none() && full_syncs(&mut m) > syncs {
            delay_us = (delay_us * 2).min(8000);
        }
        load
    });
    let acked: i64 = cmd(&["WAIT", "1", "20000"]).query(&mut m).unwrap();
    assert_eq!(acked, 1);
    if has_async_loading {
        assert!(matches!(load, Load::Background(..)), "{}: {load:?}", kind.name());
        assert!(
            !replica.log().contains("not aware of async replication"),
            "the module is aware of it"
        );
    } else {
        note(&format!(
            "loading in the background skipped: {} has no async loading; it loaded blocking",
            kind.name()
        ));
        assert_eq!(load, Load::Blocking, "{}", kind.name());
    }
    // Then the replica holds the master's exact bytes and expiries.
    let keys: Vec<String> = cmd(&["KEYS", "*"]).query(&mut m).unwrap();
    assert!(keys.len() > 1000, "{}", keys.len());
    for key in &keys {
        assert_eq!(
            common::snapshot(&mut r, key),
            common::snapshot(&mut m, key),
            "{key} on the replica and the master"
        );
    }
    let sizes: (i64, i64) = (
        cmd(&["DBSIZE"]).query(&mut m).unwrap(),
        cmd(&["DBSIZE"]).query(&mut r).unwrap(),
    );
    assert_eq!(sizes.0, sizes.1);
}
