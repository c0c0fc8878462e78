//! A limiter key of the running command, through the server's low-level key
//! API: string DMA to read and to overwrite in place, `StringSet`, an
//! absolute expiry, and `Replicate` of the effect.

use super::api::Api;
use super::kept;
use crate::error::CommandError;
use crate::store::{Content, Key, Keyspace, Patches, Write};
use redis_module::raw;
use std::ffi::CStr;
use std::marker::PhantomData;
use std::os::raw::{c_char, c_int, c_longlong};
use std::ptr::NonNull;
use std::sync::atomic::{AtomicBool, Ordering};

const OK: c_int = raw::REDISMODULE_OK as c_int;

/// Whether the server's `SET` takes `PXAT` (Redis 6.2+, Valkey), decided
/// once when the module loads: a write replicates as `SET .. PXAT`, else as
/// `SET` then `PEXPIREAT`.
static SET_PXAT: AtomicBool = AtomicBool::new(true);

/// Choose how writes replicate, from the server's version. Called from
/// OnLoad.
pub fn replicate_with_pxat(pxat: bool) {
    SET_PXAT.store(pxat, Ordering::Relaxed);
}

/// `len` bytes at `ptr`, owned by the server (empty for a null pointer or a
/// zero length, where `from_raw_parts` would not be allowed).
///
/// # Safety
/// Unless null, `ptr` addresses `len` readable bytes that stay valid and
/// unchanged for `'a`.
pub(super) unsafe fn server_bytes<'a>(ptr: *const c_char, len: usize) -> &'a [u8] {
    if ptr.is_null() || len == 0 {
        &[]
    } else {
        // SAFETY: the caller's contract.
        unsafe { std::slice::from_raw_parts(ptr.cast::<u8>(), len) }
    }
}

/// The bytes of a string object.
///
/// # Safety
/// `s` is a live string object that is not modified for `'a`.
pub(super) unsafe fn string_bytes<'a>(api: &Api, s: *const raw::RedisModuleString) -> &'a [u8] {
    if s.is_null() {
        return &[];
    }
    let mut len = 0usize;
    // SAFETY: `s` is live (the caller's contract); the server returns `len`
    // bytes it owns, valid as long as the object is unchanged.
    unsafe { server_bytes((api.string_ptr_len)(s, &mut len), len) }
}

/// The keys of the running command: its arguments, opened on demand.
pub struct ServerKeys<'a> {
    ctx: *mut raw::RedisModuleCtx,
    argv: &'a [*mut raw::RedisModuleString],
    api: &'static Api,
}

impl<'a> ServerKeys<'a> {
    /// # Safety
    /// `ctx` and `argv` are the running command's, and the value lives no
    /// longer than the command.
    pub(super) unsafe fn new(
        ctx: *mut raw::RedisModuleCtx,
        argv: &'a [*mut raw::RedisModuleString],
        api: &'static Api,
    ) -> Self {
        ServerKeys { ctx, argv, api }
    }
}

impl Keyspace for ServerKeys<'_> {
    type Key<'s>
        = ServerKey<'s>
    where
        Self: 's;

    fn open(&self, arg: usize) -> Result<ServerKey<'_>, CommandError> {
        let Some(&name) = self.argv.get(arg) else {
            return Err(CommandError::Internal);
        };
        let mode = (raw::REDISMODULE_READ | raw::REDISMODULE_WRITE) as c_int;
        // SAFETY: the context and the key argument are the running command's.
        let key = unsafe { (self.api.open_key)(self.ctx, name, mode) };
        let Some(key) = NonNull::new(key) else {
            return Err(CommandError::Storage {
                detail: "could not open the key",
            });
        };
        Ok(ServerKey {
            ctx: self.ctx,
            name,
            key,
            api: self.api,
            string_len: None,
            changed: false,
            _command: PhantomData,
        })
    }
}

/// One open key, closed on drop.
pub struct ServerKey<'a> {
    ctx: *mut raw::RedisModuleCtx,
    name: *mut raw::RedisModuleString,
    key: NonNull<raw::RedisModuleKey>,
    api: &'static Api,
    /// The length of the string value `read` saw: a value of the same length
    /// is overwritten where it lies.
    string_len: Option<usize>,
    /// Whether this command changed the key: then it is signalled as
    /// modified when closed. The module sets
    /// `REDISMODULE_OPTION_NO_IMPLICIT_SIGNAL_MODIFIED`, so a refused
    /// request or a query, which open the key for writing but change
    /// nothing, neither break a client's `WATCH` nor invalidate its
    /// client-side cache.
    changed: bool,
    _command: PhantomData<&'a ()>,
}

