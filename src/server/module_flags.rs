//! The module flags declared to the server (its "module options":
//! `RedisModule_SetModuleOptions`, which Valkey also exports as
//! `ValkeyModule_SetModuleOptions`), and why the module may declare them.
//!
//! Every limiter is one plain string key; every write replicates its effect
//! (`SET .. PXAT`, `SETRANGE` + `PEXPIREAT`, `DEL`), never the command; the
//! module has no data type, no auxiliary RDB data and keeps nothing outside
//! the keyspace but its `INFO` counters. So:
//! - a replica may load a full sync in the background while it keeps
//!   serving reads from its old data (`repl-diskless-load swapdb`): there is
//!   no module state that the loading data set would have to agree with;
//! - Valkey 9 may move slots atomically (`CLUSTER MIGRATESLOTS`): the keys
//!   travel as any string does, and the writes made meanwhile travel as the
//!   effects they already are.
//!
//! The set replaces the one declared before, so every option is declared in
//! one call. An option bit means what its server says: Valkey numbers its
//! atomic slot migration option `1 << 5`, which Redis does not define the
//! same way, so that one is declared only to Valkey 9 or newer.

use redis_module::{raw, Context};
use std::ffi::CStr;
use std::os::raw::c_int;

/// `REDISMODULE_OPTION_NO_IMPLICIT_SIGNAL_MODIFIED` (Redis 6.2+, Valkey):
/// a key is signalled as modified (`WATCH`, client tracking) only when a
/// command changed it (see `ServerKey`), not whenever one was opened for
/// writing.
const NO_IMPLICIT_SIGNAL_MODIFIED: c_int = 1 << 1;
/// `REDISMODULE_OPTIONS_HANDLE_REPL_ASYNC_LOAD` (Redis 7.0+, Valkey).
const HANDLE_REPL_ASYNC_LOAD: c_int = 1 << 2;
/// `VALKEYMODULE_OPTIONS_HANDLE_ATOMIC_SLOT_MIGRATION` (Valkey 9.0+).
const HANDLE_ATOMIC_SLOT_MIGRATION: c_int = 1 << 5;

/// What the module needs to know of the server to choose its options.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Server {
    valkey: bool,
    version: (u32, u32, u32),
}

impl Server {
    fn name(&self) -> String {
        let (a, b, c) = self.version;
        format!("{} {a}.{b}.{c}", if self.valkey { "Valkey" } else { "Redis" })
    }
}

/// The options to declare: their bits, their names, and a sentence for each
/// one left out.
#[derive(Debug, PartialEq, Eq)]
struct Choice {
    bits: c_int,
    names: Vec<&'static str>,
    left_out: Vec<String>,
}

/// The options for `server` (`None`: not identified), within `known` (the
/// server's `GetModuleOptionsAll`, when it has that API).
fn choose(server: Option<Server>, known: Option<c_int>) -> Choice {
    let atomic_slot_migration = match server {
        Some(s) if s.valkey && s.version >= (9, 0, 0) => Ok(()),
        Some(s) if s.valkey => Err(format!("{} has no atomic slot migration (Valkey 9.0+)", s.name())),
        Some(s) => Err(format!(
            "a Valkey 9 option, whose bit {} does not define alike",
            s.name()
        )),
        None => Err("the server could not be identified".to_string()),
    };
    let wanted = [
        (NO_IMPLICIT_SIGNAL_MODIFIED, "NO_IMPLICIT_SIGNAL_MODIFIED", Ok(())),
        // Every supported server (Redis 7.0+, Valkey) defines this bit alike.
        (HANDLE_REPL_ASYNC_LOAD, "HANDLE_REPL_ASYNC_LOAD", Ok(())),
        (
            HANDLE_ATOMIC_SLOT_MIGRATION,
            "HANDLE_ATOMIC_SLOT_MIGRATION",
            atomic_slot_migration,
        ),
    ];
    let mut choice = Choice {
        bits: 0,
        names: Vec::new(),
        left_out: Vec::new(),
    };
    for (bit, name, applies) in wanted {
        let known_here = match known {
            Some(known) if known & bit == 0 => Err("the server does not know it".to_string()),
            _ => Ok(()),
        };
        match applies.and(known_here) {
            Ok(()) => {
                choice.bits |= bit;
                choice.names.push(name);
            }
            Err(why) => choice.left_out.push(format!("{name}: {why}")),
        }
    }
    choice
}

/// `major.minor.patch` (missing or unreadable parts 0); `None` if there is
/// no major number.
fn parse_version(text: &str) -> Option<(u32, u32, u32)> {
    let mut parts = text.trim().split('.');
    let major = parts.next()?.parse().ok()?;
    let mut next = || parts.next().and_then(|p| p.parse().ok()).unwrap_or(0);
    Some((major, next(), next()))
}

/// Which server this is: Valkey says so in `INFO server` (`server_name`,
/// `valkey_version`; its `redis_version` is a fixed 7.2.4 for clients that
/// check it). Redis's version comes from `GetServerVersion` (Redis 7.0+),
/// else from `redis_version`. `None` when the server answers neither.
fn identify(ctx: &Context) -> Option<Server> {
    let (name, valkey_version, redis_version) = info_server(ctx)?;
    if name.as_deref() == Some("valkey") {
        let version = parse_version(valkey_version.as_deref()?)?;
        return Some(Server {
            valkey: true,
            version,
        });
    }
    // SAFETY: RedisModule_Init filled the table before OnLoad; the function
    // takes no argument and returns an integer.
    let packed = unsafe { raw::RedisModule_GetServerVersion.map(|get| get()) };
    let version = match packed {
        Some(v) if v > 0 => {
            let byte = |shift: u32| ((v >> shift) & 0xff) as u32;
            (byte(16), byte(8), byte(0))
        }
        _ => parse_version(redis_version.as_deref()?)?,
    };
    Some(Server {
        valkey: false,
        version,
    })
}

