//! Every parameter's range (clients/contract/ranges.json), checked before
//! anything is sent, in the words every client uses.

use std::time::Duration;

use crate::Error;

/// Counts: rates, bursts, capacities, limits, units.
pub(crate) const COUNT_MAX: u64 = 1_000_000_000;
/// Durations, in milliseconds.
pub(crate) const MS_MAX: u64 = 1_000_000_000_000;
/// The sliding log's and the concurrency limit's `limit`: the most the
/// server's cap (`sliding_log_max_limit`, `concurrency_max_limit`) can be
/// raised to; `check()` finds a limit past the server's own setting.
pub(crate) const CAP_MAX: u64 = 1_000_000;
/// Lease ids are the server's clock in microseconds, a signed 64-bit integer.
pub(crate) const LEASE_MAX: u64 = i64::MAX as u64;
/// The client's `timeout`.
pub(crate) const TIMEOUT_MAX_MS: u64 = 60_000;
/// The client's `local_refusals`.
pub(crate) const REMEMBERED_MAX: u64 = 1_000_000;
/// `all_of`'s limiters (RL.ALL's own bound).
pub(crate) const ALL_OF_MAX: usize = 100;
/// A tag's bytes: the most the server's `tag_max_bytes` (64 by default)
/// can be raised to; the server answers for its own setting.
pub(crate) const TAG_MAX_BYTES: usize = 1024;

/// A tag of 1 to 1,024 bytes, never cut short (two tags that share their
/// first bytes would become one).
pub(crate) fn tag(tag: &[u8]) -> Result<&[u8], Error> {
    if (1..=TAG_MAX_BYTES).contains(&tag.len()) {
        Ok(tag)
    } else {
        Err(Error::invalid(
            "tag",
            format!(
                "tag must be from 1 to {TAG_MAX_BYTES} bytes, got {} bytes",
                tag.len()
            ),
        ))
    }
}

/// `value` within `min..=max`.
pub(crate) fn count(name: &'static str, value: u64, min: u64, max: u64) -> Result<u64, Error> {
    if (min..=max).contains(&value) {
        Ok(value)
    } else {
        Err(Error::invalid(
            name,
            format!("{name} must be an integer from {min} to {max}, got {value}"),
        ))
    }
}

/// `d` as whole milliseconds within `min..=max`.
pub(crate) fn millis(name: &'static str, d: Duration, min: u64, max: u64) -> Result<u64, Error> {
    if !d.subsec_nanos().is_multiple_of(1_000_000) {
        return Err(Error::invalid(
            name,
            format!(
                "{name} must be a whole number of milliseconds, got {} ms",
                ms_text(d)
            ),
        ));
    }
    let ms = d.as_millis();
    match u64::try_from(ms) {
        Ok(ms) if (min..=max).contains(&ms) => Ok(ms),
        _ => Err(Error::invalid(
            name,
            format!("{name} must be from {min} ms to {max} ms, got {ms} ms"),
        )),
    }
}

/// A duration in milliseconds, with its fraction when it has one
/// (`1.5`, `0.25`).
fn ms_text(d: Duration) -> String {
    let whole = d.as_millis();
    let nanos = d.subsec_nanos() % 1_000_000;
    if nanos == 0 {
        return whole.to_string();
    }
    let fraction = format!("{nanos:06}");
    format!("{whole}.{}", fraction.trim_end_matches('0'))
}

/// A key: any non-empty string.
pub(crate) fn key(key: &str) -> Result<(), Error> {
    if key.is_empty() {
        Err(Error::invalid(
            "key",
            "key must be a non-empty string".to_string(),
        ))
    } else {
        Ok(())
    }
}

/// A limit's name, as the middleware's keys and headers and the metrics'
/// labels carry it.
pub(crate) fn name(name: &str) -> Result<(), Error> {
    let printable = |c: char| c.is_ascii_graphic() || c == ' ';
    if name.is_empty()
        || !name
            .chars()
            .all(|c| printable(c) && !matches!(c, '"' | '\\' | '{' | '}'))
    {
        Err(Error::invalid(
            "name",
            "name must be a non-empty string of printable ASCII without \", \\, { or }".to_string(),
        ))
    } else {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fractions_of_a_millisecond() {
        assert_eq!(ms_text(Duration::from_micros(1500)), "1.5");
        assert_eq!(ms_text(Duration::from_micros(250)), "0.25");
        assert_eq!(ms_text(Duration::from_nanos(1)), "0.000001");
        assert_eq!(ms_text(Duration::from_nanos(3_000_000_001)), "3000.000001");
    }

    #[test]
    fn bounds_and_words() {
        assert_eq!(count("n", 0, 0, 5).unwrap(), 0);
        assert_eq!(
            count("rate", 6, 1, 5).unwrap_err().to_string(),
            "rate must be an integer from 1 to 5, got 6"
        );
        assert_eq!(
            millis("per", Duration::ZERO, 1, MS_MAX).unwrap_err().to_string(),
            "per must be from 1 ms to 1000000000000 ms, got 0 ms"
        );
        // Past u64 milliseconds: the value still in the message.
        assert_eq!(
            millis(
                "per",
                Duration::MAX - Duration::from_nanos(999_999_999),
                1,
                MS_MAX
            )
            .unwrap_err()
            .to_string(),
            "per must be from 1 ms to 1000000000000 ms, got 18446744073709551615000 ms"
        );
    }

    #[test]
    fn names() {
        assert!(name("api v2").is_ok());
        for bad in ["", "a\"b", "a\\b", "{a", "b}", "é", "tab\t"] {
            assert!(name(bad).is_err(), "{bad:?}");
        }
    }
}
