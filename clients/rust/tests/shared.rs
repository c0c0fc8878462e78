//! One limit, two services: the layer here and the Python client's
//! middleware (clients/contract/apps/app.py, Starlette) on one server,
//! each limiting `GET /` by `X-Client-Id` with the limit named `api` (GCRA,
//! 5 per minute in bursts of 5), default prefix. Five requests in all
//! pass, the sixth is refused, whichever service gets it; the keys in Redis
//! are the contract's layout, one per client.
//!
//! Needs a Python with the Python client and the app's dependencies:
//! `RL_PYTHON` (`.ci/client-rust` installs them in a venv).

mod common;

use std::io::{BufRead, BufReader};
use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use axum::routing::get;
use axum::Router;
use common::http::{app_handler, client_id, get_path, serve};
use common::{Kind, Server};
use redis_ratelimit_client::aio::RateLimits;
use redis_ratelimit_client::layer::RateLimitLayer;
use redis_ratelimit_client::Limit;

/// The other service, stopped when dropped.
struct App(Child);

impl Drop for App {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Start `app.py` against the server on `redis_port`: its address once it
/// says it listens.
fn python_app(redis_port: u16) -> (App, SocketAddr) {
    let python = std::env::var("RL_PYTHON").expect("RL_PYTHON: a Python with the Python client");
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../contract/apps/app.py");
    let mut child = Command::new(python)
        .arg(script)
        .env("PORT", "0")
        .env("REDIS_PORT", redis_port.to_string())
        .stdout(Stdio::piped())
        .spawn()
        .expect("start app.py");
    let stdout = child.stdout.take().unwrap();
    let app = App(child);
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            if let Some(port) = line.strip_prefix("listening ") {
                let _ = tx.send(port.trim().parse::<u16>().unwrap());
            }
        }
    });
    let port = rx
        .recv_timeout(Duration::from_secs(30))
        .expect("app.py says `listening <port>` within 30 s");
    (app, SocketAddr::from(([127, 0, 0, 1], port)))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the Python client (RL_PYTHON), run by .ci/client-rust"]
async fn a_python_service_and_this_layer_share_one_limit() {
    let server = Server::start(Kind::Module);
    let (_python, python) = python_app(server.port);
    let layer = RateLimitLayer::new(
        RateLimits::new(server.redis()),
        "api",
        Limit::gcra_with_burst(5, Duration::from_secs(60), 5).unwrap(),
    )
    .unwrap()
    .key(client_id);
    layer.check().await.unwrap();
    let rust = serve(Router::new().route("/", get(app_handler)).layer(layer)).await;
    // The sixth request goes to Rust for one client, to Python for the other.
    for (client, services) in [("shared-a", [python, rust]), ("shared-b", [rust, python])] {
        let mut statuses = Vec::new();
        for i in 0..6 {
            let r = get_path(services[i % 2], "/", &[("x-client-id", client)]).await;
            statuses.push(r.status);
        }
        assert_eq!(statuses, [200, 200, 200, 200, 200, 429], "{client}");
    }
    let mut admin = server.client();
    let mut keys: Vec<String> = redis::cmd("KEYS").arg("*").query(&mut admin).unwrap();
    keys.sort();
    assert_eq!(keys, ["ratelimit:{shared-a}:api", "ratelimit:{shared-b}:api"]);
}
