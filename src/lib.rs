//! redis-ratelimit: five rate-limiting algorithms as native Redis commands.
//!
//! This crate is the thin adapter; the algorithms live in `rl-core`.

mod args;
mod clock;
mod commands;
mod config;
mod error;
mod reply;
mod stats;
mod storage;

use redis_module::configuration::ConfigurationFlags;
use redis_module::{redis_module, Context, InfoContext, RedisResult, RedisString, Status};

fn rl_gcra(ctx: &Context, args: Vec<RedisString>) -> RedisResult {
    reply::guarded(&stats::GCRA, || commands::gcra(ctx, &args))
}

fn rl_token_bucket(ctx: &Context, args: Vec<RedisString>) -> RedisResult {
    reply::guarded(&stats::TOKEN_BUCKET, || commands::token_bucket(ctx, &args))
}

fn rl_fixed(ctx: &Context, args: Vec<RedisString>) -> RedisResult {
    reply::guarded(&stats::FIXED, || commands::fixed(ctx, &args))
}

fn rl_sliding_log(ctx: &Context, args: Vec<RedisString>) -> RedisResult {
    reply::guarded(&stats::SLIDING_LOG, || commands::sliding_log(ctx, &args))
}

fn rl_sliding_counter(ctx: &Context, args: Vec<RedisString>) -> RedisResult {
    reply::guarded(&stats::SLIDING_COUNTER, || commands::sliding_counter(ctx, &args))
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

fn init(ctx: &Context, _args: &[RedisString]) -> Status {
    // Our own INFO callback: the `ratelimit` section. Registered here, after
    // the default one, which it replaces.
    redis_module::raw::register_info_function(ctx.ctx, Some(info));
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
        bool: [],
        enum: [],
        module_args_as_configuration: true,
    ]
}
