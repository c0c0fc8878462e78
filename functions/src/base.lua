-- What every function runs on: the standard library of the one-pass calls,
-- bound on the first call, and the guard around each call.
--
-- On Redis 7.0 a library's top level runs without the standard libraries
-- (FUNCTION LOAD), so they are bound when a function is first called. A
-- script runs its whole text on each call, where each name bound here
-- costs it an upvalue: only what the one-pass calls use on every call is
-- bound here (the general path binds its own names, see `general`).
local call, pcall_r, pack, unpack, fmt, pxat
local function bind()
  call, pcall_r = redis.call, redis.pcall
  pack, unpack, fmt = struct.pack, struct.unpack, string.format
  -- SET .. PXAT, which Redis 6.0 lacks. A server that does not say its
  -- version to scripts (before 7.0: the scripts on Redis 6.x) is written
  -- SET then PEXPIREAT, as the module writes there.
  pxat = redis.REDIS_VERSION_NUM ~= nil
end

-- The general path: every option, every form of state, every error (the
-- parts from `general` to `general_end`), built on the first call that
-- needs it.
local general

-- Every function runs behind this: the libraries bound on first use, a
-- refusal answered as the module words it (raised by `fail`, a table with
-- its message), and any other failure as an error that shows no script
-- location.
local function guard(body, ...)
  if not call then bind() end
  local ok, result = pcall(body, ...)
  if ok then return result end
  if type(result) == 'table' then
    if result.message then return redis.error_reply(result.message) end
    if result.err then return result end
  end
  -- A server's refusal of a write (out of memory, a read-only replica),
  -- raised as text by scripts on older servers: its own words.
  if type(result) == 'string' then
    local refusal = result:match('OOM command not allowed.*') or result:match('READONLY .*')
    if refusal then return redis.error_reply((refusal:gsub('%s*script: .*$', ''))) end
  end
  return redis.error_reply('ERR internal error in the ratelimit library (the request was not applied)')
end
