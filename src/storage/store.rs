//! Reading and writing one limiter key, and replicating the effect.
//!
//! Two ways in, chosen per codec:
//! - [`Access::Direct`]: the low-level key API (string DMA, `StringSet`,
//!   absolute expiry, `Replicate`): the cheapest path.
//! - [`Access::Command`]: `GET` and `SET .. PXAT` through `RedisModule_Call`.
//!   Only `SET` lets Redis store an integer value in its compact encoding
//!   (16 bytes instead of a string allocation), and only `GET` reads a value
//!   without converting it out of that encoding (a DMA read "unshares" it).
//!
//! Either way, what replicas and the AOF receive is the effect,
//! `SET key value PXAT ms`, never the command.

use super::shared;
use crate::error::CommandError;
use redis_module::raw;
use std::ffi::CStr;
use std::os::raw::{c_char, c_int, c_longlong};
use std::ptr::NonNull;

/// How a codec's values are read and written.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Access {
    Direct,
    Command,
}

/// What a key holds, as far as the codecs care.
pub enum Content<'k> {
    Empty,
    String(&'k [u8]),
    Other,
}

const ERR: c_int = raw::REDISMODULE_ERR as c_int;

/// The largest value [`Store::patch`] replicates whole, as one `SET .. PXAT`,
/// rather than as its patches. Up to this size the `SET` is never longer on
/// the replication stream than the `MULTI`, `SETRANGE`, `PEXPIREAT`, `EXEC`
/// it replaces (those add about 50 bytes plus the key name again), and it
/// is one replicated command instead of a transaction of several.
pub const WHOLE_VALUE_MAX: usize = 64;

const MISSING_API: CommandError = CommandError::Storage {
    detail: "server lacks a required module API",
};

/// A reply of `RedisModule_Call`, freed on drop.
struct CallReply(NonNull<raw::RedisModuleCallReply>);

impl CallReply {
    fn kind(&self) -> isize {
        // SAFETY: the reply is live until drop.
        unsafe {
            raw::RedisModule_CallReplyType
                .map_or(raw::REDISMODULE_REPLY_UNKNOWN, |f| f(self.0.as_ptr()) as isize)
        }
    }

    /// The reply as the server wrote it (RESP), empty if the server cannot
    /// say. Reading it, unlike [`CallReply::kind`], does not make the server
    /// parse the reply.
    fn proto(&self) -> &[u8] {
        // SAFETY: both are read-only accessors of a live reply.
        unsafe { self.read_bytes(raw::RedisModule_CallReplyProto) }
    }

    /// Whether the reply is a status (`+OK`).
    fn is_status(&self) -> bool {
        match self.proto().first() {
            Some(&first) => first == b'+',
            None => self.kind() == raw::REDISMODULE_REPLY_STRING,
        }
    }

    /// The bytes of a string reply.
    fn bytes(&self) -> &[u8] {
        // SAFETY: as for `proto`.
        unsafe { self.read_bytes(raw::RedisModule_CallReplyStringPtr) }
    }

    /// The bytes `accessor` gives for the reply (none without it).
    ///
    /// # Safety
    /// `accessor` returns a pointer to `len` bytes owned by the reply.
    unsafe fn read_bytes(
        &self,
        accessor: Option<unsafe extern "C" fn(*mut raw::RedisModuleCallReply, *mut usize) -> *const c_char>,
    ) -> &[u8] {
        let Some(accessor) = accessor else {
            return &[];
        };
        let mut len = 0usize;
        // The reply is live until drop, so are the bytes it owns.
        crate::server_bytes(accessor(self.0.as_ptr(), &mut len), len)
    }
}

/// A string object the module made for a write: its own reference is
/// released on drop (a key or a pending replication that took another keeps
/// the object alive), unless [`shared::value`] keeps it.
struct ValueString {
    object: NonNull<raw::RedisModuleString>,
    ctx: *mut raw::RedisModuleCtx,
    kept: bool,
}

impl Drop for ValueString {
    fn drop(&mut self) {
        if self.kept {
            return;
        }
        // SAFETY: the module's reference, released exactly once.
        unsafe {
            if let Some(free) = raw::RedisModule_FreeString {
                free(self.ctx, self.object.as_ptr());
            }
        }
    }
}

