//! A tiny driver: feed a limiter a script of (instant, quantity) and keep its
//! state between calls, as the Redis adapter does.
#![allow(dead_code)]

use rl_core::{Decision, Instant, Limiter, TimeUnit};

pub struct Driver<L: Limiter> {
    pub limiter: L,
    pub state: Option<L::State>,
}

impl<L: Limiter> Driver<L>
where
    L::State: Clone,
{
    pub fn new(limiter: L) -> Self {
        Driver { limiter, state: None }
    }

    /// One call at `now_micros`; stores the new state like the module does.
    pub fn call(&mut self, now_micros: u64, quantity: u64) -> Decision {
        let out = self
            .limiter
            .check(self.state.as_ref(), Instant::from_micros(now_micros), quantity);
        if let Some(update) = out.update {
            self.state = Some(update.state);
        }
        out.decision
    }

    /// One call, as the five integers of the reply.
    pub fn reply(&mut self, now_micros: u64, quantity: u64, unit: TimeUnit) -> [i64; 5] {
        self.call(now_micros, quantity).to_reply(unit)
    }

    /// What a call would answer, without keeping anything (PEEK).
    pub fn peek(&self, now_micros: u64, quantity: u64) -> Decision {
        self.limiter
            .check(self.state.as_ref(), Instant::from_micros(now_micros), quantity)
            .decision
    }
}

pub const SEC: u64 = 1_000_000;
pub const MS: u64 = 1_000;
