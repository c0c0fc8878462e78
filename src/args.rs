//! Command-line arguments -> validated numbers and options. Works on raw
//! bytes: input may be anything, including non-UTF-8 and NUL bytes.

use crate::error::{printable, CommandError};
use rl_core::bounds::{MAX_PERIOD_MICROS, MAX_QUANTITY};
use rl_core::TimeUnit;

/// One positional numeric argument of a command.
#[derive(Debug, Clone, Copy)]
pub struct Param {
    pub name: &'static str,
    pub min: u64,
    /// The upper bound; for a duration, in microseconds.
    pub max: u64,
    /// A lower upper bound set at run time (a module setting).
    pub cap: Option<Cap>,
    /// A duration in the command's unit (seconds, or milliseconds with `MS`).
    pub duration: bool,
}

/// A number from `min` to `max`.
pub const fn number(name: &'static str, min: u64, max: u64) -> Param {
    Param {
        name,
        min,
        max,
        cap: None,
        duration: false,
    }
}

/// A duration of at least one unit, at most 10^15 µs.
pub const fn duration(name: &'static str) -> Param {
    Param {
        name,
        min: 1,
        max: MAX_PERIOD_MICROS,
        cap: None,
        duration: true,
    }
}

/// An upper bound that a module setting lowers at run time.
#[derive(Debug, Clone, Copy)]
pub struct Cap {
    /// The setting, as `CONFIG SET` names it.
    pub setting: &'static str,
    /// Its current value.
    pub value: fn() -> u64,
    /// The largest value it may be set to.
    pub ceiling: u64,
}

/// `param`, with an upper bound lowered at run time by a module setting.
pub const fn capped(param: Param, cap: Cap) -> Param {
    Param {
        cap: Some(cap),
        ..param
    }
}

impl Param {
    /// The value of `bytes` for this parameter, in microseconds for a
    /// duration in `unit`.
    #[inline(always)]
    pub fn parse(&self, bytes: &[u8], unit: TimeUnit) -> Result<u64, CommandError> {
        if self.duration {
            let per_unit = unit.micros_per_unit();
            let max = self.max.min(MAX_PERIOD_MICROS) / per_unit;
            Ok(parse_in_range(bytes, self.name, self.min, max)? * per_unit)
        } else if let Some(cap) = self.cap {
            let max = (cap.value)().min(self.max);
            parse_in_range(bytes, self.name, self.min, max).map_err(|error| {
                // A number past the setting's bound: say which setting
                // raises it, while it can be raised.
                let above = parse_redis_int(bytes).is_some_and(|v| v > 0 && v as u64 > max);
                match error {
                    CommandError::BadNumber { name, min, max } if above && max < cap.ceiling => {
                        CommandError::OverCap {
                            name,
                            min,
                            max,
                            setting: cap.setting,
                            ceiling: cap.ceiling,
                        }
                    }
                    other => other,
                }
            })
        } else {
            parse_in_range(bytes, self.name, self.min, self.max)
        }
    }
}

/// What the options after a command's parameters ask for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Options {
    /// Units this request costs (0: a query).
    pub quantity: u64,
    pub unit: TimeUnit,
    /// Answer without changing anything.
    pub peek: bool,
    /// Give `quantity` units back instead of taking them.
    pub refund: bool,
}

/// One option word a command may take after its quantity. The words, the
/// error texts that list them and `COMMAND DOCS` all come from here.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Opt {
    Ms,
    Peek,
    Refund,
}

impl Opt {
    /// The word as written in the grammar (matched in any case).
    pub const fn word(self) -> &'static str {
        match self {
            Opt::Ms => "MS",
            Opt::Peek => "PEEK",
            Opt::Refund => "REFUND",
        }
    }

    /// Its name in `COMMAND DOCS`.
    pub const fn doc_name(self) -> &'static str {
        match self {
            Opt::Ms => "ms",
            Opt::Peek => "peek",
            Opt::Refund => "refund",
        }
    }

    fn set(self, options: &mut Options) {
        match self {
            Opt::Ms => options.unit = TimeUnit::Millis,
            Opt::Peek => options.peek = true,
            Opt::Refund => options.refund = true,
        }
    }
}

