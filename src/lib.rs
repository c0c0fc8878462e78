//! redis-ratelimit: five rate-limiting algorithms as native Redis commands.
//!
//! This crate is the thin adapter; the algorithms live in `rl-core`.

mod args;
mod clock;
mod commands;
mod error;
mod reply;
mod storage;

use redis_module::{redis_module, Context, RedisResult, RedisString};

fn rl_gcra(ctx: &Context, args: Vec<RedisString>) -> RedisResult {
    reply::guarded(|| commands::gcra(ctx, &args))
}

fn rl_token_bucket(ctx: &Context, args: Vec<RedisString>) -> RedisResult {
    reply::guarded(|| commands::token_bucket(ctx, &args))
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

redis_module! {
    name: "ratelimit",
    version: 1,
    allocator: (Allocator, ALLOCATOR),
    data_types: [],
    commands: [
        ["rl.gcra", rl_gcra, "write deny-oom fast", 1, 1, 1, AclCategory::None],
        ["rl.token_bucket", rl_token_bucket, "write deny-oom fast", 1, 1, 1, AclCategory::None],
    ],
}
