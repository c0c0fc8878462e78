//! What a pipeline knows of the command it runs: its name, for messages,
//! and its `INFO` counters. Each pipeline owns its commands' statics; the
//! registry makes server commands of them.

use crate::stats::Stats;

pub struct Command {
    /// Lower case, as `COMMAND` lists it.
    pub name: &'static str,
    pub stats: Stats,
}
