-- Not a limiter: the least Lua that decides n fixed windows all or nothing,
-- as a bound for the functions edition's rl_all (docs/performance.md). It
-- makes only the calls of all_calls_floor.lua, and checks nothing: no
-- argument validation, no type check of the keys, no options, one unit,
-- one expiry for every key (the last window's end). KEYS[1..n]; ARGV as
-- all_fixed.lua's.
-- The values are a fixed window's 12 bytes, the replies RL.ALL's six
-- integers (seconds).
local t = redis.call('TIME')
local now = t[1] * 1000000 + t[2]
local values = redis.call('MGET', unpack(KEYS))
local n = #KEYS
local starts, counts = {}, {}
local best, least, finish = 1, nil, nil
for i = 1, n do
  local limit, w = ARGV[2 * i - 1] + 0, ARGV[2 * i] * 1000000
  local start, used = now - now % w, 0
  local b = values[i]
  if b then
    local _, s, c = struct.unpack('<BI7I4', b)
    if s == start then used = c end
  end
  if used + 1 > limit then
    local wait = math.ceil((start + w - now) / 1000000)
    return {1, limit, limit - used, wait, wait, i}
  end
  starts[i], counts[i], finish = start, used + 1, start + w
  if not least or limit - used - 1 < least then best, least = i, limit - used - 1 end
end
local ms = string.format('%d', finish / 1000)
for i = 1, n do
  redis.call('SET', KEYS[i], struct.pack('<BI7I4', 70, starts[i], counts[i]), 'PXAT', ms)
end
return {0, ARGV[2 * best - 1] + 0, least, -1, math.ceil((finish - now) / 1000000), best}
