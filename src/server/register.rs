//! The registry's rows made into server commands: `RedisModule_CreateCommand`
//! with each row's handler, flags and keys; `COMMAND DOCS` (summary,
//! complexity, arguments, key specs) and the `@ratelimit` ACL category where
//! the server supports them; and the `INFO ratelimit` section. Every API
//! newer than Redis 7.0 is looked up at run time: without it a command
//! works the same, only undocumented.

use super::handler::HANDLERS;
use crate::config;
use crate::docs::{ArgKind, DocArg};
use crate::registry::{Keys, Row, COMMANDS};
use redis_module::{raw, InfoContext};
use std::ffi::{c_char, c_int, CString};
use std::ptr::null;

const OK: c_int = raw::REDISMODULE_OK as c_int;

fn c_string(text: &str) -> CString {
    CString::new(text).unwrap_or_default()
}

/// Create every enabled row's command. `Err` names one the server refused.
pub fn create_commands(ctx: *mut raw::RedisModuleCtx) -> Result<(), String> {
    for (row, handler) in COMMANDS.iter().zip(HANDLERS) {
        if !(row.enabled)() {
            continue;
        }
        let (first, last, step) = match row.keys {
            Keys::First => (1, 1, 1),
            // Found through the key spec (`COMMAND DOCS`), which the
            // server reads for keys, Cluster slots and ACL patterns.
            Keys::Counted => (0, 0, 0),
        };
        // A command whose keys are counted tells the server where they are
        // when asked (`getkeys-api`): Redis 7.0 reads only the legacy key
        // range for Cluster slots, not the key specs.
        let flags = match row.keys {
            Keys::First => row.flags.to_string(),
            Keys::Counted => format!("{} getkeys-api", row.flags),
        };
        let (name, flags) = (c_string(row.command.name), c_string(&flags));
        // SAFETY: called from OnLoad with the module's context; the strings
        // are NUL-terminated and copied by the server.
        let created = unsafe {
            raw::RedisModule_CreateCommand.map(|create| {
                create(
                    ctx,
                    name.as_ptr(),
                    Some(handler),
                    flags.as_ptr(),
                    first,
                    last,
                    step,
                )
            })
        };
        if created != Some(OK) {
            return Err(format!(
                "could not register {} (is another module using that name?)",
                row.command.name
            ));
        }
    }
    Ok(())
}

/// The server's argument structures for a tree of `DocArg`s, and the
/// strings and arrays they point into, which must outlive the call that
/// reads them.
#[derive(Default)]
struct Arena {
    strings: Vec<CString>,
    arrays: Vec<Vec<raw::RedisModuleCommandArg>>,
}

impl Arena {
    fn text(&mut self, text: &str) -> *const c_char {
        let s = c_string(text);
        let ptr = s.as_ptr();
        self.strings.push(s);
        ptr
    }

    /// A NUL-terminated array of `args` (a zeroed entry ends it).
    fn args(&mut self, args: &[DocArg]) -> *mut raw::RedisModuleCommandArg {
        let mut array: Vec<raw::RedisModuleCommandArg> = args.iter().map(|a| self.arg(a)).collect();
        // SAFETY: the server's terminator is an all-zero entry (null pointers
        // and zero integers are valid for every field).
        array.push(unsafe { std::mem::zeroed() });
        let ptr = array.as_mut_ptr();
        self.arrays.push(array);
        ptr
    }

    fn arg(&mut self, arg: &DocArg) -> raw::RedisModuleCommandArg {
        let type_ = match arg.kind {
            ArgKind::Key => raw::RedisModuleCommandArgType_REDISMODULE_ARG_TYPE_KEY,
            ArgKind::Integer => raw::RedisModuleCommandArgType_REDISMODULE_ARG_TYPE_INTEGER,
            ArgKind::PureToken => raw::RedisModuleCommandArgType_REDISMODULE_ARG_TYPE_PURE_TOKEN,
            ArgKind::Block => raw::RedisModuleCommandArgType_REDISMODULE_ARG_TYPE_BLOCK,
            ArgKind::OneOf => raw::RedisModuleCommandArgType_REDISMODULE_ARG_TYPE_ONEOF,
            ArgKind::String => raw::RedisModuleCommandArgType_REDISMODULE_ARG_TYPE_STRING,
        };
        let mut flags = 0;
        if arg.optional {
            flags |= raw::REDISMODULE_CMD_ARG_OPTIONAL;
        }
        if arg.multiple {
            flags |= raw::REDISMODULE_CMD_ARG_MULTIPLE;
        }
        raw::RedisModuleCommandArg {
            name: self.text(arg.name),
            type_,
            key_spec_index: arg.key_spec.map_or(-1, |i| i as c_int),
            token: arg.token.as_deref().map_or(null(), |t| self.text(t)),
            summary: null(),
            since: null(),
            flags: flags as c_int,
            deprecated_since: null(),
            subargs: if arg.subargs.is_empty() {
                std::ptr::null_mut()
            } else {
                self.args(&arg.subargs)
            },
            display_text: null(),
        }
    }
}

