//! A tower [`Layer`] for axum: every request takes a unit of its key's
//! limits before it reaches the handler.
//!
//! - The key is a function of the request: the client's IP address by
//!   default (from axum's `ConnectInfo<SocketAddr>`: serve the app with
//!   `into_make_service_with_connect_info::<SocketAddr>()`; without it the
//!   layer answers 500, saying so), or [`RateLimitLayer::key`].
//! - A refusal is answered `429 Too Many Requests` with `Retry-After`
//!   (seconds, rounded up) and the draft-10 `RateLimit-Policy` and
//!   `RateLimit` headers; an allowed request reaches the handler and its
//!   response carries `RateLimit-Policy` and `RateLimit` too.
//! - Several policies ([`RateLimitLayer::and`]) are decided as one
//!   (`RL.ALL`): a request counts against each only when all allow it, and
//!   `RateLimit` names the binding one. Their keys share a hash tag,
//!   `{prefix}:{<key>}:{policy}`, so they live in one Cluster slot.
//! - When Redis is down or answers an error: fail closed (the default:
//!   `503 Service Unavailable`, body `rate limiter unavailable`) or fail
//!   open ([`RateLimitLayer::fail_open`]: the request goes through, without
//!   rate-limit headers).
//!
//! ```no_run
//! use axum::{routing::get, Router};
//! use redis_ratelimit_client::{aio::RateLimits, layer::RateLimitLayer, Limit};
//! use std::{net::SocketAddr, time::Duration};
//!
//! # async fn run() -> Result<(), Box<dyn std::error::Error>> {
//! let client = redis::Client::open("redis://127.0.0.1/")?;
//! let limits = RateLimits::new(client.get_connection_manager().await?);
//! let app = Router::new()
//!     .route("/", get(|| async { "hello\n" }))
//!     .layer(RateLimitLayer::new(limits, "api", Limit::gcra(10, Duration::from_secs(1))?));
//! let listener = tokio::net::TcpListener::bind("127.0.0.1:3000").await?;
//! axum::serve(listener, app.into_make_service_with_connect_info::<SocketAddr>()).await?;
//! # Ok(())
//! # }
//! ```

use std::future::Future;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use axum::body::Body;
use axum::extract::ConnectInfo;
use http::header::{HeaderName, HeaderValue, RETRY_AFTER};
use http::{request::Parts, Request, Response, StatusCode};
use tower_layer::Layer;
use tower_service::Service;

use crate::aio::{AllOf, Limiter, RateLimits};
use crate::conn::AsyncConnection;
use crate::{headers, Decision, Error, Limit, Take};

/// `RateLimit-Policy`.
pub const RATELIMIT_POLICY: HeaderName = HeaderName::from_static("ratelimit-policy");
/// `RateLimit`.
pub const RATELIMIT: HeaderName = HeaderName::from_static("ratelimit");

type KeyFn = Arc<dyn Fn(&Parts) -> Option<String> + Send + Sync>;
type StatusFn = Arc<dyn Fn(StatusCode) -> bool + Send + Sync>;

/// What the layer does when Redis is down or answers an error.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum OnError {
    /// Answer `503 Service Unavailable` (the default).
    #[default]
    FailClosed,
    /// Let the request through, without rate-limit headers.
    FailOpen,
}

enum Decide<C> {
    One(Limiter<C>),
    All(AllOf<C>),
}

impl<C: AsyncConnection> Decide<C> {
    async fn call(&self, keys: &[String], take: Take) -> Result<Decision, Error> {
        match self {
            Decide::One(limiter) => limiter.call(&keys[0], take).await,
            Decide::All(all) => {
                let keys: Vec<&str> = keys.iter().map(String::as_str).collect();
                all.call(&keys, take).await
            }
        }
    }
}

struct Config<C> {
    decide: Decide<C>,
    names: Vec<String>,
    policy: HeaderValue,
    prefix: String,
    key: Option<KeyFn>,
    on_error: OnError,
    refund_when: Option<StatusFn>,
}