/// The options a command takes after its quantity.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Accepts(pub &'static [Opt]);

impl Accepts {
    /// The rate commands, alone or several at once.
    pub const RATE: Accepts = Accepts(&[Opt::Ms, Opt::Peek, Opt::Refund]);
    /// The lease command.
    pub const LEASE: Accepts = Accepts(&[Opt::Ms, Opt::Peek]);
    /// A command that takes only a unit.
    pub const UNIT: Accepts = Accepts(&[Opt::Ms]);

    pub fn options(self) -> impl Iterator<Item = Opt> {
        self.0.iter().copied()
    }

    /// The option `token` names, if this command takes it.
    fn find(self, token: &[u8]) -> Option<Opt> {
        self.options()
            .find(|o| token.eq_ignore_ascii_case(o.word().as_bytes()))
    }

    /// The words, joined for a sentence: `MS, PEEK or REFUND` (`last`: "or"
    /// or "and").
    pub fn words(self, last: &str) -> String {
        let words: Vec<&str> = self.options().map(Opt::word).collect();
        match words.split_last() {
            Some((only, [])) => (*only).to_string(),
            Some((final_word, rest)) => format!("{} {last} {final_word}", rest.join(", ")),
            None => String::new(),
        }
    }
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

/// A number from `min` to `max`. The common case, a short positive number
/// in range, is decided inline; anything else goes to [`parse_general`].
#[inline(always)]
fn parse_in_range(bytes: &[u8], name: &'static str, min: u64, max: u64) -> Result<u64, CommandError> {
    match short_number(bytes) {
        Some(v) if (min..=max).contains(&v) => Ok(v),
        _ => parse_general(bytes, name, min, max),
    }
}

/// 1 to 18 digits without a leading zero (no sign, no overflow check).
#[inline(always)]
fn short_number(bytes: &[u8]) -> Option<u64> {
    match bytes {
        [first @ b'1'..=b'9', rest @ ..] if rest.len() < 18 => {
            rest.iter().try_fold(u64::from(first - b'0'), |acc, &b| {
                let digit = b.wrapping_sub(b'0');
                (digit <= 9).then_some(acc * 10 + u64::from(digit))
            })
        }
        _ => None,
    }
}

/// Any number Redis reads as an integer, checked against the range.
#[cold]
fn parse_general(bytes: &[u8], name: &'static str, min: u64, max: u64) -> Result<u64, CommandError> {
    match parse_redis_int(bytes).and_then(|v| u64::try_from(v).ok()) {
        Some(v) if (min..=max).contains(&v) => Ok(v),
        _ => Err(CommandError::BadNumber { name, min, max }),
    }
}

/// `name key p1..pN [quantity] [MS] [PEEK] [REFUND]`: the `n` positional
/// parameters after the key (still unparsed) and the options after them.
#[inline(always)]
pub fn after_key<'a>(
    command: &'static str,
    args: &'a [&'a [u8]],
    n: usize,
    accepts: Accepts,
) -> Result<(&'a [&'a [u8]], Options), CommandError> {
    let arity = || CommandError::WrongArity { command };
    let [_, _, rest @ ..] = args else {
        return Err(arity());
    };
    let (positional, tail) = rest.split_at_checked(n).ok_or_else(arity)?;
    Ok((positional, options(tail, accepts)?))
}

/// `[quantity] [MS] [PEEK] [REFUND]`: the arguments after a command's
/// parameters. Options may come in any order and may repeat; `quantity`,
/// when present, comes first: a first token that does not start with a
/// letter is meant as the quantity.
#[inline(always)]
pub fn options(args: &[&[u8]], accepts: Accepts) -> Result<Options, CommandError> {
    let mut options = Options {
        quantity: 1,
        unit: TimeUnit::Seconds,
        peek: false,
        refund: false,
    };
    let mut rest = args;
    if let Some((first, tail)) = args.split_first() {
        if !first.first().is_some_and(u8::is_ascii_alphabetic) {
            options.quantity = parse_in_range(first, "quantity", 0, MAX_QUANTITY)?;
            rest = tail;
        }
    }
    for token in rest {
        match accepts.find(token) {
            Some(option) => option.set(&mut options),
            None => return Err(unknown_option(token, accepts, true)),
        }
    }
    Ok(options)
}

