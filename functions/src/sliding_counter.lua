-- The sliding counter (rl-core/src/sliding_counter.rs): two windows
-- aligned to the epoch (rl-core/src/window.rs), the previous one weighted.
do
  local Counter = {}
  Counter.__index = Counter

  function Counter:counts_at(state, now)
    local w = self.w
    local current = now - now % w
    if not state then return current, 0, 0 end
    local start = state.start - state.start % w
    local prev, cur = state.prev, state.cur
    if start ~= state.start then prev, cur = 0, state.cur + state.prev end
    if start >= current then return start, prev, cur end
    if start + w == current then return current, cur, 0 end
    return current, 0, 0
  end

  function Counter:reset(now, start, prev, cur)
    return self.counter_reset(self.w, now, start, prev, cur)
  end

  -- ceil(prev * (W - e) / W): the previous window's weighted share.
  function Counter:share(prev, elapsed)
    local q, r = muldivmod(prev, self.w - elapsed, self.w)
    if r > 0 then q = q + 1 end
    return q
  end

  function Counter:elapsed(now, start)
    local e = 0
    if now > start then e = now - start end
    return min(e, self.w)
  end

  function Counter:check(state, now, q)
    local start, prev, cur = self:counts_at(state, now)
    local limit = self.limit
    local elapsed = self:elapsed(now, start)
    local share = self:share(prev, elapsed)
    local free = max(limit - share, 0)
    local function remaining_with(c) return min(max(free - c, 0), limit) end
    local dec = decision(false, limit, remaining_with(cur), ALLOWED, self:reset(now, start, prev, cur))
    local done = settled(dec, q)
    if done then return done end
    if start > MAX_WINDOW_START then
      dec.blocked, dec.retry = true, NEVER
      return unchanged(dec)
    end
    if share + cur + q > limit then
      dec.blocked = true
      dec.retry = until_(now, self.counter_next_fit(self.limit, self.w, start, elapsed, prev, cur, q))
      return unchanged(dec)
    end
    local reset = self:reset(now, start, prev, cur + q)
    return {
      d = decision(false, limit, remaining_with(cur + q), ALLOWED, reset),
      change = { start = start, prev = prev, cur = cur + q },
      expires_at = now + reset,
    }
  end

  function Counter:force(state, now, q)
    local start, prev, cur = self:counts_at(state, now)
    cur = cur + q
    if cur > MAX_HELD or prev > MAX_HELD or start > MAX_WINDOW_START then return nil end
    local reset = self:reset(now, start, prev, cur)
    local share = self:share(prev, self:elapsed(now, start))
    return {
      d = decision(false, self.limit, max(self.limit - share - cur, 0), ALLOWED, reset),
      change = { start = start, prev = prev, cur = cur },
      expires_at = now + reset,
    }
  end

  function Counter:rested_at(state, now)
    return now + self:check(state, now, 0).d.reset
  end

  function Counter:refund(state, now, q)
    local start, prev, cur = self:counts_at(state, now)
    local from_cur = min(q, cur)
    local from_prev = min(q - from_cur, prev)
    local p, c = prev - from_prev, cur - from_cur
    if q == 0 or prev + cur == 0 or start > MAX_WINDOW_START then return refunded(self, state, now, 'same') end
    if p + c == 0 then return refunded(self, state, now, 'rested') end
    return refunded(self, state, now, 'store', { start = start, prev = p, cur = c })
  end

  algorithm(5, {
    word = 'SLIDING_COUNTER', reserves = false,
    params = { { name = 'limit', lo = 1, hi = MAX_LIMIT }, { name = 'window', duration = true } },
    build = function(_, args, from, unit)
      local limit, w, counter_reset, counter_next_fit = counter_limiter(args, from, unit)
      return setmetatable({ limit = limit, w = w, counter_reset = counter_reset, counter_next_fit = counter_next_fit, reserves = false }, Counter)
    end,
  })
end
