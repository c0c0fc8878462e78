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

use crate::config;
use redis_module::configuration::ConfigurationFlags;
use redis_module::{raw, redis_module, Context, RedisString, Status};

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

fn init(ctx: &Context, args: &[RedisString]) -> Status {
    let args: Vec<&[u8]> = args.iter().map(RedisString::as_slice).collect();
    if let Err(problem) = config::check_module_args(&args) {
        ctx.log_warning(&format!("ratelimit: {problem}"));
        return Status::Err;
    }
    if let Err(missing) = api::Api::load() {
        ctx.log_warning(&format!("ratelimit: the server lacks {missing}"));
        return Status::Err;
    }
    if !kept::init() || !kept::follow_server_settings(ctx.ctx) {
        return Status::Err;
    }
    module_flags::declare(ctx);
    if let Err(problem) = register::create_commands(ctx.ctx) {
        ctx.log_warning(&format!("ratelimit: {problem}"));
        return Status::Err;
    }
    // Our own INFO callback: the `ratelimit` section. Registered here, after
    // the default one, which it replaces.
    raw::register_info_function(ctx.ctx, Some(register::info));
    register::document(ctx.ctx);
    Status::Ok
}

fn deinit(_ctx: &Context) -> Status {
    kept::free();
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
            [
                "concurrency_max_limit",
                &config::CONCURRENCY_MAX_LIMIT,
                config::CONCURRENCY_MAX_LIMIT_DEFAULT,
                1,
                config::CONCURRENCY_MAX_LIMIT_MAX,
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
            [
                "shadow",
                &config::SHADOW,
                false,
                ConfigurationFlags::DEFAULT,
                None
            ],
        ],
        enum: [],
        module_args_as_configuration: true,
    ]
}