/// A value to replicate: an existing string object, or bytes to copy.
#[derive(Clone, Copy)]
enum Value<'v> {
    Object(*mut raw::RedisModuleString),
    Bytes(&'v [u8]),
}

/// A string object for a new value, released on drop (the key and a pending
/// replication take their own references) unless the module keeps it.
struct NewValue {
    object: NonNull<raw::RedisModuleString>,
    kept: bool,
    api: &'static Api,
    ctx: *mut raw::RedisModuleCtx,
}

impl NewValue {
    /// A string object holding `bytes`: with `share`, possibly one that
    /// other keys hold too (see [`kept::value`]: the server copies a shared
    /// value before anything modifies it in place).
    fn new(api: &'static Api, ctx: *mut raw::RedisModuleCtx, bytes: &[u8], share: bool) -> Option<NewValue> {
        if let Some(object) = share.then(|| kept::value(bytes)).flatten() {
            return Some(NewValue {
                object,
                kept: true,
                api,
                ctx,
            });
        }
        // SAFETY: the server copies `len` bytes from `ptr`; the object is
        // owned by the command's context until `NewValue` releases it.
        let made = unsafe { (api.create_string)(ctx, bytes.as_ptr().cast::<c_char>(), bytes.len()) };
        NonNull::new(made).map(|object| NewValue {
            object,
            kept: false,
            api,
            ctx,
        })
    }
}

impl Drop for NewValue {
    fn drop(&mut self) {
        if !self.kept {
            // SAFETY: the module's own reference, released exactly once.
            unsafe { (self.api.free_string)(self.ctx, self.object.as_ptr()) };
        }
    }
}

impl Key for ServerKey<'_> {
    fn name(&self) -> &[u8] {
        // SAFETY: the key's name is the command's argument, unchanged for the
        // whole command, which outlives `self`.
        unsafe { string_bytes(self.api, self.name) }
    }

    fn read(&mut self) -> Content<'_> {
        // SAFETY: the key is open. DMA in read mode returns `len` bytes that
        // stay valid until the key is written or closed, which the borrow of
        // `self` prevents.
        let content = unsafe {
            match (self.api.key_type)(self.key.as_ptr()) as isize {
                raw::REDISMODULE_KEYTYPE_EMPTY => Content::Empty,
                raw::REDISMODULE_KEYTYPE_STRING => {
                    let mut len = 0usize;
                    let ptr =
                        (self.api.string_dma)(self.key.as_ptr(), &mut len, raw::REDISMODULE_READ as c_int);
                    if ptr.is_null() {
                        Content::Other
                    } else {
                        Content::String(server_bytes(ptr, len))
                    }
                }
                _ => Content::Other,
            }
        };
        self.string_len = match content {
            Content::String(bytes) => Some(bytes.len()),
            _ => None,
        };
        content
    }

    fn pttl(&mut self) -> i64 {
        // SAFETY: the key is open; the call only reads it.
        let ms = unsafe { (self.api.get_expire)(self.key.as_ptr()) };
        // REDISMODULE_NO_EXPIRE is -1, as PTTL answers for a key without one.
        if ms < 0 {
            -1
        } else {
            ms
        }
    }

    fn write(&mut self, write: &Write) {
        self.changed = true;
        match write {
            Write::Set {
                value,
                expire_at_ms,
                share,
            } => self.set(value.as_slice(), millis(*expire_at_ms), *share),
            Write::Patch {
                new_len,
                patches,
                compact,
                expire_at_ms,
            } => self.patch(*new_len, patches, *compact, millis(*expire_at_ms)),
            Write::Delete => self.delete(),
        }
    }
}

/// An expiry as the server's `long long`.
fn millis(at: u64) -> c_longlong {
    c_longlong::try_from(at).unwrap_or(c_longlong::MAX)
}

