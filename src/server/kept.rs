//! String objects the module keeps between commands, so that a replicated
//! `SET key value PXAT ms` does not make them again on every call:
//! - `PXAT`, made when the module loads;
//! - the expiry of the last write. Every key of a fixed window expires at
//!   the same millisecond, and so do the GCRA and token-bucket keys written
//!   within one millisecond: under load most writes reuse it.
//!
//! And one string the keyspace itself may share: the value of the last new
//! key ([`value`]). New fixed-window and sliding-counter limiters of one
//! window all start from the same state; like Redis's shared integers, they
//! may hold one object (the server copies a shared value before any write to
//! it, so a key's change never shows in another), and like them only while
//! `maxmemory` does not evict keys.
//!
//! Commands run on the server's main thread, one at a time; the atomics only
//! make the statics shareable, they are never contended. But a database
//! freed in the background (`FLUSHALL ASYNC`, a replica discarding its old
//! data after a full sync) drops its keys' references from another thread,
//! and a reference count is not atomic: the module must then never touch
//! the objects those keys hold again. The server says when such a flush
//! starts, before it hands the data over: the module releases its own
//! references then, on the main thread, and the next new keys share new
//! objects. It shares nothing while a replica loads a full sync in the
//! background (the data it serves meanwhile is freed in the background
//! afterwards).

use crate::decimal;
use redis_module::raw;
use std::ffi::c_void;
use std::os::raw::{c_char, c_int, c_longlong};
use std::ptr::{null_mut, NonNull};
use std::sync::atomic::{AtomicBool, AtomicPtr, AtomicU64, AtomicUsize, Ordering};

static PXAT: AtomicPtr<raw::RedisModuleString> = AtomicPtr::new(null_mut());
/// The expiries of the last writes; their identity is the instant.
static EXPIRY: Cache<1> = Cache::new();
/// The values of the last new keys; their identity is their length and
/// their bytes as words.
static VALUE: Cache<{ 1 + WORDS }> = Cache::new();
static SHARING: AtomicBool = AtomicBool::new(true);
/// A full sync loading in the background: the data served meanwhile is
/// discarded in the background when it ends. (Also set for good on a server
/// that cannot say when data is freed in the background.)
static ASYNC_LOADING: AtomicBool = AtomicBool::new(false);

/// A string object the module keeps, and the identity of its content: `N`
/// words that differ whenever the content does.
struct Kept<const N: usize> {
    object: AtomicPtr<raw::RedisModuleString>,
    id: [AtomicU64; N],
}

impl<const N: usize> Kept<N> {
    const fn new() -> Self {
        Kept {
            object: AtomicPtr::new(null_mut()),
            id: [const { AtomicU64::new(0) }; N],
        }
    }

    /// The kept object if its identity is `id`.
    fn hit(&self, id: &[u64; N]) -> Option<*mut raw::RedisModuleString> {
        let kept = self.object.load(Ordering::Relaxed);
        let same = self
            .id
            .iter()
            .zip(id)
            .all(|(w, v)| w.load(Ordering::Relaxed) == *v);
        (!kept.is_null() && same).then_some(kept)
    }

    /// The kept object when its identity is `id`; else the one `make`
    /// creates, which is kept instead (null if it could not be made).
    fn get(
        &self,
        id: [u64; N],
        make: impl FnOnce() -> *mut raw::RedisModuleString,
    ) -> *mut raw::RedisModuleString {
        if let Some(kept) = self.hit(&id) {
            return kept;
        }
        let fresh = make();
        if !fresh.is_null() {
            release(self.object.swap(fresh, Ordering::Relaxed));
            for (w, v) in self.id.iter().zip(id) {
                w.store(v, Ordering::Relaxed);
            }
        }
        fresh
    }

    /// Release the kept object.
    fn clear(&self) {
        release(self.object.swap(null_mut(), Ordering::Relaxed));
    }
}

/// A few kept objects: a command over several limits writes several keys, each with
/// its own expiry (and first state), and each finds its own here.
struct Cache<const N: usize> {
    slots: [Kept<N>; CACHE_SLOTS],
    /// The slot a miss replaces next (round robin).
    next: AtomicUsize,
}

