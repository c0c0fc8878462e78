-- Release a lease taken by concurrency_acquire.lua: KEYS[1] the sorted set;
-- ARGV: the lease. Answers the units freed: 0 for a lease that is unknown,
-- already released or past its deadline.
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
local deadline = redis.call('ZSCORE', KEYS[1], ARGV[1])
if not deadline or tonumber(deadline) <= now then
  return 0
end
redis.call('ZREM', KEYS[1], ARGV[1])
local units = 1
while redis.call('ZREM', KEYS[1], ARGV[1] .. '#' .. (units + 1)) == 1 do
  units = units + 1
end
return units
