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

/// Default of `ratelimit.tag_max_bytes`.
pub const TAG_MAX_BYTES_DEFAULT: i64 = 64;
/// Largest value it may be set to: what a tagged log's record holds.
pub const TAG_MAX_BYTES_MAX: i64 = 1024;

/// The longest `TAG` value: each logged unit keeps its tag, so this bounds
/// what a tag adds to a sliding log's memory.
pub static TAG_MAX_BYTES: AtomicI64 = AtomicI64::new(TAG_MAX_BYTES_DEFAULT);

pub fn tag_max_bytes() -> u64 {
    positive(&TAG_MAX_BYTES)
}

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

/// The values a setting takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Values {
    /// An integer from 1 to this.
    UpTo(i64),
    /// `yes` or `no`.
    YesNo,
}

/// Where a setting's value lives.
#[derive(Debug)]
pub enum Store {
    Number(&'static AtomicI64),
    Switch(&'static AtomicBool),
}

/// One module setting: `ratelimit.<name>` in `CONFIG GET/SET` and the
/// configuration file, `<name> <value>` as a `loadmodule` argument.
#[derive(Debug)]
pub struct Setting {
    /// Without the `ratelimit.` prefix.
    pub name: &'static str,
    pub values: Values,
    /// As a number (a switch: 1 for `yes`, 0 for `no`).
    pub default: i64,
    /// Set when the module loads, never changed afterwards.
    pub at_load_only: bool,
    pub store: Store,
}

impl Setting {
    /// The current value, as a number (a switch: 1 or 0).
    pub fn get(&self) -> i64 {
        match self.store {
            Store::Number(value) => value.load(Ordering::Relaxed),
            Store::Switch(on) => i64::from(on.load(Ordering::Relaxed)),
        }
    }

    /// Set the value (a switch: any non-zero number is `yes`). The server
    /// checks the range first; so does [`module_args`].
    pub fn set(&self, value: i64) {
        match self.store {
            Store::Number(number) => number.store(value, Ordering::Relaxed),
            Store::Switch(on) => on.store(value != 0, Ordering::Relaxed),
        }
    }

    /// The value as `INFO` and `CONFIG GET` show it.
    pub fn shown(&self) -> String {
        match (self.values, self.get()) {
            (Values::YesNo, 0) => "no".to_string(),
            (Values::YesNo, _) => "yes".to_string(),
            (Values::UpTo(_), value) => value.to_string(),
        }
    }
}

/// The settings, in the order `INFO` lists them.
pub static SETTINGS: [Setting; 5] = [
    Setting {
        name: "sliding_log_max_limit",
        values: Values::UpTo(SLIDING_LOG_MAX_LIMIT_MAX),
        default: SLIDING_LOG_MAX_LIMIT_DEFAULT,
        at_load_only: false,
        store: Store::Number(&SLIDING_LOG_MAX_LIMIT),
    },
    Setting {
        name: "concurrency_max_limit",
        values: Values::UpTo(CONCURRENCY_MAX_LIMIT_MAX),
        default: CONCURRENCY_MAX_LIMIT_DEFAULT,
        at_load_only: false,
        store: Store::Number(&CONCURRENCY_MAX_LIMIT),
    },
    Setting {
        name: "cl_throttle",
        values: Values::YesNo,
        default: 0,
        at_load_only: true,
        store: Store::Switch(&CL_THROTTLE),
    },
    Setting {
        name: "shadow",
        values: Values::YesNo,
        default: 0,
        at_load_only: false,
        store: Store::Switch(&SHADOW),
    },
    Setting {
        name: "tag_max_bytes",
        values: Values::UpTo(TAG_MAX_BYTES_MAX),
        default: TAG_MAX_BYTES_DEFAULT,
        at_load_only: false,
        store: Store::Number(&TAG_MAX_BYTES),
    },
];

/// Whether the server lets `CONFIG SET` change the settings at run time
/// (Redis 7.0+, Valkey: the module configuration API). Without it (Redis
/// 6.x) the `loadmodule` arguments set them, and the errors that name a
/// setting say so. Decided when the module loads.
static SET_AT_RUN_TIME: AtomicBool = AtomicBool::new(true);

pub fn set_at_run_time() -> bool {
    SET_AT_RUN_TIME.load(Ordering::Relaxed)
}

pub fn set_settable_at_run_time(settable: bool) {
    SET_AT_RUN_TIME.store(settable, Ordering::Relaxed);
}

/// The settings' values given as `loadmodule` arguments, by their index in
/// [`SETTINGS`]: `None` where not given.
pub type Given = [Option<i64>; SETTINGS.len()];

/// Read the `loadmodule` arguments: pairs of a setting's name (as above,
/// without the `ratelimit.` prefix) and a value it accepts, each setting at
/// most once. The values given become the settings' initial values when the
/// module loads (with the module configuration API, a `ratelimit.*` line of
/// the configuration file still overrides them); `Err` says which argument
/// would not take effect as given.
pub fn module_args(args: &[&[u8]]) -> Result<Given, String> {
    let mut given: Given = [None; SETTINGS.len()];
    for pair in args.chunks(2) {
        let name = pair[0];
        let Some(index) = SETTINGS.iter().position(|s| s.name.as_bytes() == name) else {
            let known: Vec<String> = SETTINGS
                .iter()
                .map(|s| match s.values {
                    Values::UpTo(max) => format!("{} <1..{max}>", s.name),
                    Values::YesNo => format!("{} <yes|no>", s.name),
                })
                .collect();
            return Err(format!(
                "unknown module argument '{}' (the arguments are {})",
                printable(name),
                known.join(", ")
            ));
        };
        let setting = &SETTINGS[index];
        let name = setting.name;
        let Some(&value) = pair.get(1) else {
            return Err(format!("module argument '{name}' has no value"));
        };
        if given[index].is_some() {
            return Err(format!("module argument '{name}' is given twice"));
        }
        let (parsed, expected) = match setting.values {
            Values::UpTo(max) => (
                decimal::parse_canonical(value)
                    .filter(|n| (1..=max as u128).contains(n))
                    .and_then(|n| i64::try_from(n).ok()),
                format!("an integer from 1 to {max}"),
            ),
            Values::YesNo => (
                match value {
                    b"yes" => Some(1),
                    b"no" => Some(0),
                    _ => None,
                },
                "yes or no".to_string(),
            ),
        };
        let Some(parsed) = parsed else {
            return Err(format!(
                "module argument '{name}' must be {expected}, got '{}'",
                printable(value)
            ));
        };
        given[index] = Some(parsed);
    }
    Ok(given)
}

/// The value each setting starts with: the one given, else its default.
pub fn initial(given: &Given) -> [i64; SETTINGS.len()] {
    std::array::from_fn(|i| given[i].unwrap_or(SETTINGS[i].default))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(args: &[&str]) -> Result<(), String> {
        let args: Vec<&[u8]> = args.iter().map(|a| a.as_bytes()).collect();
        module_args(&args).map(|_| ())
    }

    fn given(args: &[&str]) -> Given {
        let args: Vec<&[u8]> = args.iter().map(|a| a.as_bytes()).collect();
        module_args(&args).unwrap()
    }

    #[test]
    fn the_values_given_become_the_initial_values() {
        assert_eq!(given(&[]), [None; 5]);
        assert_eq!(initial(&given(&[])), [10_000, 10_000, 0, 0, 64]);
        let args = [
            "shadow",
            "yes",
            "sliding_log_max_limit",
            "1000000",
            "cl_throttle",
            "no",
            "tag_max_bytes",
            "1024",
        ];
        assert_eq!(
            given(&args),
            [Some(1_000_000), None, Some(0), Some(1), Some(1024)]
        );
        assert_eq!(initial(&given(&args)), [1_000_000, 10_000, 0, 1, 1024]);
        assert_eq!(
            initial(&given(&["concurrency_max_limit", "1", "cl_throttle", "yes"])),
            [10_000, 1, 1, 0, 64]
        );
    }

    #[test]
    fn settings_show_their_values_as_the_server_does() {
        let shown = |values, value| {
            static STORE: AtomicI64 = AtomicI64::new(0);
            static SWITCH: AtomicBool = AtomicBool::new(false);
            let setting = Setting {
                name: "test",
                values,
                default: 0,
                at_load_only: false,
                store: match values {
                    Values::UpTo(_) => Store::Number(&STORE),
                    Values::YesNo => Store::Switch(&SWITCH),
                },
            };
            setting.set(value);
            (setting.get(), setting.shown())
        };
        assert_eq!(shown(Values::UpTo(10), 7), (7, "7".to_string()));
        assert_eq!(shown(Values::YesNo, 1), (1, "yes".to_string()));
        assert_eq!(shown(Values::YesNo, 0), (0, "no".to_string()));
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
            "(the arguments are sliding_log_max_limit <1..1000000>, concurrency_max_limit <1..1000000>, cl_throttle <yes|no>, shadow <yes|no>, tag_max_bytes <1..1024>)";
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
