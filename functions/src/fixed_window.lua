-- The fixed window (rl-core/src/fixed_window.rs), aligned to the epoch
-- (rl-core/src/window.rs).
do
  local Fixed = {}
  Fixed.__index = Fixed

  function Fixed:in_force(state, now)
    local current = now - now % self.w
    if state and state.start >= current then
      return state.start - state.start % self.w, state.count
    end
    return current, 0
  end

  function Fixed:recorded(dec, start, count, now)
    local finish = start + self.w
    dec.remaining = max(self.limit - count, 0)
    dec.reset = until_(now, finish)
    return { d = dec, change = { start = start, count = count }, expires_at = finish }
  end

  function Fixed:check(state, now, q)
    local start, used = self:in_force(state, now)
    local to_end = until_(now, start + self.w)
    local reset = to_end
    if used == 0 then reset = 0 end
    local dec = decision(false, self.limit, max(self.limit - used, 0), ALLOWED, reset)
    local done = settled(dec, q)
    if done then return done end
    if start > MAX_WINDOW_START then
      dec.blocked, dec.retry = true, NEVER
      return unchanged(dec)
    end
    if used + q > self.limit then
      dec.blocked, dec.retry = true, to_end
      return unchanged(dec)
    end
    return self:recorded(dec, start, used + q, now)
  end

  function Fixed:force(state, now, q)
    local start, used = self:in_force(state, now)
    if used + q > MAX_HELD or start > MAX_WINDOW_START then return nil end
    return self:recorded(decision(false, self.limit, 0, ALLOWED, 0), start, used + q, now)
  end

  function Fixed:rested_at(state, now)
    return now + self:check(state, now, 0).d.reset
  end

  function Fixed:refund(state, now, q)
    local start, used = self:in_force(state, now)
    if used == 0 or q == 0 then return refunded(self, state, now, 'same') end
    if used <= q then return refunded(self, state, now, 'rested') end
    return refunded(self, state, now, 'store', { start = start, count = used - q })
  end

  algorithm(3, {
    word = 'FIXED', reserves = false,
    params = { { name = 'limit', lo = 1, hi = MAX_LIMIT }, { name = 'window', duration = true } },
    build = function(_, args, from, unit)
      local limit, w = fixed_limiter(args, from, unit)
      return setmetatable({ limit = limit, w = w, reserves = false }, Fixed)
    end,
  })
end
