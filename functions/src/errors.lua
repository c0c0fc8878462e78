-- Errors, as the module words them (src/error.rs).

-- An error the function answers: raised as a table with its message,
-- which `guard` answers (any other error is an internal one).
local function fail(message)
  error({ message = message }, 0)
end

-- Untrusted bytes for a message: printable ASCII kept, the rest escaped,
-- past 64 bytes shortened.
local function printable(s)
  local out = {}
  local n = min(#s, 64)
  for i = 1, n do
    local b = byte(s, i)
    if b >= 32 and b < 127 and b ~= 39 and b ~= 92 then
      out[i] = char(b)
    else
      out[i] = fmt('\\x%02x', b)
    end
  end
  if #s > 64 then out[#out + 1] = '...' end
  return concat(out)
end

local function words(list, last)
  if #list == 1 then return list[1] end
  return concat(list, ', ', 1, #list - 1) .. ' ' .. last .. ' ' .. list[#list]
end

local function arity_error(command)
  fail('ERR wrong number of arguments for \'' .. command .. '\' command')
end

local function bad_number(name, lo, hi)
  fail(fmt('ERR %s must be an integer from %.0f to %.0f', name, lo, hi))
end

local WRONGTYPE = 'WRONGTYPE Operation against a key holding the wrong kind of value'

-- An instant past the edition's range.
local function beyond(what)
  fail('ERR ' .. what .. ' beyond the functions edition\'s range (instants up to '
    .. fmt('%.0f', RANGE.instant) .. ' microseconds after the epoch, the year 2160)')
end