impl Drop for CallReply {
    fn drop(&mut self) {
        // SAFETY: freed exactly once.
        unsafe {
            if let Some(free) = raw::RedisModule_FreeCallReply {
                free(self.0.as_ptr());
            }
        }
    }
}

/// One limiter key of the running command.
pub struct Store {
    ctx: *mut raw::RedisModuleCtx,
    name: *mut raw::RedisModuleString,
    access: Access,
    key: Option<NonNull<raw::RedisModuleKey>>,
    reply: Option<CallReply>,
    /// The length of the string value read by `read` (direct access).
    string_len: Option<usize>,
    /// Whether this command changed the key (through the key API): then the
    /// key is signalled as modified when closed. The module sets
    /// `REDISMODULE_OPTION_NO_IMPLICIT_SIGNAL_MODIFIED`, so a refused
    /// request or a query, which open the key for writing but change
    /// nothing, neither break a client's `WATCH` nor invalidate its
    /// client-side cache.
    changed: bool,
}

impl Store {
    /// # Safety
    /// `ctx` and `name` must be the live context and key argument of the
    /// running command.
    pub unsafe fn open(
        ctx: *mut raw::RedisModuleCtx,
        name: *mut raw::RedisModuleString,
        access: Access,
    ) -> Result<Store, CommandError> {
        let mut store = Store {
            ctx,
            name,
            access,
            key: None,
            reply: None,
            string_len: None,
            changed: false,
        };
        if access == Access::Direct {
            let open = raw::RedisModule_OpenKey.ok_or(MISSING_API)?;
            let mode = (raw::REDISMODULE_READ | raw::REDISMODULE_WRITE) as c_int;
            store.key = Some(
                NonNull::new(open(ctx, name, mode).cast::<raw::RedisModuleKey>()).ok_or(
                    CommandError::Storage {
                        detail: "could not open the key",
                    },
                )?,
            );
        }
        Ok(store)
    }

