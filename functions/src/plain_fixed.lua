-- The fixed window in one pass (the general path: `fixed_window`,
-- `codec_fixed_window`). A state: 'F', the window's start (7 bytes) and the
-- count (4 bytes).

-- The limiter of `limit window` (as gcra_limiter): the limit and the
-- window (µs).
local function fixed_limiter(args, from, unit)
  local a, b = args[from], args[from + 1]
  if #a > 15 or #b > 15 or not string.find(a .. ' ' .. b, '^[1-9]%d* [1-9]%d*$') then return nil end
  local limit, window = a + 0, b + 0
  if limit > 1e9 or window > 1e15 / unit then return nil end
  -- The decision, as gcra_decide answers it ('refund' goes to the general
  -- path).
  local function fixed_decide(bytes, now, q, mode, limit, w)
    -- (A window cannot hold a later window's requests: WAIT is an error.)
    if mode == 'refund' or mode == 'wait' then return nil end
    -- The window in force (aligned to the epoch) and its count.
    local start, used = now - now % w, 0
    if bytes then
      if #bytes ~= 12 then return nil end
      local tag, s, count = struct.unpack('<BI7I4', bytes)
      if tag ~= 70 or count > 4e9 or s >= 6e15 then return nil end
      if s >= start then start, used = s - s % w, count end
    end
    local finish = start + w
    local to_end = 0
    if finish > now then to_end = finish - now end
    local reset = to_end
    if used == 0 then reset = 0 end
    local remaining = 0
    if limit > used then remaining = limit - used end
    if q == 0 then return 0, remaining, -1, reset end
    local count = used + q
    if mode == 'force' then
      -- More than MAX_HELD units: the general path words it.
      if count > 4e9 then return nil end
    else
      if q > limit then return 1, remaining, -2, reset end
      if count > limit then return 1, remaining, to_end, reset end
    end
    local left = 0
    if limit > count then left = limit - count end
    local ms = finish % 1000
    ms = (finish - ms) / 1000 + (ms > 0 and 1 or 0)
    return 0, left, -1, to_end, struct.pack('<BI7I4', 70, start, count), ms
  end
  return limit, window * unit, nil, nil, nil, fixed_decide
end
