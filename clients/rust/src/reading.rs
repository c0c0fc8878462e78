//! Reading a key without changing it: `RL.LOG` (who used a sliding log)
//! and `RL.INSPECT` (the state any limiter keeps), their typed answers. A
//! reading answers no decision: the failure policy never applies,
//! [`Error::Unavailable`] is returned.

use redis::Value;

use crate::Error;

/// Units a sliding log holds at one instant under one tag
/// ([`RateLimits::log`](crate::RateLimits::log)).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct LogEntry {
    /// When they were taken (or reserved: a future instant), in
    /// microseconds since the Unix epoch, the server's clock.
    pub instant_us: i64,
    /// How many.
    pub units: u64,
    /// The `TAG` of the calls that took them, `None` for none.
    pub tag: Option<Vec<u8>>,
}

/// The units a sliding log holds under one tag within the window
/// ([`RateLimits::log_by_tag`](crate::RateLimits::log_by_tag)).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct TagUnits {
    /// `None`: the units taken without a tag.
    pub tag: Option<Vec<u8>>,
    /// How many.
    pub units: u64,
}

/// The state of the limiter on a key
/// ([`RateLimits::inspect`](crate::RateLimits::inspect)): its `kind` and
/// its fields by name, in the server's order.
///
/// The fields: the kind's (`tat_us`; `tokens`, `updated_us`;
/// `window_start_us`, `count`; `entries`, `tagged`, `oldest_us`,
/// `newest_us`; `window_start_us`, `previous`, `current`; `leases`,
/// `units`, `next_deadline_us`, `last_id`), `blocked_until_us` when a block
/// was set, and `pttl` (milliseconds, -1 for no expiry).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Inspection {
    kind: Option<String>,
    fields: Vec<(String, Option<i64>)>,
}

impl Inspection {
    /// `gcra`, `token_bucket`, `fixed`, `sliding_log`, `sliding_counter`
    /// or `concurrency`; `None` when the key holds only a block.
    pub fn kind(&self) -> Option<&str> {
        self.kind.as_deref()
    }

    /// The field `name`: `None` when there is no such field or the server
    /// says nil (`oldest_us` of an empty log, say).
    pub fn get(&self, name: &str) -> Option<i64> {
        self.fields.iter().find(|(n, _)| n == name).and_then(|(_, v)| *v)
    }

    /// Whether the reply has the field `name` (nil or not).
    pub fn has(&self, name: &str) -> bool {
        self.fields.iter().any(|(n, _)| n == name)
    }

    /// Every field but `kind`, in the server's order.
    pub fn fields(&self) -> impl Iterator<Item = (&str, Option<i64>)> {
        self.fields.iter().map(|(n, v)| (n.as_str(), *v))
    }

    /// `pttl`: the key's time to live in milliseconds, -1 for none.
    pub fn pttl(&self) -> Option<i64> {
        self.get("pttl")
    }
}

fn unexpected(what: &str, reply: &Value) -> Error {
    Error::Reply(format!("{what}: {reply:?}"))
}

fn int(value: &Value, what: &str, reply: &Value) -> Result<i64, Error> {
    match value {
        Value::Int(n) => Ok(*n),
        _ => Err(unexpected(what, reply)),
    }
}

fn units(value: &Value, reply: &Value) -> Result<u64, Error> {
    u64::try_from(int(value, "log", reply)?).map_err(|_| unexpected("log", reply))
}

fn tag(value: &Value, reply: &Value) -> Result<Option<Vec<u8>>, Error> {
    match value {
        Value::Nil => Ok(None),
        Value::BulkString(bytes) => Ok(Some(bytes.clone())),
        Value::SimpleString(text) => Ok(Some(text.clone().into_bytes())),
        _ => Err(unexpected("log", reply)),
    }
}

fn items(reply: &Value, size: usize) -> Result<Vec<&[Value]>, Error> {
    let Value::Array(items) = reply else {
        return Err(unexpected("log", reply));
    };
    items
        .iter()
        .map(|item| match item {
            Value::Array(fields) if fields.len() == size => Ok(fields.as_slice()),
            _ => Err(unexpected("log", reply)),
        })
        .collect()
}

/// `[[instant_us, units, tag or nil], ...]`, newest first.
pub(crate) fn entries(reply: &Value) -> Result<Vec<LogEntry>, Error> {
    items(reply, 3)?
        .into_iter()
        .map(|f| {
            Ok(LogEntry {
                instant_us: int(&f[0], "log", reply)?,
                units: units(&f[1], reply)?,
                tag: tag(&f[2], reply)?,
            })
        })
        .collect()
}

