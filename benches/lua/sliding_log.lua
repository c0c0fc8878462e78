-- A sliding log as people write it in Lua, on a sorted set: KEYS[1]; ARGV: limit window [quantity]
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
local limit, w = tonumber(ARGV[1]), tonumber(ARGV[2]) * 1000000
local q = tonumber(ARGV[3] or '1')
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now - w)
local used = redis.call('ZCARD', KEYS[1])
if used + q > limit then
  local oldest = redis.call('ZRANGE', KEYS[1], used + q - limit - 1, used + q - limit - 1, 'WITHSCORES')
  local retry = math.ceil((tonumber(oldest[2]) + w - now) / 1000000)
  return {1, limit, limit - used, retry, math.ceil(w / 1000000)}
end
for i = 1, q do
  redis.call('ZADD', KEYS[1], now, now .. ':' .. i .. ':' .. used)
end
redis.call('PEXPIREAT', KEYS[1], math.ceil((now + w) / 1000))
return {0, limit, limit - used - q, -1, math.ceil(w / 1000000)}