/// The key spec of a row's keys: read, written and updated; or only read,
/// for a command that writes nothing.
fn key_specs(row: &Row) -> [raw::RedisModuleCommandKeySpec; 2] {
    // SAFETY: all-zero is a valid key spec (and the terminator).
    let mut specs: [raw::RedisModuleCommandKeySpec; 2] = unsafe { std::mem::zeroed() };
    specs[0].flags = u64::from(if row.reads_only() {
        raw::REDISMODULE_CMD_KEY_RO | raw::REDISMODULE_CMD_KEY_ACCESS
    } else {
        raw::REDISMODULE_CMD_KEY_RW | raw::REDISMODULE_CMD_KEY_ACCESS | raw::REDISMODULE_CMD_KEY_UPDATE
    });
    specs[0].begin_search_type = raw::RedisModuleKeySpecBeginSearchType_REDISMODULE_KSPEC_BS_INDEX;
    specs[0].bs.index.pos = 1;
    match row.keys {
        Keys::First => {
            specs[0].find_keys_type = raw::RedisModuleKeySpecFindKeysType_REDISMODULE_KSPEC_FK_RANGE;
            specs[0].fk.range.lastkey = 0;
            specs[0].fk.range.keystep = 1;
            specs[0].fk.range.limit = 0;
        }
        Keys::Counted => {
            // `numkeys` at argument 1, the keys right after it.
            specs[0].find_keys_type = raw::RedisModuleKeySpecFindKeysType_REDISMODULE_KSPEC_FK_KEYNUM;
            specs[0].fk.keynum.keynumidx = 0;
            specs[0].fk.keynum.firstkey = 1;
            specs[0].fk.keynum.keystep = 1;
        }
    }
    specs
}

/// Document the registered commands and add them to `@ratelimit` where
/// possible. Returns whether every one was documented (then the server
/// checks their arity itself).
pub fn document(ctx: *mut raw::RedisModuleCtx) -> bool {
    // SAFETY: OnLoad's context; the category name is a NUL-terminated
    // literal.
    let category =
        unsafe { raw::RedisModule_AddACLCategory.is_some_and(|add| add(ctx, c"ratelimit".as_ptr()) == OK) };
    // SAFETY: reading the server's function table, filled before OnLoad.
    let (Some(get_command), Some(set_info)) = (unsafe { raw::RedisModule_GetCommand }, unsafe {
        raw::RedisModule_SetCommandInfo
    }) else {
        return false;
    };
    let version = raw::RedisModuleCommandInfoVersion {
        version: 1,
        sizeof_historyentry: std::mem::size_of::<raw::RedisModuleCommandHistoryEntry>(),
        sizeof_keyspec: std::mem::size_of::<raw::RedisModuleCommandKeySpec>(),
        sizeof_arg: std::mem::size_of::<raw::RedisModuleCommandArg>(),
    };
    let mut all_documented = true;
    for row in COMMANDS.iter().filter(|row| (row.enabled)()) {
        let name = c_string(row.command.name);
        // SAFETY: OnLoad's context and a NUL-terminated name.
        let command = unsafe { get_command(ctx, name.as_ptr()) };
        if command.is_null() {
            all_documented = false;
            continue;
        }
        let mut arena = Arena::default();
        let args = arena.args(&row.doc_args());
        let mut specs = key_specs(row);
        // SAFETY: all-zero is a valid, empty command info.
        let mut info: raw::RedisModuleCommandInfo = unsafe { std::mem::zeroed() };
        info.version = &version;
        info.summary = arena.text(row.summary);
        info.complexity = arena.text(row.complexity);
        let since = arena.text(row.since);
        info.since = since;
        info.arity = row.arity();
        info.key_specs = specs.as_mut_ptr();
        info.args = args;
        // SAFETY: the command is this module's; the structures and the
        // strings they point to (the arena) live until the call returns,
        // and the server copies them.
        if unsafe { set_info(command, &info) } != OK {
            all_documented = false;
        }
        if category {
            let categories = c_string(row.categories);
            // SAFETY: as above.
            unsafe {
                if let Some(set_categories) = raw::RedisModule_SetCommandACLCategories {
                    set_categories(command, categories.as_ptr());
                }
            }
        }
    }
    all_documented
}

/// The `ratelimit` section of `INFO` (and `INFO modules`, `INFO ratelimit`).
pub extern "C" fn info(ctx: *mut raw::RedisModuleInfoCtx, _for_crash_report: c_int) {
    let _ = std::panic::catch_unwind(|| report(&InfoContext::new(ctx)));
}

#[allow(deprecated)] // the builder API cannot name the section after the module alone
fn report(ctx: &InfoContext) {
    ctx.add_info_section(None);
    // The settings first: whether `CL.THROTTLE` is registered, whether the
    // shadow switch is on, the caps (on Redis 6.x, where `CONFIG GET` has no
    // module settings, the one place that shows them).
    for setting in &config::SETTINGS {
        ctx.add_info_field_str(setting.name, &setting.shown());
    }
    for row in COMMANDS.iter() {
        for (field, value) in row.command.stats.fields() {
            let value = i64::try_from(value).unwrap_or(i64::MAX);
            ctx.add_info_field_long_long(&format!("{}_{field}", row.info), value);
        }
    }
}
