-- Not a limiter: the server calls that RL.ALL of n limits on new keys cannot
-- do without, and nothing else, as a floor for the functions edition's
-- rl_all (docs/performance.md). TIME once, one MGET of every key, and one
-- SET .. PXAT per key (the value a fixed window's 12 bytes, the expiry the
-- next minute's start). KEYS[1..n]; ARGV as all_fixed.lua's, unread. The
-- reply: six integers, as RL.ALL's.
local t = redis.call('TIME')
redis.call('MGET', unpack(KEYS))
local ms = string.format('%d', (math.floor(tonumber(t[1]) / 60) + 1) * 60000)
for i = 1, #KEYS do
  redis.call('SET', KEYS[i], 'F00000000001', 'PXAT', ms)
end
return {0, 100, 99, -1, 60, 1}
