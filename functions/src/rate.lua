-- The commands' general path (src/rate.rs): parse every option, read the
-- key (or take what the one pass read), judge, and plan the write.

-- The block header, and the state after it.
local function open(alg, key, bytes)
  if not bytes then return { body = '' }, nil end
  local frame
  if byte(bytes, 1) == 66 then
    if #bytes < BLOCK_HEADER then
      state_error(key, alg.name, 'expected \'B\' and a 7-byte instant before the state', nil)
    end
    local ends = u56_at(bytes, 2)
    if not ends or ends >= RANGE.instant then beyond_state(key, alg.name) end
    frame = { block = ends, body = sub(bytes, BLOCK_HEADER + 1) }
    if frame.body == '' then return frame, nil end
  else
    frame = { body = bytes }
  end
  local st, problem = alg.decode(frame.body)
  if problem then state_error(key, alg.name, problem, frame.body) end
  if not st then beyond_state(key, alg.name) end
  return frame, st
end

-- Decide the request on one limit (`e`: its algorithm, limiter, key, frame
-- and state), and plan its write.
local function decide(e, req, joint, now)
  local alg, lim, frame, state = e.alg, e.lim, e.frame, e.state
  local v = judge(lim, state, frame.block, now, req, joint)
  if v == OVERDRAWN then
    fail(fmt('ERR FORCE would leave key \'%s\' holding more than %.0f units, debt included (nothing was recorded)',
      printable(e.key), MAX_HELD))
  end
  e.d, e.granted, e.earliest, e.write = v.d, v.granted, v.earliest, nil
  local effect = v.effect
  if effect.kind == 'record' and alg.logs and effect.change.count > 0 then
    local entries = min((state and state.n or 0) + effect.change.count, effect.change.keep)
    if entries > SETTINGS.sliding_log_max_limit then
      fail(fmt('ERR the sliding log of key \'%s\' would hold %.0f entries, more than ratelimit.sliding_log_max_limit (%.0f) allows (nothing was recorded)',
        printable(e.key), entries, SETTINGS.sliding_log_max_limit))
    end
  end
  if req.peek then return end
  local block = frame.block
  if block and now >= block then block = nil end
  local kind = effect.kind
  if kind == 'record' then
    -- (The entries a log records carry the call's tag.)
    if alg.logs then effect.change.tag = req.tag end
    e.write = framed(alg.plan(lim, state, effect.change, ceil_div(effect.expires_at, 1000)), frame, block)
  elseif kind == 'refund' then
    if effect.give == 'rested' then
      e.write = framed(DELETE, frame, block)
    elseif effect.give == 'store' and state then
      e.write = framed(alg.plan_refund(lim, state, effect.change, ceil_div(effect.expires_at, 1000)), frame, block)
    end
  elseif kind == 'block' then
    e.write = block_plan(frame, effect.ends, ceil_div(effect.expires_at, 1000))
  end
end

-- Parse one limit's parameters, read its key (unless the one pass has:
-- `read`, and its `bytes`), and open its state.
local function limit_of(alg, args, from, req, key, read_, bytes)
  if req.mode == WAIT and not alg.reserves then
    fail_param(fmt('ERR WAIT does not work with %s: a window cannot hold a later window\'s requests (WAIT works with RL.GCRA, RL.TOKEN_BUCKET and RL.SLIDING_LOG)',
      upper(alg.name)))
  end
  local values = {}
  for i = 1, #alg.params do values[i] = parse_param(alg.params[i], args[from + i - 1], req.unit) end
  local lim = alg.build(values, args, from, req.unit)
  if not read_ then bytes = read(key) end
  local frame, raw = open(alg, key, bytes)
  local state = raw
  if raw and alg.adopt then state = alg.adopt(lim, raw) end
  return { alg = alg, lim = lim, key = key, bytes = bytes, frame = frame, state = state }
end

-- A refusal answered as allowed (the shadow switch).
local function shadowed(reply)
  reply[1], reply[4] = 0, -1
  return reply
end

-- A rate function's call (algorithm `i`); `now`, and the key's `bytes`,
-- when the one pass has read them.
function G.rate(i, keys, args, bytes, now)
  local alg = ALGORITHMS[i]
  local key = one_key(keys, 'rl_' .. sub(alg.name, 4), alg.name)
  local n = #alg.params
  if #args < n then arity_error(alg.name) end
  local req = options(alg.name, args, n + 1, alg.logs and TAGGED_OPTIONS or RATE_OPTIONS)
  local e = limit_of(alg, args, 1, req, key, now ~= nil, bytes)
  decide(e, req, nil, now or clock())
  local reply = five(e.d, req.unit)
  if req.mode == AT_MOST then reply[6] = e.granted end
  if e.d.blocked and SETTINGS.shadow then return shadowed(reply) end
  if e.write then apply(key, e.write, e.bytes) end
  return reply
end