const CACHE_SLOTS: usize = 4;

impl<const N: usize> Cache<N> {
    const fn new() -> Self {
        Cache {
            slots: [const { Kept::new() }; CACHE_SLOTS],
            next: AtomicUsize::new(0),
        }
    }

    /// The kept object of identity `id`, else the one `make` creates, which
    /// replaces the oldest.
    fn get(
        &self,
        id: [u64; N],
        make: impl FnOnce() -> *mut raw::RedisModuleString,
    ) -> *mut raw::RedisModuleString {
        if let Some(kept) = self.slots.iter().find_map(|slot| slot.hit(&id)) {
            return kept;
        }
        let victim = self.next.fetch_add(1, Ordering::Relaxed) % CACHE_SLOTS;
        self.slots[victim].get(id, make)
    }

    fn clear(&self) {
        for slot in &self.slots {
            slot.clear();
        }
    }
}

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
    EXPIRY.clear();
    VALUE.clear();
}

pub fn pxat() -> *mut raw::RedisModuleString {
    PXAT.load(Ordering::Relaxed)
}

/// `expire_at_ms` in decimal, as a string object: the kept one when it is
/// the same instant, else a new one that is kept instead.
pub fn expiry(expire_at_ms: c_longlong) -> *mut raw::RedisModuleString {
    let at = expire_at_ms.max(0).unsigned_abs();
    EXPIRY.get([at], || {
        let mut digits = decimal::Digits::default();
        create(decimal::format_u64(at, &mut digits))
    })
}

/// A string object holding `bytes` for a new key's value, which other keys
/// may hold too: the kept one when it holds the same bytes, else a new one
/// kept instead. New limiters of one window start from the same state, so
/// under load most new keys of a window share one object rather than each
/// allocating its own. `None` when sharing is off (see [`set_sharing`]) or
/// for a value longer than [`SHARED_MAX`].
pub fn value(bytes: &[u8]) -> Option<NonNull<raw::RedisModuleString>> {
    if !SHARING.load(Ordering::Relaxed) || ASYNC_LOADING.load(Ordering::Relaxed) {
        return None;
    }
    NonNull::new(VALUE.get(identity(bytes)?, || create(bytes)))
}

/// The kept value's size in words: every fixed-size state fits.
const WORDS: usize = 3;
/// The longest value [`value`] shares.
const SHARED_MAX: usize = 8 * WORDS;

/// The kept value's identity: the length of `bytes`, then `bytes` as
/// little-endian words, zero-padded. `None` beyond [`SHARED_MAX`].
fn identity(bytes: &[u8]) -> Option<[u64; 1 + WORDS]> {
    if bytes.len() > SHARED_MAX {
        return None;
    }
    let mut padded = [0u8; SHARED_MAX];
    padded[..bytes.len()].copy_from_slice(bytes);
    let mut id = [0u64; 1 + WORDS];
    id[0] = bytes.len() as u64;
    for (word, chunk) in id[1..].iter_mut().zip(padded.chunks_exact(8)) {
        let mut le = [0u8; 8];
        le.copy_from_slice(chunk);
        *word = u64::from_le_bytes(le);
    }
    Some(id)
}

/// Whether new keys may share value objects.
fn set_sharing(on: bool) {
    SHARING.store(on, Ordering::Relaxed);
    if !on {
        VALUE.clear();
    }
}

/// Apply Redis's own rule for its shared integers: no shared values while
/// `maxmemory` evicts keys, since a shared object has one access clock for
/// all the keys that hold it and eviction by LRU or LFU needs one per key.
/// (Redis rules out LRU and LFU; any evicting policy turns sharing off here.)
/// Without eviction, the cost is the same as Redis's shared integers: `OBJECT
/// IDLETIME` and `OBJECT FREQ` of a key report its object's clock.
fn apply_server_settings(ctx: *mut raw::RedisModuleCtx) {
    // SAFETY: `ctx` is the context the server passed to OnLoad or to an
    // event callback.
    let flags = unsafe { raw::RedisModule_GetContextFlags.map_or(0, |get| get(ctx)) };
    let evicting = flags & raw::REDISMODULE_CTX_FLAGS_MAXMEMORY as c_int != 0
        && flags & raw::REDISMODULE_CTX_FLAGS_EVICT as c_int != 0;
    set_sharing(!evicting);
}

