-- A GCRA refund in Lua, on gcra.lua's state: the TAT moves back by q*T,
-- never before now; rested, the key goes. KEYS[1]; ARGV: max_burst count
-- period [quantity]
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
local burst, count, period = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3]) * 1000000
local q = tonumber(ARGV[4] or '1')
local T = period / count
local tau = T * (burst + 1)
local limit = burst + 1
local tat = tonumber(redis.call('GET', KEYS[1]))
if not tat or tat <= now or q == 0 then
  tat = math.max(tat or now, now)
  return {0, limit, math.min(limit, math.floor((tau - (tat - now)) / T)), -1, math.ceil((tat - now) / 1000000)}
end
local new = math.max(tat - q * T, now)
if new <= now then
  redis.call('DEL', KEYS[1])
else
  redis.call('SET', KEYS[1], string.format('%d', new), 'PXAT', math.ceil(new / 1000))
end
return {0, limit, math.min(limit, math.floor((tau - (new - now)) / T)), -1, math.ceil((new - now) / 1000000)}
