-- A GCRA limit and a sliding log (a sorted set) decided together, all or
-- nothing, as people write it in Lua: KEYS[1] the GCRA state, KEYS[2] the
-- log; ARGV: max_burst count period limit window [quantity]. Replies like
-- RL.ALL: the binding limit's five fields and its position.
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
local burst, count, period = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3]) * 1000000
local limit, w = tonumber(ARGV[4]), tonumber(ARGV[5]) * 1000000
local q = tonumber(ARGV[6] or '1')
-- GCRA
local T = period / count
local tau = T * (burst + 1)
local tat = tonumber(redis.call('GET', KEYS[1])) or now
if tat < now then tat = now end
local new = tat + q * T
local g_limit = burst + 1
local g_wait = -1
if new - tau > now then g_wait = math.ceil((new - tau - now) / 1000000) end
-- sliding log
redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', now - w)
local used = redis.call('ZCARD', KEYS[2])
local l_wait = -1
if used + q > limit then
  local oldest = redis.call('ZRANGE', KEYS[2], used + q - limit - 1, used + q - limit - 1, 'WITHSCORES')
  l_wait = math.ceil((tonumber(oldest[2]) + w - now) / 1000000)
end
if g_wait >= 0 or l_wait >= 0 then
  if l_wait > g_wait then
    return {1, limit, limit - used, l_wait, math.ceil(w / 1000000), 2}
  end
  local remaining = math.max(0, math.floor((tau - (tat - now)) / T))
  return {1, g_limit, remaining, g_wait, math.ceil((tat - now) / 1000000), 1}
end
redis.call('SET', KEYS[1], string.format('%d', new), 'PXAT', math.ceil(new / 1000))
for i = 1, q do
  redis.call('ZADD', KEYS[2], now, now .. ':' .. i .. ':' .. used)
end
redis.call('PEXPIREAT', KEYS[2], math.ceil((now + w) / 1000))
local g_remaining = math.floor((tau - (new - now)) / T)
local l_remaining = limit - used - q
if l_remaining < g_remaining then
  return {0, limit, l_remaining, -1, math.ceil(w / 1000000), 2}
end
return {0, g_limit, g_remaining, -1, math.ceil((new - now) / 1000000), 1}
