//! A tower [`Layer`] for axum: every request takes a unit of its client's
//! limits before it reaches the handler.
//!
//! - The client is a function of the request: its IP address by default
//!   (from axum's `ConnectInfo<SocketAddr>`: serve the app with
//!   `into_make_service_with_connect_info::<SocketAddr>()`; without it the
//!   layer answers 500, saying so), or [`RateLimitLayer::key`].
//! - Redis keys: `{prefix}{<identity>}:<name>`, prefix `ratelimit:` by
//!   default ([`RateLimitLayer::prefix`]): the identity between braces (one
//!   Cluster hash tag for all of a client's limits), then the limit's name.
//!   Services in Python, Node.js and Rust that name the same limit for the
//!   same client share one limiter.
//! - A refusal is answered `429 Too Many Requests` with `Retry-After`
//!   (seconds, rounded up) and the draft-10 `RateLimit-Policy` and
//!   `RateLimit` headers; an allowed request reaches the handler, its
//!   [`Decision`] in the request's extensions, and its response carries
//!   `RateLimit-Policy` and `RateLimit` too.
//! - Several limits ([`RateLimitLayer::and`]) are decided as one (`RL.ALL`):
//!   a request counts against each only when all allow it, and `RateLimit`
//!   names the binding one.
//! - Redis unavailable (no answer within the client's timeout, a transport
//!   error, `LOADING`...): fail closed (`503 Service Unavailable`,
//!   `Retry-After: 1`, never 429) or open (the request reaches the handler,
//!   its decision marked [`failed_open`](Decision::failed_open), without
//!   rate-limit headers): the client's policy, or the layer's own
//!   [`RateLimitLayer::fail_open`]. A server's refusal (a key of another
//!   type, a limit past its cap) is a misconfiguration, never failed open:
//!   `500`, the [`Error`] in the response's extensions.
//! - A tag function ([`RateLimitLayer::tag`]: limit by address, record the
//!   user) sends `TAG` to the sliding logs among the limits, for
//!   [`RateLimits::log_by_tag`](crate::aio::RateLimits::log_by_tag).
//! - At start-up, [`RateLimitLayer::check`] (axum has no start hook: await
//!   it before serving) tries the limits once without taking: a limit the
//!   server refuses fails the start with the server's words.
//!
//! ```no_run
//! use axum::{routing::get, Router};
//! use redis_ratelimit_client::{aio::RateLimits, layer::RateLimitLayer, Limit};
//! use std::{net::SocketAddr, time::Duration};
//!
//! # async fn run() -> Result<(), Box<dyn std::error::Error>> {
//! let limits = RateLimits::new(redis::Client::open("redis://127.0.0.1/")?);
//! let limit = RateLimitLayer::new(limits, "api", Limit::gcra(10, Duration::from_secs(1))?)?;
//! limit.check().await?;
//! let app = Router::new().route("/", get(|| async { "hello\n" })).layer(limit);
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
use http::header::{HeaderName, HeaderValue, CONTENT_TYPE, RETRY_AFTER};
use http::{request::Parts, Request, Response, StatusCode};
use tower_layer::Layer;
use tower_service::Service;

use crate::aio::{AllOf, Limiter, RateLimits};
use crate::conn::AsyncConnector;
use crate::{headers, params, Decision, Error, Limit, Take};

/// `RateLimit-Policy`.
pub const RATELIMIT_POLICY: HeaderName = HeaderName::from_static("ratelimit-policy");
/// `RateLimit`.
pub const RATELIMIT: HeaderName = HeaderName::from_static("ratelimit");

type KeyFn = Arc<dyn Fn(&Parts) -> Option<String> + Send + Sync>;
type TagFn = Arc<dyn Fn(&Parts) -> Option<Vec<u8>> + Send + Sync>;
type StatusFn = Arc<dyn Fn(StatusCode) -> bool + Send + Sync>;

enum Decide<C: AsyncConnector> {
    One(Limiter<C>),
    All(AllOf<C>),
}

impl<C: AsyncConnector> Decide<C> {
    /// A call for `identity`, on its `keys`.
    async fn call(&self, identity: &str, keys: &[String], take: Take) -> Result<Decision, Error> {
        match self {
            Decide::One(limiter) => limiter.call_for(&keys[0], take, identity).await,
            Decide::All(all) => {
                let keys: Vec<&str> = keys.iter().map(String::as_str).collect();
                all.call_for(&keys, take, identity).await
            }
        }
    }

    async fn check(&self, keys: &[String]) -> Result<(), Error> {
        match self {
            Decide::One(limiter) => limiter.check_key(&keys[0]).await,
            Decide::All(all) => {
                let keys: Vec<&str> = keys.iter().map(String::as_str).collect();
                all.check_keys(&keys).await
            }
        }
    }
}

struct Config<C: AsyncConnector> {
    decide: Decide<C>,
    names: Vec<String>,
    policy: HeaderValue,
    prefix: String,
    key: Option<KeyFn>,
    /// The tag function, when a tag goes on the wire (a sliding log, or
    /// `RL.ALL`).
    tag: Option<TagFn>,
    refund_when: Option<StatusFn>,
}

