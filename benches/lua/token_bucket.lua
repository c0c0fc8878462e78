-- A token bucket as people write it in Lua: KEYS[1]; ARGV: capacity refill_count refill_period [quantity]
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
local capacity, rate = tonumber(ARGV[1]), tonumber(ARGV[2]) / (tonumber(ARGV[3]) * 1000000)
local q = tonumber(ARGV[4] or '1')
local state = redis.call('HMGET', KEYS[1], 'tokens', 'ts')
local tokens, ts = tonumber(state[1]) or capacity, tonumber(state[2]) or now
tokens = math.min(capacity, tokens + math.max(0, now - ts) * rate)
if tokens < q then
  return {1, capacity, math.floor(tokens), math.ceil((q - tokens) / rate / 1000000), math.ceil((capacity - tokens) / rate / 1000000)}
end
tokens = tokens - q
local full_in = (capacity - tokens) / rate
redis.call('HSET', KEYS[1], 'tokens', tokens, 'ts', now)
redis.call('PEXPIREAT', KEYS[1], math.ceil((now + full_in) / 1000))
return {0, capacity, math.floor(tokens), -1, math.ceil(full_in / 1000000)}
