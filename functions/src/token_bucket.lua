-- Token bucket (rl-core/src/token_bucket.rs). A level is `tok` whole tokens
-- and `gr` grains (0 <= gr < gpt, the grains per token); `tok` is negative
-- in debt.
do
  local Bucket = {}
  Bucket.__index = Bucket

  -- ceil((a * gpt + b) / gpm) µs, for a >= 0 and -gpt < b.
  function Bucket:time_for(a, b)
    return self.refill_time(self.gpt, self.gpm, a, b) or beyond('the token bucket would refill')
  end

  -- The time until full from (tok, gr).
  function Bucket:to_full(tok, gr)
    if tok >= self.limit then return 0 end
    return self:time_for(self.limit - tok, -gr)
  end

  function Bucket:remaining(tok)
    if tok <= 0 then return 0 end
    return min(tok, self.limit)
  end

  -- The level at `now`: the stored one refilled since it was written, or less
  -- the refill still owed when it was written for a later instant.
  function Bucket:level_at(state, now)
    if not state then return self.limit, 0 end
    local tok, gr = state.tok, state.gr
    if tok >= self.limit then tok, gr = self.limit, 0 end
    if now >= state.at then
      local elapsed = now - state.at
      if elapsed == 0 or tok >= self.limit then return tok, gr end
      if elapsed >= self:to_full(tok, gr) then return self.limit, 0 end
      local dt, dg = muldivmod(elapsed, self.gpm, self.gpt)
      tok, gr = tok + dt, gr + dg
      if gr >= self.gpt then tok, gr = tok + 1, gr - self.gpt end
      if tok >= self.limit then return self.limit, 0 end
      return tok, gr
    end
    local ot, og = muldivmod(state.at - now, self.gpm, self.gpt)
    if not ot then beyond('the token bucket would owe a refill') end
    tok, gr = tok - ot, gr - og
    if gr < 0 then tok, gr = tok - 1, gr + self.gpt end
    return tok, gr
  end

  function Bucket:recorded(now, at, tok, gr)
    if at >= RANGE.instant then beyond('the token bucket would be written') end
    local stored = { tok = tok, gr = gr, at = at }
    local lt, lg = tok, gr
    if at ~= now then lt, lg = self:level_at(stored, now) end
    local reset = self:to_full(lt, lg)
    if now + reset >= RANGE.instant then beyond('the token bucket would refill') end
    return {
      d = decision(false, self.limit, self:remaining(lt), ALLOWED, reset),
      change = stored,
      expires_at = now + reset,
    }
  end

  function Bucket:check(state, now, q)
    local tok, gr = self:level_at(state, now)
    local dec = decision(false, self.limit, self:remaining(tok), ALLOWED, self:to_full(tok, gr))
    local done = settled(dec, q)
    if done then return done end
    if tok < q then
      dec.blocked = true
      dec.retry = self:time_for(q - tok, -gr)
      return unchanged(dec)
    end
    return self:recorded(now, now, tok - q, gr)
  end

  function Bucket:force(state, now, q)
    local tok, gr = self:level_at(state, now)
    if self.limit - (tok - q) > MAX_HELD then return nil end
    return self:recorded(now, now, tok - q, gr)
  end

  function Bucket:reserve(state, now, at, q)
    at = max(at, now)
    local tok, gr = self:level_at(state, at)
    return self:recorded(now, at, tok - q, gr)
  end

  function Bucket:rested_at(state, now)
    return now + self:check(state, now, 0).d.reset
  end

  function Bucket:refund(state, now, q)
    if not state or q == 0 then return refunded(self, state, now, 'same') end
    local tok, gr = self:level_at(state, now)
    if tok >= self.limit then return refunded(self, state, now, 'same') end
    if tok + q >= self.limit then return refunded(self, state, now, 'rested') end
    return refunded(self, state, now, 'store', self:owing(now, tok + q, gr))
  end

  -- rl-core's `owing`: the level (tok, gr) at `now`, below full, stored as
  -- of `now` when a state may hold it; deeper (a refill owed to a later
  -- instant, at a faster rate), as of the instant the refill brings it
  -- within one microsecond's refill of full: the same level at every
  -- instant, in a state that reads back.
  function Bucket:owing(now, tok, gr)
    if tok >= -MAX_HELD then return { tok = tok, gr = gr, at = now } end
    -- (limit - tok) * gpt - gr grains short of full: d whole µs of refill
    -- and rem grains more.
    local qd, r = muldivmod(self.limit - tok, self.gpt, self.gpm)
    if not qd then beyond('the token bucket would refill') end
    local extra, rem = divmod_floor(r - gr, self.gpm)
    local at = now + qd + extra
    if at >= RANGE.instant then beyond('the token bucket would be written') end
    local nt, ng = divmod_floor(-rem, self.gpt)
    return { tok = self.limit + nt, gr = ng, at = at }
  end

  -- A stored level in this bucket's grains: rounded toward less when it was
  -- written with another grain, never granting a grain more.
  function Bucket:adopt(raw)
    local gpt = self.gpt
    if raw.gpt == gpt then return { tok = raw.tok, gr = raw.gr, at = raw.at } end
    if raw.tok >= 0 then
      local part = muldivmod(raw.gr, gpt, raw.gpt)
      return { tok = raw.tok, gr = part, at = raw.at }
    end
    -- A debt: its magnitude, rescaled up.
    local mt, mr = -raw.tok, 0
    if raw.gr > 0 then mt, mr = -raw.tok - 1, raw.gpt - raw.gr end
    local c, r = muldivmod(mr, gpt, raw.gpt)
    if r > 0 then c = c + 1 end
    if c == 0 then return { tok = -mt, gr = 0, at = raw.at } end
    if c == gpt then return { tok = -mt - 1, gr = 0, at = raw.at } end
    return { tok = -mt - 1, gr = gpt - c, at = raw.at }
  end

  algorithm(2, {
    word = 'TOKEN_BUCKET', reserves = true,
    params = { { name = 'capacity', lo = 1, hi = MAX_LIMIT }, { name = 'refill_count', lo = 1, hi = MAX_LIMIT }, { name = 'refill_period', duration = true } },
    build = function(v, args, from, unit)
      within_ahead(v[1], v[3], v[2], 'capacity', 0, 'capacity * refill_period / refill_count')
      local capacity, gpt, gpm, refill_time = bucket_limiter(args, from, unit)
      return setmetatable({ limit = capacity, gpt = gpt, gpm = gpm, refill_time = refill_time, reserves = true }, Bucket)
    end,
    adopt = function(lim, raw) return lim:adopt(raw) end,
  })
end
