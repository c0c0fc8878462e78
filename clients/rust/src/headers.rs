//! The IETF rate-limit header fields (draft-ietf-httpapi-ratelimit-headers-10)
//! and `Retry-After`, from limits and decisions: what the HTTP layer sends,
//! for handlers that answer on their own.
//!
//! ```
//! use redis_ratelimit_client::{headers, Limit};
//! use std::time::Duration;
//!
//! let burst = Limit::gcra_with_burst(1, Duration::from_secs(10), 3).unwrap();
//! let hourly = Limit::sliding_log(3, Duration::from_secs(3600)).unwrap();
//! assert_eq!(
//!     headers::policy(&[("burst", &burst), ("hourly", &hourly)]),
//!     r#""burst";q=3;w=30, "hourly";q=3;w=3600"#
//! );
//! ```

use std::time::Duration;

use crate::{Decision, Limit};

/// Whole seconds, rounded up: a client that waits this long is not early.
pub fn seconds(d: Duration) -> u64 {
    d.as_secs() + u64::from(d.subsec_nanos() > 0)
}

/// A policy name as a structured-field string: quoted, `"` and `\`
/// escaped.
fn quoted(name: &str) -> String {
    let mut out = String::with_capacity(name.len() + 2);
    out.push('"');
    for c in name.chars() {
        if c == '"' || c == '\\' {
            out.push('\\');
        }
        out.push(c);
    }
    out.push('"');
    out
}

/// `RateLimit-Policy`: each policy's name, quota (`q`: the limit's
/// [`Limit::limit`]) and window (`w`: [`Limit::window`] in seconds,
/// rounded up).
pub fn policy(policies: &[(&str, &Limit)]) -> String {
    policies
        .iter()
        .map(|(name, limit)| {
            format!(
                "{};q={};w={}",
                quoted(name),
                limit.limit(),
                seconds(limit.window())
            )
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// `RateLimit`: the binding policy's name, what remains (`r`) and the
/// seconds until it is fully rested (`t`, rounded up).
pub fn ratelimit(name: &str, decision: &Decision) -> String {
    format!(
        "{};r={};t={}",
        quoted(name),
        decision.remaining,
        seconds(decision.reset)
    )
}

/// `Retry-After` of a refusal: seconds, rounded up; `None` when allowed,
/// or when the request can never be allowed (more units than the limit).
pub fn retry_after(decision: &Decision) -> Option<String> {
    match (decision.allowed, decision.retry_after) {
        (false, Some(d)) => Some(seconds(d).to_string()),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rounding_up() {
        assert_eq!(seconds(Duration::ZERO), 0);
        assert_eq!(seconds(Duration::from_millis(1)), 1);
        assert_eq!(seconds(Duration::from_millis(9_998)), 10);
        assert_eq!(seconds(Duration::from_secs(10)), 10);
        assert_eq!(quoted(r#"a"b\c"#), r#""a\"b\\c""#);
    }
}
