//! A rate-limited HTTP handler with the `redis` crate and RL.ALL: two
//! limits, one decision.
//!
//! Each client (the X-Client-Id header) has two policies, decided together
//! by one RL.ALL call (a request counts against both only when both allow
//! it):
//! - "burst": 3 at once, then one every 10 seconds (GCRA);
//! - "hourly": 3 per hour (an exact sliding log).
//!
//! The reply maps onto the IETF rate-limit header fields
//! (draft-ietf-httpapi-ratelimit-headers-10): RateLimit-Policy lists the
//! policies, RateLimit reports the binding one, and a refusal is a 429 with
//! Retry-After.
//!
//! ```sh
//! REDIS_PORT=6379 cargo run --example http_limiter   # serves, then calls itself 4 times
//! ```

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};

/// A policy: its name, its algorithm and parameters in RL.ALL, and the
/// quota and window (seconds) it advertises.
struct Policy {
    name: &'static str,
    spec: &'static [&'static str],
    quota: u64,
    window: u64,
}

const POLICIES: [Policy; 2] = [
    Policy {
        name: "burst",
        spec: &["GCRA", "2", "1", "10"],
        quota: 3,
        window: 30,
    },
    Policy {
        name: "hourly",
        spec: &["SLIDING_LOG", "3", "3600"],
        quota: 3,
        window: 3600,
    },
];

fn policy_header() -> String {
    POLICIES
        .iter()
        .map(|p| format!("\"{}\";q={};w={}", p.name, p.quota, p.window))
        .collect::<Vec<_>>()
        .join(", ")
}

/// (status, headers) for one request of this client.
fn rate_limit(
    con: &mut redis::Connection,
    client_id: &str,
) -> redis::RedisResult<(u16, Vec<(String, String)>)> {
    let mut cmd = redis::cmd("RL.ALL");
    cmd.arg(POLICIES.len());
    for p in &POLICIES {
        // One hash tag per client keeps its limiters in one Cluster slot.
        cmd.arg(format!("ratelimit:{{{client_id}}}:{}", p.name));
    }
    for p in &POLICIES {
        cmd.arg(p.spec);
    }
    let (blocked, _limit, remaining, retry_after, reset, position): (i64, i64, i64, i64, i64, usize) =
        cmd.query(con)?;
    let binding = POLICIES.get(position.wrapping_sub(1)).map_or("?", |p| p.name);
    let mut headers = vec![
        ("RateLimit-Policy".to_string(), policy_header()),
        (
            "RateLimit".to_string(),
            format!("\"{binding}\";r={remaining};t={reset}"),
        ),
    ];
    if blocked == 1 {
        headers.push(("Retry-After".to_string(), retry_after.to_string()));
        return Ok((429, headers));
    }
    Ok((200, headers))
}

/// A one-request-per-connection HTTP server: enough for the example.
fn serve(listener: TcpListener, mut con: redis::Connection) {
    for stream in listener.incoming() {
        let Ok(mut stream) = stream else { continue };
        let mut client_id = String::from("anonymous");
        let mut reader = BufReader::new(&mut stream);
        let mut line = String::new();
        while reader.read_line(&mut line).is_ok_and(|n| n > 0) && line != "\r\n" {
            if let Some(value) = line.to_ascii_lowercase().strip_prefix("x-client-id:") {
                client_id = value.trim().to_string();
            }
            line.clear();
        }
        let (status, body, headers) = match rate_limit(&mut con, &client_id) {
            Ok((200, headers)) => ("200 OK", "ok\n", headers),
            Ok((_, headers)) => ("429 Too Many Requests", "too many requests\n", headers),
            Err(_) => ("503 Service Unavailable", "limiter unavailable\n", Vec::new()),
        };
        let mut response = format!(
            "HTTP/1.1 {status}\r\nContent-Length: {}\r\nConnection: close\r\n",
            body.len()
        );
        for (name, value) in headers {
            response.push_str(&format!("{name}: {value}\r\n"));
        }
        response.push_str("\r\n");
        response.push_str(body);
        let _ = stream.write_all(response.as_bytes());
    }
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let host = std::env::var("REDIS_HOST").unwrap_or_else(|_| "127.0.0.1".into());
    let port = std::env::var("REDIS_PORT").unwrap_or_else(|_| "6379".into());
    let con = redis::Client::open(format!("redis://{host}:{port}/"))?.get_connection()?;
    let listener = TcpListener::bind("127.0.0.1:0")?;
    let address = listener.local_addr()?;
    std::thread::spawn(move || serve(listener, con));

    for i in 0..4 {
        let mut stream = TcpStream::connect(address)?;
        stream.write_all(b"GET / HTTP/1.1\r\nHost: example\r\nX-Client-Id: example-rust\r\n\r\n")?;
        let mut response = String::new();
        stream.read_to_string(&mut response)?;
        let header = |name: &str| {
            response
                .lines()
                .find_map(|l| l.strip_prefix(&format!("{name}: ")))
                .map(str::to_string)
        };
        if i == 0 {
            println!(
                "RateLimit-Policy: {}",
                header("RateLimit-Policy").unwrap_or_default()
            );
        }
        let status = response.split(' ').nth(1).unwrap_or("?");
        let shown: Vec<String> = ["RateLimit", "Retry-After"]
            .iter()
            .filter_map(|name| header(name).map(|v| format!("{name}: {v}")))
            .collect();
        println!("{status} {}", shown.join(" "));
    }
    Ok(())
}
