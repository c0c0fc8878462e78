-- GCRA (rl-core/src/gcra.rs). Instants are exact rationals kept as whole µs
-- `u` and ticks `f` (0 <= f < d) of 1/d µs, d = count / gcd(period, count):
-- the module's ticks, split so each part fits a double.

do
  local Gcra = {}
  Gcra.__index = Gcra

  local function tt_add(au, af, bu, bf, d)
    local u, f = au + bu, af + bf
    if f >= d then u, f = u + 1, f - d end
    return u, f
  end

  local function tt_sub(au, af, bu, bf, d)
    local u, f = au - bu, af - bf
    if f < 0 then u, f = u - 1, f + d end
    return u, f
  end

  local function tt_gt(au, af, bu, bf)
    return au > bu or (au == bu and af > bf)
  end

  local function ceil_us(u, f)
    if f > 0 then return u + 1 end
    return u
  end

  -- The ticks of (u, f) as whole emission intervals and the rest in ticks.
  function Gcra:per_interval(u, f)
    local q, r = muldivmod(u, self.d, self.T)
    if not q then return nil end
    local extra, rest = divmod_floor(r + f, self.T)
    return q + extra, rest
  end

  -- How many requests fit between (u, f) and the horizon (hu, hf).
  function Gcra:free(hu, hf, u, f)
    if not tt_gt(hu, hf, u, f) then return 0 end
    local du, df = tt_sub(hu, hf, u, f, self.d)
    return min(self:per_interval(du, df), self.limit)
  end

  function Gcra:recorded(now, nu, nf)
    if nu >= RANGE.instant then beyond('the theoretical arrival time would be') end
    local hu, hf = tt_add(now, 0, self.tol_u, self.tol_f, self.d)
    local ru, rf = tt_sub(nu, nf, now, 0, self.d)
    return {
      d = decision(false, self.limit, self:free(hu, hf, nu, nf), ALLOWED, ceil_us(ru, rf)),
      change = { u = nu, f = nf },
      expires_at = ceil_us(nu, nf),
    }
  end

  function Gcra:tat(state, at)
    if state and tt_gt(state.u, state.f, at, 0) then return state.u, state.f end
    return at, 0
  end

  function Gcra:check(state, now, q)
    local d = self.d
    local tu, tf = self:tat(state, now)
    local hu, hf = tt_add(now, 0, self.tol_u, self.tol_f, d)
    local ru, rf = tt_sub(tu, tf, now, 0, d)
    local dec = decision(false, self.limit, self:free(hu, hf, tu, tf), ALLOWED, ceil_us(ru, rf))
    local done = settled(dec, q)
    if done then return done end
    local qu, qf = muldivmod(q, self.T, d)
    local nu, nf = tt_add(tu, tf, qu, qf, d)
    if tt_gt(nu, nf, hu, hf) then
      dec.blocked = true
      dec.retry = ceil_us(tt_sub(nu, nf, hu, hf, d))
      return unchanged(dec)
    end
    return self:recorded(now, nu, nf)
  end

  function Gcra:force(state, now, q)
    local d = self.d
    local tu, tf = self:tat(state, now)
    -- Overdrawn (rl-core): TAT - now + q * T > MAX_HELD * T, counted in
    -- emission intervals.
    local ahead_u, ahead_f = tt_sub(tu, tf, now, 0, d)
    local k, rest = self:per_interval(ahead_u, ahead_f)
    if not k then beyond('the theoretical arrival time would be') end
    if k + q > MAX_HELD or (k + q == MAX_HELD and rest > 0) then return nil end
    local qu, qf = muldivmod(q, self.T, d)
    if not qu or qu >= RANGE.instant - tu then beyond('the theoretical arrival time would be') end
    return self:recorded(now, tt_add(tu, tf, qu, qf, d))
  end

  function Gcra:reserve(state, now, at, q)
    local tu, tf = self:tat(state, max(at, now))
    local qu, qf = muldivmod(q, self.T, self.d)
    return self:recorded(now, tt_add(tu, tf, qu, qf, self.d))
  end

  function Gcra:rested_at(state, now)
    if not state then return now end
    return max(ceil_us(state.u, state.f), now)
  end

  function Gcra:refund(state, now, q)
    if not state or q == 0 or not tt_gt(state.u, state.f, now, 0) then
      return refunded(self, state, now, 'same')
    end
    local bu, bf = muldivmod(q, self.T, self.d)
    if not bu or not tt_gt(state.u, state.f, bu, bf) then return refunded(self, state, now, 'rested') end
    local tu, tf = tt_sub(state.u, state.f, bu, bf, self.d)
    if not tt_gt(tu, tf, now, 0) then return refunded(self, state, now, 'rested') end
    return refunded(self, state, now, 'store', { u = tu, f = tf })
  end

  -- The stored TAT in this limiter's ticks, rounded up (later) when it was
  -- written with another denominator: it never admits more.
  function Gcra:adopt(raw)
    if raw.d == self.d then return { u = raw.u, f = raw.f } end
    local c, r = muldivmod(raw.f, self.d, raw.d)
    if r > 0 then c = c + 1 end
    if c == self.d then return { u = raw.u + 1, f = 0 } end
    return { u = raw.u, f = c }
  end

  algorithm(1, {
    word = 'GCRA', reserves = true,
    params = { { name = 'max_burst', lo = 0, hi = MAX_LIMIT - 1 }, { name = 'count', lo = 1, hi = MAX_LIMIT }, { name = 'period', duration = true } },
    build = function(v, args, from, unit)
      within_ahead(v[1] + 1, v[3], v[2], 'max_burst', 1, '(max_burst + 1) * period / count')
      local limit, d, T, tol_u, tol_f = gcra_limiter(args, from, unit)
      return setmetatable({ limit = limit, d = d, T = T, tol_u = tol_u, tol_f = tol_f, reserves = true }, Gcra)
    end,
    adopt = function(lim, raw) return lim:adopt(raw) end,
  })
end
