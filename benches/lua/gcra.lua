-- GCRA as people write it in Lua: KEYS[1]; ARGV: max_burst count period [quantity]
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
local burst, count, period = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3]) * 1000000
local q = tonumber(ARGV[4] or '1')
local T = period / count
local tau = T * (burst + 1)
local tat = tonumber(redis.call('GET', KEYS[1])) or now
if tat < now then tat = now end
local new = tat + q * T
local limit = burst + 1
if new - tau > now then
  local remaining = math.max(0, math.floor((tau - (tat - now)) / T))
  return {1, limit, remaining, math.ceil((new - tau - now) / 1000000), math.ceil((tat - now) / 1000000)}
end
redis.call('SET', KEYS[1], string.format('%d', new), 'PXAT', math.ceil(new / 1000))
return {0, limit, math.floor((tau - (new - now)) / T), -1, math.ceil((new - now) / 1000000)}
