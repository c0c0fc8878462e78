-- Decisions (rl-core/src/decision.rs, limiter.rs): retry is -1
-- (allowed), -2 (never) or µs.
local ALLOWED, NEVER = -1, -2

local function decision(blocked, limit, remaining, retry, reset)
  return { blocked = blocked, limit = limit, remaining = remaining, retry = retry, reset = reset }
end

local function ceil_div(n, d)
  local q = floor(n / d)
  if q * d < n then q = q + 1 end
  return q
end

-- The reply: five integers, times in `unit` rounded up.
local function five(d, unit)
  local retry = d.retry
  if retry < 0 then retry = -1 else retry = ceil_div(retry, unit) end
  return { d.blocked and 1 or 0, d.limit, d.remaining, retry, ceil_div(d.reset, unit) }
end

-- An outcome: the decision, and the update (change, expires_at) if any.
local function unchanged(d) return { d = d } end

-- A query (q 0) changes nothing; more than the limit can never pass.
local function settled(d, q)
  if q == 0 then return unchanged(d) end
  if q > d.limit then
    d.blocked, d.retry = true, NEVER
    return unchanged(d)
  end
  return nil
end

-- rl-core's `refunded`: the decision of a query on the state a refund leaves.
local function refunded(lim, state, now, kind, value)
  if kind == 'same' then
    return { d = lim:check(state, now, 0).d, give = 'nothing' }
  elseif kind == 'rested' then
    return { d = lim:check(nil, now, 0).d, give = 'rested' }
  end
  local d = lim:check(value, now, 0).d
  return { d = d, give = 'store', change = value, expires_at = now + d.reset }
end

-- x = q * d + r with 0 <= r < d, for |x| below 2^52.
local function divmod_floor(x, d)
  local q = floor(x / d)
  local r = x - q * d
  if r < 0 then q, r = q - 1, r + d elseif r >= d then q, r = q + 1, r - d end
  return q, r
end

-- µs from now until `at`, or 0.
local function until_(now, at)
  if at > now then return at - now end
  return 0
end
