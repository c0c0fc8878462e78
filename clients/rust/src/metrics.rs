//! Prometheus metrics of a client's decisions (feature `prometheus`; SPEC
//! 20, clients/contract/metrics.json), registered in a
//! [`prometheus::Registry`] of yours and given to the client with
//! [`RateLimits::metrics`](crate::RateLimits::metrics) (or the async
//! client's):
//!
//! | name | type | labels |
//! |---|---|---|
//! | `ratelimit_client_decisions_total` | counter | `limit`, `outcome` |
//! | `ratelimit_client_units_total` | counter | `limit`, `outcome` |
//! | `ratelimit_client_call_duration_seconds` | histogram | `limit` |
//! | `ratelimit_client_backend` | gauge | `backend` |
//! | `ratelimit_client_top_refused` | gauge | `limit`, `identity` |
//!
//! `outcome` is `allowed`, `refused`, `failed_open` (the server
//! unavailable, the call allowed by the failure policy) or `failed_closed`
//! (the call answered [`Error::Unavailable`]).
//! Units: those granted when allowed, those asked for otherwise.
//!
//! ```no_run
//! use redis_ratelimit_client::{metrics::PrometheusMetrics, Limit, RateLimits};
//! use std::time::Duration;
//!
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let registry = prometheus::Registry::new();
//! let limits = RateLimits::new(redis::Client::open("redis://127.0.0.1/")?)
//!     .metrics(PrometheusMetrics::new(&registry, 10)?);
//! let api = limits.limiter(Limit::gcra(10, Duration::from_secs(1))?).named("api")?;
//! api.take("user:42")?;
//! let text = prometheus::TextEncoder::new().encode_to_string(&registry.gather())?;
//! assert!(text.contains(r#"ratelimit_client_decisions_total{limit="api",outcome="allowed"} 1"#));
//! # Ok(())
//! # }
//! ```

use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Instant;

use prometheus::core::Collector;
use prometheus::{HistogramOpts, HistogramVec, IntCounterVec, IntGaugeVec, Opts, Registry};

use crate::backend::Backend;
use crate::topk::TopK;
use crate::{Decision, Error};

/// The histogram's buckets, in seconds (metrics.json's
/// `duration_buckets_seconds`).
pub const DURATION_BUCKETS: [f64; 12] = [
    0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5,
];

/// The top-k's default size (metrics.json's `top_k_default`).
pub const TOP_K_DEFAULT: usize = 10;

/// The largest top-k: that many series at most.
pub const TOP_K_MAX: usize = 10_000;

/// The metrics of one or more clients, registered in one registry. Cheap
/// to clone: the clones count into the same series.
#[derive(Clone)]
pub struct PrometheusMetrics {
    inner: Arc<Inner>,
}

struct Inner {
    decisions: IntCounterVec,
    units: IntCounterVec,
    duration: HistogramVec,
    backend: IntGaugeVec,
    top_refused: IntGaugeVec,
    /// The top-k, and the series it exports, changed together.
    top: Mutex<TopK>,
    /// The backend the gauge shows at 1: 0 for none yet, else its
    /// [`code`] (read without a lock on every call).
    current: AtomicU8,
    /// One change of `current` at a time.
    changing: Mutex<()>,
}

