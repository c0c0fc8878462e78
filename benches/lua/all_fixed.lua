-- Several fixed windows decided together, all or nothing, as people write it
-- in Lua: KEYS[1..n]; ARGV: limit1 window1 ... limitn windown [quantity].
-- Replies like RL.ALL: the binding window's five fields and its position.
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
local n = #KEYS
local q = tonumber(ARGV[2 * n + 1] or '1')
local limit, start, used, window = {}, {}, {}, {}
for i = 1, n do
  limit[i], window[i] = tonumber(ARGV[2 * i - 1]), tonumber(ARGV[2 * i]) * 1000000
  start[i] = now - now % window[i]
  used[i] = 0
  local state = redis.call('GET', KEYS[i])
  if state then
    local s, c = string.match(state, '^(%d+):(%d+)$')
    if tonumber(s) == start[i] then used[i] = tonumber(c) end
  end
end
local binding, wait = nil, -1
for i = 1, n do
  if used[i] + q > limit[i] then
    local reset = math.ceil((start[i] + window[i] - now) / 1000000)
    if binding == nil or reset > wait then binding, wait = i, reset end
  end
end
if binding then
  return {1, limit[binding], limit[binding] - used[binding], wait, wait, binding}
end
binding = 1
for i = 1, n do
  redis.call('SET', KEYS[i], string.format('%d:%d', start[i], used[i] + q), 'PXAT', math.ceil((start[i] + window[i]) / 1000))
  if limit[i] - used[i] < limit[binding] - used[binding] then binding = i end
end
local reset = math.ceil((start[binding] + window[binding] - now) / 1000000)
return {0, limit[binding], limit[binding] - used[binding] - q, -1, reset, binding}
