-- The rate functions: the one pass's reply where it can be, else false and
-- what was read (the key's bytes, and now) for the general path. `alg`:
-- the algorithm's number (ALGORITHMS), `n` its parameters; then the
-- algorithm's limiter (which makes its decision function), and `request`,
-- `write`, `settings` and `decimal`, as arguments: a script pays for each
-- local a function takes from outside it.
local function rate(keys, args, kept, alg, n, limiter, request, write, settings, decimal)
  if #keys ~= 1 or #args < n then return false end
  local q, unit, mode, peek, block = 1, 1000000, 'take', false, nil
  if #args > n then
    -- A lone quantity: the value the library kept for it (kept[0]), else
    -- read (a word is no number: `request` reads it).
    q = nil
    if #args == n + 1 then
      local a = args[n + 1]
      q = kept and kept[0][a]
      if not q then
        q = decimal(a, 0, 1e9)
        if q and kept then kept:keep(0, args, n + 1, 1, q) end
      end
    end
    if not q then
      local _
      q, unit, mode, peek, _, block = request(args, n + 1, decimal)
      if not q then return false end
    end
  end
  -- The limiter's numbers, limit first, and its decision: those kept for
  -- these parameter strings, or built.
  local l1, l2, l3, l4, l5, decide
  local lim = kept and kept[unit][args[1]]
  if lim then
    lim = lim[args[2]]
    if lim and n == 3 then lim = lim[args[3]] end
  end
  if lim then
    l1, l2, l3, l4, l5, decide = lim[1], lim[2], lim[3], lim[4], lim[5], lim[6]
  else
    l1, l2, l3, l4, l5, decide = limiter(args, 1, unit, settings)
    if not l1 then return false end
    if kept then kept:keep(unit, args, 1, n, { l1, l2, l3, l4, l5, decide }) end
  end
  local key = keys[1]
  -- (`redis` once: a global costs the library's functions far more than
  -- a local.)
  local R = redis
  local bytes = R.pcall('GET', key)
  -- A string, false (no key), or the error of another type.
  if bytes and bytes.err then return false end
  local t = R.call('TIME')
  local now = t[1] * 1000000 + t[2]
  local blocked, remaining, retry, reset, value, ms = decide(bytes, now, q, mode, l1, l2, l3, l4, l5)
  -- A refusal is the one pass's where it is the answer: not with a WAIT
  -- that may reserve, an AT_MOST that may grant less, a BLOCK that
  -- starts, or the shadow switch.
  if not (blocked == 0 or (blocked == 1 and mode ~= 'wait' and mode ~= 'at_most' and not block
    and not (kept and kept.settings or settings()).shadow)) then
    return false, bytes or nil, now
  end
  if value and not peek then
    if value == true then R.call('DEL', key) else write(key, value, ms, kept, nil, nil, R) end
  end
  -- The reply in `unit`, times rounded up (written out here and in
  -- `all_plain`: a script pays for each function it defines, each call).
  if retry < 0 then
    retry = -1
  else
    local r = retry % unit
    retry = (retry - r) / unit
    if r > 0 then retry = retry + 1 end
  end
  local r = reset % unit
  reset = (reset - r) / unit
  if r > 0 then reset = reset + 1 end
  if mode == 'at_most' then return { blocked, l1, remaining, retry, reset, q } end
  return { blocked, l1, remaining, retry, reset }
end
