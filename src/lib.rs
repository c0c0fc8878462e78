//! redis-ratelimit: five rate-limiting algorithms as native Redis commands.
//!
//! This crate is the thin adapter; the algorithms live in `rl-core`.

mod args;
mod clock;
mod commands;
mod config;
mod docs;
mod error;
mod reply;
mod stats;
mod storage;

use args::Arg;
use redis_module::configuration::ConfigurationFlags;
use redis_module::{raw, redis_module, Context, InfoContext, RedisString, Status};
use std::ffi::CStr;
use std::os::raw::c_int;

/// `len` bytes at `ptr`, owned by the server (empty for a null pointer or a
/// zero length, where `from_raw_parts` would not be allowed).
///
/// # Safety
/// Unless null, `ptr` addresses `len` readable bytes that stay valid and
/// unchanged for `'a`.
pub(crate) unsafe fn server_bytes<'a>(ptr: *const std::os::raw::c_char, len: usize) -> &'a [u8] {
    if ptr.is_null() || len == 0 {
        &[]
    } else {
        std::slice::from_raw_parts(ptr.cast::<u8>(), len)
    }
}

/// The signature of a command handler as the server calls it.
type Handler = extern "C" fn(*mut raw::RedisModuleCtx, *mut *mut raw::RedisModuleString, c_int) -> c_int;

/// Declare a command handler: the server's arguments are read in place (no
/// per-argument wrapping), and the body runs behind the panic guard.
macro_rules! handler {
    ($name:ident, $stats:expr, $body:path) => {
        extern "C" fn $name(
            ctx: *mut raw::RedisModuleCtx,
            argv: *mut *mut raw::RedisModuleString,
            argc: c_int,
        ) -> c_int {
            // SAFETY: argv/argc are this command's; the slice lives only
            // for this call.
            let args = unsafe { Arg::all(argv, argc) };
            reply::guarded(ctx, &$stats, || $body(ctx, args))
        }
    };
}

handler!(rl_gcra, stats::GCRA, commands::gcra);
handler!(rl_token_bucket, stats::TOKEN_BUCKET, commands::token_bucket);
handler!(rl_fixed, stats::FIXED, commands::fixed);
handler!(rl_sliding_log, stats::SLIDING_LOG, commands::sliding_log);
handler!(
    rl_sliding_counter,
    stats::SLIDING_COUNTER,
    commands::sliding_counter
);
handler!(cl_throttle, stats::CL_THROTTLE, commands::cl_throttle);

/// The module's commands. They are created in `init` with
/// `RedisModule_CreateCommand` rather than listed in `redis_module!`'s
/// command table, whose wrapper copies every argument into an owned string
/// before the handler runs (a measurable share of a call this cheap).
const COMMANDS: [(&CStr, Handler); 5] = [
    (c"rl.gcra", rl_gcra),
    (c"rl.token_bucket", rl_token_bucket),
    (c"rl.fixed", rl_fixed),
    (c"rl.sliding_log", rl_sliding_log),
    (c"rl.sliding_counter", rl_sliding_counter),
];

/// Create one command: a write that may grow memory, with its key first.
fn create_command(ctx: &Context, name: &CStr, handler: Handler) -> bool {
    // SAFETY: called during OnLoad with the module's context; the name and
    // flags are NUL-terminated literals.
    let created = unsafe {
        raw::RedisModule_CreateCommand.map(|create| {
            create(
                ctx.ctx,
                name.as_ptr(),
                Some(handler),
                c"write deny-oom fast".as_ptr(),
                1,
                1,
                1,
            )
        })
    };
    created == Some(raw::REDISMODULE_OK as c_int)
}

// Inside Redis every allocation goes through Redis's allocator, so that
// `INFO memory` and `MEMORY USAGE` see it. That allocator only exists inside a
// server: the adapter's unit tests use the system allocator instead.
#[cfg(not(test))]
type Allocator = redis_module::alloc::RedisAlloc;
#[cfg(not(test))]
const ALLOCATOR: Allocator = redis_module::alloc::RedisAlloc;
#[cfg(test)]
type Allocator = std::alloc::System;
#[cfg(test)]
const ALLOCATOR: Allocator = std::alloc::System;

extern "C" fn info(ctx: *mut raw::RedisModuleInfoCtx, _for_crash_report: c_int) {
    let _ = std::panic::catch_unwind(|| stats::report(&InfoContext::new(ctx)));
}

fn init(ctx: &Context, args: &[RedisString]) -> Status {
    let args: Vec<&[u8]> = args.iter().map(RedisString::as_slice).collect();
    if let Err(problem) = config::check_module_args(&args) {
        ctx.log_warning(&format!("ratelimit: {problem}"));
        return Status::Err;
    }
    if !storage::shared::init() || !storage::shared::follow_server_settings(ctx.ctx) {
        return Status::Err;
    }
    // Keys are signalled as modified only when a command changed them (see
    // `Store`), not whenever one was opened for writing.
    // SAFETY: OnLoad's context.
    unsafe {
        if let Some(set_options) = raw::RedisModule_SetModuleOptions {
            set_options(
                ctx.ctx,
                raw::REDISMODULE_OPTION_NO_IMPLICIT_SIGNAL_MODIFIED as c_int,
            );
        }
    }
    for (name, handler) in COMMANDS {
        if !create_command(ctx, name, handler) {
            ctx.log_warning(&format!(
                "ratelimit: could not register {}",
                name.to_string_lossy()
            ));
            return Status::Err;
        }
    }
    // `CL.THROTTLE` only when asked for at load time.
    if config::cl_throttle_enabled() && !create_command(ctx, c"cl.throttle", cl_throttle) {
        ctx.log_warning("ratelimit: could not register CL.THROTTLE (is redis-cell loaded too?)");
        return Status::Err;
    }
    // Our own INFO callback: the `ratelimit` section. Registered here, after
    // the default one, which it replaces.
    raw::register_info_function(ctx.ctx, Some(info));
    docs::register(ctx.ctx);
    Status::Ok
}

fn deinit(_ctx: &Context) -> Status {
    storage::shared::free();
    Status::Ok
}

redis_module! {
    name: "ratelimit",
    version: 1,
    allocator: (Allocator, ALLOCATOR),
    data_types: [],
    init: init,
    deinit: deinit,
    configurations: [
        i64: [
            [
                "sliding_log_max_limit",
                &config::SLIDING_LOG_MAX_LIMIT,
                config::SLIDING_LOG_MAX_LIMIT_DEFAULT,
                1,
                config::SLIDING_LOG_MAX_LIMIT_MAX,
                ConfigurationFlags::DEFAULT,
                None
            ],
        ],
        string: [],
        bool: [
            [
                "cl_throttle",
                &config::CL_THROTTLE,
                false,
                ConfigurationFlags::IMMUTABLE,
                None
            ],
        ],
        enum: [],
        module_args_as_configuration: true,
    ]
}
