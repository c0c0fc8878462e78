//! What a command answers, before it is written to the client.

use rl_core::{Decision, TimeUnit};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reply {
    /// redis-cell's five integers: blocked, limit, remaining, retry_after,
    /// reset.
    Five([i64; 5]),
    /// The five, then one more (the binding limit's position among several,
    /// the lease taken by a lease command).
    Six([i64; 6]),
    Integer(i64),
    /// A refund's answer: the first `len` integers (five, or six for
    /// several limits), those of a query after it. `INFO` counts it as a refund,
    /// neither allowed nor refused.
    Refund {
        fields: [i64; 6],
        len: usize,
    },
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

    /// The same integers, as a refund's answer.
    pub fn refund(self) -> Reply {
        let mut fields = [0; 6];
        let len = match self {
            Reply::Five(five) => {
                fields[..5].copy_from_slice(&five);
                5
            }
            Reply::Six(six) => {
                fields = six;
                6
            }
            other => return other,
        };
        Reply::Refund { fields, len }
    }

    /// Whether the request was refused (`None` for a reply that says
    /// neither: a refund, an integer).
    pub fn blocked(&self) -> Option<bool> {
        match self {
            Reply::Five([blocked, ..]) | Reply::Six([blocked, ..]) => Some(*blocked == 1),
            Reply::Integer(_) | Reply::Refund { .. } => None,
        }
    }
}
