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

use super::version::Server;
use redis_module::{raw, Context};
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
    // Every server that has an option defines its bit alike, but Redis 6.x
    // lacks some: a bit it does not know is not declared to it.
    let since = |has: fn(&Server) -> bool, version: &str| match server {
        Some(s) if !has(&s) => Err(format!("{} has no such option (Redis {version}+)", s.name())),
        _ => Ok(()),
    };
    let wanted = [
        (
            NO_IMPLICIT_SIGNAL_MODIFIED,
            "NO_IMPLICIT_SIGNAL_MODIFIED",
            since(Server::has_no_implicit_signal_modified, "6.2"),
        ),
        (
            HANDLE_REPL_ASYNC_LOAD,
            "HANDLE_REPL_ASYNC_LOAD",
            since(Server::has_repl_async_load, "7.0"),
        ),
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

/// Declare the module's options to `server` (as [`super::version::identify`]
/// found it), and log which and why.
pub fn declare(ctx: &Context, server: Option<Server>) {
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
        if choice.names.is_empty() {
            "none".to_string()
        } else {
            choice.names.join("|")
        },
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
    fn redis_6_gets_only_the_options_it_has() {
        let choice = choose(server(false, (6, 0, 9)), None);
        assert_eq!((choice.bits, choice.names.len()), (0, 0));
        assert_eq!(
            choice.left_out,
            [
                "NO_IMPLICIT_SIGNAL_MODIFIED: Redis 6.0.9 has no such option (Redis 6.2+)",
                "HANDLE_REPL_ASYNC_LOAD: Redis 6.0.9 has no such option (Redis 7.0+)",
                "HANDLE_ATOMIC_SLOT_MIGRATION: a Valkey 9 option, whose bit Redis 6.0.9 does not define alike",
            ]
        );
        let choice = choose(server(false, (6, 2, 14)), None);
        assert_eq!(choice.bits, NO_IMPLICIT_SIGNAL_MODIFIED);
        assert_eq!(choice.names, ["NO_IMPLICIT_SIGNAL_MODIFIED"]);
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
}
