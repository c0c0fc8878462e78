-- The sliding log's state (src/codec/sliding_log.rs), read in place: 'L',
-- the ring's oldest slot (4 bytes), then 8-byte instants. Or the tagged
-- log, 'l': the count of entries (4 bytes), their instants, oldest first,
-- then a tag record per entry in the same order (its length, 2 bytes, 0
-- for none, then its bytes), read as the linear 'L' log of its instants
-- (`s`) with its entries' tags (`tags`, false for none).
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

-- The log of `words` (8-byte instants, oldest first) and their `tags`
-- (false for none), written whole as the module writes it: the untagged
-- log at ring position 0 when no entry carries a tag, else the tagged one.
local function log_value(words, tags)
  local n, records, tagged = #words, {}, false
  for i = 1, n do
    local t = tags[i]
    if t then
      tagged = true
      records[i] = pack('<I2', #t) .. t
    else
      records[i] = '\0\0'
    end
  end
  if not tagged then return log_header(0) .. concat(words) end
  return 'l' .. pack('<I4', n) .. concat(words) .. concat(records)
end

do
  local TAGGED_SHAPE = 'expected \'l\', an entry count, its 8-byte instants and as many tags'

  local function decode_tagged(s)
    local len = #s
    if len < LOG_HEADER then return nil, TAGGED_SHAPE end
    local n = unpack('<I4', s, 2)
    local records = LOG_HEADER + n * 8
    if records > len then return nil, TAGGED_SHAPE end
    local tags, at, tagged = {}, records + 1, 0
    for i = 1, n do
      if at + 1 > len then return nil, TAGGED_SHAPE end
      local size = unpack('<I2', s, at)
      if size > MAX_TAG_BYTES or at + 1 + size > len then return nil, TAGGED_SHAPE end
      if size == 0 then
        tags[i] = false
      else
        tags[i] = sub(s, at + 2, at + 1 + size)
        tagged = tagged + 1
      end
      at = at + 2 + size
    end
    if at ~= len + 1 then return nil, TAGGED_SHAPE end
    if n > 0 then
      local flo, fhi = unpack('<I4I4', s, LOG_HEADER + 1)
      local llo, lhi = unpack('<I4I4', s, records - 7)
      if fhi > lhi or (fhi == lhi and flo > llo) then return nil, 'order of instants out of range' end
      if lhi >= 2097152 or lhi * TWO32 + llo >= RANGE.instant then return nil, nil, true end
    end
    return { s = log_header(0) .. sub(s, LOG_HEADER + 1, records), n = n, oldest = 0, tags = tags, tagged = tagged }
  end

  local function decode_log(s)
    if byte(s, 1) == 108 then return decode_tagged(s) end
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

  STATES[4] = { name = 'rl.sliding_log', tags = { [76] = true, [108] = true }, decode = decode_log }
end
