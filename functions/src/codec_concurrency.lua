-- The leases' state (src/codec/concurrency.rs): 'Q', the last lease id
-- (8 bytes), then 20-byte records: id, deadline (0 once released in
-- place), units.
local LEASE_HEADER, RECORD = 9, 20

-- The leases a value holds: {records, last, n}, or nil and what is wrong
-- with it, or nil, nil and true past the edition's range.
local function lease_view(s)
  local shape = 'expected \'Q\', the last lease id and 20-byte leases'
  if #s < LEASE_HEADER or byte(s, 1) ~= 81 or (#s - LEASE_HEADER) % RECORD ~= 0 then return nil, shape end
  local n = (#s - LEASE_HEADER) / RECORD
  -- The last id as the module reads it, the header's or the newest
  -- lease's, whichever is larger: 0, or past 2^62, the clock never gives.
  local lo, hi = unpack('<I4I4', s, 2)
  if n > 0 then
    local newest_lo, newest_hi = unpack('<I4I4', s, LEASE_HEADER + (n - 1) * RECORD + 1)
    if newest_hi > hi or (newest_hi == hi and newest_lo > lo) then lo, hi = newest_lo, newest_hi end
  end
  if (lo == 0 and hi == 0) or hi > 1073741824 or (hi == 1073741824 and lo > 0) then
    return nil, 'a lease id of 0 or past 2^62, which the server\'s clock never gives'
  end
  local records = {}
  local last = u64_at(s, 2)
  if not last then return nil, nil, true end
  local previous = 0
  for i = 1, n do
    local at = LEASE_HEADER + (i - 1) * RECORD + 1
    local id, deadline = u64_at(s, at), u64_at(s, at + 8)
    if not id or not deadline then return nil, nil, true end
    local units = unpack('<I4', s, at + 16)
    records[i] = { id = id, deadline = deadline, units = units }
  end
  if n > 0 then last = max(last, records[n].id) end
  for i = 1, n do
    local r = records[i]
    if r.id <= previous or r.id > last or r.units == 0 then
      return nil, 'a lease out of order, or with no units'
    end
    previous = r.id
  end
  return { records = records, last = last, n = n }
end

local function record_bytes(id, deadline, units)
  return u64_bytes(id) .. u64_bytes(deadline) .. pack('<I4', units)
end

-- The leases of a view (not released), with their position among records.
local function leases_of(view)
  local out = {}
  if not view then return out end
  for i = 1, view.n do
    local r = view.records[i]
    if r.deadline ~= 0 then out[#out + 1] = r end
  end
  return out
end