/// The layer: build it with [`RateLimitLayer::new`], then add policies and
/// choices; `Router::layer` (or `ServiceBuilder::layer`) applies it.
pub struct RateLimitLayer<C> {
    limits: RateLimits<C>,
    policies: Vec<(String, Limit)>,
    prefix: String,
    key: Option<KeyFn>,
    on_error: OnError,
    refund_when: Option<StatusFn>,
}

impl<C: AsyncConnection> Clone for RateLimitLayer<C> {
    fn clone(&self) -> Self {
        RateLimitLayer {
            limits: self.limits.clone(),
            policies: self.policies.clone(),
            prefix: self.prefix.clone(),
            key: self.key.clone(),
            on_error: self.on_error,
            refund_when: self.refund_when.clone(),
        }
    }
}

impl<C: AsyncConnection> RateLimitLayer<C> {
    /// One policy, `name` (as the headers show it) applying `limit` to each
    /// client IP, failing closed, keys `ratelimit:{<ip>}:<name>`.
    pub fn new(limits: RateLimits<C>, name: &str, limit: Limit) -> RateLimitLayer<C> {
        RateLimitLayer {
            limits,
            policies: vec![(name.to_string(), limit)],
            prefix: "ratelimit".to_string(),
            key: None,
            on_error: OnError::FailClosed,
            refund_when: None,
        }
    }

    /// One more policy, decided with the others in one `RL.ALL`.
    pub fn and(mut self, name: &str, limit: Limit) -> RateLimitLayer<C> {
        self.policies.push((name.to_string(), limit));
        self
    }

    /// Key requests by `key` instead of by client IP: a user id, an API
    /// key, a header. `None` lets the request through unlimited and without
    /// headers (health checks, trusted callers).
    pub fn key<F>(mut self, key: F) -> RateLimitLayer<C>
    where
        F: Fn(&Parts) -> Option<String> + Send + Sync + 'static,
    {
        self.key = Some(Arc::new(key));
        self
    }

    /// The first part of every Redis key (default `ratelimit`).
    pub fn prefix(mut self, prefix: &str) -> RateLimitLayer<C> {
        self.prefix = prefix.to_string();
        self
    }

    /// Let requests through when Redis is down or errs (default: answer
    /// 503).
    pub fn fail_open(mut self) -> RateLimitLayer<C> {
        self.on_error = OnError::FailOpen;
        self
    }

    /// Choose what happens when Redis is down or errs.
    pub fn on_error(mut self, on_error: OnError) -> RateLimitLayer<C> {
        self.on_error = on_error;
        self
    }

    /// Give the request's unit back (`REFUND`) when the handler's status
    /// matches: work that was not done (`|s| s.is_server_error()`). The
    /// `RateLimit` header then shows the state after the refund.
    pub fn refund_when<F>(mut self, refund: F) -> RateLimitLayer<C>
    where
        F: Fn(StatusCode) -> bool + Send + Sync + 'static,
    {
        self.refund_when = Some(Arc::new(refund));
        self
    }

    fn config(&self) -> Config<C> {
        let decide = match &self.policies[..] {
            [(_, limit)] => Decide::One(self.limits.limiter(*limit)),
            many => Decide::All(AllOf::from_parts(
                self.limits.clone(),
                many.iter().map(|(_, l)| *l).collect(),
            )),
        };
        let pairs: Vec<(&str, &Limit)> = self.policies.iter().map(|(n, l)| (n.as_str(), l)).collect();
        Config {
            decide,
            names: self.policies.iter().map(|(n, _)| n.clone()).collect(),
            policy: HeaderValue::from_str(&headers::policy(&pairs))
                .unwrap_or_else(|_| HeaderValue::from_static("")),
            prefix: self.prefix.clone(),
            key: self.key.clone(),
            on_error: self.on_error,
            refund_when: self.refund_when.clone(),
        }
    }
}

impl<S, C: AsyncConnection> Layer<S> for RateLimitLayer<C> {
    type Service = RateLimit<S, C>;

