//! Command metadata for `COMMAND DOCS` and redis-cli's hints (summary,
//! complexity, arguments, key specs), and the `@ratelimit` ACL category where
//! the server supports it. Every API here is looked up at run time: on a
//! server without it the command works the same, only undocumented.

use redis_module::raw;
use std::ffi::{c_char, c_int, CStr};
use std::ptr::null;

struct Doc {
    name: &'static CStr,
    summary: &'static CStr,
    complexity: &'static CStr,
    /// Positional arguments after the key: (name, summary).
    params: &'static [&'static CStr],
    /// Whether the command takes the options `MS` and `PEEK`.
    options: bool,
}

/// The five commands, then `CL.THROTTLE` (documented when it is registered).
const DOCS: [Doc; 6] = [
    Doc {
        name: c"rl.gcra",
        summary: c"Rate limit with GCRA (as redis-cell): count per period, bursts of max_burst + 1",
        complexity: c"O(1)",
        params: &[c"max_burst", c"count", c"period"],
        options: true,
    },
    Doc {
        name: c"rl.token_bucket",
        summary: c"Rate limit with a token bucket of capacity tokens, refill_count per refill_period",
        complexity: c"O(1)",
        params: &[c"capacity", c"refill_count", c"refill_period"],
        options: true,
    },
    Doc {
        name: c"rl.fixed",
        summary: c"Rate limit with a fixed window: at most limit units per epoch-aligned window",
        complexity: c"O(1)",
        params: &[c"limit", c"window"],
        options: true,
    },
    Doc {
        name: c"rl.sliding_log",
        summary: c"Rate limit with a sliding log: at most limit units in any window, exactly",
        complexity: c"O(log N) where N is the limit; O(Q) to record Q units",
        params: &[c"limit", c"window"],
        options: true,
    },
    Doc {
        name: c"rl.sliding_counter",
        summary: c"Rate limit with a sliding counter: the two-window estimate of a sliding window",
        complexity: c"O(1)",
        params: &[c"limit", c"window"],
        options: true,
    },
    Doc {
        name: c"cl.throttle",
        summary: c"redis-cell's command: RL.GCRA with redis-cell's grammar (no options)",
        complexity: c"O(1)",
        params: &[c"max_burst", c"count", c"period"],
        options: false,
    },
];

const SINCE: &CStr = c"0.1.0";

fn arg(name: &'static CStr, type_: raw::RedisModuleCommandArgType, flags: u32) -> raw::RedisModuleCommandArg {
    raw::RedisModuleCommandArg {
        name: name.as_ptr(),
        type_,
        key_spec_index: -1,
        token: null(),
        summary: null(),
        since: null(),
        flags: flags as c_int,
        deprecated_since: null(),
        subargs: std::ptr::null_mut(),
        display_text: null(),
    }
}

/// An optional pure-token argument (an option such as `MS`).
fn token(name: &'static CStr, token: &'static CStr) -> raw::RedisModuleCommandArg {
    raw::RedisModuleCommandArg {
        token: token.as_ptr(),
        ..arg(
            name,
            raw::RedisModuleCommandArgType_REDISMODULE_ARG_TYPE_PURE_TOKEN,
            raw::REDISMODULE_CMD_ARG_OPTIONAL,
        )
    }
}

/// Describe the commands that are registered; add them to `@ratelimit` where
/// possible.
/// Returns how many were documented.
pub fn register(ctx: *mut raw::RedisModuleCtx) -> usize {
    // SAFETY: called from RedisModule_OnLoad with the module's context. The
    // structures passed to RedisModule_SetCommandInfo are copied by the
    // server before it returns; every string is a NUL-terminated literal.
    unsafe {
        let category = raw::RedisModule_AddACLCategory
            .is_some_and(|add| add(ctx, c"ratelimit".as_ptr()) == raw::REDISMODULE_OK as c_int);
        let (Some(get_command), Some(set_info)) =
            (raw::RedisModule_GetCommand, raw::RedisModule_SetCommandInfo)
        else {
            return 0;
        };
        let version = raw::RedisModuleCommandInfoVersion {
            version: 1,
            sizeof_historyentry: std::mem::size_of::<raw::RedisModuleCommandHistoryEntry>(),
            sizeof_keyspec: std::mem::size_of::<raw::RedisModuleCommandKeySpec>(),
            sizeof_arg: std::mem::size_of::<raw::RedisModuleCommandArg>(),
        };
        let mut documented = 0;
        for doc in &DOCS {
            let command = get_command(ctx, doc.name.as_ptr());
            if command.is_null() {
                continue;
            }
            let mut key_specs: [raw::RedisModuleCommandKeySpec; 2] = std::mem::zeroed();
            key_specs[0].flags = u64::from(
                raw::REDISMODULE_CMD_KEY_RW
                    | raw::REDISMODULE_CMD_KEY_ACCESS
                    | raw::REDISMODULE_CMD_KEY_UPDATE,
            );
            key_specs[0].begin_search_type =
                raw::RedisModuleKeySpecBeginSearchType_REDISMODULE_KSPEC_BS_INDEX;
            key_specs[0].bs.index.pos = 1;
            key_specs[0].find_keys_type = raw::RedisModuleKeySpecFindKeysType_REDISMODULE_KSPEC_FK_RANGE;
            key_specs[0].fk.range.lastkey = 0;
            key_specs[0].fk.range.keystep = 1;
            key_specs[0].fk.range.limit = 0;

            let mut args: Vec<raw::RedisModuleCommandArg> = Vec::with_capacity(doc.params.len() + 5);
            let mut key = arg(c"key", raw::RedisModuleCommandArgType_REDISMODULE_ARG_TYPE_KEY, 0);
            key.key_spec_index = 0;
            args.push(key);
            for p in doc.params {
                args.push(arg(
                    p,
                    raw::RedisModuleCommandArgType_REDISMODULE_ARG_TYPE_INTEGER,
                    0,
                ));
            }
            let optional = raw::REDISMODULE_CMD_ARG_OPTIONAL;
            args.push(arg(
                c"quantity",
                raw::RedisModuleCommandArgType_REDISMODULE_ARG_TYPE_INTEGER,
                optional,
            ));
            if doc.options {
                args.push(token(c"ms", c"MS"));
                args.push(token(c"peek", c"PEEK"));
            }
            args.push(std::mem::zeroed()); // terminator

            let mut info: raw::RedisModuleCommandInfo = std::mem::zeroed();
            info.version = &version;
            info.summary = doc.summary.as_ptr();
            info.complexity = doc.complexity.as_ptr();
            info.since = SINCE.as_ptr();
            // The command name, the key and the parameters, at least.
            info.arity = -(2 + doc.params.len() as c_int);
            info.key_specs = key_specs.as_mut_ptr();
            info.args = args.as_mut_ptr();
            if set_info(command, &info) == raw::REDISMODULE_OK as c_int {
                documented += 1;
            }
            if category {
                if let Some(set_categories) = raw::RedisModule_SetCommandACLCategories {
                    set_categories(command, c"write fast ratelimit".as_ptr() as *const c_char);
                }
            }
        }
        documented
    }
}
