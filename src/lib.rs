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

use redis_module::configuration::ConfigurationFlags;
use redis_module::{redis_module, Context, InfoContext, RedisResult, RedisString, Status};

fn rl_gcra(ctx: &Context, args: Vec<RedisString>) -> RedisResult {
    reply::guarded(ctx, &stats::GCRA, || commands::gcra(ctx, &args))
}

fn rl_token_bucket(ctx: &Context, args: Vec<RedisString>) -> RedisResult {
    reply::guarded(ctx, &stats::TOKEN_BUCKET, || commands::token_bucket(ctx, &args))
}

fn rl_fixed(ctx: &Context, args: Vec<RedisString>) -> RedisResult {
    reply::guarded(ctx, &stats::FIXED, || commands::fixed(ctx, &args))
}

fn rl_sliding_log(ctx: &Context, args: Vec<RedisString>) -> RedisResult {
    reply::guarded(ctx, &stats::SLIDING_LOG, || commands::sliding_log(ctx, &args))
}

fn rl_sliding_counter(ctx: &Context, args: Vec<RedisString>) -> RedisResult {
    reply::guarded(ctx, &stats::SLIDING_COUNTER, || {
        commands::sliding_counter(ctx, &args)
    })
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

extern "C" fn info(ctx: *mut redis_module::raw::RedisModuleInfoCtx, _for_crash_report: std::os::raw::c_int) {
    let _ = std::panic::catch_unwind(|| stats::report(&InfoContext::new(ctx)));
}

/// `CL.THROTTLE`, registered by hand: only when asked for at load time.
extern "C" fn cl_throttle(
    ctx: *mut redis_module::raw::RedisModuleCtx,
    argv: *mut *mut redis_module::raw::RedisModuleString,
    argc: std::os::raw::c_int,
) -> std::os::raw::c_int {
    let context = Context::new(ctx);
    let args = redis_module::decode_args(ctx, argv, argc);
    let reply = reply::guarded(&context, &stats::CL_THROTTLE, || {
        commands::cl_throttle(&context, &args)
    });
    context.reply(reply) as std::os::raw::c_int
}

fn init(ctx: &Context, _args: &[RedisString]) -> Status {
    // Our own INFO callback: the `ratelimit` section. Registered here, after
    // the default one, which it replaces.
    redis_module::raw::register_info_function(ctx.ctx, Some(info));
    docs::register(ctx.ctx);
    if config::cl_throttle_enabled() {
        // SAFETY: called during OnLoad with the module's context; the names
        // are NUL-terminated literals.
        let created = unsafe {
            redis_module::raw::RedisModule_CreateCommand.map(|create| {
                create(
                    ctx.ctx,
                    c"cl.throttle".as_ptr(),
                    Some(cl_throttle),
                    c"write deny-oom fast".as_ptr(),
                    1,
                    1,
                    1,
                )
            })
        };
        if created != Some(redis_module::raw::REDISMODULE_OK as std::os::raw::c_int) {
            ctx.log_warning("ratelimit: could not register CL.THROTTLE (is redis-cell loaded too?)");
            return Status::Err;
        }
    }
    Status::Ok
}

redis_module! {
    name: "ratelimit",
    version: 1,
    allocator: (Allocator, ALLOCATOR),
    data_types: [],
    init: init,
    commands: [
        ["rl.gcra", rl_gcra, "write deny-oom fast", 1, 1, 1, AclCategory::None],
        ["rl.token_bucket", rl_token_bucket, "write deny-oom fast", 1, 1, 1, AclCategory::None],
        ["rl.fixed", rl_fixed, "write deny-oom fast", 1, 1, 1, AclCategory::None],
        ["rl.sliding_log", rl_sliding_log, "write deny-oom fast", 1, 1, 1, AclCategory::None],
        ["rl.sliding_counter", rl_sliding_counter, "write deny-oom fast", 1, 1, 1, AclCategory::None],
    ],
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