impl ServerKey<'_> {
    /// Replace the value. A string value of the same length (as read) is
    /// overwritten where it lies: no new object, no keyspace update (the
    /// common case: a limiter's state has a fixed size).
    fn set(&mut self, value: &[u8], expire_at_ms: c_longlong, share: bool) {
        if self.string_len == Some(value.len()) {
            if let Some(target) = self.writable().filter(|t| t.len() == value.len()) {
                target.copy_from_slice(value);
                self.set_expiry(expire_at_ms);
                self.replicate_set(Value::Bytes(value), expire_at_ms);
                self.notify_written(c"set");
                return;
            }
        }
        let Some(stored) = NewValue::new(self.api, self.ctx, value, share) else {
            self.warn("could not make a value: the request was not recorded");
            return;
        };
        // SAFETY: the key is open for writing; StringSet takes its own
        // reference to the object.
        let status = unsafe { (self.api.string_set)(self.key.as_ptr(), stored.object.as_ptr()) };
        self.warn_unless_ok(status, "StringSet");
        self.set_expiry(expire_at_ms);
        // The value replicated is the very object stored.
        self.replicate_set(Value::Object(stored.object.as_ptr()), expire_at_ms);
        drop(stored);
        self.notify_written(c"set");
    }

    /// Grow the value to `new_len` bytes (zero-filled) if shorter, overwrite
    /// the patches in place, set the absolute expiry, and replicate exactly
    /// that: one `SETRANGE` per patch and a `PEXPIREAT`, or, for a value of
    /// at most `WHOLE_VALUE_MAX` bytes, the whole value as one `SET .. PXAT`.
    /// With `compact`, the value is then reallocated at its exact size (a
    /// string grown in steps keeps spare capacity otherwise).
    fn patch(&mut self, new_len: usize, patches: &Patches, compact: bool, expire_at_ms: c_longlong) {
        if new_len > self.string_len.unwrap_or(0) {
            // SAFETY: the key is open for writing and holds a string or
            // nothing.
            let status = unsafe { (self.api.string_truncate)(self.key.as_ptr(), new_len) };
            self.warn_unless_ok(status, "StringTruncate");
        }
        let Some(value) = self.writable() else {
            self.warn("could not write the value: the request was not recorded");
            return;
        };
        patches.apply(value);
        if compact {
            // A copy at the exact size replaces the value (the expiry it
            // drops is set below).
            let (api, ctx, key) = (self.api, self.ctx, self.key);
            let copy = self
                .writable()
                .and_then(|value| NewValue::new(api, ctx, value, false));
            if let Some(stored) = copy {
                // SAFETY: as in `set`; the server copied the bytes, so
                // replacing the value they came from is safe.
                let status = unsafe { (api.string_set)(key.as_ptr(), stored.object.as_ptr()) };
                self.warn_unless_ok(status, "StringSet");
            }
        }
        self.set_expiry(expire_at_ms);
        // Replicated from the value as it now stands: the whole of a small
        // one, else the patched ranges.
        let (name, ctx, api) = (self.name, self.ctx, self.api);
        let Some(value) = self.writable() else {
            return;
        };
        // Whole only where `SET` takes `PXAT`: on Redis 6.0 the whole value
        // would take a `SET` and a `PEXPIREAT`, longer than the patches.
        if SET_PXAT.load(Ordering::Relaxed) && Write::replicated_whole(value.len()) {
            let mut whole = [0u8; crate::store::WHOLE_VALUE_MAX];
            let whole = &mut whole[..value.len()];
            whole.copy_from_slice(value);
            self.replicate_set(Value::Bytes(whole), expire_at_ms);
            self.notify_written(c"set");
            return;
        }
        let mut status = OK;
        for range in patches.ranges() {
            let offset = c_longlong::try_from(range.start).unwrap_or(c_longlong::MAX);
            let Some(bytes) = value.get(range) else {
                continue;
            };
            // SAFETY: ctx and name are live; the format matches the
            // arguments (`s` a string object, `l` a long long, `b` a pointer
            // and a length); the server copies the bytes before the value
            // can change.
            let replicated = unsafe {
                (api.replicate)(
                    ctx,
                    c"SETRANGE".as_ptr(),
                    c"slb".as_ptr(),
                    name,
                    offset,
                    bytes.as_ptr().cast::<c_char>(),
                    bytes.len(),
                )
            };
            if replicated != OK {
                status = replicated;
            }
        }
        self.warn_unless_ok(status, "Replicate SETRANGE");
        self.replicate_pexpireat(expire_at_ms);
        self.notify_written(c"setrange");
    }

    /// Remove the key, replicated as `DEL`.
    fn delete(&mut self) {
        // SAFETY: the key is open for writing.
        let status = unsafe { (self.api.delete_key)(self.key.as_ptr()) };
        self.warn_unless_ok(status, "DeleteKey");
        self.string_len = None;
        // SAFETY: ctx and name are live; `s` is a string object.
        let status = unsafe { (self.api.replicate)(self.ctx, c"DEL".as_ptr(), c"s".as_ptr(), self.name) };
        self.warn_unless_ok(status, "Replicate DEL");
        self.notify(&[(raw::REDISMODULE_NOTIFY_GENERIC, c"del")]);
    }

    /// The value's bytes, writable in place (unshared by the server first);
    /// `None` if the server gives none.
    fn writable(&mut self) -> Option<&mut [u8]> {
        let mut len = 0usize;
        let mode = (raw::REDISMODULE_READ | raw::REDISMODULE_WRITE) as c_int;
        // SAFETY: the key is open for writing and holds a string; DMA in
        // write mode returns `len` writable bytes, valid until the next
        // operation on the key, which the borrow of `self` prevents.
        unsafe {
            let ptr = (self.api.string_dma)(self.key.as_ptr(), &mut len, mode);
            if ptr.is_null() {
                None
            } else if len == 0 {
                Some(&mut [])
            } else {
                Some(std::slice::from_raw_parts_mut(ptr.cast::<u8>(), len))
            }
        }
    }

    /// Set the key's absolute expiry (or, on a server without that API, the
    /// equivalent relative one).
    fn set_expiry(&self, expire_at_ms: c_longlong) {
        let Some(set_abs) = self.api.set_abs_expire else {
            self.set_relative_expiry(expire_at_ms);
            return;
        };
        // SAFETY: the key is open for writing and holds a value.
        let status = unsafe { set_abs(self.key.as_ptr(), expire_at_ms) };
        self.warn_unless_ok(status, "SetAbsExpire");
    }

    /// Redis 6.0 sets an expiry only relative to its clock, which
    /// `SetExpire` reads itself: `now + ttl`. The module reads the same clock
    /// (`Milliseconds`) just before and just after: when both read the same
    /// millisecond, so did `SetExpire`, and the key expires at exactly
    /// `expire_at_ms`, the instant its replicas and the AOF get. If the
    /// millisecond turned meanwhile, it is set again (a few tries: each
    /// takes well under a microsecond).
    fn set_relative_expiry(&self, expire_at_ms: c_longlong) {
        let mut status = OK;
        for _ in 0..4 {
            // SAFETY: a plain read of the server's clock; the key is open
            // for writing and holds a value.
            let (before, after) = unsafe {
                let before = (self.api.milliseconds)();
                status = (self.api.set_expire)(self.key.as_ptr(), expire_at_ms.saturating_sub(before).max(1));
                (before, (self.api.milliseconds)())
            };
            if before == after {
                break;
            }
        }
        self.warn_unless_ok(status, "SetExpire");
    }

    /// Replicate `SET key value PXAT expire_at_ms`. Every string the server
    /// would otherwise build is passed ready-made where one exists: the key
    /// (the command's argument), the value when it is the object just
    /// stored, `PXAT` and the expiry (see [`kept`]). On Redis 6.0, whose
    /// `SET` has no `PXAT`, `SET key value` then `PEXPIREAT key
    /// expire_at_ms` (the server wraps a command's effects in one `MULTI`).
    fn replicate_set(&self, value: Value<'_>, expire_at_ms: c_longlong) {
        if !SET_PXAT.load(Ordering::Relaxed) {
            self.replicate_set_then_expire(value, expire_at_ms);
            return;
        }
        let (pxat, expiry) = (kept::pxat(), kept::expiry(expire_at_ms));
        // SAFETY: ctx and name are live; each format matches its arguments
        // (`s` a string object, `b` a pointer and a length, `c` a C string,
        // `l` a long long).
        let status = unsafe {
            match (value, pxat.is_null() || expiry.is_null()) {
                (Value::Object(object), false) => (self.api.replicate)(
                    self.ctx,
                    c"SET".as_ptr(),
                    c"ssss".as_ptr(),
                    self.name,
                    object,
                    pxat,
                    expiry,
                ),
                (Value::Bytes(bytes), false) => (self.api.replicate)(
                    self.ctx,
                    c"SET".as_ptr(),
                    c"sbss".as_ptr(),
                    self.name,
                    bytes.as_ptr().cast::<c_char>(),
                    bytes.len(),
                    pxat,
                    expiry,
                ),
                // The kept strings could not be made: the server makes them.
                (Value::Object(object), true) => (self.api.replicate)(
                    self.ctx,
                    c"SET".as_ptr(),
                    c"sscl".as_ptr(),
                    self.name,
                    object,
                    c"PXAT".as_ptr(),
                    expire_at_ms,
                ),
                (Value::Bytes(bytes), true) => (self.api.replicate)(
                    self.ctx,
                    c"SET".as_ptr(),
                    c"sbcl".as_ptr(),
                    self.name,
                    bytes.as_ptr().cast::<c_char>(),
                    bytes.len(),
                    c"PXAT".as_ptr(),
                    expire_at_ms,
                ),
            }
        };
        self.warn_unless_ok(status, "Replicate SET");
    }

    /// `SET key value`, then `PEXPIREAT key expire_at_ms`, for a server
    /// whose `SET` has no `PXAT`.
    fn replicate_set_then_expire(&self, value: Value<'_>, expire_at_ms: c_longlong) {
        // SAFETY: ctx and name are live; each format matches its arguments
        // (`s` a string object, `b` a pointer and a length).
        let status = unsafe {
            match value {
                Value::Object(object) => {
                    (self.api.replicate)(self.ctx, c"SET".as_ptr(), c"ss".as_ptr(), self.name, object)
                }
                Value::Bytes(bytes) => (self.api.replicate)(
                    self.ctx,
                    c"SET".as_ptr(),
                    c"sb".as_ptr(),
                    self.name,
                    bytes.as_ptr().cast::<c_char>(),
                    bytes.len(),
                ),
            }
        };
        self.warn_unless_ok(status, "Replicate SET");
        self.replicate_pexpireat(expire_at_ms);
    }

    /// `PEXPIREAT key expire_at_ms`.
    fn replicate_pexpireat(&self, expire_at_ms: c_longlong) {
        // SAFETY: ctx and name are live; the format matches the arguments
        // (`s` a string object, `l` a long long).
        let status = unsafe {
            (self.api.replicate)(
                self.ctx,
                c"PEXPIREAT".as_ptr(),
                c"sl".as_ptr(),
                self.name,
                expire_at_ms,
            )
        };
        self.warn_unless_ok(status, "Replicate PEXPIREAT");
    }

    /// Emit the keyspace events of the commands a write replicated, as those
    /// commands would: `event` (`set` or `setrange`, class `$`), then
    /// `expire` (class `g`). Only the classes `notify-keyspace-events`
    /// enables are emitted: with notifications off (the default) this costs
    /// one lookup of the setting instead of two calls into the server.
    fn notify_written(&self, event: &CStr) {
        self.notify(&[
            (raw::REDISMODULE_NOTIFY_STRING, event),
            (raw::REDISMODULE_NOTIFY_GENERIC, c"expire"),
        ]);
    }

    /// Emit each event of its class, if `notify-keyspace-events` enables
    /// that class (read once).
    fn notify(&self, events: &[(c_int, &CStr)]) {
        let (Some(enabled), Some(notify)) = (
            self.api.get_notify_keyspace_events,
            self.api.notify_keyspace_event,
        ) else {
            return;
        };
        // SAFETY: a plain read of the server's setting.
        let classes = unsafe { enabled() };
        for &(class, event) in events {
            if classes & class != 0 {
                // SAFETY: ctx and name are live for the running command; the
                // event name is a NUL-terminated literal the server only reads.
                unsafe { notify(self.ctx, class, event.as_ptr(), self.name) };
            }
        }
    }

    /// A step of a write that the server's API documents as unable to fail
    /// once the key is open for writing and holds a string: if one fails
    /// all the same, the rest of the write still happens (no error reply can
    /// follow a partial write), and the server's log says so.
    fn warn_unless_ok(&self, status: c_int, step: &str) {
        if status != OK {
            self.warn(&format!("{step} failed while writing a limiter"));
        }
    }

    fn warn(&self, message: &str) {
        let text = std::ffi::CString::new(format!("ratelimit: {message}")).unwrap_or_default();
        // SAFETY: ctx is live; the format "%s" takes the one C string passed.
        unsafe { (self.api.log)(self.ctx, c"warning".as_ptr(), c"%s".as_ptr(), text.as_ptr()) };
    }
}

impl Drop for ServerKey<'_> {
    fn drop(&mut self) {
        // SAFETY: the key was opened by `ServerKeys::open` and is closed
        // exactly once; ctx and name are the running command's.
        unsafe {
            if let (true, Some(signal)) = (self.changed, self.api.signal_modified_key) {
                signal(self.ctx, self.name);
            }
            (self.api.close_key)(self.key.as_ptr());
        }
    }
}
