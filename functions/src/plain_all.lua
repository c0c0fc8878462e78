-- RL.ALL in one pass: every limit's algorithm and parameters, then
-- `[quantity] [MS]`, at most 8 keys and all apart, read with one MGET; a
-- nil is an absent key unless EXISTS says it holds another type (then the
-- general path answers).

-- rl_all: the one pass's reply, else false and what was read (the values,
-- and now) for the general path. After `kept` come `request`, `write`,
-- `settings` and `decimal`, and each algorithm's one-pass limiter (which makes its
-- decision function), as ALGORITHMS orders them: a script pays for each
-- local a function takes from outside it, and nothing for an argument. `S`
-- holds each limit's limiter (its numbers and decision function, as a list)
-- and decision, 8 slots a limit, then the absent keys (the library keeps
-- it).
local function all(keys, args, kept, request, write, settings, decimal, gl, bl, fl, ll, cl)
  local S = kept and kept.scratch
  if not S then
    -- (Sized for 3 limits and keys: grown slot by slot, dear in a script.
    -- Of nils: one instruction fills them, where each 0 takes one.)
    S = { nil, nil, nil, nil, nil, nil, nil, nil, nil, nil, nil, nil, nil, nil, nil, nil,
      nil, nil, nil, nil, nil, nil, nil, nil, nil, nil, nil, nil, nil, nil, nil, nil }
    if kept then kept.scratch = S end
  end
  local n = #keys
  if n == 0 or n > 8 then return false end
  for i = 2, n do
    local k = keys[i]
    for j = 1, i - 1 do
      if keys[j] == k then return false end
    end
  end
  -- The unit, from the last word (a limit's parameters are numbers): MS
  -- there is the option, checked below with the quantity.
  local m = #args
  local last = args[m]
  local unit = 1000000
  if last == 'MS' or last == 'ms' then unit = 1000 end
  local at = 1
  for i = 1, n do
    local word = args[at]
    if not word then return false end
    -- The algorithm the limit names: its number (the general path's
    -- ALGORITHMS), its parameters' count and its one-pass functions.
    local alg, p, limiter
    for _ = 1, 2 do
      if word == 'FIXED' then
        alg, p, limiter = 3, 2, fl
        break
      elseif word == 'GCRA' then
        alg, p, limiter = 1, 3, gl
        break
      elseif word == 'SLIDING_LOG' then
        alg, p, limiter = 4, 2, ll
        break
      elseif word == 'SLIDING_COUNTER' then
        alg, p, limiter = 5, 2, cl
        break
      elseif word == 'TOKEN_BUCKET' then
        alg, p, limiter = 2, 3, bl
        break
      end
      word = string.upper(word)
    end
    if not alg or at + p > m then return false end
    -- The limiter's numbers (as `rate`), as a list: kept, or built.
    local from = at + 1
    local lim
    local by_alg = kept and kept[alg]
    if by_alg then
      lim = by_alg[unit][args[from]]
      if lim then
        lim = lim[args[from + 1]]
        if lim and p == 3 then lim = lim[args[from + 2]] end
      end
    end
    if not lim then
      lim = { limiter(args, from, unit, settings) }
      if not lim[1] then return false end
      if by_alg then by_alg:keep(unit, args, from, p, lim) end
    end
    local base = (i - 1) * 8
    S[base + 3] = lim
    at = from + p
  end
  local q = 1
  if at <= m then
    local u, mode, peek, wait, block
    q, u, mode, peek, wait, block = request(args, at, decimal)
    if not q or u ~= unit or mode ~= 'take' or peek or wait or block then return false end
  end
  -- (`redis` once: a global costs the library's functions far more than
  -- a local.)
  local R = redis
  local values
  if n == 1 then
    values = R.call('MGET', keys[1])
  elseif n == 2 then
    values = R.call('MGET', keys[1], keys[2])
  elseif n == 3 then
    values = R.call('MGET', keys[1], keys[2], keys[3])
  else
    values = R.call('MGET', unpack(keys, 1, n))
  end
  -- The absent keys, after the limits' slots.
  local absent = n * 8
  for i = 1, n do
    if not values[i] then
      absent = absent + 1
      S[absent] = keys[i]
    end
  end
  if absent > n * 8 and R.call('EXISTS', unpack(S, n * 8 + 1, absent)) > 0 then return false end
  local t = R.call('TIME')
  local now = t[1] * 1000000 + t[2]
  local refused = false
  for i = 1, n do
    local base = (i - 1) * 8
    local lim = S[base + 3]
    local blocked, remaining, retry, reset, value, ms = lim[6](values[i] or nil, now, q, 'take', lim[1], lim[2], lim[3], lim[4], lim[5])
    -- (Slots 1, 2 and 5 to 8 take the decision; 3 keeps the limiter.)
    if not blocked then return false, values, now end
    S[base + 1], S[base + 2], S[base + 5], S[base + 6], S[base + 7], S[base + 8] = blocked, remaining, retry, reset, value, ms
    if blocked == 1 then refused = true end
  end
  -- The binding limit (binding(), on these lists): refused, the refusing
  -- one that waits longest (never counts as longest); else the one with the
  -- fewest remaining. Ties: the first. (Shadowed: the general path's.)
  local best = 1
  if refused then
    if (kept and kept.settings or settings()).shadow then return false, values, now end
    best = nil
    for i = 1, n do
      local base = (i - 1) * 8
      if S[base + 1] == 1 then
        if not best then
          best = i
        else
          local a, b = S[base + 5], S[(best - 1) * 8 + 5]
          if b ~= -2 and (a == -2 or a > b) then best = i end
        end
      end
    end
  else
    local least = S[2]
    for i = 2, n do
      local r = S[(i - 1) * 8 + 2]
      if r < least then best, least = i, r end
    end
    local last, text
    for i = 1, n do
      local base = (i - 1) * 8
      local value = S[base + 7]
      if value then
        local ms = S[base + 8]
        text = write(keys[i], value, ms, kept, last, text, R)
        last = ms
      end
    end
  end
  local base = (best - 1) * 8
  local retry = S[base + 5]
  local reset = S[base + 6]
  -- (As `rate` rounds them.)
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
  return { S[base + 1], S[base + 3][1], S[base + 2], retry, reset, best }
end