impl std::fmt::Debug for PrometheusMetrics {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PrometheusMetrics")
            .field("top_k", &lock(&self.inner.top).k())
            .finish_non_exhaustive()
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

fn registry_error(e: prometheus::Error) -> Error {
    Error::invalid("registry", format!("metrics: {e}"))
}

impl PrometheusMetrics {
    /// The five metrics, registered in `registry`; the `top_k` most
    /// refused (limit, identity) pairs exported (0 to 10,000; 0 exports
    /// none; [`TOP_K_DEFAULT`] is 10).
    ///
    /// # Errors
    ///
    /// [`Error::InvalidParameter`] (`top_k`) past 10,000; (`registry`)
    /// when the registry already holds these names (one
    /// `PrometheusMetrics` per registry: clone it for several clients).
    pub fn new(registry: &Registry, top_k: usize) -> Result<PrometheusMetrics, Error> {
        if top_k > TOP_K_MAX {
            return Err(Error::invalid(
                "top_k",
                format!("top_k must be an integer from 0 to {TOP_K_MAX}, got {top_k}"),
            ));
        }
        let counter = |name: &str, help: &str| {
            IntCounterVec::new(Opts::new(name, help), &["limit", "outcome"]).map_err(registry_error)
        };
        let gauge = |name: &str, help: &str, labels: &[&str]| {
            IntGaugeVec::new(Opts::new(name, help), labels).map_err(registry_error)
        };
        let inner = Inner {
            decisions: counter(
                "ratelimit_client_decisions_total",
                "Decisions the client returned, by limit name and outcome (allowed, refused, failed_open, \
                 failed_closed).",
            )?,
            units: counter(
                "ratelimit_client_units_total",
                "Units of those decisions: granted when allowed, asked for otherwise.",
            )?,
            duration: HistogramVec::new(
                HistogramOpts::new(
                    "ratelimit_client_call_duration_seconds",
                    "Time of a call from the client's side, its deadline and any retry included.",
                )
                .buckets(DURATION_BUCKETS.to_vec()),
                &["limit"],
            )
            .map_err(registry_error)?,
            backend: gauge(
                "ratelimit_client_backend",
                "1 for the backend the client found (module, functions, scripts), 0 for the others it has \
                 used before.",
                &["backend"],
            )?,
            top_refused: gauge(
                "ratelimit_client_top_refused",
                "The most refused identities (space-saving top-k over limit and identity, at most k series): \
                 the estimated refusals of each, an upper bound.",
                &["limit", "identity"],
            )?,
            top: Mutex::new(TopK::new(top_k)),
            current: AtomicU8::new(0),
            changing: Mutex::new(()),
        };
        let all = || -> [Box<dyn Collector>; 5] {
            [
                Box::new(inner.decisions.clone()),
                Box::new(inner.units.clone()),
                Box::new(inner.duration.clone()),
                Box::new(inner.backend.clone()),
                Box::new(inner.top_refused.clone()),
            ]
        };
        for (i, collector) in all().into_iter().enumerate() {
            if let Err(e) = registry.register(collector) {
                // All or none: those registered are taken out again.
                for done in all().into_iter().take(i) {
                    let _ = registry.unregister(done);
                }
                return Err(registry_error(e));
            }
        }
        Ok(PrometheusMetrics {
            inner: Arc::new(inner),
        })
    }

    /// Count one call: its outcome (a decision, or an error), from
    /// `start`, by `limit`; `identity` the refused one's, found only for a
    /// refusal.
    pub(crate) fn record<'a>(
        &self,
        start: Instant,
        limit: &str,
        identity: impl FnOnce() -> std::borrow::Cow<'a, str>,
        asked: u64,
        result: &Result<Decision, &Error>,
        backend: Option<Backend>,
    ) {
        let (outcome, units) = match result {
            Ok(d) if d.failed_open => ("failed_open", d.granted),
            Ok(d) if d.allowed => ("allowed", d.granted),
            Ok(_) => ("refused", asked),
            Err(e) if e.is_unavailable() => ("failed_closed", asked),
            // A server's refusal, a bad parameter: no decision.
            Err(_) => return,
        };
        let inner = &self.inner;
        inner
            .duration
            .with_label_values(&[limit])
            .observe(start.elapsed().as_secs_f64());
        inner.decisions.with_label_values(&[limit, outcome]).inc();
        inner.units.with_label_values(&[limit, outcome]).inc_by(units);
        if let Some(backend) = backend {
            self.backend_is(backend);
        }
        if outcome == "refused" {
            let mut top = lock(&inner.top);
            let identity = identity();
            if let Some(counted) = top.refused(limit, &identity) {
                if let Some((l, i)) = &counted.replaced {
                    let _ = inner.top_refused.remove_label_values(&[l, i]);
                }
                inner
                    .top_refused
                    .with_label_values(&[limit, &identity])
                    .set(i64::try_from(counted.count).unwrap_or(i64::MAX));
            }
        }
    }

    /// The gauge at 1 for `backend`, at 0 for the one before.
    fn backend_is(&self, backend: Backend) {
        let inner = &self.inner;
        if inner.current.load(Ordering::Acquire) == code(backend) {
            return;
        }
        let _one = lock(&inner.changing);
        let before = inner.current.swap(code(backend), Ordering::AcqRel);
        if before == code(backend) {
            return;
        }
        if let Some(before) = BACKENDS.iter().find(|b| code(**b) == before) {
            inner.backend.with_label_values(&[name(*before)]).set(0);
        }
        inner.backend.with_label_values(&[name(backend)]).set(1);
    }
}

const BACKENDS: [Backend; 3] = [Backend::Module, Backend::Functions, Backend::Scripts];

/// A backend as a number from 1 (0 is none).
fn code(backend: Backend) -> u8 {
    match backend {
        Backend::Module => 1,
        Backend::Functions => 2,
        Backend::Scripts => 3,
    }
}

/// The backend's label value.
fn name(backend: Backend) -> &'static str {
    match backend {
        Backend::Module => "module",
        Backend::Functions => "functions",
        Backend::Scripts => "scripts",
    }
}
