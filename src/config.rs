//! Module settings: `CONFIG GET/SET ratelimit.<name>`, or `loadmodule` arguments.

use crate::decimal;
use crate::error::printable;
use crate::param::Cap;
use std::sync::atomic::{AtomicBool, AtomicI64, Ordering};

/// Default of `ratelimit.sliding_log_max_limit`.
pub const SLIDING_LOG_MAX_LIMIT_DEFAULT: i64 = 10_000;
/// Largest value it may be set to (8 MB per limiter at most).
pub const SLIDING_LOG_MAX_LIMIT_MAX: i64 = 1_000_000;

/// The largest `limit` the sliding log accepts: each logged unit costs
/// 8 bytes, so this bounds the memory of one limiter.
pub static SLIDING_LOG_MAX_LIMIT: AtomicI64 = AtomicI64::new(SLIDING_LOG_MAX_LIMIT_DEFAULT);

pub fn sliding_log_max_limit() -> u64 {
    positive(&SLIDING_LOG_MAX_LIMIT)
}

/// The bound it sets on the sliding log's `limit`.
pub const SLIDING_LOG_CAP: Cap = Cap {
    setting: "ratelimit.sliding_log_max_limit",
    value: sliding_log_max_limit,
    ceiling: SLIDING_LOG_MAX_LIMIT_MAX as u64,
};

/// Default of `ratelimit.concurrency_max_limit`.
pub const CONCURRENCY_MAX_LIMIT_DEFAULT: i64 = 10_000;
/// Largest value it may be set to (20 MB of leases per key at most).
pub const CONCURRENCY_MAX_LIMIT_MAX: i64 = 1_000_000;

/// The largest `limit` a lease command accepts: each lease costs 20 bytes
/// and a limit of `n` units allows up to `n` leases, so this bounds the
/// memory of one key.
pub static CONCURRENCY_MAX_LIMIT: AtomicI64 = AtomicI64::new(CONCURRENCY_MAX_LIMIT_DEFAULT);

pub fn concurrency_max_limit() -> u64 {
    positive(&CONCURRENCY_MAX_LIMIT)
}

/// The bound it sets on the lease command's `limit`.
pub const CONCURRENCY_CAP: Cap = Cap {
    setting: "ratelimit.concurrency_max_limit",
    value: concurrency_max_limit,
    ceiling: CONCURRENCY_MAX_LIMIT_MAX as u64,
};

fn positive(setting: &AtomicI64) -> u64 {
    u64::try_from(setting.load(Ordering::Relaxed)).unwrap_or(1).max(1)
}

/// `ratelimit.cl_throttle`: also register redis-cell's command (set at
/// load time only: `loadmodule ... cl_throttle yes`).
pub static CL_THROTTLE: AtomicBool = AtomicBool::new(false);

pub fn cl_throttle_enabled() -> bool {
    CL_THROTTLE.load(Ordering::Relaxed)
}

/// `ratelimit.shadow`: refusals of the rate commands are answered as
/// allowed, and nothing is recorded for them (`CONFIG SET` at run time, or a
/// `loadmodule` argument).
pub static SHADOW: AtomicBool = AtomicBool::new(false);

pub fn shadow() -> bool {
    SHADOW.load(Ordering::Relaxed)
}

/// The values a setting takes as a `loadmodule` argument.
enum Values {
    /// An integer from 1 to this.
    UpTo(i64),
    YesNo,
}

/// The settings, by their name without the `ratelimit.` prefix.
const SETTINGS: [(&str, Values); 4] = [
    ("sliding_log_max_limit", Values::UpTo(SLIDING_LOG_MAX_LIMIT_MAX)),
    ("concurrency_max_limit", Values::UpTo(CONCURRENCY_MAX_LIMIT_MAX)),
    ("cl_throttle", Values::YesNo),
    ("shadow", Values::YesNo),
];

