-- Concurrency (rl-core/src/concurrency.rs): leases of units, each with a
-- deadline; their ids derive from the server's clock (`codec_concurrency`).
local Leases = {}
Leases.__index = Leases

local function new_leases(limit, timeout)
  return setmetatable({ limit = limit, timeout = timeout }, Leases)
end

-- When a key whose latest deadline is `latest` and last id `last` stops
-- mattering: no earlier than the instant after its last id, so that an id
-- derived from the clock never repeats.
local function lease_expiry(latest, last)
  return max(latest, last + 1)
end

function Leases:acquire(view, now, q)
  local held, latest, expired = 0, now, 0
  local live = {}
  for _, l in ipairs(leases_of(view)) do
    if now < l.deadline then
      held = held + l.units
      latest = max(latest, l.deadline)
      live[#live + 1] = l
    else
      expired = expired + 1
    end
  end
  local dec = decision(false, self.limit, max(self.limit - held, 0), ALLOWED, latest - now)
  if q == 0 then return { d = dec } end
  if q > self.limit then
    dec.blocked, dec.retry = true, NEVER
    return { d = dec }
  end
  if held + q > self.limit then
    sort(live, function(a, b)
      if a.deadline ~= b.deadline then return a.deadline < b.deadline end
      return a.units < b.units
    end)
    local wait, left = 0, held
    for _, l in ipairs(live) do
      left = left - l.units
      if left + q <= self.limit then
        wait = l.deadline - now
        break
      end
    end
    dec.blocked, dec.retry = true, wait
    return { d = dec }
  end
  local last = view and view.last or 0
  local id = max(now, last + 1)
  local deadline = now + self.timeout
  latest = max(latest, deadline)
  dec.remaining = self.limit - held - q
  dec.reset = latest - now
  return {
    d = dec,
    lease = id,
    update = { now = now, acquired = { id = id, deadline = deadline, units = q }, last = id, expired = expired,
      expires_at = lease_expiry(latest, id) },
  }
end

-- The update that keeps the live leases at `now` less `released`, with
-- `renewed` ({id, deadline}).
local function lease_update(view, now, released, renewed)
  local expired, latest, any = 0, 0, false
  for _, l in ipairs(leases_of(view)) do
    if now >= l.deadline then
      expired = expired + 1
    elseif l.id ~= released then
      local deadline = l.deadline
      if renewed and renewed.id == l.id then deadline = renewed.deadline end
      latest = max(latest, deadline)
      any = true
    end
  end
  local last = view.last
  local expires_at = nil
  if any then
    expires_at = lease_expiry(latest, last)
  elseif last >= now then
    expires_at = lease_expiry(now, last)
  end
  return { now = now, released = released, renewed = renewed, last = last, expired = expired, expires_at = expires_at }
end

local function find_live(view, now, id)
  if not view or not id then return nil end
  for _, l in ipairs(leases_of(view)) do
    if l.id == id and now < l.deadline then return l end
  end
  return nil
end
