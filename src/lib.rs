//! redis-ratelimit: rate-limiting algorithms as native Redis commands.
//!
//! This crate is the thin adapter; the algorithms live in `rl-core`. The
//! commands are rows of one table (`registry`), run by pipelines written
//! against a key trait (`store`); only `server` calls into Redis.
#![deny(unsafe_code)]
#![deny(unsafe_op_in_unsafe_fn)]
#![warn(clippy::undocumented_unsafe_blocks)]

mod algorithms;
mod all;
mod args;
mod cl_throttle;
mod codec;
mod command;
mod concurrency;
mod config;
mod decimal;
mod docs;
mod error;
mod inspect;
#[cfg(test)]
mod memory;
mod options;
mod param;
#[cfg(test)]
mod pipeline_tests;
mod rate;
mod registry;
mod reply;
#[allow(unsafe_code)]
mod server;
mod stats;
mod store;
