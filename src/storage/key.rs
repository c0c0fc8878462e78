//! A thin, safe wrapper over the low-level key API: open one key, read its
//! string, write a string with an absolute expiry, replicate the effect.

use crate::error::CommandError;
use redis_module::raw;
use std::ffi::CStr;
use std::os::raw::{c_char, c_int, c_longlong};
use std::ptr::NonNull;

/// What a key holds, as far as the codecs care.
pub enum Content<'k> {
    Empty,
    String(&'k [u8]),
    Other,
}

/// A key opened for reading and writing; closed on drop.
pub struct Key {
    ctx: *mut raw::RedisModuleCtx,
    name: *mut raw::RedisModuleString,
    handle: NonNull<raw::RedisModuleKey>,
}

const MISSING_API: CommandError = CommandError::Storage {
    detail: "server lacks a required module API",
};

impl Key {
    /// # Safety
    /// `ctx` and `name` must be the live context and argument of the running
    /// command.
    pub unsafe fn open(
        ctx: *mut raw::RedisModuleCtx,
        name: *mut raw::RedisModuleString,
    ) -> Result<Key, CommandError> {
        let open = raw::RedisModule_OpenKey.ok_or(MISSING_API)?;
        let mode = (raw::REDISMODULE_READ | raw::REDISMODULE_WRITE) as c_int;
        let handle = NonNull::new(open(ctx, name, mode).cast::<raw::RedisModuleKey>()).ok_or(
            CommandError::Storage {
                detail: "could not open the key",
            },
        )?;
        Ok(Key { ctx, name, handle })
    }

    /// The key's content. A string is borrowed for as long as the key is
    /// not written.
    pub fn content(&self) -> Result<Content<'_>, CommandError> {
        // SAFETY: the handle is open; DMA in read mode returns a pointer to
        // `len` bytes that stay valid until the key is modified or closed,
        // which the borrow of `self` prevents.
        unsafe {
            let key_type = raw::RedisModule_KeyType.ok_or(MISSING_API)?(self.handle.as_ptr());
            match key_type as isize {
                raw::REDISMODULE_KEYTYPE_EMPTY => Ok(Content::Empty),
                raw::REDISMODULE_KEYTYPE_STRING => {
                    let dma = raw::RedisModule_StringDMA.ok_or(MISSING_API)?;
                    let mut len = 0usize;
                    let ptr = dma(self.handle.as_ptr(), &mut len, raw::REDISMODULE_READ as c_int);
                    if ptr.is_null() {
                        return Ok(Content::Other);
                    }
                    if len == 0 {
                        return Ok(Content::String(&[]));
                    }
                    Ok(Content::String(std::slice::from_raw_parts(ptr.cast::<u8>(), len)))
                }
                _ => Ok(Content::Other),
            }
        }
    }

    /// The key name's bytes (for error messages).
    pub fn name_bytes(&self) -> &[u8] {
        // SAFETY: `name` is a live argument string of the running command.
        unsafe {
            let Some(ptr_len) = raw::RedisModule_StringPtrLen else {
                return &[];
            };
            let mut len = 0usize;
            let ptr = ptr_len(self.name, &mut len);
            if ptr.is_null() {
                return &[];
            }
            std::slice::from_raw_parts(ptr.cast::<u8>(), len)
        }
    }

    /// Replace the value with `value`, expiring at `expire_at_ms` (absolute
    /// Unix time), and replicate exactly that effect as
    /// `SET key value PXAT expire_at_ms`.
    pub fn set_string(&mut self, value: &[u8], expire_at_ms: u64) -> Result<(), CommandError> {
        let expire_at_ms = c_longlong::try_from(expire_at_ms).unwrap_or(c_longlong::MAX);
        // SAFETY: handle, ctx and name are live for the running command; the
        // created string is handed to the key (StringSet takes a reference)
        // and then released.
        unsafe {
            let create = raw::RedisModule_CreateString.ok_or(MISSING_API)?;
            let set = raw::RedisModule_StringSet.ok_or(MISSING_API)?;
            let free = raw::RedisModule_FreeString.ok_or(MISSING_API)?;
            let s = create(self.ctx, value.as_ptr().cast::<c_char>(), value.len());
            let status = set(self.handle.as_ptr(), s);
            free(self.ctx, s);
            if status != raw::REDISMODULE_OK as c_int {
                return Err(CommandError::Storage {
                    detail: "the server refused the write",
                });
            }
            self.set_expire(expire_at_ms)?;
            self.replicate_set(value, expire_at_ms)
        }
    }

    unsafe fn set_expire(&mut self, expire_at_ms: c_longlong) -> Result<(), CommandError> {
        let status = if let Some(set_abs) = raw::RedisModule_SetAbsExpire {
            set_abs(self.handle.as_ptr(), expire_at_ms)
        } else {
            let set_rel = raw::RedisModule_SetExpire.ok_or(MISSING_API)?;
            let now = c_longlong::try_from(crate::clock::now_millis()).unwrap_or(0);
            set_rel(self.handle.as_ptr(), expire_at_ms.saturating_sub(now).max(1))
        };
        if status != raw::REDISMODULE_OK as c_int {
            return Err(CommandError::Storage {
                detail: "could not set the expiry",
            });
        }
        Ok(())
    }

    /// Replicate the effect, never the command: replicas and the AOF then
    /// hold exactly this value, whatever their own clocks say.
    unsafe fn replicate_set(&self, value: &[u8], expire_at_ms: c_longlong) -> Result<(), CommandError> {
        const SET: &CStr = c"SET";
        const FMT: &CStr = c"sbcl";
        const PXAT: &CStr = c"PXAT";
        let replicate = raw::RedisModule_Replicate.ok_or(MISSING_API)?;
        let status = replicate(
            self.ctx,
            SET.as_ptr(),
            FMT.as_ptr(),
            self.name,
            value.as_ptr().cast::<c_char>(),
            value.len(),
            PXAT.as_ptr(),
            expire_at_ms,
        );
        if status != raw::REDISMODULE_OK as c_int {
            return Err(CommandError::Storage {
                detail: "could not replicate the write",
            });
        }
        Ok(())
    }
}

impl Drop for Key {
    fn drop(&mut self) {
        // SAFETY: the handle was opened by `open` and is closed exactly once.
        unsafe {
            if let Some(close) = raw::RedisModule_CloseKey {
                close(self.handle.as_ptr());
            }
        }
    }
}
