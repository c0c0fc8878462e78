//! An LLM gateway: reserve the estimate, settle the real usage.
//!
//! Each tenant has two limits: 60 requests per minute (GCRA) and a budget of
//! 1200 tokens per hour (a token bucket, refilled by one token every 3 s). A
//! request's cost in tokens is known only when its completion ends, so the
//! gateway reserves its estimate (max_tokens) before calling the model, then
//! settles with the real usage:
//!
//! - used less: `refund` gives the rest back;
//! - used more: `force` charges it even past the budget; the budget is then
//!   in debt (0 left) and later requests wait until the refill has paid it
//!   back;
//! - used exactly the estimate: nothing to settle (`query` only reads).
//!
//! Why two calls and not one `all_of`: `all_of` decides several limits with
//! one quantity, which suits limits that count the same unit (tokens per
//! minute and tokens per day, say). Here one limit counts requests and the
//! other tokens: an `all_of` over both would charge max_tokens requests to
//! the request limit. So the gateway takes one request from the request
//! limit first, then max_tokens from the token budget, and when the budget
//! refuses, gives the request back: a refused request counts against
//! neither limit. Between the two calls another request may see that unit
//! taken, so it can only be refused early, never let past a limit.
//!
//! The budget refills slowly on purpose: nothing refills during the run, and
//! every number printed is the same on every run.
//!
//! ```sh
//! REDIS_PORT=6379 cargo run -p redis-ratelimit-client --release --example llm_gateway
//! ```

use std::time::Duration;

use redis_ratelimit_client::headers::seconds;
use redis_ratelimit_client::{Error, Limit, Limiter, RateLimits};

/// One hash tag per tenant keeps its two limits in one Cluster slot.
const REQUESTS: &str = "llm:{acme-rust}:requests";
const TOKENS: &str = "llm:{acme-rust}:tokens";

struct Gateway {
    /// 60 at once, then one a second: 60 per minute.
    requests: Limiter<redis::Client>,
    /// 1200 tokens, refilled over an hour.
    tokens: Limiter<redis::Client>,
}

impl Gateway {
    /// True when the request may go to the model with `max_tokens` reserved.
    fn reserve(&self, request: usize, max_tokens: u64) -> Result<bool, Error> {
        let shown = format!("request {request}: reserve {max_tokens} tokens");
        let requests = self.requests.take(REQUESTS)?;
        if !requests.allowed {
            let retry = seconds(requests.retry_after.unwrap_or_default());
            println!("{shown}: refused by the request limit, retry in {retry} s");
            return Ok(false);
        }
        let tokens = self.tokens.take_n(TOKENS, max_tokens)?;
        if !tokens.allowed {
            // The request was not served: it gives back its request too.
            self.requests.refund(REQUESTS, 1)?;
            let retry = seconds(tokens.retry_after.unwrap_or_default());
            println!("{shown}: refused by the token limit, retry in {retry} s");
            return Ok(false);
        }
        println!(
            "{shown}: allowed, {} tokens and {} requests left",
            tokens.remaining, requests.remaining
        );
        Ok(true)
    }

    /// Charge the real usage: give back what was reserved and not used, or
    /// charge the overage in full.
    fn settle(&self, request: usize, max_tokens: u64, used: u64) -> Result<(), Error> {
        let (reply, settled) = if used < max_tokens {
            let unused = max_tokens - used;
            (self.tokens.refund(TOKENS, unused)?, format!("{unused} refunded"))
        } else if used > max_tokens {
            let overage = used - max_tokens;
            (
                self.tokens.force(TOKENS, overage)?,
                format!("{overage} more charged"),
            )
        } else {
            (self.tokens.query(TOKENS)?, "as reserved".to_string())
        };
        // An empty budget takes `window` to fill again: a reset longer than
        // that counts the debt too, one token per refill interval.
        let limit = self.tokens.limit();
        let full_refill = seconds(limit.window());
        let mut owed = String::new();
        if seconds(reply.reset) > full_refill {
            let tokens = (seconds(reply.reset) - full_refill) * limit.limit() / full_refill;
            owed = format!(", {tokens} owed");
        }
        println!(
            "request {request}: used {used} tokens, {settled}: {} tokens left{owed}",
            reply.remaining
        );
        Ok(())
    }
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let host = std::env::var("REDIS_HOST").unwrap_or_else(|_| "127.0.0.1".into());
    let port = std::env::var("REDIS_PORT").unwrap_or_else(|_| "6379".into());
    let client = redis::Client::open(format!("redis://{host}:{port}/"))?;
    // Fresh limits: nothing left from an earlier run.
    redis::cmd("DEL")
        .arg(REQUESTS)
        .arg(TOKENS)
        .exec(&mut client.get_connection()?)?;
    let limits = RateLimits::new(client);
    let gateway = Gateway {
        requests: limits.limiter(Limit::gcra(60, Duration::from_secs(60))?),
        tokens: limits.limiter(Limit::token_bucket(1200, 1200, Duration::from_secs(3600))?),
    };
    println!("limits per tenant: 60 requests per minute, 1200 tokens per hour");
    // (max_tokens asked for, tokens the completion really used; requests 3
    // and 5 are refused, never reach the model and use none)
    let requests = [(500, 320), (500, 500), (500, 0), (300, 450), (100, 0)];
    for (i, (max_tokens, used)) in requests.into_iter().enumerate() {
        if gateway.reserve(i + 1, max_tokens)? {
            // The completion (simulated) runs here and reports its usage.
            gateway.settle(i + 1, max_tokens, used)?;
        }
    }
    Ok(())
}
