//! Command-line arguments -> validated request. Works on raw bytes: input may
//! be anything, including non-UTF-8 and NUL bytes.

use crate::error::{printable, CommandError};
use redis_module::raw;
use rl_core::bounds::{MAX_PERIOD_MICROS, MAX_QUANTITY};
use rl_core::TimeUnit;
use std::os::raw::c_int;

/// One positional numeric argument of a command.
#[derive(Debug, Clone, Copy)]
pub struct Positional {
    pub name: &'static str,
    pub min: u64,
    /// The upper bound; for a duration, in microseconds.
    pub max: u64,
    /// A lower upper bound set at run time (a module setting).
    pub cap: Option<fn() -> u64>,
    /// A duration in the command's unit (seconds, or milliseconds with `MS`).
    pub is_duration: bool,
}

/// An argument as raw bytes: a client's string, or a test's slice.
pub trait AsBytes {
    fn bytes(&self) -> &[u8];
}

impl AsBytes for &[u8] {
    fn bytes(&self) -> &[u8] {
        self
    }
}

/// A command argument as the server passed it: read in place for the
/// duration of the command, never copied, retained or wrapped.
#[repr(transparent)]
#[derive(Clone, Copy)]
pub struct Arg(*mut raw::RedisModuleString);

impl Arg {
    /// The arguments of the running command.
    ///
    /// # Safety
    /// `argv` and `argc` are the running command's; the slice must not
    /// outlive the command.
    pub unsafe fn all<'a>(argv: *mut *mut raw::RedisModuleString, argc: c_int) -> &'a [Arg] {
        match usize::try_from(argc) {
            // `Arg` is a transparent wrapper of the pointers in `argv`.
            Ok(len) if len > 0 && !argv.is_null() => std::slice::from_raw_parts(argv.cast::<Arg>(), len),
            _ => &[],
        }
    }

    pub fn as_ptr(self) -> *mut raw::RedisModuleString {
        self.0
    }
}

impl AsBytes for Arg {
    fn bytes(&self) -> &[u8] {
        // SAFETY: the string is the running command's argument, alive for the
        // whole command; the server returns `len` bytes it owns.
        unsafe {
            let Some(ptr_len) = raw::RedisModule_StringPtrLen else {
                return &[];
            };
            if self.0.is_null() {
                return &[];
            }
            let mut len = 0usize;
            crate::server_bytes(ptr_len(self.0, &mut len), len)
        }
    }
}

/// The positional numbers of a request, without allocating (at most 3).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Numbers {
    values: [u64; 3],
    len: usize,
}

impl Numbers {
    fn push(&mut self, v: u64) {
        if let Some(slot) = self.values.get_mut(self.len) {
            *slot = v;
            self.len += 1;
        }
    }
}

impl std::ops::Deref for Numbers {
    type Target = [u64];
    fn deref(&self) -> &[u64] {
        &self.values[..self.len]
    }
}

/// Everything after the key, validated. Durations are in microseconds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Request {
    pub numbers: Numbers,
    pub quantity: u64,
    pub unit: TimeUnit,
    pub peek: bool,
}

/// Parse a decimal integer exactly as Redis does (`string2ll`): optional `-`,
/// no `+`, no spaces, no leading zeros, at most 20 characters, fits an i64.
pub fn parse_redis_int(bytes: &[u8]) -> Option<i64> {
    let (negative, digits) = match bytes {
        [b'-', rest @ ..] => (true, rest),
        _ => (false, bytes),
    };
    match digits {
        [] => return None,
        [b'0'] if !negative => return Some(0),
        [b'1'..=b'9', ..] => {}
        _ => return None,
    }
    if digits.len() <= 18 {
        // Cannot overflow: at most 10^18 - 1.
        let mut value: i64 = 0;
        for &b in digits {
            let digit = b.wrapping_sub(b'0');
            if digit > 9 {
                return None;
            }
            value = value * 10 + i64::from(digit);
        }
        return Some(if negative { -value } else { value });
    }
    let mut value: i64 = 0;
    for &b in digits {
        if !b.is_ascii_digit() {
            return None;
        }
        let digit = i64::from(b - b'0');
        value = value.checked_mul(10)?;
        value = if negative {
            value.checked_sub(digit)?
        } else {
            value.checked_add(digit)?
        };
    }
    Some(value)
}