/// `server_name`, `valkey_version` and `redis_version` of `INFO server`,
/// each `None` when absent; `None` without the server-info API.
fn info_server(ctx: &Context) -> Option<(Option<String>, Option<String>, Option<String>)> {
    // SAFETY: RedisModule_Init filled the table before OnLoad and nothing
    // writes it afterwards; reading it copies function pointers.
    let (get, field, free) = unsafe {
        (
            raw::RedisModule_GetServerInfo?,
            raw::RedisModule_ServerInfoGetFieldC?,
            raw::RedisModule_FreeServerInfo?,
        )
    };
    // SAFETY: OnLoad's context and a NUL-terminated section name; the
    // server returns its own copy of the section, freed below.
    let info = unsafe { get(ctx.ctx, c"server".as_ptr()) };
    if info.is_null() {
        return None;
    }
    let read = |name: &CStr| {
        // SAFETY: `info` is live until freed below; the field's text, when
        // there is one, is a NUL-terminated string owned by `info`, copied
        // here before it is freed.
        unsafe {
            let text = field(info, name.as_ptr());
            (!text.is_null()).then(|| CStr::from_ptr(text).to_string_lossy().into_owned())
        }
    };
    let fields = (
        read(c"server_name"),
        read(c"valkey_version"),
        read(c"redis_version"),
    );
    // SAFETY: `info` came from GetServerInfo on this context and is freed
    // once; nothing read from it is used afterwards.
    unsafe { free(ctx.ctx, info) };
    Some(fields)
}

/// Declare the module's options, and log which and why.
pub fn declare(ctx: &Context) {
    // SAFETY: RedisModule_Init filled the table before OnLoad; reading it
    // copies function pointers.
    let (set_options, options_all) = unsafe {
        (
            raw::RedisModule_SetModuleOptions,
            raw::RedisModule_GetModuleOptionsAll,
        )
    };
    let Some(set_options) = set_options else {
        ctx.log_warning("ratelimit: the server has no SetModuleOptions; no module option declared");
        return;
    };
    let server = identify(ctx);
    // SAFETY: a function of no argument that returns the server's option bits.
    let known = options_all.map(|all| unsafe { all() });
    let choice = choose(server, known);
    // SAFETY: OnLoad's context; the options are plain bits.
    unsafe { set_options(ctx.ctx, choice.bits) };
    let on = server.map_or_else(|| "an unidentified server".to_string(), |s| s.name());
    let knows = known.map_or_else(String::new, |k| format!(", which knows {k:#x}"));
    ctx.log_notice(&format!(
        "ratelimit: module options {} ({:#x}) on {on}{knows}: every limiter is a plain string key \
         whose writes replicate as their effects, with no module type and nothing kept outside the \
         keyspace",
        choice.names.join("|"),
        choice.bits
    ));
    for note in &choice.left_out {
        ctx.log_verbose(&format!("ratelimit: not declared: {note}"));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const fn server(valkey: bool, version: (u32, u32, u32)) -> Option<Server> {
        Some(Server { valkey, version })
    }

    #[test]
    fn atomic_slot_migration_only_to_valkey_9_and_newer() {
        let base = NO_IMPLICIT_SIGNAL_MODIFIED | HANDLE_REPL_ASYNC_LOAD;
        for (s, bits) in [
            (server(false, (7, 0, 15)), base),
            (server(false, (8, 2, 3)), base),
            (server(false, (9, 0, 0)), base),
            (server(true, (8, 1, 8)), base),
            (server(true, (9, 0, 0)), base | HANDLE_ATOMIC_SLOT_MIGRATION),
            (server(true, (9, 1, 2)), base | HANDLE_ATOMIC_SLOT_MIGRATION),
            (server(true, (10, 0, 0)), base | HANDLE_ATOMIC_SLOT_MIGRATION),
            (None, base),
        ] {
            let choice = choose(s, None);
            assert_eq!(choice.bits, bits, "{s:?}");
            assert_eq!(choice.names.len() + choice.left_out.len(), 3, "{choice:?}");
        }
        assert_eq!(choose(server(true, (9, 1, 2)), None).bits, 0x26);
    }

    #[test]
    fn an_option_the_server_does_not_know_is_left_out() {
        let known = NO_IMPLICIT_SIGNAL_MODIFIED | HANDLE_REPL_ASYNC_LOAD | (1 << 3) | (1 << 4);
        let choice = choose(server(true, (9, 0, 0)), Some(known));
        assert_eq!(choice.bits, NO_IMPLICIT_SIGNAL_MODIFIED | HANDLE_REPL_ASYNC_LOAD);
        assert!(choice.left_out[0].starts_with("HANDLE_ATOMIC_SLOT_MIGRATION"));
        let choice = choose(server(true, (9, 1, 2)), Some((1 << 6) - 1));
        assert_eq!(choice.bits, 0x26);
    }

    #[test]
    fn versions_parse_as_the_servers_write_them() {
        assert_eq!(parse_version("9.1.2"), Some((9, 1, 2)));
        assert_eq!(parse_version("8.1.8\r"), Some((8, 1, 8)));
        assert_eq!(parse_version("255.255.255"), Some((255, 255, 255)));
        assert_eq!(parse_version("9.0"), Some((9, 0, 0)));
        assert_eq!(parse_version("9.0.0-rc1"), Some((9, 0, 0)));
        assert_eq!(parse_version(""), None);
        assert_eq!(parse_version("x.1"), None);
    }
}
