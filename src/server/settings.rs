//! The module's settings ([`config::SETTINGS`]) made server settings:
//! `ratelimit.<name>` in `CONFIG GET/SET` and the configuration file,
//! through the module configuration API (Redis 7.0+, Valkey). A server
//! without that API (Redis 6.x) gets them from the `loadmodule` arguments
//! alone, fixed until the module is loaded again.

use crate::config::{self, Setting, Values, SETTINGS};
use redis_module::raw;
use std::ffi::{c_void, CString};
use std::os::raw::{c_char, c_int, c_longlong, c_uint};
use std::panic::catch_unwind;

const OK: c_int = raw::REDISMODULE_OK as c_int;
const ERR: c_int = raw::REDISMODULE_ERR as c_int;

/// The setting a callback's private data points to.
///
/// # Safety
/// `privdata` is null or what [`register`] passed: a pointer to an element
/// of the static [`SETTINGS`].
unsafe fn setting<'a>(privdata: *mut c_void) -> Option<&'a Setting> {
    // SAFETY: the caller's contract; a static outlives every call.
    unsafe { privdata.cast::<Setting>().cast_const().as_ref() }
}

extern "C" fn get_number(_name: *const c_char, privdata: *mut c_void) -> c_longlong {
    // SAFETY: the server passes back the private data registered with it.
    catch_unwind(|| unsafe { setting(privdata) }.map_or(0, Setting::get)).unwrap_or(0)
}

extern "C" fn set_number(
    _name: *const c_char,
    value: c_longlong,
    privdata: *mut c_void,
    _err: *mut *mut raw::RedisModuleString,
) -> c_int {
    // SAFETY: as in `get_number`. The server has checked the range.
    catch_unwind(|| match unsafe { setting(privdata) } {
        Some(setting) => {
            setting.set(value);
            OK
        }
        None => ERR,
    })
    .unwrap_or(ERR)
}

extern "C" fn get_switch(_name: *const c_char, privdata: *mut c_void) -> c_int {
    // SAFETY: as in `get_number`.
    catch_unwind(|| unsafe { setting(privdata) }.map_or(0, |s| c_int::from(s.get() != 0))).unwrap_or(0)
}

extern "C" fn set_switch(
    _name: *const c_char,
    value: c_int,
    privdata: *mut c_void,
    _err: *mut *mut raw::RedisModuleString,
) -> c_int {
    // SAFETY: as in `get_number`.
    catch_unwind(|| match unsafe { setting(privdata) } {
        Some(setting) => {
            setting.set(i64::from(value != 0));
            OK
        }
        None => ERR,
    })
    .unwrap_or(ERR)
}

/// How the settings were made.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Registered {
    /// Server settings: `CONFIG GET/SET ratelimit.<name>`.
    ServerSettings,
    /// Set from the `loadmodule` arguments only (no configuration API).
    ModuleArguments,
}

/// Make the settings, starting from `initial` (the `loadmodule` arguments,
/// else the defaults: [`config::initial`]). With the configuration API the
/// server then applies a `ratelimit.*` line of its configuration file over
/// them. `Err` says what the server refused.
pub fn register(ctx: *mut raw::RedisModuleCtx, initial: [i64; SETTINGS.len()]) -> Result<Registered, String> {
    // SAFETY: RedisModule_Init filled the table before OnLoad; reading it
    // copies function pointers.
    let api = unsafe {
        (
            raw::RedisModule_RegisterNumericConfig,
            raw::RedisModule_RegisterBoolConfig,
            raw::RedisModule_LoadConfigs,
        )
    };
    let (Some(numeric), Some(boolean), Some(load)) = api else {
        for (setting, value) in SETTINGS.iter().zip(initial) {
            setting.set(value);
        }
        config::set_settable_at_run_time(false);
        return Ok(Registered::ModuleArguments);
    };
    for (setting, value) in SETTINGS.iter().zip(initial) {
        let name = CString::new(setting.name).map_err(|_| format!("bad setting name {}", setting.name))?;
        let flags: c_uint = if setting.at_load_only {
            raw::REDISMODULE_CONFIG_IMMUTABLE
        } else {
            raw::REDISMODULE_CONFIG_DEFAULT
        };
        let privdata = std::ptr::from_ref(setting).cast_mut().cast::<c_void>();
        // SAFETY: OnLoad's context; the server copies the name; the private
        // data is a static, and the callbacks match the API's types.
        let status = unsafe {
            match setting.values {
                Values::UpTo(max) => numeric(
                    ctx,
                    name.as_ptr(),
                    value,
                    flags,
                    1,
                    max,
                    Some(get_number),
                    Some(set_number),
                    None,
                    privdata,
                ),
                Values::YesNo => boolean(
                    ctx,
                    name.as_ptr(),
                    c_int::from(value != 0),
                    flags,
                    Some(get_switch),
                    Some(set_switch),
                    None,
                    privdata,
                ),
            }
        };
        if status != OK {
            return Err(format!(
                "the server refused the setting ratelimit.{} (is another module using that name?)",
                setting.name
            ));
        }
    }
    // SAFETY: OnLoad's context, once every setting is registered.
    if unsafe { load(ctx) } != OK {
        return Err(
            "the server refused a ratelimit.* value of its configuration (its log says which)".to_string(),
        );
    }
    config::set_settable_at_run_time(true);
    Ok(Registered::ServerSettings)
}