/// Check the `loadmodule` arguments: pairs of a setting's name (as above,
/// without the `ratelimit.` prefix) and a value it accepts, each setting at
/// most once. The values themselves become the settings' initial values
/// when the settings are registered (a `ratelimit.*` line of the
/// configuration file still overrides them); this makes sure that every
/// argument given is one that takes effect, as given.
pub fn check_module_args(args: &[&[u8]]) -> Result<(), String> {
    let mut seen = [false; SETTINGS.len()];
    for pair in args.chunks(2) {
        let name = pair[0];
        let Some(index) = SETTINGS.iter().position(|(known, _)| known.as_bytes() == name) else {
            let known: Vec<String> = SETTINGS
                .iter()
                .map(|(name, values)| match values {
                    Values::UpTo(max) => format!("{name} <1..{max}>"),
                    Values::YesNo => format!("{name} <yes|no>"),
                })
                .collect();
            return Err(format!(
                "unknown module argument '{}' (the arguments are {})",
                printable(name),
                known.join(", ")
            ));
        };
        let (name, values) = &SETTINGS[index];
        let Some(&value) = pair.get(1) else {
            return Err(format!("module argument '{name}' has no value"));
        };
        if std::mem::replace(&mut seen[index], true) {
            return Err(format!("module argument '{name}' is given twice"));
        }
        let (valid, expected) = match values {
            Values::UpTo(max) => (
                decimal::parse_canonical(value).is_some_and(|n| (1..=*max as u128).contains(&n)),
                format!("an integer from 1 to {max}"),
            ),
            Values::YesNo => (value == b"yes" || value == b"no", "yes or no".to_string()),
        };
        if !valid {
            return Err(format!(
                "module argument '{name}' must be {expected}, got '{}'",
                printable(value)
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(args: &[&str]) -> Result<(), String> {
        let args: Vec<&[u8]> = args.iter().map(|a| a.as_bytes()).collect();
        check_module_args(&args)
    }

    #[test]
    fn valid_arguments_pass() {
        assert_eq!(check(&[]), Ok(()));
        assert_eq!(check(&["cl_throttle", "yes"]), Ok(()));
        assert_eq!(
            check(&["cl_throttle", "no", "sliding_log_max_limit", "1"]),
            Ok(())
        );
        assert_eq!(check(&["sliding_log_max_limit", "1000000"]), Ok(()));
    }

    #[test]
    fn every_other_argument_names_its_problem() {
        let unknown =
            "(the arguments are sliding_log_max_limit <1..1000000>, concurrency_max_limit <1..1000000>, cl_throttle <yes|no>, shadow <yes|no>)";
        for (args, expected) in [
            (
                &["foo", "bar"][..],
                format!("unknown module argument 'foo' {unknown}"),
            ),
            (
                &["CL_THROTTLE", "yes"],
                format!("unknown module argument 'CL_THROTTLE' {unknown}"),
            ),
            (
                &["ratelimit.cl_throttle", "yes"],
                format!("unknown module argument 'ratelimit.cl_throttle' {unknown}"),
            ),
            (
                &["cl_throttle"],
                "module argument 'cl_throttle' has no value".to_string(),
            ),
            (
                &["cl_throttle", "yes", "sliding_log_max_limit"],
                "module argument 'sliding_log_max_limit' has no value".to_string(),
            ),
            (
                &["sliding_log_max_limit", "30000", "sliding_log_max_limit", "40000"],
                "module argument 'sliding_log_max_limit' is given twice".to_string(),
            ),
        ] {
            assert_eq!(check(args), Err(expected), "{args:?}");
        }
        for value in ["maybe", "1", "YES", "", "yes "] {
            assert_eq!(
                check(&["cl_throttle", value]),
                Err(format!(
                    "module argument 'cl_throttle' must be yes or no, got '{value}'"
                )),
            );
        }
        for value in [
            "0",
            "-1",
            "05",
            "+5",
            "1000001",
            "4294967297",
            "abc",
            "",
            "1e3",
            "99999999999999999999",
        ] {
            assert_eq!(
                check(&["sliding_log_max_limit", value]),
                Err(format!(
                    "module argument 'sliding_log_max_limit' must be an integer from 1 to 1000000, got '{value}'"
                )),
            );
        }
    }
}
