//! The server's module API functions a command calls, looked up once when
//! the module loads. Those every supported server has are plain function
//! pointers; those only newer servers have stay `Option`s, each with a
//! fallback where it is used.

use redis_module::raw;
use std::os::raw::{c_char, c_int, c_long, c_longlong};
use std::sync::OnceLock;

type Ctx = *mut raw::RedisModuleCtx;
type Str = *mut raw::RedisModuleString;
type KeyPtr = *mut raw::RedisModuleKey;

pub struct Api {
    pub open_key: unsafe extern "C" fn(Ctx, Str, c_int) -> KeyPtr,
    pub close_key: unsafe extern "C" fn(KeyPtr),
    pub key_type: unsafe extern "C" fn(KeyPtr) -> c_int,
    pub string_dma: unsafe extern "C" fn(KeyPtr, *mut usize, c_int) -> *mut c_char,
    pub string_set: unsafe extern "C" fn(KeyPtr, Str) -> c_int,
    pub string_truncate: unsafe extern "C" fn(KeyPtr, usize) -> c_int,
    pub delete_key: unsafe extern "C" fn(KeyPtr) -> c_int,
    pub set_expire: unsafe extern "C" fn(KeyPtr, c_longlong) -> c_int,
    pub create_string: unsafe extern "C" fn(Ctx, *const c_char, usize) -> Str,
    pub free_string: unsafe extern "C" fn(Ctx, Str),
    pub string_ptr_len: unsafe extern "C" fn(*const raw::RedisModuleString, *mut usize) -> *const c_char,
    pub replicate: unsafe extern "C" fn(Ctx, *const c_char, *const c_char, ...) -> c_int,
    pub reply_with_array: unsafe extern "C" fn(Ctx, c_long) -> c_int,
    pub reply_with_long_long: unsafe extern "C" fn(Ctx, c_longlong) -> c_int,
    pub reply_with_error: unsafe extern "C" fn(Ctx, *const c_char) -> c_int,
    pub reply_with_string_buffer: unsafe extern "C" fn(Ctx, *const c_char, usize) -> c_int,
    pub reply_with_null: unsafe extern "C" fn(Ctx) -> c_int,
    pub get_expire: unsafe extern "C" fn(KeyPtr) -> c_longlong,
    pub log: unsafe extern "C" fn(Ctx, *const c_char, *const c_char, ...),
    /// The server's clock in milliseconds, as its relative expiries read it.
    pub milliseconds: unsafe extern "C" fn() -> c_longlong,
    /// Redis 6.2+ and Valkey; without it the expiry is set relative to the
    /// server's clock.
    pub set_abs_expire: Option<unsafe extern "C" fn(KeyPtr, c_longlong) -> c_int>,
    pub signal_modified_key: Option<unsafe extern "C" fn(Ctx, Str) -> c_int>,
    pub notify_keyspace_event: Option<unsafe extern "C" fn(Ctx, c_int, *const c_char, Str) -> c_int>,
    pub get_notify_keyspace_events: Option<unsafe extern "C" fn() -> c_int>,
    /// Redis 7.2+ and Valkey: one instant per command, script or transaction.
    pub cached_microseconds: Option<unsafe extern "C" fn() -> c_longlong>,
    pub microseconds: Option<unsafe extern "C" fn() -> c_longlong>,
    /// For the commands whose keys the server asks the module for.
    pub is_keys_position_request: Option<unsafe extern "C" fn(Ctx) -> c_int>,
    pub key_at_pos: Option<unsafe extern "C" fn(Ctx, c_int)>,
    /// RESP3 maps (Redis 7.0+): without it a map is answered as a flat array.
    pub reply_with_map: Option<unsafe extern "C" fn(Ctx, c_long) -> c_int>,
}

static API: OnceLock<Api> = OnceLock::new();

impl Api {
    /// The table, once [`Api::load`] has filled it.
    #[inline(always)]
    pub fn get() -> Option<&'static Api> {
        API.get()
    }

    /// Look the functions up. Called from OnLoad, after `RedisModule_Init`
    /// filled the server's table; `Err` names a required function the server
    /// lacks.
    pub fn load() -> Result<(), &'static str> {
        // SAFETY: RedisModule_Init has filled these statics before OnLoad
        // runs anything else, and nothing writes them afterwards; reading
        // them copies plain function pointers.
        let api = unsafe {
            Api {
                open_key: raw::RedisModule_OpenKey.ok_or("RedisModule_OpenKey")?,
                close_key: raw::RedisModule_CloseKey.ok_or("RedisModule_CloseKey")?,
                key_type: raw::RedisModule_KeyType.ok_or("RedisModule_KeyType")?,
                string_dma: raw::RedisModule_StringDMA.ok_or("RedisModule_StringDMA")?,
                string_set: raw::RedisModule_StringSet.ok_or("RedisModule_StringSet")?,
                string_truncate: raw::RedisModule_StringTruncate.ok_or("RedisModule_StringTruncate")?,
                delete_key: raw::RedisModule_DeleteKey.ok_or("RedisModule_DeleteKey")?,
                set_expire: raw::RedisModule_SetExpire.ok_or("RedisModule_SetExpire")?,
                create_string: raw::RedisModule_CreateString.ok_or("RedisModule_CreateString")?,
                free_string: raw::RedisModule_FreeString.ok_or("RedisModule_FreeString")?,
                string_ptr_len: raw::RedisModule_StringPtrLen.ok_or("RedisModule_StringPtrLen")?,
                replicate: raw::RedisModule_Replicate.ok_or("RedisModule_Replicate")?,
                reply_with_array: raw::RedisModule_ReplyWithArray.ok_or("RedisModule_ReplyWithArray")?,
                reply_with_long_long: raw::RedisModule_ReplyWithLongLong
                    .ok_or("RedisModule_ReplyWithLongLong")?,
                reply_with_error: raw::RedisModule_ReplyWithError.ok_or("RedisModule_ReplyWithError")?,
                reply_with_string_buffer: raw::RedisModule_ReplyWithStringBuffer
                    .ok_or("RedisModule_ReplyWithStringBuffer")?,
                reply_with_null: raw::RedisModule_ReplyWithNull.ok_or("RedisModule_ReplyWithNull")?,
                get_expire: raw::RedisModule_GetExpire.ok_or("RedisModule_GetExpire")?,
                log: raw::RedisModule_Log.ok_or("RedisModule_Log")?,
                milliseconds: raw::RedisModule_Milliseconds.ok_or("RedisModule_Milliseconds")?,
                set_abs_expire: raw::RedisModule_SetAbsExpire,
                signal_modified_key: raw::RedisModule_SignalModifiedKey,
                notify_keyspace_event: raw::RedisModule_NotifyKeyspaceEvent,
                get_notify_keyspace_events: raw::RedisModule_GetNotifyKeyspaceEvents,
                cached_microseconds: raw::RedisModule_CachedMicroseconds,
                microseconds: raw::RedisModule_Microseconds,
                is_keys_position_request: raw::RedisModule_IsKeysPositionRequest,
                key_at_pos: raw::RedisModule_KeyAtPos,
                reply_with_map: raw::RedisModule_ReplyWithMap,
            }
        };
        // A reload of the module in the same process finds the table set.
        let _ = API.set(api);
        Ok(())
    }
}