    /// The key's current content. Borrowed until the next write.
    pub fn read(&mut self) -> Result<Content<'_>, CommandError> {
        match (self.access, self.key) {
            (Access::Direct, Some(key)) => {
                let content = Self::read_direct(key)?;
                // Remembered for the write: same length means overwrite in place.
                self.string_len = match &content {
                    Content::String(bytes) => Some(bytes.len()),
                    _ => None,
                };
                Ok(content)
            }
            _ => self.read_command(),
        }
    }

    fn read_direct<'a>(key: NonNull<raw::RedisModuleKey>) -> Result<Content<'a>, CommandError> {
        // SAFETY: the key is open; DMA in read mode returns `len` bytes that
        // stay valid until the key is written or closed, which the borrow of
        // the store prevents.
        unsafe {
            match raw::RedisModule_KeyType.ok_or(MISSING_API)?(key.as_ptr()) as isize {
                raw::REDISMODULE_KEYTYPE_EMPTY => Ok(Content::Empty),
                raw::REDISMODULE_KEYTYPE_STRING => {
                    let dma = raw::RedisModule_StringDMA.ok_or(MISSING_API)?;
                    let mut len = 0usize;
                    let ptr = dma(key.as_ptr(), &mut len, raw::REDISMODULE_READ as c_int);
                    if ptr.is_null() {
                        Ok(Content::Other)
                    } else {
                        Ok(Content::String(crate::server_bytes(ptr, len)))
                    }
                }
                _ => Ok(Content::Other),
            }
        }
    }

    fn read_command(&mut self) -> Result<Content<'_>, CommandError> {
        const GET: &CStr = c"GET";
        const FMT: &CStr = c"s";
        // A new key (the common case for a limiter) needs no GET round trip.
        // SAFETY: ctx and name are live for the running command.
        let missing =
            unsafe { raw::RedisModule_KeyExists.is_some_and(|exists| exists(self.ctx, self.name) == 0) };
        if missing {
            return Ok(Content::Empty);
        }
        // SAFETY: ctx and name are live; the reply is owned by the store.
        let reply = unsafe {
            let call = raw::RedisModule_Call.ok_or(MISSING_API)?;
            NonNull::new(call(self.ctx, GET.as_ptr(), FMT.as_ptr(), self.name))
        };
        let reply = reply.map(CallReply).ok_or(CommandError::Storage {
            detail: "could not read the key",
        })?;
        let reply = self.reply.insert(reply);
        if let Some(content) = get_reply_content(reply.proto()) {
            return Ok(content);
        }
        // Not a form read above: let the server parse it.
        match reply.kind() {
            raw::REDISMODULE_REPLY_NULL => Ok(Content::Empty),
            raw::REDISMODULE_REPLY_STRING => Ok(Content::String(reply.bytes())),
            // GET answers WRONGTYPE for any other type.
            _ => Ok(Content::Other),
        }
    }

    /// Replace the value with `value`, expiring at `expire_at_ms` (absolute
    /// Unix milliseconds), and replicate exactly that effect. With `share`,
    /// a new value may be an object other keys hold too.
    pub fn write(&mut self, value: &[u8], expire_at_ms: u64, share: bool) -> Result<(), CommandError> {
        let expire_at_ms = c_longlong::try_from(expire_at_ms).unwrap_or(c_longlong::MAX);
        self.reply = None;
        match (self.access, self.key) {
            (Access::Direct, Some(key)) => self.write_direct(key, value, expire_at_ms, share),
            _ => self.write_command(value, expire_at_ms),
        }
    }

    fn write_direct(
        &mut self,
        key: NonNull<raw::RedisModuleKey>,
        value: &[u8],
        expire_at_ms: c_longlong,
        share: bool,
    ) -> Result<(), CommandError> {
        self.changed = true;
        // SAFETY: the key is open for writing. Otherwise the created string
        // is handed to the key (StringSet takes its own reference) and to the
        // replication (which takes another) before ours is released.
        unsafe {
            let replicate = raw::RedisModule_Replicate.ok_or(MISSING_API)?;
            let status = if self.overwrite_in_place(key, value)? {
                Self::set_abs_expire(key, expire_at_ms)?;
                self.send_set(replicate, false, Value::Bytes(value), expire_at_ms, ERR)
            } else {
                let stored = self.set_new_string(key, value, share)?;
                let expired = Self::set_abs_expire(key, expire_at_ms);
                // The value replicated is the very object stored.
                let status = self.send_set(
                    replicate,
                    false,
                    Value::Object(stored.object.as_ptr()),
                    expire_at_ms,
                    ERR,
                );
                expired?;
                status
            };
            if status != raw::REDISMODULE_OK as c_int {
                return Err(CommandError::Storage {
                    detail: "could not replicate the write",
                });
            }
        }
        self.notify_written(c"set");
        Ok(())
    }

    fn write_command(&mut self, value: &[u8], expire_at_ms: c_longlong) -> Result<(), CommandError> {
        // SAFETY: ctx and name are live for the running command.
        let reply = unsafe {
            let call = raw::RedisModule_Call.ok_or(MISSING_API)?;
            // `!`: replicate this SET (the effect) to replicas and the AOF.
            NonNull::new(self.send_set(
                call,
                true,
                Value::Bytes(value),
                expire_at_ms,
                std::ptr::null_mut(),
            ))
        };
        let reply = reply.map(CallReply).ok_or(CommandError::Storage {
            detail: "the server refused the write",
        })?;
        // SET answers +OK; anything else (an error) means nothing was written.
        if !reply.is_status() {
            return Err(CommandError::Storage {
                detail: "the server refused the write",
            });
        }
        Ok(())
    }
}

impl Store {
    /// A string value of the same length (as read) is overwritten where it
    /// lies: no new object, no keyspace update (the common case: a limiter's
    /// state has a fixed size). Returns whether it did.
    ///
    /// # Safety
    /// `key` is open for writing and was read by this store.
    unsafe fn overwrite_in_place(
        &self,
        key: NonNull<raw::RedisModuleKey>,
        value: &[u8],
    ) -> Result<bool, CommandError> {
        if self.string_len != Some(value.len()) {
            return Ok(false);
        }
        match Self::writable(key)? {
            Some(target) if target.len() == value.len() => {
                target.copy_from_slice(value);
                Ok(true)
            }
            _ => Ok(false),
        }
    }

