-- The fixed window's state (src/codec/fixed_window.rs): 'F', the window's
-- start (7 bytes), the count (4 bytes).
local COUNT_RANGE = 'count out of range'
do
  local function decode_fixed(s)
    if #s ~= 12 or byte(s, 1) ~= 70 then return nil, 'expected 12 bytes starting with \'F\'' end
    local count = unpack('<I4', s, 9)
    if count > MAX_HELD then return nil, COUNT_RANGE end
    local start = u56_at(s, 2)
    if not start or start >= RANGE.instant then return nil, nil, true end
    return { start = start, count = count }
  end

  local function encode_fixed(_, w)
    return 'F' .. pack('<I7I4', w.start, w.count)
  end

  STATES[3] = { name = 'rl.fixed', tags = { [70] = true }, decode = decode_fixed, encode = encode_fixed }
end
