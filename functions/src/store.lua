-- Reading a limiter's key (src/store.rs, src/codec/mod.rs).

-- The command whose state `body` holds (for the error of another command
-- on its key).
local function holder_of(body)
  local tag = byte(body, 1)
  for i = 1, #STATES do
    local state = STATES[i]
    if tag and state.tags[tag] then
      local st, problem = state.decode(body)
      if st or not problem then return state.name end
    end
  end
  if tag == 81 then
    local view, problem = lease_view(body)
    if view or not problem then return 'rl.concurrency' end
  end
  return nil
end

local function state_error(key, command, problem, body)
  local holder = body and holder_of(body)
  if holder and holder ~= command then
    fail(fmt('ERR key \'%s\' holds an %s state, not an %s one (use another key, or DEL it to start over)',
      printable(key), upper(holder), upper(command)))
  end
  fail(fmt('ERR key \'%s\' does not hold a valid %s state: %s', printable(key), upper(command), problem))
end

local function beyond_state(key, command)
  beyond(fmt('key \'%s\' holds an %s state', printable(key), upper(command)))
end

-- The key's value (nil: none); the standard error for another type.
local function read(key)
  local v = pcall_r('GET', key)
  if type(v) == 'table' then fail(WRONGTYPE) end
  return v or nil
end

local function clock()
  local t = call('TIME')
  return t[1] * 1000000 + t[2]
end
