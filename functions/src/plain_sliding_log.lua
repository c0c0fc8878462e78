-- The sliding log in one pass (the general path: `sliding_log`,
-- `codec_sliding_log`). A state written whole, of at most 64 bytes: 'L', the
-- ring's oldest slot 0 (4 bytes), then the instants, oldest first (8 bytes
-- each).

-- The limiter of `limit window` (as gcra_limiter, the limit capped by its
-- setting): the limit, the window (µs), that cap, and a list for the
-- log's instants (kept with the limiter). `settings` as an argument, as
-- every limiter is handed it (`rate`, `all`).
local function log_limiter(args, from, unit, settings)
  local a, b = args[from], args[from + 1]
  if #a > 15 or #b > 15 or not string.find(a .. ' ' .. b, '^[1-9]%d* [1-9]%d*$') then return nil end
  local cap = settings().sliding_log_max_limit
  local limit, window = a + 0, b + 0
  if limit > cap or limit > 1e9 or window > 1e15 / unit then return nil end
  -- The decision, as gcra_decide answers it ('refund' goes to the general
  -- path; a log with reservations, or that would grow past 64 bytes, too).
  local function log_decide(bytes, now, q, mode, limit, w, cap, entries)
    if mode == 'refund' then return nil end
    local n = 0
    if bytes then
      local len = #bytes
      if len > 64 or len < 5 or (len - 5) % 8 ~= 0 then return nil end
      local tag, oldest = struct.unpack('<BI4', bytes)
      if tag ~= 76 or oldest ~= 0 then return nil end
      n = (len - 5) / 8
      local previous = 0
      for i = 1, n do
        local v = struct.unpack('<I8', bytes, 6 + (i - 1) * 8)
        if v < previous or v >= 6e15 then return nil end
        entries[i], previous = v, v
      end
    end
    -- The entries in the window: the newest later than now - w.
    local in_window = n
    if now >= w then
      in_window = 0
      for i = n, 1, -1 do
        if entries[i] > now - w then in_window = in_window + 1 else break end
      end
    end
    local reset = 0
    if n > 0 and in_window > 0 and entries[n] + w > now then reset = entries[n] + w - now end
    local remaining = 0
    if limit > in_window then remaining = limit - in_window end
    if q == 0 then return 0, remaining, -1, reset end
    if mode == 'force' then
      -- More than MAX_HELD units: the general path words it.
      if in_window + q > 4e9 then return nil end
    else
      if q > limit then return 1, remaining, -2, reset end
      local may_stay = limit - q
      if n > may_stay then
        local ends = entries[n - may_stay] + w
        if ends > now then return 1, remaining, ends - now, reset end
      end
    end
    -- Appended at now: the log keeps at least `limit` entries (Log:appended).
    local keep = in_window + q
    if keep < limit then keep = limit end
    if n > 0 and entries[n] > now then return nil end -- reservations to keep the newest
    local most = n + q
    if most > keep then most = keep end
    if n >= keep or q > keep - n or most > cap or 5 + (n + q) * 8 > 64 then
      return nil
    end
    local left = 0
    if limit > in_window + q then left = limit - in_window - q end
    local lo = now % 2^32
    local value = string.rep(struct.pack('<I4I4', lo, (now - lo) / 2^32), q)
    if bytes then value = bytes .. value else value = 'L\0\0\0\0' .. value end
    local ms = now + w
    local r = ms % 1000
    ms = (ms - r) / 1000
    if r > 0 then ms = ms + 1 end
    return 0, left, -1, w, value, ms
  end
  return limit, window * unit, cap, {}, nil, log_decide
end
