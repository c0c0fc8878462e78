-- A sliding counter as people write it in Lua: KEYS[1]; ARGV: limit window [quantity]
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
local limit, w = tonumber(ARGV[1]), tonumber(ARGV[2]) * 1000000
local q = tonumber(ARGV[3] or '1')
local start = now - now % w
local s = redis.call('HMGET', KEYS[1], 'start', 'prev', 'cur')
local prev, cur = 0, 0
if tonumber(s[1]) == start then prev, cur = tonumber(s[2]), tonumber(s[3])
elseif tonumber(s[1]) == start - w then prev = tonumber(s[3]) end
local weight = (w - (now - start)) / w
if prev * weight + cur + q > limit then
  return {1, limit, math.max(0, math.floor(limit - prev * weight - cur)), 1, math.ceil((start + 2 * w - now) / 1000000)}
end
cur = cur + q
redis.call('HSET', KEYS[1], 'start', start, 'prev', prev, 'cur', cur)
redis.call('PEXPIREAT', KEYS[1], math.ceil((start + 2 * w) / 1000))
return {0, limit, math.max(0, math.floor(limit - prev * weight - cur)), -1, math.ceil((start + 2 * w - now) / 1000000)}