/// The error for `token` where one of `accepts` was expected. A token that
/// starts like a number was probably meant as the quantity, of a command
/// that takes one (`takes_quantity`): say where that goes.
#[cold]
fn unknown_option(token: &[u8], accepts: Accepts, takes_quantity: bool) -> CommandError {
    let numeric = token.first().is_some_and(|b| b.is_ascii_digit() || *b == b'-');
    CommandError::UnknownOption {
        token: printable(token),
        accepts,
        misplaced_quantity: takes_quantity && numeric,
    }
}

/// `[MS]`, the only option of a command that takes no quantity: the unit.
pub fn unit_only(args: &[&[u8]]) -> Result<TimeUnit, CommandError> {
    let mut unit = TimeUnit::Seconds;
    for token in args {
        match Accepts::UNIT.find(token) {
            Some(_) => unit = TimeUnit::Millis,
            None => return Err(unknown_option(token, Accepts::UNIT, false)),
        }
    }
    Ok(unit)
}

/// The `N` parameters in `tokens` (exactly `N` of them), durations in `unit`.
#[inline(always)]
pub fn params<const N: usize>(
    command: &'static str,
    spec: &[Param; N],
    tokens: &[&[u8]],
    unit: TimeUnit,
) -> Result<[u64; N], CommandError> {
    if tokens.len() != N {
        return Err(CommandError::WrongArity { command });
    }
    let mut values = [0u64; N];
    for ((value, param), token) in values.iter_mut().zip(spec).zip(tokens) {
        *value = param.parse(token, unit)?;
    }
    Ok(values)
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
    fn the_short_number_fast_path_agrees_with_the_general_parser() {
        let mut inputs: Vec<String> = ["0", "-0", "00", "01", "1", "-1", "+1", "1x", "x1", "", " 1", "1 "]
            .iter()
            .map(|s| s.to_string())
            .collect();
        for k in 0..20 {
            let p = 10u128.pow(k);
            for v in [p - 1, p, p + 1, 9 * p + (p - 1)] {
                inputs.push(v.to_string());
                inputs.push(format!("{v}0"));
                inputs.push(format!("{v}:"));
            }
        }
        for input in inputs {
            let general = parse_redis_int(input.as_bytes()).and_then(|v| u64::try_from(v).ok());
            let ours = parse_in_range(input.as_bytes(), "n", 0, u64::MAX).ok();
            assert_eq!(ours, general, "{input:?}");
        }
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

    const SPEC: [Param; 2] = [number("limit", 1, MAX_LIMIT), duration("window")];

    /// `params... [quantity] [MS] [PEEK]`, as the rate commands read the
    /// arguments after the key.
    fn parse<const N: usize>(
        command: &'static str,
        spec: &[Param; N],
        args: &[&[u8]],
    ) -> Result<([u64; N], Options), CommandError> {
        let (positional, rest) = args
            .split_at_checked(N)
            .ok_or(CommandError::WrongArity { command })?;
        let options = options(rest, Accepts::RATE)?;
        Ok((params(command, spec, positional, options.unit)?, options))
    }

    fn p(args: &[&str]) -> Result<([u64; 2], Options), CommandError> {
        let bytes: Vec<&[u8]> = args.iter().map(|a| a.as_bytes()).collect();
        parse("rl.test", &SPEC, &bytes)
    }

    #[test]
    fn quantity_and_options_in_any_order() {
        let opts = |quantity, unit, peek, refund| Options {
            quantity,
            unit,
            peek,
            refund,
        };
        assert_eq!(
            p(&["10", "60"]),
            Ok(([10, 60_000_000], opts(1, TimeUnit::Seconds, false, false)))
        );
        assert_eq!(
            p(&["10", "60", "3", "peek", "Ms"]),
            Ok(([10, 60_000], opts(3, TimeUnit::Millis, true, false)))
        );
        assert_eq!(
            p(&["10", "60", "MS", "PEEK", "ms"]),
            Ok(([10, 60_000], opts(1, TimeUnit::Millis, true, false)))
        );
        assert_eq!(
            p(&["10", "60", "2", "refund", "MS", "Refund"]),
            Ok(([10, 60_000], opts(2, TimeUnit::Millis, false, true)))
        );
        assert_eq!(p(&["10", "60", "0"]).unwrap().1.quantity, 0);
    }

    #[test]
    fn refund_only_where_accepted() {
        let tokens: [&[u8]; 2] = [b"2", b"REFUND"];
        assert!(options(&tokens, Accepts::RATE).unwrap().refund);
        assert_eq!(
            options(&tokens, Accepts::LEASE),
            Err(CommandError::UnknownOption {
                token: "REFUND".into(),
                accepts: Accepts::LEASE,
                misplaced_quantity: false,
            })
        );
        assert_eq!(
            options(&[b"FAST"], Accepts::RATE).unwrap_err().to_string(),
            "ERR syntax error: unknown option 'FAST' (expected MS, PEEK or REFUND)"
        );
    }

    #[test]
    fn a_number_among_the_options_says_where_quantity_goes() {
        for tokens in [&[&b"MS"[..], b"5"][..], &[b"5", b"6"], &[b"PEEK", b"-1"]] {
            let error = options(tokens, Accepts::RATE).unwrap_err();
            assert!(
                error.to_string().ends_with(
                    "(expected MS, PEEK or REFUND; quantity comes right after the parameters, before any option)"
                ),
                "{tokens:?}: {error}"
            );
        }
        assert_eq!(
            unit_only(&[b"5"]).unwrap_err().to_string(),
            "ERR syntax error: unknown option '5' (expected MS)"
        );
    }

    const CAP: Cap = Cap {
        setting: "ratelimit.test_max",
        value: || 100,
        ceiling: 1000,
    };

    #[test]
    fn a_run_time_cap_lowers_the_bound_and_names_its_setting() {
        const CAPPED: [Param; 1] = [capped(number("limit", 1, MAX_LIMIT), CAP)];
        let parse_limit = |v: &str| parse("rl.test", &CAPPED, &[v.as_bytes()]);
        assert_eq!(parse_limit("100").unwrap().0, [100]);
        assert_eq!(
            parse_limit("101").unwrap_err().to_string(),
            "ERR limit must be an integer from 1 to 100 (CONFIG SET ratelimit.test_max raises the cap, up to 1000)"
        );
        // At its ceiling, the setting can raise nothing.
        const AT_CEILING: [Param; 1] = [capped(
            number("limit", 1, MAX_LIMIT),
            Cap {
                value: || 1000,
                ..CAP
            },
        )];
        assert_eq!(
            parse("rl.test", &AT_CEILING, &[b"1001"]),
            Err(CommandError::BadNumber {
                name: "limit",
                min: 1,
                max: 1000
            })
        );
    }

    #[test]
    fn exactly_n_parameters() {
        let tokens: [&[u8]; 3] = [b"1", b"2", b"3"];
        assert_eq!(
            params("rl.test", &SPEC, &tokens, TimeUnit::Seconds),
            Err(CommandError::WrongArity { command: "rl.test" })
        );
        assert_eq!(
            params("rl.test", &SPEC, &tokens[..2], TimeUnit::Millis),
            Ok([1, 2_000])
        );
    }

    #[test]
    fn errors_name_the_argument() {
        assert_eq!(p(&["10"]), Err(CommandError::WrongArity { command: "rl.test" }));
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
            Err(CommandError::UnknownOption {
                token: "PEKK".into(),
                accepts: Accepts::RATE,
                misplaced_quantity: false,
            })
        );
        assert_eq!(
            p(&["1", "1", "MS", "5"]),
            Err(CommandError::UnknownOption {
                token: "5".into(),
                accepts: Accepts::RATE,
                misplaced_quantity: true,
            })
        );
        assert!(matches!(
            p(&["1", "1", ""]),
            Err(CommandError::BadNumber { name: "quantity", .. })
        ));
    }
}
