//! Command-line arguments -> validated numbers and options. Works on raw
//! bytes: input may be anything, including non-UTF-8 and NUL bytes.

use crate::error::{printable, CommandError};
use crate::options::{Accepts, Opt, BLOCK_DURATION, EXCLUDING, EXCLUSIVE, MAX_WAIT};
use crate::param::Param;
use rl_core::bounds::{MAX_PERIOD_MICROS, MAX_QUANTITY};
use rl_core::{Micros, Mode, Request, TimeUnit};

impl Param {
    /// The value of `bytes` for this parameter, in microseconds for a
    /// duration in `unit`.
    #[inline(always)]
    pub fn parse(&self, bytes: &[u8], unit: TimeUnit) -> Result<u64, CommandError> {
        let per_unit = if self.duration { unit.micros_per_unit() } else { 1 };
        let mut max = self.max;
        if let Some(cap) = self.cap {
            max = max.min((cap.value)());
        }
        if self.duration {
            max = max.min(MAX_PERIOD_MICROS) / per_unit;
        }
        match short_number(bytes) {
            Some(v) if (self.min..=max).contains(&v) => Ok(v * per_unit),
            _ => self.parse_general(bytes, max, per_unit),
        }
    }

    /// [`Param::parse`] of anything but a short number in range: any number
    /// Redis reads as an integer, checked against `max` (in `per_unit`s).
    /// Past a setting's bound, the error says which setting raises it,
    /// while it can be raised.
    #[cold]
    fn parse_general(&self, bytes: &[u8], max: u64, per_unit: u64) -> Result<u64, CommandError> {
        let (name, min) = (self.name, self.min);
        let value = parse_redis_int(bytes);
        match value.and_then(|v| u64::try_from(v).ok()) {
            Some(v) if (min..=max).contains(&v) => return Ok(v * per_unit),
            Some(v) if v > max => {
                if let Some(cap) = self.cap.filter(|cap| max < cap.ceiling) {
                    return Err(CommandError::OverCap {
                        name,
                        min,
                        max,
                        setting: cap.setting,
                        ceiling: cap.ceiling,
                        run_time: crate::config::set_at_run_time(),
                    });
                }
            }
            _ => {}
        }
        Err(CommandError::BadNumber { name, min, max })
    }
}

/// What the options after a command's parameters ask for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Options<'a> {
    /// Units this request costs (0: a query).
    pub quantity: u64,
    pub unit: TimeUnit,
    /// Answer without changing anything.
    pub peek: bool,
    /// How the units are taken (or given back).
    pub mode: Mode,
    /// `BLOCK duration`, in microseconds.
    pub block: Option<u64>,
    /// `TAG value`: what each unit the call logs carries.
    pub tag: Option<&'a [u8]>,
    /// The option words given, one bit each (`Opt::bit`): the usual call
    /// names none but `MS`, and is told apart by one test.
    pub named: u8,
}

impl Options<'_> {
    /// Whether the call names `option` (one test of a byte).
    #[inline(always)]
    pub fn names(&self, option: Opt) -> bool {
        self.named & option.bit() != 0
    }

    /// A request taken now, with no option but the unit: what the
    /// algorithm alone decides and records.
    #[inline(always)]
    pub fn plain(&self) -> bool {
        self.named & !Opt::Ms.bit() == 0
    }

    /// A request the algorithm alone decides when it allows it now: taken
    /// now, or waited for, or granted in part, or forced (whatever `PEEK`
    /// and `BLOCK` say), but not given back.
    #[inline(always)]
    pub fn allowed_at_once(&self) -> bool {
        self.named & Opt::Refund.bit() == 0
    }

    /// A request taken now: not waited for, granted in part, forced or given
    /// back (whatever `PEEK` and `BLOCK` say).
    #[inline(always)]
    pub fn taken_now(&self) -> bool {
        let other_ways = Opt::Refund.bit() | Opt::Force.bit() | Opt::Wait.bit() | Opt::AtMost.bit();
        self.named & other_ways == 0
    }

    /// A refusal the algorithm alone decides too: nothing to wait for, no
    /// part to grant, no block to start.
    #[inline(always)]
    pub fn refused_at_once(&self) -> bool {
        self.named & (Opt::Wait.bit() | Opt::AtMost.bit() | Opt::Block.bit()) == 0
    }

    /// The request the core judges.
    pub fn request(&self) -> Request {
        Request {
            quantity: self.quantity,
            mode: self.mode,
            block: self.block.map(|micros| Micros(u128::from(micros))),
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

/// `name key p1..pN [quantity] [options]`: the `n` positional parameters
/// after the key (still unparsed) and the options after them, those
/// `accepts` names.
#[inline(always)]
pub fn after_key<'a>(
    command: &'static str,
    args: &'a [&'a [u8]],
    n: usize,
    accepts: Accepts,
) -> Result<(&'a [&'a [u8]], Options<'a>), CommandError> {
    let arity = || CommandError::WrongArity { command };
    let [_, _, rest @ ..] = args else {
        return Err(arity());
    };
    let (positional, tail) = rest.split_at_checked(n).ok_or_else(arity)?;
    Ok((positional, options(command, tail, accepts)?))
}

