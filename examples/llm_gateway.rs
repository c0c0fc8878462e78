//! An LLM gateway with the `redis` crate: reserve the estimate, settle the
//! real usage.
//!
//! Each tenant has two limits: 60 requests per minute (GCRA) and a budget of
//! 1200 tokens per hour (a token bucket, refilled by one token every 3 s). A
//! request's cost in tokens is known only when its completion ends, so the
//! gateway reserves its estimate (max_tokens) before calling the model, then
//! settles with the real usage:
//!
//! - used less: RL.TOKEN_BUCKET ... <unused> REFUND gives the rest back;
//! - used more: RL.TOKEN_BUCKET ... <overage> FORCE charges it even past the
//!   budget; the budget is then in debt (0 left) and later requests wait
//!   until the refill has paid it back;
//! - used exactly the estimate: nothing to settle (quantity 0 only reads).
//!
//! Why two calls and not one RL.ALL: RL.ALL decides several limits with one
//! quantity, which suits limits that count the same unit (tokens per minute
//! and tokens per day, say). Here one limit counts requests and the other
//! tokens: an RL.ALL over both would charge max_tokens requests to the
//! request limit. So the gateway takes one request from the request limit
//! first, then max_tokens from the token budget, and when the budget
//! refuses, gives the request back (REFUND): a refused request counts
//! against neither limit. Between the two calls another request may see that
//! unit taken, so it can only be refused early, never let past a limit.
//!
//! The budget refills slowly on purpose: nothing refills during the run, and
//! every number printed is the same on every run.
//!
//! ```sh
//! REDIS_PORT=6379 cargo run --release --example llm_gateway
//! ```

/// One hash tag per tenant keeps its two limits in one Cluster slot.
const TENANT: &str = "acme-rust";

/// A limit: its command and parameters.
struct Limit {
    key: String,
    command: &'static str,
    params: [u64; 3],
}

/// The five integers of a rate command's reply.
struct Reply {
    blocked: bool,
    remaining: i64,
    retry_after: i64,
    reset: i64,
}

impl Limit {
    /// The reply of RL.<algorithm> key params... quantity options...
    fn call(
        &self,
        con: &mut redis::Connection,
        quantity: i64,
        options: &[&str],
    ) -> redis::RedisResult<Reply> {
        let (blocked, _limit, remaining, retry_after, reset): (i64, i64, i64, i64, i64) =
            redis::cmd(self.command)
                .arg(&self.key)
                .arg(&self.params)
                .arg(quantity)
                .arg(options)
                .query(con)?;
        Ok(Reply {
            blocked: blocked == 1,
            remaining,
            retry_after,
            reset,
        })
    }
}

struct Gateway {
    con: redis::Connection,
    /// 60 at once, then one a second: 60 per minute.
    requests: Limit,
    /// 1200 tokens, refilled over an hour.
    tokens: Limit,
}

impl Gateway {
    /// True when the request may go to the model with `max_tokens` reserved.
    fn reserve(&mut self, request: usize, max_tokens: i64) -> redis::RedisResult<bool> {
        let shown = format!("request {request}: reserve {max_tokens} tokens");
        let requests = self.requests.call(&mut self.con, 1, &[])?;
        if requests.blocked {
            let retry_after = requests.retry_after;
            println!("{shown}: refused by the request limit, retry in {retry_after} s");
            return Ok(false);
        }
        let tokens = self.tokens.call(&mut self.con, max_tokens, &[])?;
        if tokens.blocked {
            // The request was not served: it gives back its request too.
            self.requests.call(&mut self.con, 1, &["REFUND"])?;
            let retry_after = tokens.retry_after;
            println!("{shown}: refused by the token limit, retry in {retry_after} s");
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
    fn settle(&mut self, request: usize, max_tokens: i64, used: i64) -> redis::RedisResult<()> {
        let (reply, settled) = if used < max_tokens {
            let unused = max_tokens - used;
            (
                self.tokens.call(&mut self.con, unused, &["REFUND"])?,
                format!("{unused} refunded"),
            )
        } else if used > max_tokens {
            let overage = used - max_tokens;
            (
                self.tokens.call(&mut self.con, overage, &["FORCE"])?,
                format!("{overage} more charged"),
            )
        } else {
            // Quantity 0: a query.
            (
                self.tokens.call(&mut self.con, 0, &[])?,
                "as reserved".to_string(),
            )
        };
        let [capacity, refill_count, refill_period] = self.tokens.params;
        // How long an empty budget takes to fill again (s): a reset longer
        // than this means the budget is in debt.
        let full_refill = (capacity * refill_period / refill_count) as i64;
        let mut owed = String::new();
        if reply.reset > full_refill {
            // reset (the time until the budget is full) counts the debt too:
            // each refill interval past a full refill is a token owed.
            let tokens = (reply.reset - full_refill) * refill_count as i64 / refill_period as i64;
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
    let con = redis::Client::open(format!("redis://{host}:{port}/"))?.get_connection()?;
    let mut gateway = Gateway {
        con,
        requests: Limit {
            key: format!("llm:{{{TENANT}}}:requests"),
            command: "RL.GCRA",
            params: [59, 60, 60],
        },
        tokens: Limit {
            key: format!("llm:{{{TENANT}}}:tokens"),
            command: "RL.TOKEN_BUCKET",
            params: [1200, 1200, 3600],
        },
    };
    // Fresh limits: nothing left from an earlier run.
    redis::cmd("DEL")
        .arg(&gateway.requests.key)
        .arg(&gateway.tokens.key)
        .exec(&mut gateway.con)?;
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
