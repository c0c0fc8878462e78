-- A fixed window as people write it in Lua: KEYS[1]; ARGV: limit window [quantity]
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
local limit, w = tonumber(ARGV[1]), tonumber(ARGV[2]) * 1000000
local q = tonumber(ARGV[3] or '1')
local start = now - now % w
local state = redis.call('GET', KEYS[1])
local used = 0
if state then
  local s, c = string.match(state, '^(%d+):(%d+)$')
  if tonumber(s) == start then used = tonumber(c) end
end
local reset = math.ceil((start + w - now) / 1000000)
if used + q > limit then return {1, limit, limit - used, reset, reset} end
redis.call('SET', KEYS[1], string.format('%d:%d', start, used + q), 'PXAT', math.ceil((start + w) / 1000))
return {0, limit, limit - used - q, -1, reset}