    /// The value's bytes, writable in place (unshared by the server first);
    /// `None` if the server gives none.
    ///
    /// # Safety
    /// `key` is open for writing and holds a string; the slice is used before
    /// the next operation on the key.
    unsafe fn writable<'a>(key: NonNull<raw::RedisModuleKey>) -> Result<Option<&'a mut [u8]>, CommandError> {
        let dma = raw::RedisModule_StringDMA.ok_or(MISSING_API)?;
        let mut len = 0usize;
        let ptr = dma(
            key.as_ptr(),
            &mut len,
            (raw::REDISMODULE_READ | raw::REDISMODULE_WRITE) as c_int,
        );
        Ok((!ptr.is_null()).then(|| {
            if len == 0 {
                &mut []
            } else {
                std::slice::from_raw_parts_mut(ptr.cast::<u8>(), len)
            }
        }))
    }

    /// Store a string of `bytes` as the key's value (which drops the key's
    /// expiry). With `share`, the object may be one that other keys hold
    /// too (see [`shared::value`]): the server copies a shared value before
    /// anything modifies it in place.
    ///
    /// # Safety
    /// `key` is open for writing. `bytes` may be the key's own value: the
    /// server copies it before replacing it.
    unsafe fn set_new_string(
        &self,
        key: NonNull<raw::RedisModuleKey>,
        bytes: &[u8],
        share: bool,
    ) -> Result<ValueString, CommandError> {
        let set = raw::RedisModule_StringSet.ok_or(MISSING_API)?;
        let value = match share.then(|| shared::value(bytes)).flatten() {
            Some(object) => ValueString {
                object,
                ctx: self.ctx,
                kept: true,
            },
            None => {
                let create = raw::RedisModule_CreateString.ok_or(MISSING_API)?;
                let made = create(self.ctx, bytes.as_ptr().cast::<c_char>(), bytes.len());
                ValueString {
                    object: NonNull::new(made).ok_or(CommandError::Storage {
                        detail: "could not make the value",
                    })?,
                    ctx: self.ctx,
                    kept: false,
                }
            }
        };
        if set(key.as_ptr(), value.object.as_ptr()) != raw::REDISMODULE_OK as c_int {
            return Err(CommandError::Storage {
                detail: "the server refused the write",
            });
        }
        Ok(value)
    }

    /// Grow the value to `new_len` bytes (zero-filled) if shorter, overwrite
    /// the `patches` (offset, bytes) in place, set the absolute expiry, and
    /// replicate exactly that: one `SETRANGE` per patch and a `PEXPIREAT`,
    /// or, for a value of at most [`WHOLE_VALUE_MAX`] bytes, the whole value
    /// as one `SET .. PXAT`. With `compact`, the value is then reallocated at
    /// its exact size (a string grown in steps keeps spare capacity
    /// otherwise).
    pub fn patch<'p>(
        &mut self,
        new_len: usize,
        patches: impl Iterator<Item = (usize, &'p [u8])> + Clone,
        compact: bool,
        expire_at_ms: u64,
    ) -> Result<(), CommandError> {
        let Some(key) = self.key else {
            return Err(CommandError::Storage {
                detail: "in-place writes need the key open",
            });
        };
        let expire_at_ms = c_longlong::try_from(expire_at_ms).unwrap_or(c_longlong::MAX);
        self.changed = true;
        // SAFETY: the key is open for writing and holds a string (or nothing);
        // DMA in write mode returns `len` writable bytes valid until the next
        // key operation; every patch is bounds-checked against `len`.
        unsafe {
            if new_len > self.string_len.unwrap_or(0) {
                let truncate = raw::RedisModule_StringTruncate.ok_or(MISSING_API)?;
                if truncate(key.as_ptr(), new_len) != raw::REDISMODULE_OK as c_int {
                    return Err(CommandError::Storage {
                        detail: "could not grow the value",
                    });
                }
            }
            let value = Self::writable(key)?.ok_or(CommandError::Storage {
                detail: "could not write the value",
            })?;
            for (offset, bytes) in patches.clone() {
                let Some(target) = value.get_mut(offset..offset + bytes.len()) else {
                    return Err(CommandError::Storage {
                        detail: "a write fell outside the value",
                    });
                };
                target.copy_from_slice(bytes);
            }
            // A small value is replicated whole, from a copy taken before
            // the key's value can be replaced (`compact`).
            let mut whole = [0u8; WHOLE_VALUE_MAX];
            let whole = whole.get_mut(..value.len()).map(|copy| {
                copy.copy_from_slice(value);
                &*copy
            });
            if compact {
                // A copy at the exact size replaces the value (the expiry
                // it drops is set below).
                self.set_new_string(key, value, false)?;
            }
            Self::set_abs_expire(key, expire_at_ms)?;
            let replicate = raw::RedisModule_Replicate.ok_or(MISSING_API)?;
            if let Some(whole) = whole {
                if self.send_set(replicate, false, Value::Bytes(whole), expire_at_ms, ERR)
                    != raw::REDISMODULE_OK as c_int
                {
                    return Err(CommandError::Storage {
                        detail: "could not replicate the write",
                    });
                }
                self.notify_written(c"set");
                return Ok(());
            }
            for (offset, bytes) in patches {
                let offset = c_longlong::try_from(offset).unwrap_or(c_longlong::MAX);
                let status = replicate(
                    self.ctx,
                    c"SETRANGE".as_ptr(),
                    c"slb".as_ptr(),
                    self.name,
                    offset,
                    bytes.as_ptr().cast::<c_char>(),
                    bytes.len(),
                );
                if status != raw::REDISMODULE_OK as c_int {
                    return Err(CommandError::Storage {
                        detail: "could not replicate the write",
                    });
                }
            }
            let status = replicate(
                self.ctx,
                c"PEXPIREAT".as_ptr(),
                c"sl".as_ptr(),
                self.name,
                expire_at_ms,
            );
            if status != raw::REDISMODULE_OK as c_int {
                return Err(CommandError::Storage {
                    detail: "could not replicate the write",
                });
            }
        }
        self.notify_written(c"setrange");
        Ok(())
    }

