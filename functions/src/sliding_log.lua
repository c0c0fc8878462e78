-- The sliding log (rl-core/src/sliding_log.rs), read in the stored bytes
-- (`codec_sliding_log`).
do
  local Log = {}
  Log.__index = Log

  function Log:in_window(log, now)
    if not log then return 0 end
    if now >= self.w then return log_later_than(log, now - self.w) end
    return log.n
  end

  -- A query's decision on the log's first n entries, of which the newest
  -- in_window are in the window.
  function Log:query(log, now, n, in_window)
    local reset = 0
    if n > 0 and in_window > 0 then reset = until_(now, log_get(log, n - 1) + self.w) end
    return decision(false, self.limit, max(self.limit - in_window, 0), ALLOWED, reset)
  end

  -- `q` entries at `at` (>= now): they go in at their instant; entries from
  -- the future (reservations) stay the newest.
  function Log:appended(newest, in_window, now, at, q)
    local keep = max(self.limit, in_window + q)
    local last = at
    if newest and newest > last then last = newest end
    local reset = until_(now, last + self.w)
    return {
      d = decision(false, self.limit, max(self.limit - in_window - q, 0), ALLOWED, reset),
      change = { at = at, count = q, keep = keep },
      expires_at = now + reset,
    }
  end

  function Log:survey(log, now)
    if not log or log.n == 0 then return nil, 0 end
    return log_get(log, log.n - 1), self:in_window(log, now)
  end

  function Log:check(log, now, q)
    local n = log and log.n or 0
    local in_window = self:in_window(log, now)
    local dec = self:query(log, now, n, in_window)
    local done = settled(dec, q)
    if done then return done end
    local may_stay = self.limit - q
    if n > may_stay then
      local wait = until_(now, log_get(log, n - 1 - may_stay) + self.w)
      if wait > 0 then
        dec.blocked, dec.retry = true, wait
        return unchanged(dec)
      end
    end
    local newest = nil
    if n > 0 then newest = log_get(log, n - 1) end
    return self:appended(newest, in_window, now, now, q)
  end

  function Log:force(log, now, q)
    local newest, in_window = self:survey(log, now)
    if in_window + q > MAX_HELD then return nil end
    return self:appended(newest, in_window, now, now, q)
  end

  function Log:reserve(log, now, at, q)
    local newest, in_window = self:survey(log, now)
    return self:appended(newest, in_window, now, max(at, now), q)
  end

  function Log:rested_at(log, now)
    return now + self:check(log, now, 0).d.reset
  end

  function Log:refund(log, now, q)
    if not log then return { d = self:check(nil, now, 0).d, give = 'nothing' } end
    local in_window = self:in_window(log, now)
    local shed = min(q, in_window)
    local dec = self:query(log, now, log.n - shed, in_window - shed)
    if shed == 0 then return { d = dec, give = 'nothing' } end
    if shed == in_window then return { d = dec, give = 'rested' } end
    local horizon = nil
    if now >= self.w then horizon = now - self.w end
    return { d = dec, give = 'store', change = { newest = shed, horizon = horizon }, expires_at = now + dec.reset }
  end

  algorithm(4, {
    word = 'SLIDING_LOG', reserves = true, logs = true,
    params = { { name = 'limit', setting = 'sliding_log_max_limit' }, { name = 'window', duration = true } },
    build = function(_, args, from, unit)
      local limit, w = log_limiter(args, from, unit, settings)
      return setmetatable({ limit = limit, w = w, reserves = true }, Log)
    end,
    plan = function(_, log, change, ms) return plan_log(log, change, ms) end,
    plan_refund = function(_, log, change, ms) return plan_shed(log, change, ms) end,
  })
end
