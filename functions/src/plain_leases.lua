-- Leases in one pass (the general path: `concurrency`, `leases`): a value
-- of at most two leases, written whole: 'Q', the last lease id (8 bytes),
-- then 20-byte records: id, deadline (0 once released), units.

-- The leases of such a value: how many, the last id (the header's or the
-- newest lease's, the larger) and each record's id, deadline and
-- units; nil for anything else (another form, a corrupt value, ids past
-- 2^53), which the general path reads.
local function lease_records(bytes)
  local len = #bytes
  if len > 64 or len < 9 or (len - 9) % 20 ~= 0 then return nil end
  local n = (len - 9) / 20
  local tag, last, id1, d1, u1, id2, d2, u2 = struct.unpack('<BI8I8I8I4I8I8I4', bytes .. string.rep('\0', 40 - n * 20))
  if tag ~= 81 or last >= 2^53 or id1 >= 2^53 or d1 >= 2^53 or id2 >= 2^53 or d2 >= 2^53 then return nil end
  local newest = last
  if n == 2 then newest = id2 elseif n == 1 then newest = id1 end
  if n >= 1 and (id1 == 0 or u1 == 0 or (id1 > last and id1 > newest)) then return nil end
  if n == 2 and (id2 <= id1 or u2 == 0) then return nil end
  if newest > last then last = newest end
  -- An id of 0 the clock never gives: the general path calls it corrupt.
  if last == 0 then return nil end
  return n, last, id1, d1, u1, id2, d2, u2
end

-- The leases still held at `now` (deadline ahead of it) but `id`: their
-- records, the latest deadline, their units; how many expired; and the
-- units of `id`, if it is held.
local function leases_at(bytes, now, n, id, id1, d1, u1, id2, d2, u2)
  local keep, latest, held, expired, units = '', 0, 0, 0, nil
  if n >= 1 and d1 ~= 0 then
    if now >= d1 then
      expired = expired + 1
    elseif id1 == id then
      units = u1
    else
      keep, latest, held = string.sub(bytes, 10, 29), d1, u1
    end
  end
  if n == 2 and d2 ~= 0 then
    if now >= d2 then
      expired = expired + 1
    elseif id2 == id then
      units = u2
    else
      keep, held = keep .. string.sub(bytes, 30, 49), held + u2
      if d2 > latest then latest = d2 end
    end
  end
  return keep, latest, held, expired, units
end

-- `n` as 8 bytes, little-endian.
local function u64(n)
  local lo = n % 2^32
  return struct.pack('<I4I4', lo, (n - lo) / 2^32)
end

-- ceil(µs / 1000): an expiry in ms.
local function ms_of(us)
  local r = us % 1000
  us = (us - r) / 1000
  if r > 0 then us = us + 1 end
  return us
end

-- rl_concurrency: a lease taken at once, `limit timeout [quantity] [MS]
-- [PEEK]`; a refusal that may wait, and every other case, the general path
-- (false, then the key's bytes and now where read).
local function concurrency(keys, args)
  if #keys ~= 1 or #args < 2 then return false end
  local q, unit, mode, peek, wait, block = request(args, 3, decimal)
  local most = settings().concurrency_max_limit
  if most > 1e9 then most = 1e9 end
  local limit = decimal(args[1], 1, most)
  local timeout = q and decimal(args[2], 1, 1e15 / unit)
  if not (limit and timeout and mode == 'take') or wait or block then return false end
  timeout = timeout * unit
  local key = keys[1]
  local bytes = redis.pcall('GET', key)
  local n, last, id1, d1, u1, id2, d2, u2 = 0, 0
  if bytes then
    if bytes.err then return false end
    n, last, id1, d1, u1, id2, d2, u2 = lease_records(bytes)
    if not n then return false, bytes end
  end
  local t = redis.call('TIME')
  local now = t[1] * 1000000 + t[2]
  local keep, latest, held, expired = leases_at(bytes, now, n, nil, id1, d1, u1, id2, d2, u2)
  if latest < now then latest = now end
  local remaining, blocked, id = 0, 0, 0
  if limit > held then remaining = limit - held end
  if q > limit then
    blocked = 1
  elseif q > 0 then
    -- Refused for the units held: the general path says when.
    if held + q > limit then return false, bytes, now end
    id = last + 1
    if now > id then id = now end
    local deadline = now + timeout
    if deadline > latest then latest = deadline end
    remaining = limit - held - q
    if peek then
      id = 0
    else
      -- Appended to the value as it is, or the live leases rewritten after
      -- an expired one (plan_leases); the expiry no earlier than the
      -- instant after the last id, so an id never repeats.
      local record = u64(id) .. u64(deadline) .. struct.pack('<I4', q)
      local value
      if bytes and expired == 0 then value = bytes .. record else value = 'Q' .. u64(id) .. keep .. record end
      if #value > 64 then return false, bytes, now end
      local ends = latest
      if id + 1 > ends then ends = id + 1 end
      write(key, value, ms_of(ends), nil)
    end
  end
  local reset = latest - now
  local r = reset % unit
  reset = (reset - r) / unit
  if r > 0 then reset = reset + 1 end
  return { blocked, limit, remaining, -1, reset, id }
end

-- rl_release: a lease given back from a value of at most two leases; a
-- key that does not exist answers 0 without the clock.
local function release(keys, args)
  if #keys == 1 and #args == 1 then
    local s = args[1]
    if (#s < 16 or (#s == 16 and s < '9007199254740992')) and string.find(s, '^[1-9]%d*$') then
      local key, id = keys[1], s + 0
      local bytes = redis.pcall('GET', key)
      if not bytes then return 0 end
      local n, last, id1, d1, u1, id2, d2, u2
      if not bytes.err then n, last, id1, d1, u1, id2, d2, u2 = lease_records(bytes) end
      if n then
        local t = redis.call('TIME')
        local now = t[1] * 1000000 + t[2]
        local keep, latest, _, _, units = leases_at(bytes, now, n, id, id1, d1, u1, id2, d2, u2)
        if not units then return 0 end
        -- The others kept (lease_update), until the latest deadline and no
        -- earlier than the instant after the last id; none, and no id to
        -- keep from repeating: the key deleted.
        local ends
        if keep ~= '' then
          ends = latest
          if last + 1 > ends then ends = last + 1 end
        elseif last >= now then
          ends = last + 1
          if now > ends then ends = now end
        end
        if ends then
          write(key, 'Q' .. u64(last) .. keep, ms_of(ends), nil)
        else
          redis.call('DEL', key)
        end
        return units
      end
    end
  end
  return false
end

-- rl_renew: a held lease's deadline moved to now + timeout, in a value of
-- at most two leases: in place while none has expired, else the live ones
-- rewritten (plan_leases).
local function renew(keys, args)
  local m = #args
  if #keys == 1 and (m == 2 or (m == 3 and (args[3] == 'MS' or args[3] == 'ms'))) then
    local unit = 1000000
    if m == 3 then unit = 1000 end
    local s = args[1]
    local timeout = decimal(args[2], 1, 1e15 / unit)
    if timeout and (#s < 16 or (#s == 16 and s < '9007199254740992')) and string.find(s, '^[1-9]%d*$') then
      local key, id = keys[1], s + 0
      local bytes = redis.pcall('GET', key)
      if not bytes then return 0 end
      local n, last, id1, d1, u1, id2, d2, u2
      if not bytes.err then n, last, id1, d1, u1, id2, d2, u2 = lease_records(bytes) end
      if n then
        local t = redis.call('TIME')
        local now = t[1] * 1000000 + t[2]
        local _, latest, _, expired, units = leases_at(bytes, now, n, id, id1, d1, u1, id2, d2, u2)
        if not units then return 0 end
        local deadline = now + timeout * unit
        if deadline > latest then latest = deadline end
        local sub = string.sub
        local value
        if expired == 0 then
          -- The record's deadline (bytes 9 to 16 of it) in place.
          local at = 18
          if id == id2 then at = 38 end
          value = sub(bytes, 1, at - 1) .. u64(deadline) .. sub(bytes, at + 8)
        else
          value = 'Q' .. u64(last)
          if d1 ~= 0 and now < d1 then
            if id == id1 then value = value .. u64(id1) .. u64(deadline) .. struct.pack('<I4', u1) else value = value .. sub(bytes, 10, 29) end
          end
          if n == 2 and d2 ~= 0 and now < d2 then
            if id == id2 then value = value .. u64(id2) .. u64(deadline) .. struct.pack('<I4', u2) else value = value .. sub(bytes, 30, 49) end
          end
        end
        local ends = latest
        if last + 1 > ends then ends = last + 1 end
        write(key, value, ms_of(ends), nil)
        return 1
      end
    end
  end
  return false
end
