//! Why a set of parameters cannot be built.

use thiserror::Error;

/// A parameter out of its documented range. The adapter names the argument
/// as the command spells it; the core names its role.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Error)]
pub enum ParamError {
    #[error("{name} must be an integer from {min} to {max}")]
    OutOfRange { name: &'static str, min: u64, max: u64 },
}

/// `Ok(value)` when `min <= value <= max`.
pub(crate) fn in_range(name: &'static str, value: u64, min: u64, max: u64) -> Result<u64, ParamError> {
    if (min..=max).contains(&value) {
        Ok(value)
    } else {
        Err(ParamError::OutOfRange { name, min, max })
    }
}
