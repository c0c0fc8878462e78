//! An axum app on a free loopback port, and requests to it over TCP.

use std::net::SocketAddr;

use axum::Router;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// Serve `app` on a free loopback port (with the client's address).
pub async fn serve(app: Router) -> SocketAddr {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    tokio::spawn(async move {
        axum::serve(listener, app.into_make_service_with_connect_info::<SocketAddr>())
            .await
            .unwrap();
    });
    address
}

/// Serve `app` without `ConnectInfo`.
pub async fn serve_plain(app: Router) -> SocketAddr {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    address
}

/// The client's identity, as the tests' layers key requests: the
/// `X-Client-Id` header.
pub fn client_id(parts: &http::request::Parts) -> Option<String> {
    parts
        .headers
        .get("x-client-id")?
        .to_str()
        .ok()
        .map(str::to_string)
}

/// The app behind a layer: `ok`, and what it saw of the decision on the
/// request in `x-seen` (`decision`, `failed_open`, `none`).
pub async fn app_handler(request: axum::extract::Request) -> axum::response::Response {
    use redis_ratelimit_client::Decision;
    let seen = match request.extensions().get::<Decision>() {
        Some(d) if d.failed_open => "failed_open",
        Some(_) => "decision",
        None => "none",
    };
    let mut response = axum::response::Response::new(axum::body::Body::from("ok\n"));
    response
        .headers_mut()
        .insert("x-seen", http::HeaderValue::from_static(seen));
    response
}

/// A response as the test reads it: status, the rate-limit headers, body,
/// and what the app saw (none when it was not reached).
#[derive(Debug, PartialEq, Eq)]
pub struct Reply {
    pub status: u16,
    pub policy: Option<String>,
    pub ratelimit: Option<String>,
    pub retry_after: Option<String>,
    pub body: String,
    pub seen: Option<String>,
}

pub async fn get_path(address: SocketAddr, path: &str, headers: &[(&str, &str)]) -> Reply {
    let mut stream = tokio::net::TcpStream::connect(address).await.unwrap();
    let mut request = format!("GET {path} HTTP/1.1\r\nHost: test\r\nConnection: close\r\n");
    for (name, value) in headers {
        request.push_str(&format!("{name}: {value}\r\n"));
    }
    request.push_str("\r\n");
    stream.write_all(request.as_bytes()).await.unwrap();
    let mut response = String::new();
    stream.read_to_string(&mut response).await.unwrap();
    let (head, body) = response.split_once("\r\n\r\n").unwrap();
    let header = |name: &str| {
        head.lines().find_map(|l| {
            let (n, v) = l.split_once(": ")?;
            n.eq_ignore_ascii_case(name).then(|| v.to_string())
        })
    };
    Reply {
        status: head.split(' ').nth(1).unwrap().parse().unwrap(),
        policy: header("RateLimit-Policy"),
        ratelimit: header("RateLimit"),
        retry_after: header("Retry-After"),
        body: body.to_string(),
        seen: header("x-seen"),
    }
}
