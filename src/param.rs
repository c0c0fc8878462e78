//! A positional number of a command, as its grammar describes it: its
//! name, its range, whether a module setting lowers its bound at run time,
//! whether it is a duration. Reading one is in `args`.

use rl_core::bounds::MAX_PERIOD_MICROS;

/// One positional numeric argument of a command.
#[derive(Debug, Clone, Copy)]
pub struct Param {
    pub name: &'static str,
    pub min: u64,
    /// The upper bound; for a duration, in microseconds.
    pub max: u64,
    /// A lower upper bound set at run time (a module setting).
    pub cap: Option<Cap>,
    /// A duration in the command's unit (seconds, or milliseconds with `MS`).
    pub duration: bool,
}

/// A number from `min` to `max`.
pub const fn number(name: &'static str, min: u64, max: u64) -> Param {
    Param {
        name,
        min,
        max,
        cap: None,
        duration: false,
    }
}

/// A duration of at least one unit, at most 10^15 µs.
pub const fn duration(name: &'static str) -> Param {
    Param {
        name,
        min: 1,
        max: MAX_PERIOD_MICROS,
        cap: None,
        duration: true,
    }
}

/// An upper bound that a module setting lowers at run time.
#[derive(Debug, Clone, Copy)]
pub struct Cap {
    /// The setting, as `CONFIG SET` names it.
    pub setting: &'static str,
    /// Its current value.
    pub value: fn() -> u64,
    /// The largest value it may be set to.
    pub ceiling: u64,
}

/// `param`, with an upper bound lowered at run time by a module setting.
pub const fn capped(param: Param, cap: Cap) -> Param {
    Param {
        cap: Some(cap),
        ..param
    }
}
