//! Redis Cluster: three masters on loopback, each with the module, slots
//! assigned by `redis-cli --cluster create` (`RL_CLI_BIN`, default
//! `redis-cli`); a cluster-aware client drives every command of
//! `common::COMMANDS` the module registers by default over keys in many
//! slots, RL.ALL over keys that share a slot (hash tags) or do not
//! (CROSSSLOT), and leases taken, renewed and released over keys in many
//! slots.

mod common;

use common::{cmd, rate_commands, Reply, Server, SAMPLE_LIMIT};
use redis::cluster::ClusterClient;
use std::process::Command;
use std::time::{Duration, Instant};

fn cluster_state_ok(s: &Server) -> bool {
    let info: String = cmd(&["CLUSTER", "INFO"])
        .query(&mut s.client())
        .unwrap_or_default();
    info.contains("cluster_state:ok")
}

#[test]
fn every_command_routes_and_runs_in_a_cluster() {
    let args = [
        "--cluster-enabled",
        "yes",
        "--cluster-config-file",
        "nodes.conf",
        "--cluster-node-timeout",
        "5000",
    ];
    let nodes: Vec<Server> = (0..3).map(|_| Server::start_with(&args, true)).collect();
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
    while !nodes.iter().all(cluster_state_ok) {
        assert!(Instant::now() < deadline, "the cluster never became ok");
        std::thread::sleep(Duration::from_millis(50));
    }

    let client = ClusterClient::new(nodes.iter().map(Server::url).collect::<Vec<_>>()).unwrap();
    let mut c = client.get_connection().unwrap();
    // Nothing in the samples refills or ends between one key's calls: each
    // key allows `SAMPLE_LIMIT` calls, then refuses.
    let commands: Vec<(&str, &[&str])> = rate_commands().map(|s| (s.name, s.args)).collect();
    for i in 0..60 {
        for &(name, params) in &commands {
            let key = format!("{}:user:{i}", name.to_lowercase());
            for expected_remaining in (0..SAMPLE_LIMIT).rev() {
                let reply: Reply = common::command(name).arg(&key).arg(params).query(&mut c).unwrap();
                assert_eq!(
                    reply.counts(),
                    (false, SAMPLE_LIMIT, expected_remaining),
                    "{name} {key}"
                );
            }
            let reply: Reply = common::command(name).arg(&key).arg(params).query(&mut c).unwrap();
            assert_eq!(reply.counts(), (true, SAMPLE_LIMIT, 0), "{name} {key}");
        }
    }
    // Every node holds a share of the limiters, 60 per command.
    let counts: Vec<i64> = nodes
        .iter()
        .map(|n| cmd(&["DBSIZE"]).query(&mut n.client()).unwrap())
        .collect();
    assert_eq!(
        counts.iter().sum::<i64>(),
        60 * commands.len() as i64,
        "{counts:?}"
    );
    assert!(counts.iter().all(|&n| n > 0), "{counts:?}");

    // Blocks through the cluster: a key at its limit is blocked on the node
    // that owns it, in its own value, and every later call there refuses.
    for i in 0..20 {
        for &(name, params) in &commands {
            let key = format!("{}:user:{i}", name.to_lowercase());
            let blocked: Reply = common::command(name)
                .arg(&key)
                .arg(params)
                .arg(&["BLOCK", "600"])
                .query(&mut c)
                .unwrap();
            assert_eq!(blocked.counts(), (true, SAMPLE_LIMIT, 0), "{name} {key}");
            assert!(blocked.retry_after >= 600, "{name} {key}: {blocked:?}");
            let value: Vec<u8> = redis::cmd("GET").arg(&key).query(&mut c).unwrap();
            assert_eq!(value[0], b'B', "{name} {key}");
            let again: Reply = common::command(name)
                .arg(&key)
                .arg(params)
                .arg("0")
                .query(&mut c)
                .unwrap();
            assert!(again.blocked, "{name} {key}: {again:?}");
            let after: Vec<u8> = redis::cmd("GET").arg(&key).query(&mut c).unwrap();
            assert_eq!(after, value, "{name} {key}");
        }
    }

    // Reservations, debts and grants through the cluster, on keys in many
    // slots: one a second with no burst.
    for i in 0..20 {
        let key = format!("paced:{i}");
        let call = |extra: &[&str]| {
            let mut call = common::command("RL.GCRA");
            call.arg(&key).arg(&["0", "1", "1"]).arg(extra);
            call
        };
        let first: Vec<i64> = call(&["WAIT", "5"]).query(&mut c).unwrap();
        assert_eq!(first, [0, 1, 0, -1, 1], "{key}");
        let reserved: Vec<i64> = call(&["WAIT", "5"]).query(&mut c).unwrap();
        assert_eq!(reserved[..3], [0, 1, 0], "{key}");
        assert!((0..=1).contains(&reserved[3]), "{key}: {reserved:?}");
        let forced: Vec<i64> = call(&["3", "FORCE"]).query(&mut c).unwrap();
        assert_eq!(forced[..4], [0, 1, 0, -1], "{key}");
        let none: Vec<i64> = call(&["5", "AT_MOST"]).query(&mut c).unwrap();
        assert_eq!((none[0], none[5]), (1, 0), "{key}");
    }

    // One user's limiters kept together with a hash tag.
    for &(name, params) in &commands {
        let key = format!("{{user:42}}:{}", name.to_lowercase());
        let reply: Reply = common::command(name).arg(&key).arg(params).query(&mut c).unwrap();
        assert_eq!(reply.counts(), (false, SAMPLE_LIMIT, SAMPLE_LIMIT - 1), "{name}");
    }
    let slot: i64 = redis::cmd("CLUSTER")
        .arg("KEYSLOT")
        .arg("{user:42}:rl.gcra")
        .query(&mut c)
        .unwrap();
    for &(name, _) in &commands {
        let other: i64 = redis::cmd("CLUSTER")
            .arg("KEYSLOT")
            .arg(format!("{{user:42}}:{}", name.to_lowercase()))
            .query(&mut c)
            .unwrap();
        assert_eq!(other, slot);
    }

    // The server knows where the key is, for routing and ACLs.
    let mut direct = nodes[0].client();
    for &(name, params) in &commands {
        let mut getkeys = redis::cmd("COMMAND");
        getkeys
            .arg("GETKEYS")
            .arg(common::translate(&[name, "some:key"]))
            .arg(params);
        let keys: Vec<String> = getkeys.query(&mut direct).unwrap();
        assert_eq!(keys, vec!["some:key".to_string()], "{name}");
    }

    // RL.ALL over one user's limiters, kept in one slot by a hash tag: the
    // client routes it to the node that owns the slot, and every limit is
    // judged there; a second call sees the first one's units.
    let all = |tag: &str| {
        let mut call = common::command("RL.ALL");
        call.arg(2)
            .arg(format!("{{{tag}}}:burst"))
            .arg(format!("{{{tag}}}:hourly"))
            .arg(&["GCRA", "2", "1", "3600"])
            .arg(&["SLIDING_LOG", "2", "3600"]);
        call
    };
    for tag in ["user:7", "user:8", "tenant:1"] {
        let first: Vec<i64> = all(tag).query(&mut c).unwrap();
        assert_eq!(first, [0, 2, 1, -1, 3600, 2], "{tag}");
        let second: Vec<i64> = all(tag).query(&mut c).unwrap();
        assert_eq!(second[..3], [0, 2, 0], "{tag}");
        assert_eq!(second[5], 2, "{tag}");
        // The hourly log refuses a third: nothing is counted, not even by the
        // burst, which had room for it.
        let third: Vec<i64> = all(tag).query(&mut c).unwrap();
        assert_eq!(third[..4], [1, 2, 0, 3600], "{tag}");
        assert_eq!(third[5], 2, "{tag}");
        let burst: Reply = common::command("RL.GCRA")
            .arg(format!("{{{tag}}}:burst"))
            .arg(&["2", "1", "3600", "0"])
            .query(&mut c)
            .unwrap();
        assert_eq!(burst.counts(), (false, 3, 1), "{tag}");
    }
    // RL.ALL with BLOCK through the cluster: the hourly log refuses and is
    // blocked, the burst is neither counted nor blocked.
    let first: Vec<i64> = all("user:9").query(&mut c).unwrap();
    assert_eq!(first, [0, 2, 1, -1, 3600, 2]);
    let burst: Vec<u8> = redis::cmd("GET").arg("{user:9}:burst").query(&mut c).unwrap();
    let blocked: Vec<i64> = all("user:9").arg(&["2", "BLOCK", "600"]).query(&mut c).unwrap();
    assert_eq!(blocked, [1, 2, 0, 3600, 3600, 2]);
    let hourly: Vec<u8> = redis::cmd("GET").arg("{user:9}:hourly").query(&mut c).unwrap();
    assert_eq!(hourly[0], b'B');
    let after: Vec<u8> = redis::cmd("GET").arg("{user:9}:burst").query(&mut c).unwrap();
    assert_eq!(after, burst);
    // A refund through the cluster: both limits get their two units back,
    // are rested, and start again as new.
    for tag in ["user:7", "user:8", "tenant:1"] {
        let refunded: Vec<i64> = all(tag).arg("2").arg("REFUND").query(&mut c).unwrap();
        assert_eq!(refunded, [0, 2, 2, -1, 0, 2], "{tag}");
        let again: Vec<i64> = all(tag).query(&mut c).unwrap();
        assert_eq!(again, [0, 2, 1, -1, 3600, 2], "{tag}");
    }
    // Keys in different slots: the server refuses the command before it
    // runs (CROSSSLOT), on whichever node receives it.
    let (a, b) = ("user:1:burst", "user:2:hourly");
    let slots: Vec<i64> = [a, b]
        .iter()
        .map(|k| cmd(&["CLUSTER", "KEYSLOT", k]).query(&mut direct).unwrap())
        .collect();
    assert_ne!(slots[0], slots[1]);
    for node in &nodes {
        let e = cmd(&["RL.ALL", "2", a, b, "FIXED", "3", "60", "FIXED", "3", "60"])
            .query::<redis::Value>(&mut node.client())
            .unwrap_err();
        assert_eq!(e.code(), Some("CROSSSLOT"), "{e:?}");
    }
    // COMMAND GETKEYS lists every key of RL.ALL.
    let all = common::translate(&[
        "RL.ALL",
        "3",
        "k1",
        "k2",
        "k3",
        "FIXED",
        "1",
        "1",
        "GCRA",
        "1",
        "1",
        "1",
        "SLIDING_LOG",
        "1",
        "1",
    ]);
    let mut getkeys = redis::cmd("COMMAND");
    getkeys.arg("GETKEYS").arg(all);
    let keys: Vec<String> = getkeys.query(&mut direct).unwrap();
    assert_eq!(keys, ["k1", "k2", "k3"]);

    // Leases on keys in many slots: each taken, refused at the limit,
    // renewed and released through the node that owns its key.
    let mut lease_keys = Vec::new();
    for i in 0..30 {
        let key = format!("jobs:tenant:{i}");
        let take = || {
            let mut call = common::command("RL.CONCURRENCY");
            call.arg(&key).arg(&["2", "3600"]);
            call
        };
        let mut ids = Vec::new();
        for remaining in [1, 0] {
            let v: Vec<i64> = take().query(&mut c).unwrap();
            assert_eq!(v[..5], [0, 2, remaining, -1, 3600], "{key}");
            ids.push(v[5]);
        }
        let refused: Vec<i64> = take().query(&mut c).unwrap();
        assert_eq!(refused, [1, 2, 0, 3600, 3600, 0], "{key}");
        let renew = |id: i64, c: &mut redis::cluster::ClusterConnection| -> i64 {
            common::command("RL.RENEW")
                .arg(&key)
                .arg(id)
                .arg(60)
                .query(c)
                .unwrap()
        };
        let release = |id: i64, c: &mut redis::cluster::ClusterConnection| -> i64 {
            common::command("RL.RELEASE").arg(&key).arg(id).query(c).unwrap()
        };
        assert_eq!(renew(ids[0], &mut c), 1, "{key}");
        assert_eq!(release(ids[0], &mut c), 1, "{key}");
        assert_eq!(release(ids[0], &mut c), 0, "{key}");
        assert_eq!(renew(ids[0], &mut c), 0, "{key}");
        let again: Vec<i64> = take().query(&mut c).unwrap();
        assert_eq!(again[..3], [0, 2, 0], "{key}");
        lease_keys.push(key);
    }
    let slots: std::collections::BTreeSet<i64> = lease_keys
        .iter()
        .map(|k| cmd(&["CLUSTER", "KEYSLOT", k]).query(&mut direct).unwrap())
        .collect();
    assert!(slots.len() > 20, "{slots:?}");
    for args in [
        &["RL.CONCURRENCY", "jobs:x", "2", "60"][..],
        &["RL.RELEASE", "jobs:x", "7"],
        &["RL.RENEW", "jobs:x", "7", "60"],
    ] {
        let mut getkeys = redis::cmd("COMMAND");
        getkeys.arg("GETKEYS").arg(common::translate(args));
        let keys: Vec<String> = getkeys.query(&mut direct).unwrap();
        assert_eq!(keys, ["jobs:x"], "{args:?}");
    }
}
