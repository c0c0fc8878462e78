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
//! When the (simulated) upstream work of an admitted request fails with a
//! 5xx (GET /fail), the handler answers 502 and gives the request's unit
//! back to both limits with RL.ALL ... REFUND: the RateLimit header then
//! shows the state after the refund.
//!
//! GET /login?account=...&password=... protects a login against guessing: 5
//! failed attempts in 15 minutes, per account and per client address, lock
//! both out for an hour (RL.ALL ... BLOCK 3600). Only failures count; while
//! locked, every attempt is a 429 with Retry-After, the right password
//! included.
//!
//! ```sh
//! REDIS_PORT=6379 cargo run --example http_limiter   # serves, then calls itself 12 times
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

/// Units a request takes, and what a refund gives back.
const COST: u64 = 1;

/// (blocked, headers) for one request of this client. With `refund`, gives
/// the request's units back to every limit instead of taking them (never
/// refused; the headers show the state after the refund).
fn rate_limit(
    con: &mut redis::Connection,
    client_id: &str,
    refund: bool,
) -> redis::RedisResult<(bool, Vec<(String, String)>)> {
    let mut cmd = redis::cmd("RL.ALL");
    cmd.arg(POLICIES.len());
    for p in &POLICIES {
        // One hash tag per client keeps its limiters in one Cluster slot.
        cmd.arg(format!("ratelimit:{{{client_id}}}:{}", p.name));
    }
    for p in &POLICIES {
        cmd.arg(p.spec);
    }
    cmd.arg(COST);
    if refund {
        cmd.arg("REFUND");
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
    }
    Ok((blocked == 1, headers))
}

/// Failed logins: 5 in any 15 minutes per account and per address (exact
/// sliding logs); the sixth blocks both for an hour.
const LOGIN_POLICIES: [(&str, &[&str]); 2] = [
    ("account", &["SLIDING_LOG", "5", "900"]),
    ("address", &["SLIDING_LOG", "5", "900"]),
];
const LOGIN_BLOCK: u64 = 3600;
/// The (simulated) user database.
const PASSWORDS: [(&str, &str); 1] = [("alice-rust", "correct horse")];

/// (blocked, headers) of a login attempt. `failed` false only asks whether
/// the account or the address is locked out (quantity 0: a query, which
/// records nothing); `failed` counts a failed attempt, and the one that goes
/// over the limit blocks the limits it exceeds for `LOGIN_BLOCK` seconds.
/// (Keys of two slots: on a Redis Cluster, make two calls, one per key, each
/// with BLOCK.)
fn login_limit(
    con: &mut redis::Connection,
    account: &str,
    address: &str,
    failed: bool,
) -> redis::RedisResult<(bool, Vec<(String, String)>)> {
    let mut cmd = redis::cmd("RL.ALL");
    cmd.arg(2)
        .arg(format!("login:account:{account}"))
        .arg(format!("login:address:{address}"));
    for (_, spec) in LOGIN_POLICIES {
        cmd.arg(spec);
    }
    if failed {
        cmd.arg(1).arg("BLOCK").arg(LOGIN_BLOCK);
    } else {
        cmd.arg(0);
    }
    let (blocked, _limit, remaining, retry_after, reset, position): (i64, i64, i64, i64, i64, usize) =
        cmd.query(con)?;
    let binding = LOGIN_POLICIES.get(position.wrapping_sub(1)).map_or("?", |p| p.0);
    let mut headers = vec![(
        "RateLimit".to_string(),
        format!("\"{binding}\";r={remaining};t={reset}"),
    )];
    if blocked == 1 {
        headers.push(("Retry-After".to_string(), retry_after.to_string()));
    }
    Ok((blocked == 1, headers))
}

/// A query string's value of `name`, `+` and `%XX` decoded.
fn query_value(query: &str, name: &str) -> String {
    let raw = query
        .split('&')
        .find_map(|pair| pair.strip_prefix(name)?.strip_prefix('='))
        .unwrap_or("");
    let mut bytes = Vec::new();
    let mut rest = raw.as_bytes();
    while let Some((&b, tail)) = rest.split_first() {
        match (b, tail) {
            (b'+', _) => bytes.push(b' '),
            (b'%', [h, l, ..]) if h.is_ascii_hexdigit() && l.is_ascii_hexdigit() => {
                let hex = std::str::from_utf8(&tail[..2]).unwrap_or("00");
                bytes.push(u8::from_str_radix(hex, 16).unwrap_or(0));
                rest = &tail[2..];
                continue;
            }
            _ => bytes.push(b),
        }
        rest = tail;
    }
    String::from_utf8_lossy(&bytes).into_owned()
}

