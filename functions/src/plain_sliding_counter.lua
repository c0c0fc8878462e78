-- The sliding counter in one pass (the general path: `sliding_counter`,
-- `codec_sliding_counter`). A state: 'C', the current window's start (7
-- bytes), the previous and current windows' counts (4 bytes each).

-- The limiter of `limit window` (as gcra_limiter): the limit, the window
-- (µs), and the functions `counter_reset` and `counter_next_fit` (made
-- here, with the limiter, kept by the library: at a script's top level each
-- would cost every call an allocation, and one more for the local it is).
local function counter_limiter(args, from, unit)
  local a, b = args[from], args[from + 1]
  if #a > 15 or #b > 15 or not string.find(a .. ' ' .. b, '^[1-9]%d* [1-9]%d*$') then return nil end
  local limit, window = a + 0, b + 0
  if limit > 1e9 or window > 1e15 / unit then return nil end
  -- µs from now until the window that starts at `start` (counts prev and
  -- cur) stops counting: 0 when both are empty (Counter:reset).
  local function counter_reset(w, now, start, prev, cur)
    local ends
    if cur > 0 then ends = start + 2 * w elseif prev > 0 then ends = start + w else return 0 end
    if ends > now then return ends - now end
    return 0
  end

  -- The earliest instant `q` more fit, once refused (Counter:next_fit): nil
  -- past 2^53.
  local function counter_next_fit(limit, w, start, elapsed, prev, cur, q)
    if cur + q <= limit and prev > 0 then
      -- floor(n * w / prev) capped at w (Counter:span).
      local n, span = limit - cur - q, w
      if n < prev then span = muldivmod(n, w, prev) end
      local e = w - span
      if e < w and e > elapsed then return start + e end
    end
    local nxt = start + w
    if cur == 0 then return nxt end
    local n, span = limit - q, w
    if n < cur then span = muldivmod(n, w, cur) end
    return nxt + (w - span)
  end
  -- The decision, as gcra_decide answers it ('refund' goes to the general
  -- path).
  local function counter_decide(bytes, now, q, mode, limit, w, counter_reset, counter_next_fit)
    -- (A window cannot hold a later window's requests: WAIT is an error.)
    if mode == 'refund' or mode == 'wait' then return nil end
    local current = now - now % w
    -- The window in force, the previous one's count and its own.
    local start, prev, cur = current, 0, 0
    if bytes then
      if #bytes ~= 16 then return nil end
      local tag, s, p, c = struct.unpack('<BI7I4I4', bytes)
      if tag ~= 67 or p > 4e9 or c > 4e9 or s >= 6e15 then return nil end
      local st = s - s % w
      if st ~= s then p, c = 0, c + p end
      if st >= current then
        start, prev, cur = st, p, c
      elseif st + w == current then
        prev = c
      end
    end
    local elapsed = 0
    if now > start then
      elapsed = now - start
      if elapsed > w then elapsed = w end
    end
    -- The previous window's weighted share, ceil(prev * (w - elapsed) / w).
    local share, r = muldivmod(prev, w - elapsed, w)
    if r > 0 then share = share + 1 end
    local free = 0
    if limit > share then free = limit - share end
    local remaining = 0
    if free > cur then
      remaining = free - cur
      if remaining > limit then remaining = limit end
    end
    local reset = counter_reset(w, now, start, prev, cur)
    if q == 0 then return 0, remaining, -1, reset end
    if mode == 'force' then
      -- More than MAX_HELD units: the general path words it.
      if cur + q > 4e9 then return nil end
    else
      if q > limit then return 1, remaining, -2, reset end
      if share + cur + q > limit then
        local at = counter_next_fit(limit, w, start, elapsed, prev, cur, q)
        if not at then return nil end
        local retry = 0
        if at > now then retry = at - now end
        return 1, remaining, retry, reset
      end
    end
    cur = cur + q
    local full = counter_reset(w, now, start, prev, cur)
    local left = 0
    if free > cur then
      left = free - cur
      if left > limit then left = limit end
    end
    local ms = now + full
    local rest = ms % 1000
    ms = (ms - rest) / 1000
    if rest > 0 then ms = ms + 1 end
    return 0, left, -1, full, struct.pack('<BI7I4I4', 67, start, prev, cur), ms
  end
  return limit, window * unit, counter_reset, counter_next_fit, nil, counter_decide
end