/// `[quantity] [options]`: the arguments after a command's parameters
/// (`command`, for messages), the options those `accepts` names in the
/// options table. Options may come in any order; a word may repeat, an
/// option with a value may not. `quantity`, when present, comes first: a
/// first token that does not start with a letter is meant as the quantity.
/// Durations are read in the unit `MS` sets, wherever it stands.
#[inline(always)]
pub fn options<'a>(
    command: &'static str,
    args: &[&'a [u8]],
    accepts: Accepts,
) -> Result<Options<'a>, CommandError> {
    let mut options = Options {
        quantity: 1,
        unit: TimeUnit::Seconds,
        peek: false,
        mode: Mode::Take,
        block: None,
        tag: None,
        named: 0,
    };
    let mut rest = args;
    if let Some((first, tail)) = args.split_first() {
        if !first.first().is_some_and(u8::is_ascii_alphabetic) {
            options.quantity = parse_in_range(first, "quantity", 0, MAX_QUANTITY)?;
            rest = tail;
        }
    }
    if rest.is_empty() {
        return Ok(options);
    }
    let mut seen = 0u8;
    // The values of the options that take one, read once the unit is known.
    let (mut block, mut max_wait) = (None, None);
    let mut tokens = rest.iter();
    while let Some(token) = tokens.next() {
        let Some(option) = accepts.find(token) else {
            return Err(unknown_option(command, token, accepts, true));
        };
        if option.takes_value() {
            if seen & option.bit() != 0 {
                return Err(CommandError::OptionTwice {
                    option: option.word(),
                });
            }
            let Some(value) = tokens.next() else {
                return Err(CommandError::OptionWithoutValue {
                    option: option.word(),
                    value: option.value_name(),
                });
            };
            match option {
                Opt::Wait => max_wait = Some(value),
                Opt::Tag => options.tag = Some(tag(value)?),
                _ => block = Some(value),
            }
        }
        seen |= option.bit();
        match option {
            Opt::Ms => options.unit = TimeUnit::Millis,
            Opt::Peek => options.peek = true,
            Opt::Refund => options.mode = Mode::Refund,
            Opt::Force => options.mode = Mode::Force,
            Opt::AtMost => options.mode = Mode::AtMost,
            Opt::Wait | Opt::Block | Opt::Tag => {}
        }
    }
    let clash = match (seen & EXCLUDING).count_ones() {
        0 | 1 => None,
        _ => EXCLUSIVE
            .iter()
            .find(|(a, b, _)| seen & a.bit() != 0 && seen & b.bit() != 0),
    };
    if let Some((first, second, why)) = clash {
        return Err(CommandError::OptionsExclude {
            first: first.word(),
            second: second.word(),
            why,
        });
    }
    if let Some(value) = max_wait {
        options.mode = Mode::Wait(Micros(u128::from(MAX_WAIT.parse(value, options.unit)?)));
    }
    if let Some(value) = block {
        options.block = Some(BLOCK_DURATION.parse(value, options.unit)?);
    }
    options.named = seen;
    Ok(options)
}