fn parse_in_range(bytes: &[u8], name: &'static str, min: u64, max: u64) -> Result<u64, CommandError> {
    parse_redis_int(bytes)
        .and_then(|v| u64::try_from(v).ok())
        .filter(|v| (min..=max).contains(v))
        .ok_or(CommandError::BadNumber { name, min, max })
}

enum Flag {
    Ms,
    Peek,
}

fn flag(token: &[u8]) -> Option<Flag> {
    if token.eq_ignore_ascii_case(b"MS") {
        Some(Flag::Ms)
    } else if token.eq_ignore_ascii_case(b"PEEK") {
        Some(Flag::Peek)
    } else {
        None
    }
}

/// Parse `positional... [quantity] [MS] [PEEK]` (the arguments after the key).
/// Options may come in any order and may repeat; `quantity`, when present,
/// comes right after the positionals.
#[inline(always)]
pub fn parse<T: AsBytes>(
    command: &'static str,
    spec: &[Positional],
    args: &[T],
) -> Result<Request, CommandError> {
    if args.len() < spec.len() {
        return Err(CommandError::WrongArity { command });
    }
    let (positional, rest) = args.split_at(spec.len());
    let mut request = Request {
        numbers: Numbers::default(),
        quantity: 1,
        unit: TimeUnit::Seconds,
        peek: false,
    };
    let mut options = rest;
    if let Some((first, tail)) = rest.split_first() {
        // A token that does not start with a letter is meant as the quantity.
        if !first.bytes().first().is_some_and(u8::is_ascii_alphabetic) {
            request.quantity = parse_in_range(first.bytes(), "quantity", 0, MAX_QUANTITY)?;
            options = tail;
        }
    }
    for token in options {
        let token = token.bytes();
        match flag(token) {
            Some(Flag::Ms) => request.unit = TimeUnit::Millis,
            Some(Flag::Peek) => request.peek = true,
            None => {
                return Err(CommandError::UnknownOption {
                    token: printable(token),
                })
            }
        }
    }
    for (p, token) in spec.iter().zip(positional) {
        let bytes = token.bytes();
        let value = if p.is_duration {
            let per_unit = request.unit.micros_per_unit();
            let max = p.max.min(MAX_PERIOD_MICROS) / per_unit;
            parse_in_range(bytes, p.name, p.min, max)? * per_unit
        } else {
            let max = p.cap.map_or(p.max, |cap| cap().min(p.max));
            parse_in_range(bytes, p.name, p.min, max)?
        };
        request.numbers.push(value);
    }
    Ok(request)
}

#[cfg(test)]
mod tests {
    use super::*;
    use rl_core::bounds::MAX_LIMIT;

    #[test]
    fn integers_of_every_length_parse_exactly() {
        // Both sides of the 18-digit fast path, and the i64 limits.
        let mut values = vec![i64::MAX, i64::MIN, i64::MAX - 1, i64::MIN + 1];
        for k in 0..19 {
            let p = 10i64.pow(k);
            values.extend([p - 1, p, p + 1, 7 * p / 3, -(p - 1), -p, -(p + 1)]);
        }
        for v in values {
            let text = v.to_string();
            assert_eq!(parse_redis_int(text.as_bytes()), Some(v), "{text}");
        }
        assert_eq!(parse_redis_int(b"9223372036854775808"), None);
        assert_eq!(parse_redis_int(b"-9223372036854775809"), None);
        assert_eq!(parse_redis_int(b"12345678901234567x"), None);
        assert_eq!(parse_redis_int(b"1234567890123456789x"), None);
        assert_eq!(parse_redis_int(b"12/"), None);
        assert_eq!(parse_redis_int(b"12:"), None);
    }