    /// Emit the keyspace events of the commands a write replicated, as those
    /// commands would: `event` (`set` or `setrange`, class `$`), then
    /// `expire` (class `g`). Only the classes `notify-keyspace-events`
    /// enables are emitted: with notifications off (the default) this costs
    /// one lookup of the setting instead of two calls into the server per
    /// write. (`RL.GCRA`'s `SET`, a real command, emits its own.)
    fn notify_written(&self, event: &CStr) {
        const STRING: c_int = raw::REDISMODULE_NOTIFY_STRING;
        const GENERIC: c_int = raw::REDISMODULE_NOTIFY_GENERIC;
        // SAFETY: ctx and name are live for the running command; the event
        // names are NUL-terminated literals the server only reads.
        unsafe {
            let (Some(enabled), Some(notify)) = (
                raw::RedisModule_GetNotifyKeyspaceEvents,
                raw::RedisModule_NotifyKeyspaceEvent,
            ) else {
                return;
            };
            let classes = enabled();
            if classes & STRING != 0 {
                notify(self.ctx, STRING, event.as_ptr(), self.name);
            }
            if classes & GENERIC != 0 {
                notify(self.ctx, GENERIC, c"expire".as_ptr(), self.name);
            }
        }
    }

    /// Set the key's absolute expiry (or, on a server without that API, the
    /// equivalent relative one).
    unsafe fn set_abs_expire(
        key: NonNull<raw::RedisModuleKey>,
        expire_at_ms: c_longlong,
    ) -> Result<(), CommandError> {
        let status = if let Some(set_abs) = raw::RedisModule_SetAbsExpire {
            set_abs(key.as_ptr(), expire_at_ms)
        } else {
            let set_rel = raw::RedisModule_SetExpire.ok_or(MISSING_API)?;
            let now = c_longlong::try_from(crate::clock::now_millis()).unwrap_or(0);
            set_rel(key.as_ptr(), expire_at_ms.saturating_sub(now).max(1))
        };
        if status != raw::REDISMODULE_OK as c_int {
            return Err(CommandError::Storage {
                detail: "could not set the expiry",
            });
        }
        Ok(())
    }

