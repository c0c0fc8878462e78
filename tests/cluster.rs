//! Redis Cluster: three masters on loopback, each with the module, slots
//! assigned by `redis-cli --cluster create` (`RL_CLI_BIN`, default
//! `redis-cli`); a cluster-aware client drives all five commands over keys in
//! many slots.

mod common;

use common::{cmd, Server};
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
fn all_five_commands_route_and_run_in_a_cluster() {
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
    // The epoch-aligned windows are 10^9 s long, so no window ends between
    // one key's calls (the next boundary is in 2033).
    let commands: [(&str, &[&str]); 5] = [
        ("RL.GCRA", &["2", "1", "3600"]),
        ("RL.TOKEN_BUCKET", &["3", "1", "3600"]),
        ("RL.FIXED", &["3", "1000000000"]),
        ("RL.SLIDING_LOG", &["3", "3600"]),
        ("RL.SLIDING_COUNTER", &["3", "1000000000"]),
    ];
    for i in 0..60 {
        for (name, params) in commands {
            let key = format!("{}:user:{i}", name.to_lowercase());
            for expected_remaining in [2, 1, 0] {
                let reply: Vec<i64> = redis::cmd(name).arg(&key).arg(params).query(&mut c).unwrap();
                assert_eq!(reply[..3], [0, 3, expected_remaining], "{name} {key}");
            }
            let reply: Vec<i64> = redis::cmd(name).arg(&key).arg(params).query(&mut c).unwrap();
            assert_eq!(reply[..3], [1, 3, 0], "{name} {key}");
        }
    }
    // Every node holds a share of the 300 limiters.
    let counts: Vec<i64> = nodes
        .iter()
        .map(|n| cmd(&["DBSIZE"]).query(&mut n.client()).unwrap())
        .collect();
    assert_eq!(counts.iter().sum::<i64>(), 300, "{counts:?}");
    assert!(counts.iter().all(|&n| n > 0), "{counts:?}");

    // One user's limiters kept together with a hash tag.
    for (name, params) in commands {
        let key = format!("{{user:42}}:{}", name.to_lowercase());
        let reply: Vec<i64> = redis::cmd(name).arg(&key).arg(params).query(&mut c).unwrap();
        assert_eq!(reply[..3], [0, 3, 2]);
    }
    let slot: i64 = redis::cmd("CLUSTER")
        .arg("KEYSLOT")
        .arg("{user:42}:rl.gcra")
        .query(&mut c)
        .unwrap();
    for (name, _) in commands {
        let other: i64 = redis::cmd("CLUSTER")
            .arg("KEYSLOT")
            .arg(format!("{{user:42}}:{}", name.to_lowercase()))
            .query(&mut c)
            .unwrap();
        assert_eq!(other, slot);
    }

    // The server knows where the key is, for routing and ACLs.
    let mut direct = nodes[0].client();
    for (name, params) in commands {
        let mut getkeys = redis::cmd("COMMAND");
        getkeys.arg("GETKEYS").arg(name).arg("some:key").arg(params);
        let keys: Vec<String> = getkeys.query(&mut direct).unwrap();
        assert_eq!(keys, vec!["some:key".to_string()], "{name}");
    }
}
