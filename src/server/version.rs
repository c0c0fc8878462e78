//! Which server loaded the module, read once when it loads: what it is and
//! its version decide which module options it understands, how a write's
//! expiry replicates, and whether the module serves it at all.

use redis_module::raw;
use std::ffi::CStr;

/// What the module needs to know of the server.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Server {
    pub valkey: bool,
    pub version: (u32, u32, u32),
}

/// The oldest Redis the module serves (every Valkey does: Valkey began at
/// 7.2).
pub const OLDEST_REDIS: (u32, u32, u32) = (6, 0, 0);

impl Server {
    pub fn name(&self) -> String {
        let (a, b, c) = self.version;
        format!("{} {a}.{b}.{c}", if self.valkey { "Valkey" } else { "Redis" })
    }

    /// Whether `SET` takes `PXAT` (Redis 6.2+, Valkey): else a write's
    /// expiry replicates as a `PEXPIREAT` after the `SET`.
    pub fn has_pxat(&self) -> bool {
        self.valkey || self.version >= (6, 2, 0)
    }

    /// Whether a module may ask not to have every key it opens for writing
    /// signalled as modified (`NO_IMPLICIT_SIGNAL_MODIFIED`, Redis 6.2+).
    pub fn has_no_implicit_signal_modified(&self) -> bool {
        self.valkey || self.version >= (6, 2, 0)
    }

    /// Whether a replica may load a full sync in the background while it
    /// serves the old data (`HANDLE_REPL_ASYNC_LOAD`, Redis 7.0+).
    pub fn has_repl_async_load(&self) -> bool {
        self.valkey || self.version >= (7, 0, 0)
    }
}

/// Why the module does not load into this server, if it does not: a
/// sentence for the server's log that names what is needed. `server` is
/// `None` when the server could not say what it is; `has_server_info`
/// whether it has `RedisModule_GetServerInfo`, which every server the
/// module serves has (Redis 6.0+).
pub fn refusal(server: Option<Server>, has_server_info: bool) -> Option<String> {
    let needed = "the module needs Redis 6.0 or newer, or Valkey";
    match server {
        Some(s) if !s.valkey && s.version < OLDEST_REDIS => Some(format!(
            "ratelimit: {} is too old: {needed}; the module is not loaded",
            s.name()
        )),
        Some(_) => None,
        None if !has_server_info => Some(format!(
            "ratelimit: this server is older than Redis 6.0 (it has no RedisModule_GetServerInfo): {needed}; the module is not loaded"
        )),
        // A server as new as 6.0 that does not say its version: served,
        // with the choices a version decides made for the oldest.
        None => None,
    }
}

/// `major.minor.patch` (missing or unreadable parts 0); `None` if there is
/// no major number.
pub fn parse_version(text: &str) -> Option<(u32, u32, u32)> {
    let mut parts = text.trim().split('.');
    let major = parts.next()?.parse().ok()?;
    let mut next = || parts.next().and_then(|p| p.parse().ok()).unwrap_or(0);
    Some((major, next(), next()))
}

/// The server from `INFO server`'s fields: Valkey says so (`server_name`,
/// `valkey_version`; its `redis_version` is a fixed 7.2.4 for clients that
/// check it); Redis by `redis_version`, or `packed` when it has
/// `GetServerVersion` (`0x00MMmmpp`).
fn from_fields(fields: &InfoFields, packed: Option<i32>) -> Option<Server> {
    if fields.server_name.as_deref() == Some("valkey") {
        let version = parse_version(fields.valkey_version.as_deref()?)?;
        return Some(Server {
            valkey: true,
            version,
        });
    }
    let version = match packed {
        Some(v) if v > 0 => {
            let byte = |shift: u32| ((v >> shift) & 0xff) as u32;
            (byte(16), byte(8), byte(0))
        }
        _ => parse_version(fields.redis_version.as_deref()?)?,
    };
    Some(Server {
        valkey: false,
        version,
    })
}

/// `server_name`, `valkey_version` and `redis_version` of `INFO server`.
#[derive(Debug, Default)]
struct InfoFields {
    server_name: Option<String>,
    valkey_version: Option<String>,
    redis_version: Option<String>,
}

impl InfoFields {
    /// The fields from the text of `INFO server` (`name:value` lines).
    #[cfg(test)]
    fn from_text(text: &str) -> InfoFields {
        let field = |name: &str| {
            text.lines().find_map(|line| {
                line.strip_prefix(name)
                    .and_then(|rest| rest.strip_prefix(':'))
                    .map(|value| value.trim().to_string())
            })
        };
        InfoFields {
            server_name: field("server_name"),
            valkey_version: field("valkey_version"),
            redis_version: field("redis_version"),
        }
    }
}

/// Which server this is, and whether it has `GetServerInfo`: Redis 6.0+ and
/// Valkey do. (An older Redis cannot say its version to a module while it
/// loads: `RedisModule_Call` has no client to run `INFO` then, and Redis 5
/// crashes.)
pub fn identify(ctx: *mut raw::RedisModuleCtx) -> (Option<Server>, bool) {
    // SAFETY: RedisModule_Init filled the table before OnLoad; the function
    // takes no argument and returns an integer.
    let packed = unsafe { raw::RedisModule_GetServerVersion.map(|get| get()) };
    match info_server(ctx) {
        Some(fields) => (from_fields(&fields, packed), true),
        None => (None, false),
    }
}

