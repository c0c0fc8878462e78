//! A rate-limited HTTP handler with the `redis` crate and RL.GCRA.
//!
//! Each client (the X-Client-Id header) may make 3 requests at once, then
//! one every 20 seconds (3 per minute). The limiter's reply maps onto HTTP:
//! 429 and Retry-After when refused, RateLimit-* headers always.
//!
//! ```sh
//! REDIS_PORT=6379 cargo run --example http_limiter   # serves, then calls itself 4 times
//! ```

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};

/// (status, headers) for one request of this client.
fn rate_limit(con: &mut redis::Connection, client_id: &str) -> redis::RedisResult<(u16, Vec<(String, i64)>)> {
    // max_burst 2, 3 per 60 s
    let (blocked, limit, remaining, retry_after, reset): (i64, i64, i64, i64, i64) = redis::cmd("RL.GCRA")
        .arg(format!("ratelimit:{client_id}"))
        .arg(2)
        .arg(3)
        .arg(60)
        .query(con)?;
    let mut headers = vec![
        ("RateLimit-Limit".to_string(), limit),
        ("RateLimit-Remaining".to_string(), remaining),
        ("RateLimit-Reset".to_string(), reset),
    ];
    if blocked == 1 {
        headers.push(("Retry-After".to_string(), retry_after));
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

    for _ in 0..4 {
        let mut stream = TcpStream::connect(address)?;
        stream.write_all(b"GET / HTTP/1.1\r\nHost: example\r\nX-Client-Id: example-rust\r\n\r\n")?;
        let mut response = String::new();
        stream.read_to_string(&mut response)?;
        let status = response.split(' ').nth(1).unwrap_or("?");
        let shown: Vec<String> = [
            "RateLimit-Limit",
            "RateLimit-Remaining",
            "RateLimit-Reset",
            "Retry-After",
        ]
        .iter()
        .filter_map(|name| {
            response
                .lines()
                .find_map(|l| l.strip_prefix(&format!("{name}: ")))
                .map(|v| format!("{name}={v}"))
        })
        .collect();
        println!("{status} {}", shown.join(" "));
    }
    Ok(())
}
