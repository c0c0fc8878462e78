-- Concurrency leases as people write them in Lua, on a sorted set: KEYS[1]
-- holds one member per unit held (a lease of q units is the members id,
-- id#2 .. id#q), scored by its deadline (µs); KEYS[2] keeps the last id so
-- that ids never repeat, not even within one microsecond.
-- ARGV: limit timeout [quantity]. Reply: the five integers, then the lease.
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
local limit, timeout = tonumber(ARGV[1]), tonumber(ARGV[2]) * 1000000
local q = tonumber(ARGV[3] or '1')
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
local held = redis.call('ZCARD', KEYS[1])
local function until_(at) return math.ceil((at - now) / 1000000) end
-- The latest deadline (now when nothing is held).
local function latest()
  local last = redis.call('ZRANGE', KEYS[1], -1, -1, 'WITHSCORES')
  if last[2] then return tonumber(last[2]) end
  return now
end
if held + q > limit then
  local retry = -1
  if q <= limit then
    -- The unit whose deadline frees enough of them.
    local need = held + q - limit
    local d = redis.call('ZRANGE', KEYS[1], need - 1, need - 1, 'WITHSCORES')
    retry = until_(tonumber(d[2]))
  end
  return {1, limit, limit - held, retry, until_(latest()), 0}
end
if q == 0 then
  return {0, limit, limit - held, -1, until_(latest()), 0}
end
local id = math.max(now, tonumber(redis.call('GET', KEYS[2]) or '0') + 1)
local sid = string.format('%.0f', id)
local deadline = string.format('%.0f', now + timeout)
redis.call('ZADD', KEYS[1], deadline, sid)
for i = 2, q do
  redis.call('ZADD', KEYS[1], deadline, sid .. '#' .. i)
end
local last = latest()
local expire_at = string.format('%.0f', math.ceil(last / 1000))
redis.call('PEXPIREAT', KEYS[1], expire_at)
redis.call('SET', KEYS[2], sid, 'PXAT', expire_at)
return {0, limit, limit - held - q, -1, until_(last), id}