/// The fields through `GetServerInfo`; `None` without that API (Redis 5
/// and older) or when it answers nothing.
fn info_server(ctx: *mut raw::RedisModuleCtx) -> Option<InfoFields> {
    // SAFETY: RedisModule_Init filled the table before OnLoad and nothing
    // writes it afterwards; reading it copies function pointers.
    let (get, field, free) = unsafe {
        (
            raw::RedisModule_GetServerInfo?,
            raw::RedisModule_ServerInfoGetFieldC?,
            raw::RedisModule_FreeServerInfo?,
        )
    };
    // SAFETY: OnLoad's context and a NUL-terminated section name; the
    // server returns its own copy of the section, freed below.
    let info = unsafe { get(ctx, c"server".as_ptr()) };
    if info.is_null() {
        return None;
    }
    let read = |name: &CStr| {
        // SAFETY: `info` is live until freed below; the field's text, when
        // there is one, is a NUL-terminated string owned by `info`, copied
        // here before it is freed.
        unsafe {
            let text = field(info, name.as_ptr());
            (!text.is_null()).then(|| CStr::from_ptr(text).to_string_lossy().into_owned())
        }
    };
    let fields = InfoFields {
        server_name: read(c"server_name"),
        valkey_version: read(c"valkey_version"),
        redis_version: read(c"redis_version"),
    };
    // SAFETY: `info` came from GetServerInfo on this context and is freed
    // once; nothing read from it is used afterwards.
    unsafe { free(ctx, info) };
    Some(fields)
}

#[cfg(test)]
mod tests {
    use super::*;

    const fn server(valkey: bool, version: (u32, u32, u32)) -> Option<Server> {
        Some(Server { valkey, version })
    }

    #[test]
    fn versions_parse_as_the_servers_write_them() {
        assert_eq!(parse_version("9.1.2"), Some((9, 1, 2)));
        assert_eq!(parse_version("8.1.8\r"), Some((8, 1, 8)));
        assert_eq!(parse_version("255.255.255"), Some((255, 255, 255)));
        assert_eq!(parse_version("9.0"), Some((9, 0, 0)));
        assert_eq!(parse_version("9.0.0-rc1"), Some((9, 0, 0)));
        assert_eq!(parse_version(""), None);
        assert_eq!(parse_version("x.1"), None);
    }

    #[test]
    fn redis_5_and_older_are_refused_with_the_version_needed() {
        for (s, has_info, expected) in [
            (
                server(false, (5, 0, 6)),
                false,
                Some("ratelimit: Redis 5.0.6 is too old: the module needs Redis 6.0 or newer, or Valkey; the module is not loaded"),
            ),
            (
                server(false, (4, 0, 14)),
                false,
                Some("ratelimit: Redis 4.0.14 is too old: the module needs Redis 6.0 or newer, or Valkey; the module is not loaded"),
            ),
            (
                None,
                false,
                Some("ratelimit: this server is older than Redis 6.0 (it has no RedisModule_GetServerInfo): the module needs Redis 6.0 or newer, or Valkey; the module is not loaded"),
            ),
            (server(false, (6, 0, 9)), true, None),
            (server(false, (6, 0, 0)), true, None),
            (server(false, (6, 2, 14)), true, None),
            (server(false, (7, 0, 15)), true, None),
            (server(true, (8, 1, 8)), true, None),
            (None, true, None),
        ] {
            assert_eq!(refusal(s, has_info).as_deref(), expected, "{s:?}");
        }
    }

    #[test]
    fn what_each_version_has() {
        let has = |s: Option<Server>| {
            let s = s.unwrap();
            (
                s.has_pxat(),
                s.has_no_implicit_signal_modified(),
                s.has_repl_async_load(),
            )
        };
        assert_eq!(has(server(false, (6, 0, 9))), (false, false, false));
        assert_eq!(has(server(false, (6, 2, 0))), (true, true, false));
        assert_eq!(has(server(false, (6, 2, 14))), (true, true, false));
        assert_eq!(has(server(false, (7, 0, 15))), (true, true, true));
        assert_eq!(has(server(true, (8, 1, 8))), (true, true, true));
    }

    #[test]
    fn the_server_is_read_from_info_or_its_packed_version() {
        let redis5 = "# Server\r\nredis_version:5.0.6\r\nredis_git_sha1:00000000\r\n";
        assert_eq!(
            from_fields(&InfoFields::from_text(redis5), None),
            server(false, (5, 0, 6))
        );
        let valkey = "# Server\r\nredis_version:7.2.4\r\nserver_name:valkey\r\nvalkey_version:9.1.2\r\n";
        assert_eq!(
            from_fields(&InfoFields::from_text(valkey), Some(0x00_07_02_04)),
            server(true, (9, 1, 2))
        );
        // Redis's packed version wins over the text.
        let redis6 = "redis_version:6.0.9\r\n";
        assert_eq!(
            from_fields(&InfoFields::from_text(redis6), Some(0x00_06_00_09)),
            server(false, (6, 0, 9))
        );
        assert_eq!(
            from_fields(
                &InfoFields::from_text("redis_version:7.0.15"),
                Some(0x00_07_00_0f)
            ),
            server(false, (7, 0, 15))
        );
        // A field whose name only starts like another's is not it.
        assert_eq!(
            from_fields(&InfoFields::from_text("redis_version_extra:1.0.0\r\n"), None),
            None
        );
        assert_eq!(from_fields(&InfoFields::default(), None), None);
    }
}
