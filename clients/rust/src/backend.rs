//! The three backends, and the command each sends for one call.

use std::sync::OnceLock;

use redis::{Cmd, Value};

use crate::limit::{Arg, Command};
use crate::scripts::scripts_from_library;

/// The functions library (build.rs finds it: the packaged crate's copy, or
/// the repository's `functions/ratelimit.lua`).
const LIBRARY: &str = include_str!(env!("RL_LIBRARY"));

/// The client's version: the functions library it ships answers it from
/// `FCALL rl_version 0`.
pub const VERSION: &str = env!("CARGO_PKG_VERSION");

/// Which way a client reaches the limiters, found on first use and kept
/// for the life of the client (see the crate's documentation for the
/// rules).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Backend {
    /// The module is loaded: `RL.GCRA key ...`.
    Module,
    /// The functions library `ratelimit` at this client's version (found,
    /// or loaded by the client): `FCALL rl_gcra 1 key ...`.
    Functions,
    /// The standalone scripts: `EVALSHA sha 1 key ...`, loaded with
    /// `SCRIPT LOAD` when the server answers `NOSCRIPT`.
    Scripts,
}

/// The functions library's source: what the client loads with
/// `FUNCTION LOAD REPLACE`.
pub fn library_source() -> &'static str {
    LIBRARY
}

/// A standalone script's source and SHA-1, derived from the library.
pub(crate) fn script(command: Command) -> (&'static str, &'static str) {
    static SCRIPTS: OnceLock<Vec<(String, String)>> = OnceLock::new();
    let scripts = SCRIPTS.get_or_init(|| {
        let derived = scripts_from_library(LIBRARY).expect("build.rs derived the scripts from this library");
        COMMANDS
            .iter()
            .map(|c| {
                let (_, src) = derived
                    .iter()
                    .find(|(name, _)| name == c.function_name())
                    .unwrap_or_else(|| {
                        panic!("the functions library has no script for {}", c.function_name())
                    });
                (src.clone(), redis::Script::new(src).get_hash().to_string())
            })
            .collect()
    });
    let (src, sha) = &scripts[command.index()];
    (src, sha)
}

/// Each command with a script, in the order of `Command::index`.
const COMMANDS: [Command; 11] = [
    Command::Gcra,
    Command::TokenBucket,
    Command::Fixed,
    Command::SlidingLog,
    Command::SlidingCounter,
    Command::All,
    Command::Concurrency,
    Command::Release,
    Command::Renew,
    Command::Log,
    Command::Inspect,
];

/// `RL.GCRA` with no arguments: the module answers its wrong number of
/// arguments; a server without it, an unknown command (SPEC 18's search,
/// clients/contract/backends.json).
pub(crate) fn probe_module() -> Cmd {
    redis::cmd("RL.GCRA")
}

/// The module's answer to [`probe_module`].
pub(crate) fn module_found(reply: &str) -> bool {
    reply.contains("wrong number of arguments")
}

/// `FCALL rl_version 0`.
pub(crate) fn probe_version() -> Cmd {
    let mut c = redis::cmd("FCALL");
    c.arg("rl_version").arg(0);
    c
}

pub(crate) fn version_matches(reply: &Value) -> bool {
    redis::from_redis_value::<String>(reply).is_ok_and(|v| v == VERSION)
}

/// The library is not there (`ERR Function not found`): a failover to a
/// replica that never got it, a `FUNCTION FLUSH`, or never loaded.
pub(crate) fn function_missing(reply: &str) -> bool {
    reply.to_ascii_lowercase().contains("function not found")
}

/// `FUNCTION LOAD REPLACE <library>`.
pub(crate) fn load_library() -> Cmd {
    let mut c = redis::cmd("FUNCTION");
    c.arg("LOAD").arg("REPLACE").arg(LIBRARY);
    c
}

/// `SCRIPT LOAD <script>`.
pub(crate) fn load_script(command: Command) -> Cmd {
    let mut c = redis::cmd("SCRIPT");
    c.arg("LOAD").arg(script(command).0);
    c
}

/// The command for `command` over `keys` with `args` on `backend`.
pub(crate) fn build(backend: Backend, command: Command, keys: &[&str], args: &[Arg]) -> Cmd {
    let mut c = match backend {
        Backend::Module => {
            let mut c = redis::cmd(command.module_name());
            if command == Command::All {
                c.arg(keys.len());
            }
            c
        }
        Backend::Functions => {
            let mut c = redis::cmd("FCALL");
            c.arg(command.function_name()).arg(keys.len());
            c
        }
        Backend::Scripts => {
            let mut c = redis::cmd("EVALSHA");
            c.arg(script(command).1).arg(keys.len());
            c
        }
    };
    for key in keys {
        c.arg(*key);
    }
    for arg in args {
        match arg {
            Arg::Int(n) => c.arg(*n),
            Arg::Word(w) => c.arg(*w),
            Arg::Bytes(b) => c.arg(b.as_slice()),
        };
    }
    c
}

/// The Redis Cluster slot of `key` (CRC16/XMODEM of its hash tag, or of
/// the whole key), to route a call to the node that owns its first key.
pub(crate) fn key_slot(key: &[u8]) -> u16 {
    let tagged = key
        .iter()
        .position(|&b| b == b'{')
        .and_then(|open| {
            let rest = &key[open + 1..];
            rest.iter()
                .position(|&b| b == b'}')
                .filter(|&close| close > 0)
                .map(|close| &rest[..close])
        })
        .unwrap_or(key);
    let mut crc: u16 = 0;
    for &byte in tagged {
        crc ^= u16::from(byte) << 8;
        for _ in 0..8 {
            crc = if crc & 0x8000 != 0 {
                (crc << 1) ^ 0x1021
            } else {
                crc << 1
            };
        }
    }
    crc % 16384
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slots_as_redis_computes_them() {
        // Values from `CLUSTER KEYSLOT`.
        assert_eq!(key_slot(b"foo"), 12182);
        assert_eq!(key_slot(b"123456789"), 12739);
        assert_eq!(key_slot(b"{user:42}:burst"), key_slot(b"user:42"));
        // An empty tag hashes the whole key.
        assert_ne!(key_slot(b"{}a"), key_slot(b"{}b"));
    }

    #[test]
    fn every_command_has_its_functions_script() {
        let derived = scripts_from_library(LIBRARY).unwrap();
        for (i, command) in COMMANDS.into_iter().enumerate() {
            assert_eq!(command.index(), i);
            let (src, sha) = script(command);
            let (_, want) = derived
                .iter()
                .find(|(n, _)| n == command.function_name())
                .unwrap();
            assert_eq!(src, want);
            assert_eq!(sha, redis::Script::new(want).get_hash());
        }
    }

    #[test]
    fn commands_per_backend() {
        let args = [Arg::Int(1), Arg::Word("MS")];
        let packed = |c: Cmd| String::from_utf8_lossy(&c.get_packed_command()).replace("\r\n", " ");
        assert_eq!(
            packed(build(Backend::Module, Command::Gcra, &["k"], &args)),
            "*4 $7 RL.GCRA $1 k $1 1 $2 MS "
        );
        assert_eq!(
            packed(build(Backend::Module, Command::All, &["a", "b"], &args)),
            "*6 $6 RL.ALL $1 2 $1 a $1 b $1 1 $2 MS "
        );
        assert_eq!(
            packed(build(Backend::Functions, Command::All, &["a", "b"], &args)),
            "*7 $5 FCALL $6 rl_all $1 2 $1 a $1 b $1 1 $2 MS "
        );
    }
}
