//! A reference module for the server benchmark, not part of the product: two
//! commands that make exactly the server calls a limiter command makes on a
//! new key, with no parsing, no decision and no encoding. Their
//! instructions per call are the floor under every `RL.*` command on the
//! same workload; whatever a command executes above it is its own code.
//!
//! - `FLOOR.DIRECT key`: the low-level key API, as `RL.FIXED`,
//!   `RL.TOKEN_BUCKET`, `RL.SLIDING_COUNTER` and `RL.SLIDING_LOG` write:
//!   open the key, store a string (one object kept from load time, as new
//!   window limiters share their first value), set an absolute expiry,
//!   replicate `SET key value PXAT ms` from ready-made objects, reply five
//!   integers, signal and close the key.
//! - `FLOOR.INTEGER key`: the way `RL.GCRA` writes a new key so that Redis
//!   keeps the value in its 16-byte integer encoding: check that the key does
//!   not exist, `SET key <19 digits> PXAT ms` through `RedisModule_Call`
//!   (replicated by the server), reply five integers.
//!
//! Built and loaded by the callgrind mode of the server benchmark
//! (`RL_BENCH_CALLGRIND=1 cargo bench --bench server`).

use redis_module::{raw, redis_module, Context, RedisString, Status};
use std::ffi::CStr;
use std::os::raw::{c_char, c_int};
use std::ptr::null_mut;
use std::sync::atomic::{AtomicPtr, Ordering};

/// A 19-digit value, as a GCRA state has.
const VALUE: &[u8] = b"1763700000000000123";
/// An absolute expiry far in the future (2100-01-01), as the benchmark's
/// `SET .. PXAT` baseline uses: no key expires during a run.
const EXPIRY_MS: i64 = 4_102_444_800_000;

static VALUE_OBJECT: AtomicPtr<raw::RedisModuleString> = AtomicPtr::new(null_mut());
static PXAT_OBJECT: AtomicPtr<raw::RedisModuleString> = AtomicPtr::new(null_mut());
static EXPIRY_OBJECT: AtomicPtr<raw::RedisModuleString> = AtomicPtr::new(null_mut());

const OK: c_int = raw::REDISMODULE_OK as c_int;

/// The five-integer reply every limiter command gives.
unsafe fn reply_five(ctx: *mut raw::RedisModuleCtx) {
    if let (Some(array), Some(integer)) = (
        raw::RedisModule_ReplyWithArray,
        raw::RedisModule_ReplyWithLongLong,
    ) {
        array(ctx, 5);
        for v in [0, 100, 99, -1, 60] {
            integer(ctx, v);
        }
    }
}

unsafe fn reply_error(ctx: *mut raw::RedisModuleCtx, message: &CStr) -> c_int {
    if let Some(reply) = raw::RedisModule_ReplyWithError {
        reply(ctx, message.as_ptr());
    }
    OK
}

extern "C" fn floor_direct(
    ctx: *mut raw::RedisModuleCtx,
    argv: *mut *mut raw::RedisModuleString,
    argc: c_int,
) -> c_int {
    // SAFETY: argv holds argc live arguments of this command; the kept
    // objects live from load to unload; every API is checked before use.
    unsafe {
        let (
            Some(open),
            Some(key_type),
            Some(set),
            Some(set_expire),
            Some(replicate),
            Some(signal),
            Some(close),
        ) = (
            raw::RedisModule_OpenKey,
            raw::RedisModule_KeyType,
            raw::RedisModule_StringSet,
            raw::RedisModule_SetAbsExpire,
            raw::RedisModule_Replicate,
            raw::RedisModule_SignalModifiedKey,
            raw::RedisModule_CloseKey,
        )
        else {
            return reply_error(ctx, c"ERR server lacks a required API");
        };
        if argc != 2 || argv.is_null() {
            return reply_error(ctx, c"ERR wrong number of arguments for 'floor.direct' command");
        }
        let name = *argv.add(1);
        let mode = (raw::REDISMODULE_READ | raw::REDISMODULE_WRITE) as c_int;
        let key = open(ctx, name, mode).cast::<raw::RedisModuleKey>();
        if key.is_null() {
            return reply_error(ctx, c"ERR could not open the key");
        }
        let value = VALUE_OBJECT.load(Ordering::Relaxed);
        let kind = key_type(key) as isize;
        let written = (kind == raw::REDISMODULE_KEYTYPE_EMPTY || kind == raw::REDISMODULE_KEYTYPE_STRING)
            && set(key, value) == OK
            && set_expire(key, EXPIRY_MS) == OK
            && replicate(
                ctx,
                c"SET".as_ptr(),
                c"ssss".as_ptr(),
                name,
                value,
                PXAT_OBJECT.load(Ordering::Relaxed),
                EXPIRY_OBJECT.load(Ordering::Relaxed),
            ) == OK;
        if written {
            reply_five(ctx);
            signal(ctx, name);
        } else {
            reply_error(ctx, c"ERR the write failed");
        }
        close(key);
    }
    OK
}

