-- One limit's judgement of a request (rl-core/src/request.rs): what to
-- answer, what it grants, its earliest instant and what to store.

-- A forced request that would hold more than the module allows.
local OVERDRAWN = {}
local judge
do
  local NOTHING = { kind = 'nothing' }

  local function record_effect(outcome)
    if outcome.change then return { kind = 'record', change = outcome.change, expires_at = outcome.expires_at } end
    return NOTHING
  end

  local function verdict(d, granted, earliest, effect)
    return { d = d, granted = granted, earliest = earliest, effect = effect }
  end

  local function while_blocked(d, block, now)
    if block then
      d.remaining = 0
      d.reset = max(d.reset, until_(now, block))
    end
    return d
  end

  local function recorded(outcome, block, now, granted, at)
    return verdict(while_blocked(outcome.d, block, now), granted, at, record_effect(outcome))
  end

  local function refused(lim, block, now, req, max_wait, delay, rested_at, own)
    local q = req.q
    local rests = 0
    if rested_at then rests = until_(now, rested_at) elseif own then rests = own.d.reset end
    local remaining = 0
    if own and not block then remaining = own.d.remaining end
    local starts = nil
    if req.block and not block and delay and q > 0 then starts = now + req.block end
    local retry = NEVER
    if delay then
      local wait = delay
      if starts then wait = max(delay, req.block) end
      retry = max(wait - max_wait, 0)
    end
    local ends = starts or block
    local reset = rests
    if ends then reset = max(rests, until_(now, ends)) end
    if q == 0 and not block then retry = ALLOWED end
    if starts then remaining = 0 end
    local effect = NOTHING
    if starts then effect = { kind = 'block', ends = starts, expires_at = max(now + rests, starts) } end
    local earliest = nil
    if delay then earliest = now + delay end
    return verdict(decision(q > 0 or block ~= nil, lim.limit, remaining, retry, reset), 0, earliest, effect)
  end

  local function decide_wait(lim, state, block, now, req, max_wait, joint, rested_at, own)
    local q = req.q
    local left = 0
    if block then left = until_(now, block) end
    local delay
    if not own then
      if q <= lim.limit then delay = left end
    else
      local r = own.d.retry
      if r == ALLOWED then delay = max(0, left) elseif r ~= NEVER then delay = max(r, left) end
    end
    local earliest = nil
    if delay then earliest = now + delay end
    if joint and joint.at then delay = until_(now, joint.at) end
    if delay == 0 and own and not own.d.blocked then
      local granted = 0
      if own.change then granted = q end
      return verdict(own.d, granted, earliest, record_effect(own))
    end
    if delay and delay <= max_wait and delay > 0 then
      local at = now + delay
      local reserved = lim.reserves and lim:reserve(state, now, at, q)
      if reserved then
        local v = recorded(reserved, block, now, q, at)
        v.d.retry = delay
        return v
      end
      return refused(lim, block, now, req, max_wait, delay, rested_at, nil)
    end
    return refused(lim, block, now, req, max_wait, delay, rested_at, own)
  end

  local function wait(lim, state, block, now, req, max_wait, joint)
    local rested_at, own = nil, nil
    if block then rested_at = lim:rested_at(state, now) end
    if not (block and rested_at <= block) then own = lim:check(state, now, req.q) end
    return decide_wait(lim, state, block, now, req, max_wait, joint, rested_at, own)
  end

  local function one_of(req)
    return { q = 1, mode = req.mode, block = req.block, max_wait = req.max_wait }
  end

  local function grant_less(lim, state, now, req, wanted)
    local granted = min(wanted, lim:check(state, now, 0).d.remaining)
    if granted == 0 then return wait(lim, state, nil, now, one_of(req), 0, nil) end
    local took = lim:check(state, now, granted)
    if took.change and not took.d.blocked then return recorded(took, nil, now, granted, now) end
    return wait(lim, state, nil, now, one_of(req), 0, nil)
  end

  local function at_most(lim, state, block, now, req, joint)
    if block then return wait(lim, state, block, now, one_of(req), 0, nil) end
    local wanted = req.q
    if joint and joint.grant then wanted = joint.grant end
    local took = lim:check(state, now, wanted)
    if took.change and not took.d.blocked then return recorded(took, block, now, wanted, now) end
    return grant_less(lim, state, now, req, wanted)
  end

  local function judge_options(lim, state, block, now, req, joint)
    local q, mode = req.q, req.mode
    if q == 0 then return wait(lim, state, block, now, req, 0, nil) end
    if mode == TAKE then return wait(lim, state, block, now, req, 0, joint) end
    if mode == WAIT then return wait(lim, state, block, now, req, req.max_wait, joint) end
    if mode == AT_MOST then return at_most(lim, state, block, now, req, joint) end
    if mode == REFUND then
      local r = lim:refund(state, now, q)
      return verdict(while_blocked(r.d, block, now), 0, nil, { kind = 'refund', give = r.give, change = r.change, expires_at = r.expires_at })
    end
    local forced = lim:force(state, now, q)
    if not forced then return OVERDRAWN end
    return recorded(forced, block, now, q, now)
  end

  function judge(lim, state, block, now, req, joint)
    if block and now >= block then block = nil end
    local q, mode = req.q, req.mode
    local at_once = mode == TAKE or mode == AT_MOST or mode == WAIT or q == 0
    if not block and not joint and at_once then
      local own = lim:check(state, now, q)
      if not own.d.blocked then
        local granted = 0
        if own.change then granted = q end
        return verdict(own.d, granted, now, record_effect(own))
      end
      if q ~= 0 then
        if mode == AT_MOST then return grant_less(lim, state, now, req, q) end
        if mode == WAIT then return decide_wait(lim, state, nil, now, req, req.max_wait, nil, nil, own) end
      end
      if not req.block then
        local earliest = nil
        if own.d.retry >= 0 then earliest = now + own.d.retry end
        return verdict(own.d, 0, earliest, NOTHING)
      end
    end
    if block and mode == TAKE and not joint then
      if lim:rested_at(state, now) <= block then
        local left = until_(now, block)
        local passes = q <= lim.limit
        local retry, earliest = NEVER, nil
        if passes then retry, earliest = left, block end
        return verdict(decision(true, lim.limit, 0, retry, left), 0, earliest, NOTHING)
      end
    end
    return judge_options(lim, state, block, now, req, joint)
  end
end
