//! String objects the module keeps between commands, so that a replicated
//! `SET key value PXAT ms` does not make them again on every call:
//! - `PXAT`, made when the module loads;
//! - the expiry of the last write. Every key of a fixed window expires at
//!   the same millisecond, and so do the GCRA and token-bucket keys written
//!   within one millisecond: under load most writes reuse it.
//!
//! Commands run on the server's main thread, one at a time; the atomics only
//! make the statics shareable, they are never contended.

use super::{push_decimal, Encoded};
use redis_module::raw;
use std::os::raw::{c_char, c_longlong};
use std::ptr::null_mut;
use std::sync::atomic::{AtomicI64, AtomicPtr, Ordering};

static PXAT: AtomicPtr<raw::RedisModuleString> = AtomicPtr::new(null_mut());
static EXPIRY: AtomicPtr<raw::RedisModuleString> = AtomicPtr::new(null_mut());
static EXPIRY_AT: AtomicI64 = AtomicI64::new(-1);

/// A new string owned by the module (no context: not auto-released).
fn create(bytes: &[u8]) -> *mut raw::RedisModuleString {
    // SAFETY: the server copies `len` bytes from `ptr`.
    unsafe {
        raw::RedisModule_CreateString.map_or(null_mut(), |create| {
            create(null_mut(), bytes.as_ptr().cast::<c_char>(), bytes.len())
        })
    }
}

/// Drop the module's reference. Others (a pending replication) keep theirs.
fn release(s: *mut raw::RedisModuleString) {
    // SAFETY: `s` was made by `create` and the module's reference is
    // released once: the caller has taken it out of its static.
    unsafe {
        if let (false, Some(free)) = (s.is_null(), raw::RedisModule_FreeString) {
            free(null_mut(), s);
        }
    }
}

/// Make the load-time strings. Called once from the module's OnLoad.
pub fn init() -> bool {
    let pxat = create(b"PXAT");
    release(PXAT.swap(pxat, Ordering::Relaxed));
    !pxat.is_null()
}

/// Release every kept string. Called when the module unloads.
pub fn free() {
    release(PXAT.swap(null_mut(), Ordering::Relaxed));
    release(EXPIRY.swap(null_mut(), Ordering::Relaxed));
    EXPIRY_AT.store(-1, Ordering::Relaxed);
}

pub fn pxat() -> *mut raw::RedisModuleString {
    PXAT.load(Ordering::Relaxed)
}

/// `expire_at_ms` in decimal, as a string object: the kept one when it is
/// the same instant, else a new one that is kept instead.
pub fn expiry(expire_at_ms: c_longlong) -> *mut raw::RedisModuleString {
    let kept = EXPIRY.load(Ordering::Relaxed);
    if !kept.is_null() && EXPIRY_AT.load(Ordering::Relaxed) == expire_at_ms {
        return kept;
    }
    let mut digits = Encoded::new();
    push_decimal(&mut digits, u128::from(expire_at_ms.max(0).unsigned_abs()));
    let fresh = create(digits.as_slice());
    if !fresh.is_null() {
        release(EXPIRY.swap(fresh, Ordering::Relaxed));
        EXPIRY_AT.store(expire_at_ms, Ordering::Relaxed);
    }
    fresh
}
