-- The sliding counter's state (src/codec/sliding_counter.rs): 'C', the
-- current window's start (7 bytes), the previous window's count and the
-- current one's (4 bytes each).
do
  local function decode_counter(s)
    if #s ~= 16 or byte(s, 1) ~= 67 then return nil, 'expected 16 bytes starting with \'C\'' end
    local prev, cur = unpack('<I4I4', s, 9)
    if prev > MAX_HELD or cur > MAX_HELD then return nil, COUNT_RANGE end
    local start = u56_at(s, 2)
    if not start or start >= RANGE.instant then return nil, nil, true end
    return { start = start, prev = prev, cur = cur }
  end

  local function encode_counter(_, p)
    return 'C' .. pack('<I7I4I4', p.start, p.prev, p.cur)
  end

  STATES[5] = { name = 'rl.sliding_counter', tags = { [67] = true }, decode = decode_counter, encode = encode_counter }
end