extern "C" fn floor_integer(
    ctx: *mut raw::RedisModuleCtx,
    argv: *mut *mut raw::RedisModuleString,
    argc: c_int,
) -> c_int {
    // SAFETY: as in `floor_direct`; the call reply is freed once.
    unsafe {
        let (Some(exists), Some(call), Some(proto), Some(free)) = (
            raw::RedisModule_KeyExists,
            raw::RedisModule_Call,
            raw::RedisModule_CallReplyProto,
            raw::RedisModule_FreeCallReply,
        ) else {
            return reply_error(ctx, c"ERR server lacks a required API");
        };
        if argc != 2 || argv.is_null() {
            return reply_error(ctx, c"ERR wrong number of arguments for 'floor.integer' command");
        }
        let name = *argv.add(1);
        // A new key needs no read (RL.GCRA reads an existing one with GET).
        let _is_new = exists(ctx, name) == 0;
        let reply = call(
            ctx,
            c"SET".as_ptr(),
            c"!sbss".as_ptr(),
            name,
            VALUE.as_ptr().cast::<c_char>(),
            VALUE.len(),
            PXAT_OBJECT.load(Ordering::Relaxed),
            EXPIRY_OBJECT.load(Ordering::Relaxed),
        );
        if reply.is_null() {
            return reply_error(ctx, c"ERR the write failed");
        }
        let mut len = 0usize;
        let bytes = proto(reply, &mut len);
        let ok = !bytes.is_null() && len > 0 && *bytes.cast::<u8>() == b'+';
        free(reply);
        if ok {
            reply_five(ctx);
        } else {
            reply_error(ctx, c"ERR the write failed");
        }
    }
    OK
}

type Handler = extern "C" fn(*mut raw::RedisModuleCtx, *mut *mut raw::RedisModuleString, c_int) -> c_int;

fn create_command(ctx: &Context, name: &CStr, handler: Handler) -> bool {
    // SAFETY: OnLoad's context; NUL-terminated literals.
    unsafe {
        raw::RedisModule_CreateCommand.is_some_and(|create| {
            create(
                ctx.ctx,
                name.as_ptr(),
                Some(handler),
                c"write deny-oom fast".as_ptr(),
                1,
                1,
                1,
            ) == OK
        })
    }
}

fn init(ctx: &Context, _args: &[RedisString]) -> Status {
    // SAFETY: OnLoad; the objects are released in `deinit`.
    let made = unsafe {
        raw::RedisModule_CreateString.is_some_and(|create| {
            let make = |bytes: &[u8]| create(null_mut(), bytes.as_ptr().cast::<c_char>(), bytes.len());
            VALUE_OBJECT.store(make(VALUE), Ordering::Relaxed);
            PXAT_OBJECT.store(make(b"PXAT"), Ordering::Relaxed);
            EXPIRY_OBJECT.store(make(EXPIRY_MS.to_string().as_bytes()), Ordering::Relaxed);
            [&VALUE_OBJECT, &PXAT_OBJECT, &EXPIRY_OBJECT]
                .iter()
                .all(|o| !o.load(Ordering::Relaxed).is_null())
        })
    };
    if made
        && create_command(ctx, c"floor.direct", floor_direct)
        && create_command(ctx, c"floor.integer", floor_integer)
    {
        Status::Ok
    } else {
        Status::Err
    }
}

fn deinit(_ctx: &Context) -> Status {
    for object in [&VALUE_OBJECT, &PXAT_OBJECT, &EXPIRY_OBJECT] {
        let o = object.swap(null_mut(), Ordering::Relaxed);
        // SAFETY: the module's own reference, released once.
        unsafe {
            if let (false, Some(free)) = (o.is_null(), raw::RedisModule_FreeString) {
                free(null_mut(), o);
            }
        }
    }
    Status::Ok
}

redis_module! {
    name: "rlfloor",
    version: 1,
    allocator: (redis_module::alloc::RedisAlloc, redis_module::alloc::RedisAlloc),
    data_types: [],
    init: init,
    deinit: deinit,
    commands: [],
}