    #[test]
    fn redis_integer_rules() {
        for ok in [
            &b"0"[..],
            b"1",
            b"-1",
            b"9223372036854775807",
            b"-9223372036854775808",
        ] {
            assert!(parse_redis_int(ok).is_some(), "{ok:?}");
        }
        for bad in [
            &b""[..],
            b"-",
            b"+1",
            b" 1",
            b"1 ",
            b"01",
            b"-0",
            b"00",
            b"1.5",
            b"1e3",
            b"9223372036854775808",
            b"-9223372036854775809",
            b"1\x00",
            b"\xff",
        ] {
            assert_eq!(parse_redis_int(bad), None, "{bad:?}");
        }
    }

    const SPEC: [Positional; 2] = [
        Positional {
            name: "limit",
            min: 1,
            max: MAX_LIMIT,
            cap: None,
            is_duration: false,
        },
        Positional {
            name: "window",
            min: 1,
            max: MAX_PERIOD_MICROS,
            cap: None,
            is_duration: true,
        },
    ];

    fn p(args: &[&str]) -> Result<Request, CommandError> {
        let bytes: Vec<&[u8]> = args.iter().map(|a| a.as_bytes()).collect();
        parse("rl.fixed", &SPEC, &bytes)
    }

    #[test]
    fn quantity_and_options_in_any_order() {
        let r = p(&["10", "60"]).unwrap();
        assert_eq!(
            (r.numbers.to_vec(), r.quantity, r.unit, r.peek),
            (vec![10, 60_000_000], 1, TimeUnit::Seconds, false)
        );
        let r = p(&["10", "60", "3", "peek", "Ms"]).unwrap();
        assert_eq!(
            (r.numbers.to_vec(), r.quantity, r.unit, r.peek),
            (vec![10, 60_000], 3, TimeUnit::Millis, true)
        );
        let r = p(&["10", "60", "MS", "PEEK", "ms"]).unwrap();
        assert_eq!((r.quantity, r.unit, r.peek), (1, TimeUnit::Millis, true));
        assert_eq!(p(&["10", "60", "0"]).unwrap().quantity, 0);
    }

    #[test]
    fn a_run_time_cap_lowers_the_bound() {
        const CAPPED: [Positional; 1] = [Positional {
            name: "limit",
            min: 1,
            max: MAX_LIMIT,
            cap: Some(|| 100),
            is_duration: false,
        }];
        let parse_limit = |v: &str| parse("rl.sliding_log", &CAPPED, &[v.as_bytes()]);
        assert_eq!(parse_limit("100").unwrap().numbers.to_vec(), vec![100]);
        assert_eq!(
            parse_limit("101"),
            Err(CommandError::BadNumber {
                name: "limit",
                min: 1,
                max: 100
            })
        );
    }

    #[test]
    fn errors_name_the_argument() {
        assert_eq!(p(&["10"]), Err(CommandError::WrongArity { command: "rl.fixed" }));
        assert_eq!(
            p(&["0", "60"]),
            Err(CommandError::BadNumber {
                name: "limit",
                min: 1,
                max: MAX_LIMIT
            })
        );
        assert_eq!(
            p(&["1", "1000000001"]),
            Err(CommandError::BadNumber {
                name: "window",
                min: 1,
                max: 1_000_000_000
            })
        );
        assert!(p(&["1", "1000000000001", "MS"]).is_err());
        assert!(p(&["1", "1000000000000", "MS"]).is_ok());
        assert_eq!(
            p(&["1", "1", "-1"]),
            Err(CommandError::BadNumber {
                name: "quantity",
                min: 0,
                max: MAX_QUANTITY
            })
        );
        assert_eq!(
            p(&["1", "1", "PEKK"]),
            Err(CommandError::UnknownOption { token: "PEKK".into() })
        );
        assert_eq!(
            p(&["1", "1", "MS", "5"]),
            Err(CommandError::UnknownOption { token: "5".into() })
        );
        assert!(matches!(
            p(&["1", "1", ""]),
            Err(CommandError::BadNumber { name: "quantity", .. })
        ));
    }
}