/// `[[tag or nil, units], ...]`, most units first.
pub(crate) fn totals(reply: &Value) -> Result<Vec<TagUnits>, Error> {
    items(reply, 2)?
        .into_iter()
        .map(|f| {
            Ok(TagUnits {
                tag: tag(&f[0], reply)?,
                units: units(&f[1], reply)?,
            })
        })
        .collect()
}

fn text(value: &Value, reply: &Value) -> Result<String, Error> {
    match value {
        Value::BulkString(bytes) => Ok(String::from_utf8_lossy(bytes).into_owned()),
        Value::SimpleString(text) => Ok(text.clone()),
        _ => Err(unexpected("inspect", reply)),
    }
}

/// `RL.INSPECT`'s reply: a flat array of names and values (RESP2, the
/// functions edition) or a map (the module under RESP3); nil for a missing
/// key.
pub(crate) fn inspection(reply: &Value) -> Result<Option<Inspection>, Error> {
    let pairs: Vec<(&Value, &Value)> = match reply {
        Value::Nil => return Ok(None),
        Value::Array(flat) if flat.len() % 2 == 0 => flat.chunks(2).map(|p| (&p[0], &p[1])).collect(),
        Value::Map(map) => map.iter().map(|(n, v)| (n, v)).collect(),
        _ => return Err(unexpected("inspect", reply)),
    };
    let mut inspection = Inspection {
        kind: None,
        fields: Vec::with_capacity(pairs.len()),
    };
    for (name, value) in pairs {
        let name = text(name, reply)?;
        if name == "kind" {
            inspection.kind = match value {
                Value::Nil => None,
                v => Some(text(v, reply)?),
            };
        } else {
            let value = match value {
                Value::Nil => None,
                v => Some(int(v, "inspect", reply)?),
            };
            inspection.fields.push((name, value));
        }
    }
    Ok(Some(inspection))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bulk(s: &str) -> Value {
        Value::BulkString(s.as_bytes().to_vec())
    }

    #[test]
    fn entries_and_totals() {
        let reply = Value::Array(vec![
            Value::Array(vec![Value::Int(7), Value::Int(2), bulk("a")]),
            Value::Array(vec![Value::Int(5), Value::Int(1), Value::Nil]),
        ]);
        assert_eq!(
            entries(&reply).unwrap(),
            [
                LogEntry {
                    instant_us: 7,
                    units: 2,
                    tag: Some(b"a".to_vec())
                },
                LogEntry {
                    instant_us: 5,
                    units: 1,
                    tag: None
                },
            ]
        );
        let reply = Value::Array(vec![Value::Array(vec![Value::Nil, Value::Int(3)])]);
        assert_eq!(totals(&reply).unwrap(), [TagUnits { tag: None, units: 3 }]);
        for bad in [
            Value::Int(3),
            Value::Array(vec![Value::Array(vec![Value::Int(1), Value::Int(2)])]),
            Value::Array(vec![Value::Array(vec![bulk("x"), Value::Int(1), Value::Nil])]),
        ] {
            assert!(entries(&bad)
                .unwrap_err()
                .to_string()
                .starts_with("unexpected reply: log: "));
        }
    }

    #[test]
    fn inspection_from_an_array_and_a_map() {
        let flat = vec![
            bulk("kind"),
            bulk("sliding_log"),
            bulk("oldest_us"),
            Value::Nil,
            bulk("pttl"),
            Value::Int(-1),
        ];
        let map = Value::Map(flat.chunks(2).map(|p| (p[0].clone(), p[1].clone())).collect());
        for reply in [Value::Array(flat), map] {
            let i = inspection(&reply).unwrap().unwrap();
            assert_eq!(i.kind(), Some("sliding_log"));
            assert_eq!(
                (i.get("oldest_us"), i.has("oldest_us"), i.pttl()),
                (None, true, Some(-1))
            );
            assert_eq!(
                i.fields().collect::<Vec<_>>(),
                [("oldest_us", None), ("pttl", Some(-1))]
            );
        }
        assert_eq!(inspection(&Value::Nil).unwrap(), None);
        let odd = Value::Array(vec![bulk("kind")]);
        assert!(inspection(&odd)
            .unwrap_err()
            .to_string()
            .starts_with("unexpected reply: inspect: "));
    }
}
