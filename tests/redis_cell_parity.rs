//! Side by side with redis-cell's `CL.THROTTLE` (opt-in: needs its module).
//!
//! ```sh
//! RL_CELL_MODULE=/path/to/libredis_cell.so cargo test --test redis_cell_parity -- --ignored
//! ```
//!
//! Both modules are loaded into one server and given the same arguments in
//! one transaction. `blocked`, `limit` and `remaining` must be equal; times
//! may differ only by redis-cell truncating where this module rounds up.

mod common;

use common::{cmd, Reply, Server};

#[test]
#[ignore = "needs RL_CELL_MODULE pointing at redis-cell's .so"]
fn gcra_replies_equal_cl_throttle() {
    let cell = std::env::var("RL_CELL_MODULE").expect("RL_CELL_MODULE");
    let s = Server::start_with(&["--loadmodule", &cell], true);
    let mut c = s.client();
    let cases: &[(&str, &[&str])] = &[
        ("a", &["15", "30", "60"]),
        ("a", &["15", "30", "60"]),
        ("a", &["15", "30", "60", "10"]),
        ("a", &["15", "30", "60", "10"]),
        ("a", &["15", "30", "60", "0"]),
        ("b", &["0", "1", "10"]),
        ("b", &["0", "1", "10"]),
        ("c", &["2", "3", "1"]),
        ("c", &["2", "3", "1"]),
        ("c", &["2", "3", "1"]),
        ("c", &["2", "3", "1"]),
        ("d", &["5", "1", "100", "7"]),
        ("e", &["99", "7", "3600", "50"]),
        ("e", &["99", "7", "3600", "50"]),
        ("e", &["99", "7", "3600", "1"]),
    ];
    for (key, args) in cases {
        let mut cell_args = vec!["CL.THROTTLE", key];
        cell_args.extend_from_slice(args);
        let rl_key = format!("rl:{key}");
        let mut rl_args = vec!["RL.GCRA", rl_key.as_str()];
        rl_args.extend_from_slice(args);
        let (cell, rl): (Reply, Reply) = redis::pipe()
            .atomic()
            .add_command(cmd(&cell_args))
            .add_command(cmd(&rl_args))
            .query(&mut c)
            .unwrap();
        assert_eq!(cell.counts(), rl.counts(), "{args:?}: cell {cell:?}, rl {rl:?}");
        for (field, cell_time, rl_time) in [
            ("retry_after", cell.retry_after, rl.retry_after),
            ("reset", cell.reset, rl.reset),
        ] {
            let diff = rl_time - cell_time;
            assert!(
                diff == 0 || (diff == 1 && cell_time >= 0),
                "{args:?} {field}: cell {cell:?}, rl {rl:?}"
            );
        }
    }
}