/// `TAG`'s value: 1 byte to the `tag_max_bytes` setting.
fn tag(value: &[u8]) -> Result<&[u8], CommandError> {
    let max = crate::config::tag_max_bytes();
    if value.is_empty() || value.len() as u64 > max {
        return Err(CommandError::BadTag {
            max,
            run_time: crate::config::set_at_run_time(),
        });
    }
    Ok(value)
}

/// The error for `token` where one of `accepts` was expected by `command`.
/// An option this command does not take is named as such. A token that
/// starts like a number was probably meant as the quantity, of a command
/// that takes one (`takes_quantity`): say where that goes.
#[cold]
fn unknown_option(
    command: &'static str,
    token: &[u8],
    accepts: Accepts,
    takes_quantity: bool,
) -> CommandError {
    if let Some(option) = Accepts::RATE.find(token) {
        return CommandError::OptionNotTaken {
            command,
            option: option.word(),
            accepts,
        };
    }
    let numeric = token.first().is_some_and(|b| b.is_ascii_digit() || *b == b'-');
    CommandError::UnknownOption {
        token: printable(token),
        accepts,
        misplaced_quantity: takes_quantity && numeric,
    }
}

/// `[MS]`, the only option of a command that takes no quantity: the unit.
pub fn unit_only(command: &'static str, args: &[&[u8]]) -> Result<TimeUnit, CommandError> {
    let mut unit = TimeUnit::Seconds;
    for token in args {
        match Accepts::UNIT.find(token) {
            Some(_) => unit = TimeUnit::Millis,
            None => return Err(unknown_option(command, token, Accepts::UNIT, false)),
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
    use crate::param::{capped, duration, number, Cap};
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

    /// `params... [quantity] [options]`, as the rate commands read the
    /// arguments after the key.
    fn parse<'a, const N: usize>(
        command: &'static str,
        spec: &[Param; N],
        args: &[&'a [u8]],
    ) -> Result<([u64; N], Options<'a>), CommandError> {
        let (positional, rest) = args
            .split_at_checked(N)
            .ok_or(CommandError::WrongArity { command })?;
        let options = options(command, rest, Accepts::RATE)?;
        Ok((params(command, spec, positional, options.unit)?, options))
    }

    fn p(args: &[&'static str]) -> Result<([u64; 2], Options<'static>), CommandError> {
        let bytes: Vec<&[u8]> = args.iter().map(|a| a.as_bytes()).collect();
        parse("rl.test", &SPEC, &bytes)
    }

    fn opts(quantity: u64, unit: TimeUnit, peek: bool, mode: Mode, block: Option<u64>) -> Options<'static> {
        let bit = |named: bool, option: Opt| if named { option.bit() } else { 0 };
        let taken = match mode {
            Mode::Take => 0,
            Mode::Refund => Opt::Refund.bit(),
            Mode::Force => Opt::Force.bit(),
            Mode::Wait(_) => Opt::Wait.bit(),
            Mode::AtMost => Opt::AtMost.bit(),
        };
        Options {
            quantity,
            unit,
            peek,
            mode,
            block,
            tag: None,
            named: bit(unit == TimeUnit::Millis, Opt::Ms)
                | bit(peek, Opt::Peek)
                | bit(block.is_some(), Opt::Block)
                | taken,
        }
    }

    #[test]
    fn quantity_and_options_in_any_order() {
        use TimeUnit::*;
        assert_eq!(
            p(&["10", "60"]),
            Ok(([10, 60_000_000], opts(1, Seconds, false, Mode::Take, None)))
        );
        assert_eq!(
            p(&["10", "60", "3", "peek", "Ms"]),
            Ok(([10, 60_000], opts(3, Millis, true, Mode::Take, None)))
        );
        assert_eq!(
            p(&["10", "60", "MS", "PEEK", "ms"]),
            Ok(([10, 60_000], opts(1, Millis, true, Mode::Take, None)))
        );
        assert_eq!(
            p(&["10", "60", "2", "refund", "MS", "Refund"]),
            Ok(([10, 60_000], opts(2, Millis, false, Mode::Refund, None)))
        );
        assert_eq!(p(&["10", "60", "0"]).unwrap().1.quantity, 0);
    }

    #[test]
    fn block_takes_a_duration_in_the_unit_wherever_ms_stands() {
        use TimeUnit::*;
        assert_eq!(
            p(&["10", "60", "BLOCK", "600"]),
            Ok((
                [10, 60_000_000],
                opts(1, Seconds, false, Mode::Take, Some(600_000_000))
            ))
        );
        assert_eq!(
            p(&["10", "60", "2", "block", "600", "PEEK", "MS"]),
            Ok(([10, 60_000], opts(2, Millis, true, Mode::Take, Some(600_000))))
        );
        for (args, error) in [
            (
                &["10", "60", "BLOCK"][..],
                "ERR syntax error: BLOCK needs a value (BLOCK duration)",
            ),
            (
                &["10", "60", "BLOCK", "0"],
                "ERR BLOCK duration must be an integer from 1 to 1000000000",
            ),
            (
                &["10", "60", "BLOCK", "MS"],
                "ERR BLOCK duration must be an integer from 1 to 1000000000",
            ),
            (
                &["10", "60", "MS", "BLOCK", "1000000000001"],
                "ERR BLOCK duration must be an integer from 1 to 1000000000000",
            ),
            (
                &["10", "60", "BLOCK", "5", "BLOCK", "5"],
                "ERR syntax error: BLOCK is given twice",
            ),
            (
                &["10", "60", "REFUND", "BLOCK", "5"],
                "ERR syntax error: REFUND and BLOCK cannot be combined (a refund is never refused)",
            ),
        ] {
            assert_eq!(p(args).unwrap_err().to_string(), error, "{args:?}");
        }
    }

    #[test]
    fn an_option_a_command_does_not_take_is_named() {
        let tokens: [&[u8]; 2] = [b"2", b"REFUND"];
        assert_eq!(
            options("rl.test", &tokens, Accepts::RATE).unwrap().mode,
            Mode::Refund
        );
        for (tokens, error) in [
            (
                &tokens[..],
                "ERR syntax error: 'rl.lease' does not take REFUND (it takes MS or PEEK)",
            ),
            (
                &[b"block", b"5"],
                "ERR syntax error: 'rl.lease' does not take BLOCK (it takes MS or PEEK)",
            ),
        ] {
            assert_eq!(
                options("rl.lease", tokens, Accepts::LEASE)
                    .unwrap_err()
                    .to_string(),
                error
            );
        }
        assert_eq!(
            options("rl.test", &[b"FAST"], Accepts::RATE)
                .unwrap_err()
                .to_string(),
            "ERR syntax error: unknown option 'FAST' (expected MS, PEEK, REFUND, FORCE, WAIT, AT_MOST, BLOCK or TAG)"
        );
    }

    #[test]
    fn a_number_among_the_options_says_where_quantity_goes() {
        for tokens in [&[&b"MS"[..], b"5"][..], &[b"5", b"6"], &[b"PEEK", b"-1"]] {
            let error = options("rl.test", tokens, Accepts::RATE).unwrap_err();
            assert!(
                error.to_string().ends_with(
                    "(expected MS, PEEK, REFUND, FORCE, WAIT, AT_MOST, BLOCK or TAG; quantity comes right after the parameters, before any option)"
                ),
                "{tokens:?}: {error}"
            );
        }
        assert_eq!(
            unit_only("rl.renew", &[b"5"]).unwrap_err().to_string(),
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
        const CAPPED: [Param; 1] = [capped(number("limit", 1, MAX_LIMIT), &CAP)];
        let parse_limit = |v: &'static str| parse("rl.test", &CAPPED, &[v.as_bytes()]);
        assert_eq!(parse_limit("100").unwrap().0, [100]);
        assert_eq!(
            parse_limit("101").unwrap_err().to_string(),
            "ERR limit must be an integer from 1 to 100 (CONFIG SET ratelimit.test_max raises the cap, up to 1000)"
        );
        // At its ceiling, the setting can raise nothing.
        const AT_CEILING: [Param; 1] = [capped(
            number("limit", 1, MAX_LIMIT),
            &Cap {
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
