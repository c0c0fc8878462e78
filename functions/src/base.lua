-- How a function's failures are worded: its one pass is called with pcall
-- and `failure`, its general path with `guard`. (A script reaches this part
-- only in a call its one pass did not answer: see `plain`.)

-- A failure as the module words it: a refusal (raised by `fail`, a table
-- with its message) as its message, a server's error reply as it is, and
-- any other failure as an error that shows no script location.
local function failure(result)
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

-- body(...)'s reply, or its failure worded.
local function guard(body, ...)
  local ok, result = pcall(body, ...)
  if ok then return result end
  return failure(result)
end
