-- The token bucket in one pass (the general path: `token_bucket`,
-- `codec_token_bucket`). A state in its usual form: 'T', the instant (8
-- bytes), the grains per token (7 bytes) and a level of whole grains, not
-- in debt (12 bytes).

-- The limiter of `capacity refill_count refill_period` (as gcra_limiter):
-- the capacity, and gpt, gpm: a level is `tok` whole tokens and `gr`
-- grains of 1/gpt token; a token refills in gpt / gpm µs; and the function
-- `refill_time`. nil past the edition's range (capacity * refill_period /
-- refill_count at most 3e15 µs). (The function is made here, with the
-- limiter, kept by the library: at a script's top level it would cost each
-- call an allocation, and one more for the local it is, used or not.)
local function bucket_limiter(args, from, unit)
  local a, b, c = args[from], args[from + 1], args[from + 2]
  if #a > 15 or #b > 15 or #c > 15 or not string.find(a .. ' ' .. b .. ' ' .. c, '^[1-9]%d* [1-9]%d* [1-9]%d*$') then
    return nil
  end
  local capacity, count, period = a + 0, b + 0, c + 0
  if capacity > 1e9 or count > 1e9 or period > 1e15 / unit then return nil end
  period = period * unit
  local g, r = count, period
  while r ~= 0 do g, r = r, g % r end
  local gpt, gpm = period / g, count / g
  local full_u, full_r = muldivmod(capacity, gpt, gpm)
  if not full_u or full_u > 3e15 or (full_u == 3e15 and full_r > 0) then return nil end
  -- ceil((a * gpt + b) / gpm) µs, for a >= 0 and -gpt < b (Bucket:time_for);
  -- nil past 2^53.
  local function refill_time(gpt, gpm, a, b)
    local q, r = muldivmod(a, gpt, gpm)
    if not q then return nil end
    r = r + b
    local rest = r % gpm
    local extra = (r - rest) / gpm
    if rest < 0 then extra, rest = extra - 1, rest + gpm elseif rest >= gpm then extra, rest = extra + 1, rest - gpm end
    if rest > 0 then extra = extra + 1 end
    return q + extra
  end
  -- The decision, as gcra_decide answers it ('refund' goes to the general
  -- path; FORCE only where the bucket has the units, no debt).
  local function bucket_decide(bytes, now, q, mode, limit, gpt, gpm, refill_time)
    if mode == 'refund' then return nil end
    local tok, gr = limit, 0
    if bytes then
      if #bytes ~= 28 then return nil end
      local tag, alo, ahi, sgpt, l0, l1, h0, h1 = struct.unpack('<BI4I4I7I4I2I4I2', bytes)
      if tag ~= 84 or sgpt ~= gpt or h1 >= 32768 or ahi >= 2^21 then return nil end
      -- The stored level in whole tokens and grains.
      local lo48, hi48 = l1 * 2^32 + l0, h1 * 2^32 + h0
      local r
      if hi48 == 0 then
        r = lo48 % gpt
        tok = (lo48 - r) / gpt
      else
        local q1, r1 = muldivmod(hi48, 2^48, gpt)
        if not q1 then return nil end
        r = r1 + lo48
        local r2 = r % gpt
        tok, r = q1 + (r - r2) / gpt, r2
      end
      local at = ahi * 2^32 + alo
      if tok > 1e9 or (tok == 1e9 and r > 0) or at >= 6e15 then return nil end
      gr = r
      -- The level at `now` (Bucket:level_at): the stored one refilled since,
      -- or less the refill still owed when it was written for later.
      if tok >= limit then tok, gr = limit, 0 end
      if now >= at then
        local elapsed = now - at
        if elapsed > 0 and tok < limit then
          local to_full = refill_time(gpt, gpm, limit - tok, -gr)
          if not to_full then return nil end
          if elapsed >= to_full then
            tok, gr = limit, 0
          else
            local dt, dg = muldivmod(elapsed, gpm, gpt)
            tok, gr = tok + dt, gr + dg
            if gr >= gpt then tok, gr = tok + 1, gr - gpt end
            if tok >= limit then tok, gr = limit, 0 end
          end
        end
      else
        local ot, og = muldivmod(at - now, gpm, gpt)
        if not ot then return nil end
        tok, gr = tok - ot, gr - og
        if gr < 0 then tok, gr = tok - 1, gr + gpt end
      end
    end
    local remaining = 0
    if tok > 0 then
      if tok < limit then remaining = tok else remaining = limit end
    end
    local reset = 0
    if tok < limit then
      reset = refill_time(gpt, gpm, limit - tok, -gr)
      if not reset then return nil end
    end
    if q == 0 then return 0, remaining, -1, reset end
    if tok < q then
      if mode == 'force' then return nil end
      if q > limit then return 1, remaining, -2, reset end
      local retry = refill_time(gpt, gpm, q - tok, -gr)
      if not retry then return nil end
      return 1, remaining, retry, reset
    end
    -- Taken: the level left, written at now.
    local lt = tok - q
    if now >= 6e15 or lt * gpt >= 2^52 then return nil end
    local full = 0
    if lt < limit then
      full = refill_time(gpt, gpm, limit - lt, -gr)
      if not full then return nil end
    end
    if now + full >= 6e15 then return nil end
    local level = lt * gpt + gr
    local l48 = level % 2^48
    local h48 = (level - l48) / 2^48
    local nlo = now % 2^32
    local l32, h32 = l48 % 2^32, h48 % 2^32
    local value = struct.pack('<BI4I4I7I4I2I4I2', 84, nlo, (now - nlo) / 2^32, gpt, l32, (l48 - l32) / 2^32, h32, (h48 - h32) / 2^32)
    local left = 0
    if lt > 0 then
      if lt < limit then left = lt else left = limit end
    end
    local ms = now + full
    local r = ms % 1000
    ms = (ms - r) / 1000
    if r > 0 then ms = ms + 1 end
    return 0, left, -1, full, value, ms
  end
  return capacity, gpt, gpm, refill_time, nil, bucket_decide
end
