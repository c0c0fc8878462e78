//! What a command answers, before it is written to the client.

use rl_core::{Decision, TimeUnit};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reply {
    /// redis-cell's five integers: blocked, limit, remaining, retry_after,
    /// reset.
    Five([i64; 5]),
    /// The five, then one more (the binding limit's position in `RL.ALL`,
    /// the lease of `RL.CONCURRENCY`).
    Six([i64; 6]),
    Integer(i64),
}

impl Reply {
    /// The five integers of `decision`, times rounded up to `unit`.
    pub fn five(decision: &Decision, unit: TimeUnit) -> Reply {
        Reply::Five(decision.to_reply(unit))
    }

    /// The five integers of `decision`, then `sixth`.
    pub fn six(decision: &Decision, unit: TimeUnit, sixth: i64) -> Reply {
        let [a, b, c, d, e] = decision.to_reply(unit);
        Reply::Six([a, b, c, d, e, sixth])
    }

    /// Whether the request was refused (`None` for a reply that says
    /// neither).
    pub fn blocked(&self) -> Option<bool> {
        match self {
            Reply::Five([blocked, ..]) | Reply::Six([blocked, ..]) => Some(*blocked == 1),
            Reply::Integer(_) => None,
        }
    }
}