/// A tag function where no limit records a tag.
const TAG_WITHOUT_LOG: &str = "tag: none of the limits is a sliding_log, the one kind that records a tag";

/// The identity whose keys [`RateLimitLayer::check`] tries.
const CHECK_IDENTITY: &str = "check";

/// The default first part of every Redis key.
pub const DEFAULT_PREFIX: &str = "ratelimit:";

/// The Redis key of the limit `name` for `identity`:
/// `{prefix}{<identity>}:<name>`.
fn key_of(prefix: &str, identity: &str, name: &str) -> String {
    format!("{prefix}{{{identity}}}:{name}")
}

/// The layer: build it with [`RateLimitLayer::new`], then add limits and
/// choices; `Router::layer` (or `ServiceBuilder::layer`) applies it.
pub struct RateLimitLayer<C: AsyncConnector> {
    limits: RateLimits<C>,
    policies: Vec<(String, Limit)>,
    prefix: String,
    key: Option<KeyFn>,
    tag: Option<TagFn>,
    fail_open: Option<bool>,
    refund_when: Option<StatusFn>,
}

impl<C: AsyncConnector> Clone for RateLimitLayer<C> {
    fn clone(&self) -> Self {
        RateLimitLayer {
            limits: self.limits.clone(),
            policies: self.policies.clone(),
            prefix: self.prefix.clone(),
            key: self.key.clone(),
            tag: self.tag.clone(),
            fail_open: self.fail_open,
            refund_when: self.refund_when.clone(),
        }
    }
}

impl<C: AsyncConnector> RateLimitLayer<C> {
    /// One limit, `name` (as the keys and the headers show it) applying
    /// `limit` to each client IP, keys `ratelimit:{<ip>}:<name>`.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidParameter`] (`name`) for a name that is empty or
    /// holds anything but printable ASCII, or `"`, `\`, `{` or `}`.
    pub fn new(limits: RateLimits<C>, name: &str, limit: Limit) -> Result<RateLimitLayer<C>, Error> {
        params::name(name)?;
        Ok(RateLimitLayer {
            limits,
            policies: vec![(name.to_string(), limit)],
            prefix: DEFAULT_PREFIX.to_string(),
            key: None,
            tag: None,
            fail_open: None,
            refund_when: None,
        })
    }