    fn layer(&self, inner: S) -> RateLimit<S, C> {
        RateLimit {
            inner,
            config: Arc::new(self.config()),
        }
    }
}

/// The service [`RateLimitLayer`] wraps around a handler.
pub struct RateLimit<S, C> {
    inner: S,
    config: Arc<Config<C>>,
}

impl<S: Clone, C> Clone for RateLimit<S, C> {
    fn clone(&self) -> Self {
        RateLimit {
            inner: self.inner.clone(),
            config: Arc::clone(&self.config),
        }
    }
}

fn plain(status: StatusCode, body: &'static str) -> Response<Body> {
    let mut response = Response::new(Body::from(body));
    *response.status_mut() = status;
    response
}

impl<C: AsyncConnection> Config<C> {
    fn set_headers(&self, response: &mut Response<Body>, decision: &Decision) {
        let name = self
            .names
            .get(decision.binding.saturating_sub(1))
            .map_or("", String::as_str);
        let headers = response.headers_mut();
        headers.insert(RATELIMIT_POLICY, self.policy.clone());
        if let Ok(v) = HeaderValue::from_str(&headers::ratelimit(name, decision)) {
            headers.insert(RATELIMIT, v);
        }
        if let Some(retry_after) = headers::retry_after(decision) {
            if let Ok(v) = HeaderValue::from_str(&retry_after) {
                headers.insert(RETRY_AFTER, v);
            }
        }
    }

    fn keys(&self, key: &str) -> Vec<String> {
        self.names
            .iter()
            .map(|name| format!("{}:{{{key}}}:{name}", self.prefix))
            .collect()
    }
}

impl<S, C, B> Service<Request<B>> for RateLimit<S, C>
where
    S: Service<Request<B>, Response = Response<Body>> + Clone + Send + 'static,
    S::Future: Send + 'static,
    C: AsyncConnection,
    B: Send + 'static,
{
    type Response = Response<Body>;
    type Error = S::Error;
    type Future = Pin<Box<dyn Future<Output = Result<Response<Body>, S::Error>> + Send>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), S::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: Request<B>) -> Self::Future {
        // The clone that was polled ready serves this request.
        let clone = self.inner.clone();
        let mut inner = std::mem::replace(&mut self.inner, clone);
        let config = Arc::clone(&self.config);
        Box::pin(async move {
            let (parts, body) = request.into_parts();
            let key = match &config.key {
                Some(key) => key(&parts),
                None => match parts.extensions.get::<ConnectInfo<SocketAddr>>() {
                    Some(ConnectInfo(address)) => Some(address.ip().to_string()),
                    None => {
                        return Ok(plain(
                            StatusCode::INTERNAL_SERVER_ERROR,
                            "rate limit: no client address (serve the app with \
                             into_make_service_with_connect_info::<SocketAddr>())\n",
                        ))
                    }
                },
            };
            let request = Request::from_parts(parts, body);
            let Some(key) = key else {
                return inner.call(request).await;
            };
            let keys = config.keys(&key);
            let decision = match config.decide.call(&keys, Take::one()).await {
                Ok(decision) => decision,
                Err(_) => {
                    return match config.on_error {
                        OnError::FailClosed => Ok(plain(
                            StatusCode::SERVICE_UNAVAILABLE,
                            "rate limiter unavailable\n",
                        )),
                        OnError::FailOpen => inner.call(request).await,
                    }
                }
            };
            if !decision.allowed {
                let mut response = plain(StatusCode::TOO_MANY_REQUESTS, "too many requests\n");
                config.set_headers(&mut response, &decision);
                return Ok(response);
            }
            let mut response = inner.call(request).await?;
            let mut shown = decision;
            if config
                .refund_when
                .as_ref()
                .is_some_and(|refund| refund(response.status()))
            {
                // Headers of the state after the refund; if it fails, the
                // unit stays taken and the headers say so.
                if let Ok(refunded) = config.decide.call(&keys, Take::one().refund()).await {
                    shown = refunded;
                }
            }
            config.set_headers(&mut response, &shown);
            Ok(response)
        })
    }
}