    /// Call `RedisModule_Replicate` or `RedisModule_Call` (`send`) with
    /// `SET key value PXAT expire_at_ms`. Through `RedisModule_Call` the SET
    /// is flagged `!`: replicated to replicas and the AOF.
    ///
    /// Every string the server would otherwise build for the call is passed
    /// ready-made where one exists: the key (the command's argument), the
    /// value when it is the object just stored, `PXAT` and the expiry (see
    /// [`shared`]). Returns `fail` if those could not be made.
    ///
    /// # Safety
    /// `send` must be one of those two functions (`is_call` says which);
    /// ctx and name are live.
    unsafe fn send_set<R>(
        &self,
        send: unsafe extern "C" fn(*mut raw::RedisModuleCtx, *const c_char, *const c_char, ...) -> R,
        is_call: bool,
        value: Value<'_>,
        expire_at_ms: c_longlong,
        fail: R,
    ) -> R {
        let pxat = shared::pxat();
        let expiry = shared::expiry(expire_at_ms);
        if pxat.is_null() || expiry.is_null() {
            return fail;
        }
        // `s` passes a string object, `b` (pointer, length) of bytes.
        match (value, is_call) {
            (Value::Object(object), call) => send(
                self.ctx,
                c"SET".as_ptr(),
                if call { c"!ssss" } else { c"ssss" }.as_ptr(),
                self.name,
                object,
                pxat,
                expiry,
            ),
            (Value::Bytes(bytes), call) => send(
                self.ctx,
                c"SET".as_ptr(),
                if call { c"!sbss" } else { c"sbss" }.as_ptr(),
                self.name,
                bytes.as_ptr().cast::<c_char>(),
                bytes.len(),
                pxat,
                expiry,
            ),
        }
    }
}

/// What a `GET` reply says, read from its protocol bytes: `Empty` for a null
/// (`$-1` in RESP2, `_` in RESP3), the bytes of a bulk string
/// (`$<len>\r\n<bytes>\r\n`), `Other` for an error (WRONGTYPE). `None` for
/// anything else, which the caller leaves to the server's parser.
fn get_reply_content(proto: &[u8]) -> Option<Content<'_>> {
    match proto.first()? {
        b'_' => return Some(Content::Empty),
        b'-' => return Some(Content::Other),
        b'$' => {}
        _ => return None,
    }
    let rest = &proto[1..];
    let end = rest.iter().position(|&b| b == b'\r')?;
    if &rest[..end] == b"-1" {
        return Some(Content::Empty);
    }
    let len = usize::try_from(super::parse_decimal(&rest[..end])?).ok()?;
    let body = rest.get(end..)?.strip_prefix(b"\r\n")?;
    let bytes = body.get(..len)?;
    (&body[len..] == b"\r\n").then_some(Content::String(bytes))
}

/// A value to send: an existing string object, or bytes to copy.
#[derive(Clone, Copy)]
enum Value<'a> {
    Object(*mut raw::RedisModuleString),
    Bytes(&'a [u8]),
}

impl Drop for Store {
    fn drop(&mut self) {
        self.reply = None;
        // SAFETY: the key was opened by `open` and is closed exactly once;
        // ctx and name are the running command's.
        unsafe {
            if let (true, Some(_), Some(signal)) =
                (self.changed, self.key, raw::RedisModule_SignalModifiedKey)
            {
                signal(self.ctx, self.name);
            }
            if let (Some(key), Some(close)) = (self.key, raw::RedisModule_CloseKey) {
                close(key.as_ptr());
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(proto: &[u8]) -> Option<Result<Vec<u8>, &'static str>> {
        get_reply_content(proto).map(|content| match content {
            Content::String(bytes) => Ok(bytes.to_vec()),
            Content::Empty => Err("empty"),
            Content::Other => Err("other"),
        })
    }

    #[test]
    fn get_replies_are_read_from_their_protocol() {
        assert_eq!(
            read(b"$19\r\n1481508000000000000\r\n"),
            Some(Ok(b"1481508000000000000".to_vec()))
        );
        assert_eq!(read(b"$0\r\n\r\n"), Some(Ok(Vec::new())));
        // A value holding CR LF is read by its length, not by its content.
        assert_eq!(read(b"$4\r\n\r\n\r\n\r\n"), Some(Ok(b"\r\n\r\n".to_vec())));
        assert_eq!(read(b"$-1\r\n"), Some(Err("empty")));
        assert_eq!(read(b"_\r\n"), Some(Err("empty")));
        assert_eq!(
            read(b"-WRONGTYPE Operation against a key holding the wrong kind of value\r\n"),
            Some(Err("other"))
        );
        // Anything else is left to the server's parser.
        for other in [
            &b""[..],
            b"+OK\r\n",
            b":5\r\n",
            b"$",
            b"$5",
            b"$5\r\nab\r\n",
            b"$2\r\nabc\r\n",
            b"$2\nab\r\n",
            b"$x\r\nab\r\n",
            b"$-2\r\n",
            b"$99999999999999999999999999999\r\n",
        ] {
            assert_eq!(read(other), None, "{other:?}");
        }
    }
}
