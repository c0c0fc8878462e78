//! Everything that calls into the server: the module's entry point, the
//! commands' handlers, keys, time, registration and the strings the module
//! keeps. Every `unsafe` block of the module is in this folder, behind safe
//! types with lifetimes; the rest of the crate denies `unsafe` code.

mod api;
mod clock;
mod handler;
mod kept;
mod key;
mod module_flags;
mod register;
mod settings;
mod version;

use crate::config::{self, SETTINGS};
use redis_module::{raw, Context};
use std::os::raw::c_int;
use std::panic::{catch_unwind, AssertUnwindSafe};

// Inside Redis every allocation goes through Redis's allocator, so that
// `INFO memory` and `MEMORY USAGE` see it. That allocator only exists inside a
// server: the adapter's unit tests use the system allocator instead.
#[cfg(not(test))]
#[global_allocator]
static ALLOCATOR: redis_module::alloc::RedisAlloc = redis_module::alloc::RedisAlloc;

const OK: c_int = raw::REDISMODULE_OK as c_int;
const ERR: c_int = raw::REDISMODULE_ERR as c_int;
/// The module's version in `MODULE LIST`.
const MODULE_VERSION: c_int = 1;

/// The module's entry point. Loading either succeeds or fails with one line
/// in the server's log that says why: nothing in it may abort the server, so
/// every API newer than Redis 6.0 is looked up before it is called, and a
/// panic is caught. (The module has its own entry point rather than
/// `redis_module!`'s, which calls the configuration API of Redis 7.0
/// unchecked and logs warnings about defragmentation callbacks the module
/// has no use for.)
///
/// # Safety
/// Called by the server only, with its load context and the `loadmodule`
/// arguments.
#[no_mangle]
pub unsafe extern "C" fn RedisModule_OnLoad(
    ctx: *mut raw::RedisModuleCtx,
    argv: *mut *mut raw::RedisModuleString,
    argc: c_int,
) -> c_int {
    // SAFETY: the server's load context. This fills the table of API
    // functions; nothing is allocated before it, since the global allocator
    // is the server's, reached through that table.
    let init = unsafe {
        raw::Export_RedisModule_Init(
            ctx,
            c"ratelimit".as_ptr(),
            MODULE_VERSION,
            raw::REDISMODULE_APIVER_1 as c_int,
        )
    };
    if init != OK {
        return ERR;
    }
    let context = Context::new(ctx);
    // SAFETY: the server's arguments, valid for the whole call.
    match catch_unwind(AssertUnwindSafe(|| unsafe { load(&context, argv, argc) })) {
        Ok(Ok(())) => OK,
        Ok(Err(problem)) => {
            context.log_warning(&problem);
            ERR
        }
        Err(_) => {
            context.log_warning("ratelimit: internal error while loading; the module is not loaded");
            ERR
        }
    }
}

/// Called when the module is unloaded (`MODULE UNLOAD`).
#[no_mangle]
pub extern "C" fn RedisModule_OnUnload(_ctx: *mut raw::RedisModuleCtx) -> c_int {
    let _ = catch_unwind(kept::free);
    OK
}

/// Everything the module does when it loads, in an order that changes
/// nothing on the server until the last step that can fail has passed
/// (a server does not forget every registration of a module whose load
/// fails: Redis 6 keeps its event subscriptions). `Err` is the line for
/// the log.
///
/// # Safety
/// `argv` holds `argc` string objects, valid for the whole call.
unsafe fn load(ctx: &Context, argv: *mut *mut raw::RedisModuleString, argc: c_int) -> Result<(), String> {
    let (server, has_server_info) = version::identify(ctx.ctx);
    if let Some(refusal) = version::refusal(server, has_server_info) {
        return Err(refusal);
    }
    api::Api::load().map_err(|missing| format!("ratelimit: the server lacks {missing}"))?;
    let api = api::Api::get().ok_or("ratelimit: the server's API could not be read")?;
    let argv: &[*mut raw::RedisModuleString] = match usize::try_from(argc) {
        // SAFETY: the caller's contract.
        Ok(len) if len > 0 && !argv.is_null() => unsafe { std::slice::from_raw_parts(argv, len) },
        _ => &[],
    };
    // SAFETY: the arguments are live for the whole call.
    let args: Vec<&[u8]> = argv
        .iter()
        .map(|&s| unsafe { key::string_bytes(api, s) })
        .collect();
    let given = config::module_args(&args).map_err(|problem| format!("ratelimit: {problem}"))?;
    let registered = settings::register(ctx.ctx, config::initial(&given))
        .map_err(|problem| format!("ratelimit: {problem}"))?;
    register::create_commands(ctx.ctx).map_err(|problem| format!("ratelimit: {problem}"))?;
    // Nothing below fails the load.
    // A server whose version is unknown gets the form every server takes.
    key::replicate_with_pxat(server.is_some_and(|s| s.has_pxat()));
    if !kept::init() {
        ctx.log_warning("ratelimit: could not make the strings kept for replication; the server makes them");
    }
    if let Some(note) = kept::follow_server_settings(ctx.ctx) {
        ctx.log_notice(&note);
    }
    module_flags::declare(ctx, server);
    // Our own INFO callback: the `ratelimit` section.
    // SAFETY: OnLoad's context; the callback lives as long as the module.
    unsafe {
        if let Some(register_info) = raw::RedisModule_RegisterInfoFunc {
            register_info(ctx.ctx, Some(register::info));
        }
    }
    handler::check_arity(!register::document(ctx.ctx));
    if registered == settings::Registered::ModuleArguments {
        let values: Vec<String> = SETTINGS
            .iter()
            .map(|s| format!("{} {}", s.name, s.shown()))
            .collect();
        ctx.log_notice(&format!(
            "ratelimit: this server has no module settings (CONFIG SET ratelimit.*, Redis 7.0+): the loadmodule arguments set them, until the module is loaded again: {}",
            values.join(", ")
        ));
    }
    Ok(())
}