    /// One more limit, decided with the others in one `RL.ALL`.
    ///
    /// # Errors
    ///
    /// As [`RateLimitLayer::new`]; a name already given; more than 100
    /// limits.
    pub fn and(mut self, name: &str, limit: Limit) -> Result<RateLimitLayer<C>, Error> {
        params::name(name)?;
        if self.policies.iter().any(|(n, _)| n == name) {
            return Err(Error::invalid(
                "name",
                format!("two limiters are named '{name}': give each its own name"),
            ));
        }
        self.policies.push((name.to_string(), limit));
        crate::sync::all_of(self.policies.iter().map(|(_, l)| l))?;
        Ok(self)
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

    /// Tag each request by `tag` (a user id, say): the value goes as `TAG`
    /// to the sliding logs among the limits (one sliding log, or those of
    /// an `RL.ALL`, whose other limits ignore it), which record it for
    /// [`RateLimits::log_by_tag`](crate::aio::RateLimits::log_by_tag).
    /// `None` sends no tag. Give it after the limits ([`RateLimitLayer::and`]).
    ///
    /// A tag is never cut short (two tags sharing their first bytes would
    /// become one): one of 0 or more than 1,024 bytes, or past the server's
    /// cap (`tag_max_bytes`, 64 by default), answers `500` with the
    /// [`Error`] in the response's extensions, as any misconfiguration.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidParameter`] (`tag`) when no limit is a sliding log:
    /// none would record it.
    pub fn tag<F>(mut self, tag: F) -> Result<RateLimitLayer<C>, Error>
    where
        F: Fn(&Parts) -> Option<Vec<u8>> + Send + Sync + 'static,
    {
        if !self.policies.iter().any(|(_, limit)| limit.is_sliding_log()) {
            return Err(Error::invalid("tag", TAG_WITHOUT_LOG.to_string()));
        }
        self.tag = Some(Arc::new(tag));
        Ok(self)
    }

    /// The first part of every Redis key, as given (default
    /// `ratelimit:`).
    pub fn prefix(mut self, prefix: &str) -> RateLimitLayer<C> {
        self.prefix = prefix.to_string();
        self
    }

    /// This layer's failure policy, over its client's: `true` lets
    /// requests through when Redis is unavailable (marked
    /// [`failed_open`](Decision::failed_open), without rate-limit headers);
    /// `false` answers 503 with `Retry-After: 1`.
    pub fn fail_open(mut self, fail_open: bool) -> RateLimitLayer<C> {
        self.fail_open = Some(fail_open);
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

    /// The Redis keys of `identity`'s limits, in the order they were
    /// given.
    pub fn keys(&self, identity: &str) -> Vec<String> {
        self.policies
            .iter()
            .map(|(name, _)| key_of(&self.prefix, identity, name))
            .collect()
    }

    /// Try the limits once without taking (one `PEEK` of one unit on the
    /// keys of the identity `check`, so an ACL on the prefix applies).
    /// Await it before serving: axum has no start-up hook.
    ///
    /// # Errors
    ///
    /// What the server refuses ([`Error::ServerError`], its words: a cap
    /// such as `sliding_log_max_limit`, the functions edition's narrower
    /// ranges, a key of another type) fails the start. A server that does
    /// not answer is no reason not to start: [`Error::Unavailable`] is
    /// written to standard error, and `Ok` returned (the failure policy
    /// applies to each request).
    pub async fn check(&self) -> Result<(), Error> {
        match self.config().decide.check(&self.keys(CHECK_IDENTITY)).await {
            Err(e) if e.is_unavailable() => {
                eprintln!("rate limit layer: start-up check: {e}; starting all the same");
                Ok(())
            }
            other => other,
        }
    }

    fn config(&self) -> Config<C> {
        let limits = match self.fail_open {
            Some(fail_open) => self.limits.clone().fail_open(fail_open),
            None => self.limits.clone(),
        };
        let decide = match &self.policies[..] {
            [(name, limit)] => Decide::One(Limiter::from_parts(limits, *limit, name)),
            many => {
                // The metrics' `limit` label: the names joined by `+`.
                let name: Vec<&str> = many.iter().map(|(n, _)| n.as_str()).collect();
                let all = many.iter().map(|(_, l)| *l).collect();
                Decide::All(AllOf::from_parts(limits, all, &name.join("+")))
            }
        };
        let pairs: Vec<(&str, &Limit)> = self.policies.iter().map(|(n, l)| (n.as_str(), l)).collect();
        Config {
            decide,
            names: self.policies.iter().map(|(n, _)| n.clone()).collect(),
            policy: HeaderValue::from_str(&headers::policy(&pairs))
                .unwrap_or_else(|_| HeaderValue::from_static("")),
            prefix: self.prefix.clone(),
            key: self.key.clone(),
            tag: self.tag.clone(),
            refund_when: self.refund_when.clone(),
        }
    }
}

impl<S, C: AsyncConnector> Layer<S> for RateLimitLayer<C> {
    type Service = RateLimit<S, C>;

    fn layer(&self, inner: S) -> RateLimit<S, C> {
        RateLimit {
            inner,
            config: Arc::new(self.config()),
        }
    }
}

/// The service [`RateLimitLayer`] wraps around a handler.
pub struct RateLimit<S, C: AsyncConnector> {
    inner: S,
    config: Arc<Config<C>>,
}

impl<S: Clone, C: AsyncConnector> Clone for RateLimit<S, C> {
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
    response.headers_mut().insert(
        CONTENT_TYPE,
        HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    response
}

impl<C: AsyncConnector> Config<C> {
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

    fn keys(&self, identity: &str) -> Vec<String> {
        self.names
            .iter()
            .map(|name| key_of(&self.prefix, identity, name))
            .collect()
    }
}

impl<S, C, B> Service<Request<B>> for RateLimit<S, C>
where
    S: Service<Request<B>, Response = Response<Body>> + Clone + Send + 'static,
    S::Future: Send + 'static,
    C: AsyncConnector,
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
            let tag = config.tag.as_ref().and_then(|tag| tag(&parts));
            let mut request = Request::from_parts(parts, body);
            let Some(key) = key else {
                return inner.call(request).await;
            };
            let keys = config.keys(&key);
            let take = match tag {
                Some(tag) => Take::one().tag(tag),
                None => Take::one(),
            };
            let decision = match config.decide.call(&key, &keys, take).await {
                Ok(decision) => decision,
                Err(e) if e.is_unavailable() => {
                    // Failing closed (failing open, the client answered a
                    // decision): not a refusal of this client, no 429.
                    let mut response = plain(StatusCode::SERVICE_UNAVAILABLE, "rate limiter unavailable\n");
                    response
                        .headers_mut()
                        .insert(RETRY_AFTER, HeaderValue::from_static("1"));
                    return Ok(response);
                }
                Err(e) => {
                    // A misconfiguration, never an outage: the error goes
                    // to the framework with the response.
                    let mut response = plain(StatusCode::INTERNAL_SERVER_ERROR, "internal server error\n");
                    response.extensions_mut().insert(e);
                    return Ok(response);
                }
            };
            request.extensions_mut().insert(decision);
            if decision.failed_open {
                return inner.call(request).await;
            }
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
                if let Ok(refunded) = config.decide.call(&key, &keys, Take::one().refund()).await {
                    shown = refunded;
                }
            }
            config.set_headers(&mut response, &shown);
            Ok(response)
        })
    }
}
