//! What a command answers, before it is written to the client, and how the
//! call ended (which `INFO` counts).

use rl_core::{Decision, TimeUnit};

/// How a call that answered with a decision ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    Allowed,
    Refused,
    /// Units given back (`REFUND`): neither allowed nor refused.
    Refund,
    /// Refused, and answered as allowed: the shadow switch is on.
    ShadowRefused,
}

/// A reply of any shape: what the read commands (`RL.LOG`, `RL.INSPECT`)
/// answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Value {
    Integer(i64),
    Bulk(Vec<u8>),
    Nil,
    Array(Vec<Value>),
    /// Names and values, in this order: a map under RESP3, else a flat
    /// array of names and values alternating.
    Map(Vec<(&'static str, Value)>),
}

impl Value {
    /// An integer from an unsigned count or instant (saturating: every
    /// one the module keeps is far below 2^63).
    pub fn int(v: u64) -> Value {
        Value::Integer(i64::try_from(v).unwrap_or(i64::MAX))
    }

    /// A bulk string, or nil.
    pub fn bulk_or_nil(bytes: Option<&[u8]>) -> Value {
        bytes.map_or(Value::Nil, |b| Value::Bulk(b.to_vec()))
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Reply {
    /// redis-cell's five integers (blocked, limit, remaining, retry_after,
    /// reset), then those a command adds (the binding limit's position
    /// among several, a lease), `len` in all: 5 to [`Reply::MOST`].
    Decision {
        fields: [i64; Reply::MOST],
        len: u8,
        outcome: Outcome,
    },
    Integer(i64),
    /// Anything else (`Box`ed: the decisions' replies stay small).
    Value(Box<Value>),
}

impl Reply {
    /// The most integers a decision's reply holds.
    pub const MOST: usize = 7;

    /// The five integers of `decision`, times rounded up to `unit`.
    pub fn five(decision: &Decision, unit: TimeUnit) -> Reply {
        let mut fields = [0; Reply::MOST];
        fields[..5].copy_from_slice(&decision.to_reply(unit));
        let outcome = if decision.blocked {
            Outcome::Refused
        } else {
            Outcome::Allowed
        };
        Reply::Decision {
            fields,
            len: 5,
            outcome,
        }
    }

    /// The same, then `extra`.
    pub fn and(self, extra: i64) -> Reply {
        match self {
            Reply::Decision {
                mut fields,
                len,
                outcome,
            } if usize::from(len) < Reply::MOST => {
                fields[usize::from(len)] = extra;
                Reply::Decision {
                    fields,
                    len: len + 1,
                    outcome,
                }
            }
            other => other,
        }
    }

    /// The same integers, as a refund's answer.
    pub fn refund(self) -> Reply {
        match self {
            Reply::Decision { fields, len, .. } => Reply::Decision {
                fields,
                len,
                outcome: Outcome::Refund,
            },
            other => other,
        }
    }

    /// Whether the request was refused.
    pub fn refused(&self) -> bool {
        matches!(
            self,
            Reply::Decision {
                outcome: Outcome::Refused,
                ..
            }
        )
    }

    /// A refusal answered as allowed (the shadow switch): `blocked` 0,
    /// `retry_after` -1, the other fields as they were.
    pub fn shadowed(self) -> Reply {
        match self {
            Reply::Decision {
                mut fields,
                len,
                outcome: Outcome::Refused,
            } => {
                fields[0] = 0;
                fields[3] = -1;
                Reply::Decision {
                    fields,
                    len,
                    outcome: Outcome::ShadowRefused,
                }
            }
            other => other,
        }
    }

    /// How the call ended, for a reply with a decision.
    pub fn outcome(&self) -> Option<Outcome> {
        match self {
            Reply::Decision { outcome, .. } => Some(*outcome),
            Reply::Integer(_) | Reply::Value(_) => None,
        }
    }

    /// The integers of a decision.
    pub fn fields(&self) -> &[i64] {
        match self {
            Reply::Decision { fields, len, .. } => fields.get(..usize::from(*len)).unwrap_or(fields),
            Reply::Integer(_) | Reply::Value(_) => &[],
        }
    }
}
