-- The sliding log's state (src/codec/sliding_log.rs), read in place: 'L',
-- the ring's oldest slot (4 bytes), then 8-byte instants.
local LOG_HEADER = 5

-- The i-th instant from the oldest (0-based).
local function log_get(log, i)
  local slot = (log.oldest + i) % log.n
  local v = u64_at(log.s, LOG_HEADER + 1 + slot * 8)
  if not v or v >= RANGE.instant then beyond('the sliding log holds an instant') end
  return v
end

-- How many entries are later than `after` (binary search).
local function log_later_than(log, after)
  local lo, hi = 0, log.n
  while lo < hi do
    local mid = floor((lo + hi) / 2)
    if log_get(log, mid) > after then hi = mid else lo = mid + 1 end
  end
  return log.n - lo
end

-- The bytes of log entries i .. j - 1 (0-based, from the oldest).
local function log_bytes(log, i, j)
  if j <= i then return '' end
  local n, s = log.n, log.s
  local a = (log.oldest + i) % n
  local count = j - i
  local first = min(count, n - a)
  local out = sub(s, LOG_HEADER + 1 + a * 8, LOG_HEADER + (a + first) * 8)
  if count > first then out = out .. sub(s, LOG_HEADER + 1, LOG_HEADER + (count - first) * 8) end
  return out
end

local function log_header(oldest)
  return 'L' .. pack('<I4', oldest)
end

local function slot(i) return LOG_HEADER + i * 8 end

do
  local function decode_log(s)
    if #s < LOG_HEADER or byte(s, 1) ~= 76 or (#s - LOG_HEADER) % 8 ~= 0 then
      return nil, 'expected \'L\', a 4-byte ring position and 8-byte instants'
    end
    local n = (#s - LOG_HEADER) / 8
    local oldest = unpack('<I4', s, 2)
    local bad = 'ring position or order of instants out of range'
    if oldest >= max(n, 1) then return nil, bad end
    local log = { s = s, n = n, oldest = oldest }
    if n > 0 then
      local first_at, last_at = LOG_HEADER + 1 + oldest * 8, LOG_HEADER + 1 + ((oldest + n - 1) % n) * 8
      local flo, fhi = unpack('<I4I4', s, first_at)
      local llo, lhi = unpack('<I4I4', s, last_at)
      if fhi > lhi or (fhi == lhi and flo > llo) then return nil, bad end
      if lhi >= 2097152 or lhi * TWO32 + llo >= RANGE.instant then return nil, nil, true end
    end
    return log
  end

  STATES[4] = { name = 'rl.sliding_log', tags = { [76] = true }, decode = decode_log }
end
