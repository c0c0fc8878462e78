-- RL.ALL's general path (src/all.rs): several limits, one decision.

-- RL.ALL's binding limit: refused, the refusing one that waits longest
-- (never counts as longest); else the one with the fewest remaining. Ties:
-- the first.
local function binding(limits)
  local refused = false
  for i = 1, #limits do
    if limits[i].d.blocked then refused = true end
  end
  local function wait_of(d)
    if d.retry == NEVER then return nil end
    if d.retry == ALLOWED then return 0 end
    return d.retry
  end
  local best = nil
  for i = 1, #limits do
    local d = limits[i].d
    local better
    if not best then
      better = true
    else
      local cur = limits[best].d
      if refused then
        local a, b = wait_of(d), wait_of(cur)
        better = d.blocked and (not cur.blocked or (a == nil and b ~= nil) or (a ~= nil and b ~= nil and a > b))
      else
        better = d.remaining < cur.remaining
      end
    end
    if better then best = i end
  end
  return best
end

local function expected_algorithms()
  local list = {}
  for i = 1, #ALGORITHMS do list[i] = ALGORITHMS[i].word end
  return words(list, 'or')
end

-- When the limits do not parse: whether numkeys is what went wrong (the
-- first algorithm name stands after another number of keys).
local function miscounted(tokens, numkeys)
  for i = 1, #tokens do
    if ALGORITHM_OF[upper(tokens[i])] then
      local given = i - 1
      if given >= 1 and given ~= numkeys then
        fail(fmt('ERR numkeys is %d, but %d %s given before the first algorithm (\'%s\')', numkeys, given,
          given == 1 and 'key was' or 'keys were', printable(tokens[i])))
      end
      return
    end
  end
end

-- rl_all's call; the keys' `values` and `now`, when the one pass has
-- read them.
function G.all(keys, args, values, now)
  local n = #keys
  if 2 + n + #args < 6 then arity_error('rl.all') end
  if n < 1 or n > MAX_KEYS then bad_number('numkeys', 1, MAX_KEYS) end
  -- The tokens after numkeys, as the module reads them.
  local tokens = {}
  for i = 1, n do tokens[i] = keys[i] end
  for i = 1, #args do tokens[n + i] = args[i] end
  local function too_few()
    miscounted(tokens, n)
    fail(fmt('ERR numkeys is %d, but fewer keys and limits follow', n))
  end
  local seen = {}
  for i = 1, n do
    if seen[keys[i]] then fail(fmt('ERR key \'%s\' is given twice', printable(keys[i]))) end
    seen[keys[i]] = true
  end
  local specs, at = {}, 1
  for position = 1, n do
    local token = args[at]
    if not token then too_few() end
    local alg = ALGORITHM_OF[upper(token)]
    if not alg then
      miscounted(tokens, n)
      fail(fmt('ERR limit %d: unknown algorithm \'%s\' (expected %s)', position, printable(token), expected_algorithms()))
    end
    if at + #alg.params > #args then too_few() end
    specs[position] = { alg = alg, from = at + 1 }
    at = at + 1 + #alg.params
  end
  local req = options('rl.all', args, at, TAGGED_OPTIONS)
  -- Each limit read and judged in turn, as the module does: an error names
  -- the first limit that has one.
  now = now or clock()
  local limits, refused = {}, false
  for i = 1, n do
    local ok, e = pcall(limit_of, specs[i].alg, args, specs[i].from, req, keys[i], values ~= nil, values and values[i] or nil)
    if not ok then
      if type(e) == 'table' and e.kind == PARAM then
        e.message = fmt('ERR limit %d (%s): %s', i, specs[i].alg.word, sub(e.message, 5))
      end
      error(e, 0)
    end
    limits[i] = e
    decide(e, req, nil, now)
    if e.d.blocked then refused = true end
  end
  -- Every limit allows: a reservation is recorded by all at the latest of
  -- their earliest instants, a partial grant by all for the least grant;
  -- those whose answer differs are judged again with it.
  local joint, waits_for = nil, nil
  if not refused and req.mode == WAIT then
    local latest = nil
    for i = 1, n do
      local t = limits[i].earliest
      if t and (not latest or t > latest) then latest = t end
    end
    if latest then
      joint = { at = latest }
      if latest > now then
        for i = 1, n do
          if limits[i].earliest == latest then waits_for = i break end
        end
      end
    end
  elseif not refused and req.mode == AT_MOST then
    local least = limits[1].granted
    for i = 2, n do least = min(least, limits[i].granted) end
    joint = { grant = least }
  end
  if joint then
    for i = 1, n do
      local e = limits[i]
      local differs
      if joint.at then differs = e.earliest ~= joint.at else differs = e.granted ~= joint.grant end
      if differs then decide(e, req, joint, now) end
    end
  end
  local b = waits_for or binding(limits)
  local chosen = limits[b]
  local reply = five(chosen.d, req.unit)
  reply[6] = b
  if req.mode == AT_MOST then reply[7] = chosen.granted end
  if chosen.d.blocked and SETTINGS.shadow then return shadowed(reply) end
  for i = 1, n do
    local e = limits[i]
    if e.write and (not refused or e.d.blocked) then apply(e.key, e.write, e.bytes) end
  end
  return reply
end
