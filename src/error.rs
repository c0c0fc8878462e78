//! The one table of error replies. Every message starts with `ERR` (or is
//! Redis's own `WRONGTYPE`) and names the argument or key at fault.

use crate::options::{Accepts, Opt};
use rl_core::bounds::MAX_HELD;
use std::fmt;

/// Why a command could not run. Nothing has been changed when one is
/// returned: every error is found before a command's first write.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CommandError {
    /// Fewer arguments than the grammar needs.
    WrongArity { command: &'static str },
    /// A number that does not parse, or is out of its range.
    BadNumber { name: &'static str, min: u64, max: u64 },
    /// The same, for a number whose upper bound is a module setting that
    /// can be raised up to `ceiling`: with `CONFIG SET` where `run_time`
    /// (the server has module settings), else only when the module loads.
    OverCap {
        name: &'static str,
        min: u64,
        max: u64,
        setting: &'static str,
        ceiling: u64,
        run_time: bool,
    },
    /// A token where an option was expected that is not one of those the
    /// command `accepts`; `misplaced_quantity`: it looks like a number.
    UnknownOption {
        token: String,
        accepts: Accepts,
        misplaced_quantity: bool,
    },
    /// One of the module's options, given to a command that does not take
    /// it (`accepts`: those it takes).
    OptionNotTaken {
        command: &'static str,
        option: &'static str,
        accepts: Accepts,
    },
    /// Two options that exclude each other, and why.
    OptionsExclude {
        first: &'static str,
        second: &'static str,
        why: &'static str,
    },
    /// A `TAG` value that is empty or longer than the setting allows
    /// (`max`), which `CONFIG SET` raises where `run_time`.
    BadTag { max: u64, run_time: bool },
    /// `RL.LOG`'s `BY` followed by something else than `TAG`.
    ByWhat { token: String },
    /// A token among `RL.LOG`'s options that is none of them.
    UnknownLogOption { token: String },
    /// A key holding a string that no limiter's state is (`RL.INSPECT`).
    NotALimiter { key: String, problem: &'static str },
    /// An option with a value, given twice.
    OptionTwice { option: &'static str },
    /// An option whose value is missing (`value`: what it should be).
    OptionWithoutValue {
        option: &'static str,
        value: &'static str,
    },
    /// An option given to a command that takes none (redis-cell's grammar).
    /// `instead`: the command that takes them, and which.
    NoOptions {
        command: &'static str,
        token: String,
        instead: &'static str,
        accepts: Accepts,
    },
    /// The key holds another Redis type.
    WrongType,
    /// The key holds the right type but not a valid state for this
    /// command's algorithm (`command`: the algorithm's own command).
    CorruptState {
        key: String,
        command: &'static str,
        problem: &'static str,
    },
    /// The key holds the state of another algorithm (`holder`: its
    /// command), not of `command`'s.
    ForeignState {
        key: String,
        command: &'static str,
        holder: &'static str,
    },
    /// A wait (`Mode::Wait`) asked of an algorithm that cannot reserve
    /// (`command`: its own command); `takers`: the commands whose
    /// algorithms can, as a sentence.
    CannotWait { command: &'static str, takers: String },
    /// A forced request that would leave the key's limiter holding more
    /// than the most a limiter may.
    Overdrawn { key: String },
    /// A forced request or a reservation that would leave a sliding log
    /// holding more entries than its setting allows.
    LogTooLong {
        key: String,
        entries: u64,
        max: u64,
        setting: &'static str,
    },
    /// Several limits at once: `numkeys` names more keys and limits than follow it.
    TooFewLimits { numkeys: u64 },
    /// Several limits at once: `numkeys` says one number of keys, the first
    /// algorithm name (`first`) stands after another.
    KeysMiscounted {
        numkeys: u64,
        given: usize,
        first: String,
    },
    /// Several limits at once: a key given twice.
    DuplicateKey { key: String },
    /// Several limits at once: a limit whose algorithm is not one the module knows.
    UnknownAlgorithm {
        position: usize,
        token: String,
        expected: String,
    },
    /// Several limits at once: the error of the limit at `position` (1-based), which uses
    /// `algorithm`.
    InLimit {
        position: usize,
        algorithm: &'static str,
        error: Box<CommandError>,
    },
    /// A write the server refused (e.g. out of memory).
    Storage { detail: &'static str },
    /// A bug caught by the panic guard.
    Internal,
}

impl fmt::Display for CommandError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CommandError::WrongArity { command } => {
                write!(f, "ERR wrong number of arguments for '{command}' command")
            }
            CommandError::BadNumber { name, min, max } => {
                write!(f, "ERR {name} must be an integer from {min} to {max}")
            }
            CommandError::OverCap {
                name,
                min,
                max,
                setting,
                ceiling,
                run_time: true,
            } => write!(
                f,
                "ERR {name} must be an integer from {min} to {max} (CONFIG SET {setting} raises the cap, up to {ceiling})"
            ),
            CommandError::OverCap {
                name,
                min,
                max,
                setting,
                ceiling,
                run_time: false,
            } => {
                let argument = setting.strip_prefix("ratelimit.").unwrap_or(setting);
                write!(
                    f,
                    "ERR {name} must be an integer from {min} to {max} (the loadmodule argument '{argument} <n>' raises the cap, up to {ceiling}; this server has no CONFIG SET for module settings)"
                )
            }
            CommandError::UnknownOption {
                token,
                accepts,
                misplaced_quantity,
            } => {
                let expected = accepts.words("or");
                let hint = if *misplaced_quantity {
                    "; quantity comes right after the parameters, before any option"
                } else {
                    ""
                };
                write!(
                    f,
                    "ERR syntax error: unknown option '{token}' (expected {expected}{hint})"
                )
            }
            CommandError::OptionNotTaken {
                command,
                option,
                accepts,
            } => write!(
                f,
                "ERR syntax error: '{command}' does not take {option} (it takes {})",
                accepts.words("or")
            ),
            CommandError::OptionsExclude { first, second, why } => {
                write!(f, "ERR syntax error: {first} and {second} cannot be combined ({why})")
            }
            CommandError::BadTag { max, run_time: true } => write!(
                f,
                "ERR TAG value must be 1 to {max} bytes (CONFIG SET ratelimit.tag_max_bytes raises the cap, up to {})",
                crate::config::TAG_MAX_BYTES_MAX
            ),
            CommandError::BadTag { max, run_time: false } => write!(
                f,
                "ERR TAG value must be 1 to {max} bytes (the loadmodule argument 'tag_max_bytes <n>' raises the cap, up to {}; this server has no CONFIG SET for module settings)",
                crate::config::TAG_MAX_BYTES_MAX
            ),
            CommandError::ByWhat { token } => write!(f, "ERR syntax error: BY takes only TAG, got '{token}'"),
            CommandError::UnknownLogOption { token } => {
                write!(f, "ERR syntax error: unknown option '{token}' (expected MS, BY TAG or COUNT)")
            }
            CommandError::NotALimiter { key, problem } => {
                write!(f, "ERR key '{key}' does not hold a limiter's state: {problem}")
            }
            CommandError::OptionTwice { option } => write!(f, "ERR syntax error: {option} is given twice"),
            CommandError::OptionWithoutValue { option, value } => {
                write!(f, "ERR syntax error: {option} needs a value ({value})")
            }
            CommandError::NoOptions {
                command,
                token,
                instead,
                accepts,
            } => {
                write!(
                    f,
                    "ERR syntax error: '{command}' takes no options, got '{token}' ({} takes {})",
                    instead.to_ascii_uppercase(),
                    accepts.words("and")
                )
            }
            CommandError::WrongType => {
                f.write_str("WRONGTYPE Operation against a key holding the wrong kind of value")
            }
            CommandError::CorruptState {
                key,
                command,
                problem,
            } => {
                write!(
                    f,
                    "ERR key '{key}' does not hold a valid {} state: {problem}",
                    command.to_ascii_uppercase()
                )
            }
            CommandError::ForeignState { key, command, holder } => write!(
                f,
                "ERR key '{key}' holds an {} state, not an {} one (use another key, or DEL it to start over)",
                holder.to_ascii_uppercase(),
                command.to_ascii_uppercase()
            ),
            CommandError::CannotWait { command, takers } => {
                write!(
                    f,
                    "ERR {} does not work with {}: a window cannot hold a later window's requests ({} works with {takers})",
                    Opt::Wait.word(),
                    command.to_ascii_uppercase(),
                    Opt::Wait.word()
                )
            }
            CommandError::Overdrawn { key } => write!(
                f,
                "ERR {} would leave key '{key}' holding more than {MAX_HELD} units, debt included (nothing was recorded)",
                Opt::Force.word()
            ),
            CommandError::LogTooLong {
                key,
                entries,
                max,
                setting,
            } => write!(
                f,
                "ERR the sliding log of key '{key}' would hold {entries} entries, more than {setting} ({max}) allows (nothing was recorded)"
            ),
            CommandError::TooFewLimits { numkeys } => {
                write!(f, "ERR numkeys is {numkeys}, but fewer keys and limits follow")
            }
            CommandError::KeysMiscounted { numkeys, given, first } => {
                let keys = if *given == 1 { "key was" } else { "keys were" };
                write!(
                    f,
                    "ERR numkeys is {numkeys}, but {given} {keys} given before the first algorithm ('{first}')"
                )
            }
            CommandError::DuplicateKey { key } => write!(f, "ERR key '{key}' is given twice"),
            CommandError::UnknownAlgorithm {
                position,
                token,
                expected,
            } => write!(
                f,
                "ERR limit {position}: unknown algorithm '{token}' (expected {expected})"
            ),
            CommandError::InLimit {
                position,
                algorithm,
                error,
            } => {
                let inner = error.to_string();
                let inner = inner.strip_prefix("ERR ").unwrap_or(&inner);
                let algorithm = algorithm.to_ascii_uppercase();
                write!(f, "ERR limit {position} ({algorithm}): {inner}")
            }
            CommandError::Storage { detail } => write!(f, "ERR could not store the limiter state: {detail}"),
            CommandError::Internal => {
                f.write_str("ERR internal error in the ratelimit module (the request was not applied)")
            }
        }
    }
}

impl CommandError {
    /// The error for `key`, which holds a string that is not a valid state
    /// for `command` (`problem` says why), or the state of `holder`'s
    /// algorithm.
    #[cold]
    pub fn state(
        key: &[u8],
        command: &'static str,
        problem: &'static str,
        holder: Option<&'static str>,
    ) -> CommandError {
        match holder {
            Some(holder) if holder != command => CommandError::ForeignState {
                key: printable(key),
                command,
                holder,
            },
            _ => CommandError::CorruptState {
                key: printable(key),
                command,
                problem,
            },
        }
    }
}

/// Render untrusted bytes (a key name, an option) for an error message:
/// printable ASCII kept, anything else escaped, long input shortened.
pub fn printable(bytes: &[u8]) -> String {
    const MAX: usize = 64;
    let mut out = String::new();
    for &b in bytes.iter().take(MAX) {
        if (0x20..0x7f).contains(&b) && b != b'\'' && b != b'\\' {
            out.push(char::from(b));
        } else {
            out.push_str(&format!("\\x{b:02x}"));
        }
    }
    if bytes.len() > MAX {
        out.push_str("...");
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn printable_escapes_control_and_non_utf8_bytes() {
        assert_eq!(printable(b"user:1"), "user:1");
        assert_eq!(printable(b"a\r\nb\xff'"), "a\\x0d\\x0ab\\xff\\x27");
        let long = vec![b'x'; 100];
        assert_eq!(printable(&long), format!("{}...", "x".repeat(64)));
    }

    #[test]
    fn messages_start_with_an_error_code() {
        let e = CommandError::BadNumber {
            name: "count",
            min: 1,
            max: 10,
        };
        assert_eq!(e.to_string(), "ERR count must be an integer from 1 to 10");
        assert!(CommandError::WrongType.to_string().starts_with("WRONGTYPE "));
    }

    #[test]
    fn a_cap_names_how_this_server_raises_it() {
        let over = |run_time| CommandError::OverCap {
            name: "limit",
            min: 1,
            max: 10_000,
            setting: "ratelimit.sliding_log_max_limit",
            ceiling: 1_000_000,
            run_time,
        };
        assert_eq!(
            over(true).to_string(),
            "ERR limit must be an integer from 1 to 10000 (CONFIG SET ratelimit.sliding_log_max_limit raises the cap, up to 1000000)"
        );
        assert_eq!(
            over(false).to_string(),
            "ERR limit must be an integer from 1 to 10000 (the loadmodule argument 'sliding_log_max_limit <n>' raises the cap, up to 1000000; this server has no CONFIG SET for module settings)"
        );
    }
}
