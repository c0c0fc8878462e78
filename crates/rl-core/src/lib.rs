//! Pure, integer-exact rate-limiting algorithms.
//!
//! No clock, no I/O, no floats, no `unsafe`: every function takes `now` as an
//! argument and returns a [`Decision`] plus the state to store. The Redis
//! module is a thin adapter around this crate.
#![forbid(unsafe_code)]

pub mod bounds;
pub mod concurrency;
mod decision;
mod error;
pub mod fixed_window;
pub mod gcra;
mod limiter;
pub mod request;
pub mod sliding_counter;
pub mod sliding_log;
mod time;
pub mod token_bucket;
mod window;

pub use concurrency::{Acquired, Concurrency, Lease, LeaseList, LeaseUpdate, Leases, NoLeases};
pub use decision::{Decision, RetryAfter};
pub use error::ParamError;
pub use fixed_window::{FixedWindow, WindowCount};
pub use gcra::{Gcra, Tat};
pub use limiter::{Giveback, Limiter, Outcome, Overdrawn, Refunded, Update};
pub use request::{Effect, Mode, Request, Verdict};
pub use sliding_counter::{SlidingCounter, WindowPair};
pub use sliding_log::{Append, LogView, Shed, SlidingLog};
pub use time::{Instant, Micros, TimeUnit};
pub use token_bucket::{TokenBucket, Tokens};
pub use window::MAX_WINDOW_START;