extern "C" fn settings_changed(
    ctx: *mut raw::RedisModuleCtx,
    _event: raw::RedisModuleEvent,
    _subevent: u64,
    _data: *mut c_void,
) {
    let _ = std::panic::catch_unwind(|| apply_server_settings(ctx));
}

/// A database about to be freed in the background, or a full sync starting
/// to load in the background: the kept values may be in the data another
/// thread frees, so the module lets go of them now, while that data is still
/// the main thread's (see the module documentation above).
extern "C" fn data_discarded(
    _ctx: *mut raw::RedisModuleCtx,
    event: raw::RedisModuleEvent,
    subevent: u64,
    data: *mut c_void,
) {
    let _ = std::panic::catch_unwind(|| match event.id {
        raw::REDISMODULE_EVENT_FLUSHDB if subevent == raw::REDISMODULE_SUBEVENT_FLUSHDB_START => {
            // SAFETY: the server passes a RedisModuleFlushInfo with this
            // event, valid for the callback.
            let sync =
                unsafe { data.cast::<raw::RedisModuleFlushInfo>().as_ref() }.is_none_or(|f| f.sync != 0);
            if !sync {
                VALUE.clear();
            }
        }
        raw::REDISMODULE_EVENT_REPL_ASYNC_LOAD => {
            let loading = subevent == raw::REDISMODULE_SUBEVENT_REPL_ASYNC_LOAD_STARTED;
            if loading {
                VALUE.clear();
            }
            ASYNC_LOADING.store(loading, Ordering::Relaxed);
        }
        _ => {}
    });
}

/// Decide sharing from the server's settings now, and again whenever a
/// `CONFIG SET` changes them or the server changes role (a replica ignores
/// `maxmemory` by default; promoted, it applies it). Called from OnLoad.
/// A server without one of these events (Redis 6.x has neither the CONFIG
/// nor the REPL_ASYNC_LOAD event) still serves every command: new keys then
/// share no value at all, and the sentence returned says so for the log.
pub fn follow_server_settings(ctx: *mut raw::RedisModuleCtx) -> Option<String> {
    apply_server_settings(ctx);
    type Callback = extern "C" fn(*mut raw::RedisModuleCtx, raw::RedisModuleEvent, u64, *mut c_void);
    let events: [(u64, &str, Callback); 4] = [
        (raw::REDISMODULE_EVENT_CONFIG, "CONFIG", settings_changed),
        (
            raw::REDISMODULE_EVENT_REPLICATION_ROLE_CHANGED,
            "REPLICATION_ROLE_CHANGED",
            settings_changed,
        ),
        (raw::REDISMODULE_EVENT_FLUSHDB, "FLUSHDB", data_discarded),
        (
            raw::REDISMODULE_EVENT_REPL_ASYNC_LOAD,
            "REPL_ASYNC_LOAD",
            data_discarded,
        ),
    ];
    let subscribe = |id: u64, callback: Callback| {
        // SAFETY: OnLoad's context; the callbacks live as long as the
        // module. A server without the event answers an error.
        unsafe {
            raw::RedisModule_SubscribeToServerEvent.is_some_and(|subscribe| {
                subscribe(ctx, raw::RedisModuleEvent { id, dataver: 1 }, Some(callback))
                    == raw::REDISMODULE_OK as c_int
            })
        }
    };
    let missing: Vec<&str> = events
        .iter()
        .filter(|&&(id, _, callback)| !subscribe(id, callback))
        .map(|&(_, name, _)| name)
        .collect();
    if missing.is_empty() {
        return None;
    }
    // Without every event, the module could miss a change that makes a
    // shared value unsafe (data freed in the background) or wrong (an
    // eviction policy set later): it shares none.
    ASYNC_LOADING.store(true, Ordering::Relaxed);
    VALUE.clear();
    Some(format!(
        "ratelimit: this server has no {} event{}: new limiters keep a value each rather than share their first state (commands are not affected)",
        missing.join(", "),
        if missing.len() == 1 { "" } else { "s" }
    ))
}
