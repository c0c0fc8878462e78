-- GCRA in one pass (the general path: `gcra`, `codec_gcra`). A state in
-- its usual form: 'G' and the TAT in ticks of 1/840 µs (9 bytes).

-- The limiter of `max_burst count period` (args[from] on, the period in
-- `unit` µs): the limit, the emission interval T / d µs in lowest terms,
-- and the tolerance, tol_u µs and tol_f ticks of 1/d µs; nil past the
-- edition's range ((max_burst + 1) * period / count at most 3e15 µs).
local function gcra_limiter(args, from, unit)
  local a, b, c = args[from], args[from + 1], args[from + 2]
  -- Integers as Redis reads them: max_burst may be 0, with no leading zero
  -- (among digits, a < '1' is one; a string comparison costs less than a call).
  if #a > 15 or #b > 15 or #c > 15 or (#a > 1 and a < '1')
    or not string.find(a .. ' ' .. b .. ' ' .. c, '^%d+ [1-9]%d* [1-9]%d*$') then
    return nil
  end
  local max_burst, count, period = a + 0, b + 0, c + 0
  if max_burst >= 1e9 or count > 1e9 or period > 1e15 / unit then return nil end
  period = period * unit
  local g, r = period, count
  while r ~= 0 do g, r = r, g % r end
  local limit, d, T = max_burst + 1, count / g, period / g
  local tol_u, tol_f
  if d == 1 then tol_u, tol_f = limit * T, 0 else tol_u, tol_f = muldivmod(limit, T, d) end
  if not tol_u or tol_u > 3e15 or (tol_u == 3e15 and tol_f > 0) then return nil end
  -- The decision at `now` on the stored bytes: blocked (0, 1), remaining,
  -- retry (µs; -1 allowed, -2 never), reset (µs), and for a write the value
  -- (true: delete) and its expiry (ms); nil where the general path answers.
  -- 'wait' and 'at_most' decide as 'take' (a refusal goes to the general path).
  local function gcra_decide(bytes, now, q, mode, limit, d, T, tol_u, tol_f)
    -- The TAT in this limiter's ticks (tu µs and tf ticks), now at rest.
    local tu, tf, stored = now, 0, false
    if bytes then
      if #bytes ~= 9 then return nil end
      local tag, lo, hi = struct.unpack('<BI4I4', bytes)
      if tag ~= 71 then return nil end
      -- (Whole divisions by `%`, exact on these integers below 2^42.)
      local hr = hi % 840
      local qh = (hi - hr) / 840
      local rest = hr * 2^32 + lo
      local f = rest % 840
      local u = qh * 2^32 + (rest - f) / 840
      if qh >= 2^21 or u >= 6e15 then return nil end
      if d ~= 840 and f > 0 then
        -- In this limiter's ticks, rounded up (Gcra:adopt): f * d < 840 * 10^9.
        local x = f * d
        local c = (x - x % 840) / 840
        if c * 840 < x then c = c + 1 end
        if c == d then u, f = u + 1, 0 else f = c end
      end
      if u > now or (u == now and f > 0) then tu, tf, stored = u, f, true end
    end
    local hu, hf = now + tol_u, tol_f
    -- The answer, measured from the TAT it leaves (ru, rf).
    local blocked, retry, ru, rf = 0, -1, tu, tf
    local nu, nf
    if mode == 'refund' then
      if not stored or q == 0 then
        -- Nothing to give back: a query.
      else
        -- Gcra:refund: the TAT less q * T, rested (the key deleted) where that
        -- is no later than now.
        local bu, bf
        if d == 1 then bu, bf = q * T, 0 else bu, bf = muldivmod(q, T, d) end
        nu, nf = now, 0
        if bu then
          nu, nf = tu - bu, tf - bf
          if nf < 0 then nu, nf = nu - 1, nf + d end
        end
        if not (nu > now or (nu == now and nf > 0)) then
          ru, rf, nu = now, 0, true
        end
      end
    elseif q > 0 then
      local force = mode == 'force'
      if q > limit and not force then
        blocked, retry = 1, -2
      else
        local qu, qf
        if d == 1 then qu, qf = q * T, 0 else qu, qf = muldivmod(q, T, d) end
        if not qu or qu >= 6e15 - tu then return nil end
        nu, nf = tu + qu, tf + qf
        if nf >= d then nu, nf = nu + 1, nf - d end
        if force then
          -- Overdrawn past MAX_HELD (4 * 10^9) intervals ahead of now, or
          -- near it: the general path words it (Gcra:force).
          local x = (tu - now) * d + tf
          if x >= 2^52 or x / T + q >= 4e9 - 1 then return nil end
        elseif nu > hu or (nu == hu and nf > hf) then
          local wu, wf = nu - hu, nf - hf
          if wf < 0 then wu, wf = wu - 1, wf + d end
          if wf > 0 then wu = wu + 1 end
          blocked, retry, nu = 1, wu, nil
        end
      end
    end
    local value, ms
    if nu == true then
      value = true
    elseif nu then
      if nu >= 6e15 or 840 % d ~= 0 then return nil end
      local ul = nu % 2^32
      local low = ul * 840 + nf * (840 / d)
      local lo = low % 2^32
      value = struct.pack('<BI4I4', 71, lo, (nu - ul) / 2^32 * 840 + (low - lo) / 2^32)
      ru, rf = nu, nf
    end
    -- reset: to the TAT, rounded up; remaining: the requests that fit between
    -- it and the horizon (Gcra:free).
    local reset = ru - now
    if rf > 0 then reset = reset + 1 end
    if value and value ~= true then
      ms = now + reset
      local r = ms % 1000
      ms = (ms - r) / 1000
      if r > 0 then ms = ms + 1 end
    end
    local room = 0
    if hu > ru or (hu == ru and hf > rf) then
      local du, df = hu - ru, hf - rf
      if df < 0 then du, df = du - 1, df + d end
      -- floor((du * d + df) / T): inline while du * d stays below 2^52.
      local x = du * d
      local k, r
      if x < 2^52 then
        r = x % T
        k = (x - r) / T
      else
        k, r = muldivmod(du, d, T)
      end
      r = r + df
      if r >= T then
        local s = r % T
        k = k + (r - s) / T
      end
      if k < limit then room = k else room = limit end
    end
    return blocked, room, retry, reset, value, ms
  end
  return limit, d, T, tol_u, tol_f, gcra_decide
end