/// Status, body and headers of GET /login?account=...&password=...
fn login(
    con: &mut redis::Connection,
    query: &str,
    address: &str,
) -> (&'static str, &'static str, Vec<(String, String)>) {
    let (account, password) = (query_value(query, "account"), query_value(query, "password"));
    let locked = |(blocked, headers): (bool, Vec<(String, String)>)| {
        if blocked {
            ("429 Too Many Requests", "denied\n", headers)
        } else {
            ("401 Unauthorized", "denied\n", headers)
        }
    };
    match login_limit(con, &account, address, false) {
        Ok((true, headers)) => locked((true, headers)),
        Ok((false, _)) if PASSWORDS.contains(&(account.as_str(), password.as_str())) => {
            ("200 OK", "ok\n", Vec::new())
        }
        Ok((false, _)) => match login_limit(con, &account, address, true) {
            Ok(limited) => locked(limited),
            Err(_) => ("503 Service Unavailable", "limiter unavailable\n", Vec::new()),
        },
        Err(_) => ("503 Service Unavailable", "limiter unavailable\n", Vec::new()),
    }
}

/// The work behind the limiter (simulated): GET /fail fails with a 502.
fn upstream(path: &str) -> Result<&'static str, &'static str> {
    if path == "/fail" {
        return Err("502 Bad Gateway");
    }
    Ok("ok\n")
}

/// The status, body and headers of one request of this client for `path`.
fn handle(
    con: &mut redis::Connection,
    client_id: &str,
    path: &str,
) -> (&'static str, &'static str, Vec<(String, String)>) {
    match rate_limit(con, client_id, false) {
        Ok((true, headers)) => ("429 Too Many Requests", "too many requests\n", headers),
        Ok((false, headers)) => match upstream(path) {
            Ok(body) => ("200 OK", body, headers),
            Err(status) => {
                // The work was not done, so the client does not pay for it:
                // give its unit back. Refund only what this request took:
                // nothing ties a refund to the request, so refunding units
                // never taken would hand out free ones.
                let headers = rate_limit(con, client_id, true)
                    .map(|(_, h)| h)
                    .unwrap_or_default();
                (status, "bad gateway\n", headers)
            }
        },
        Err(_) => ("503 Service Unavailable", "limiter unavailable\n", Vec::new()),
    }
}

/// A one-request-per-connection HTTP server: enough for the example.
fn serve(listener: TcpListener, mut con: redis::Connection) {
    for stream in listener.incoming() {
        let Ok(mut stream) = stream else { continue };
        let mut client_id = String::from("anonymous");
        let mut address = stream.peer_addr().map(|a| a.ip().to_string()).unwrap_or_default();
        let mut reader = BufReader::new(&mut stream);
        let mut line = String::new();
        let _ = reader.read_line(&mut line);
        let path = line.split(' ').nth(1).unwrap_or("/").to_string();
        line.clear();
        while reader.read_line(&mut line).is_ok_and(|n| n > 0) && line != "\r\n" {
            if let Some(value) = line.to_ascii_lowercase().strip_prefix("x-client-id:") {
                client_id = value.trim().to_string();
            }
            if let Some(value) = line.to_ascii_lowercase().strip_prefix("x-forwarded-for:") {
                address = value.trim().to_string();
            }
            line.clear();
        }
        let (status, body, headers) = match path.split_once('?') {
            Some(("/login", query)) => login(&mut con, query, &address),
            _ => handle(&mut con, &client_id, &path),
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

    for (i, path) in ["/", "/fail", "/", "/", "/"].into_iter().enumerate() {
        let mut stream = TcpStream::connect(address)?;
        stream.write_all(
            format!("GET {path} HTTP/1.1\r\nHost: example\r\nX-Client-Id: example-rust\r\n\r\n").as_bytes(),
        )?;
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
        // A 502: the upstream work failed and the handler refunded the unit.
        let refunded = if status == "502" { " (unit refunded)" } else { "" };
        println!("{status} {}{refunded}", shown.join(" "));
    }
    // Six wrong passwords, then the right one: locked out all the same. The
    // account (one per example) and the address (as a proxy would pass it)
    // are this example's own.
    for password in ["guess"; 6].into_iter().chain(["correct+horse"]) {
        let mut stream = TcpStream::connect(address)?;
        stream.write_all(
            format!(
                "GET /login?account=alice-rust&password={password} HTTP/1.1\r\nHost: example\r\nX-Forwarded-For: 203.0.113.3\r\n\r\n"
            )
            .as_bytes(),
        )?;
        let mut response = String::new();
        stream.read_to_string(&mut response)?;
        let status = response.split(' ').nth(1).unwrap_or("?");
        let shown: Vec<String> = ["RateLimit", "Retry-After"]
            .iter()
            .filter_map(|name| {
                response
                    .lines()
                    .find_map(|l| l.strip_prefix(&format!("{name}: ")))
                    .map(|v| format!("{name}: {v}"))
            })
            .collect();
        let which = if password == "guess" { "wrong" } else { "right" };
        println!("login ({which} password): {status} {}", shown.join(" "));
    }
    Ok(())
}
