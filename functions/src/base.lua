-- What every function runs on. A script runs its whole text each call, and
-- each top-level function and each upvalue it takes costs an allocation:
-- the one-pass parts look the standard library up where they use it.

-- The general path: every option, every form of state, every error (the
-- parts from `general` to `general_end`), built on the first call that
-- needs it.
local general

-- Every function runs behind this: a refusal answered as the module words
-- it (raised by `fail`, a table with its message), and any other failure
-- as an error that shows no script location.
local function guard(body, ...)
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
