-- The lease commands' general path (src/concurrency.rs).

-- A lease id: a positive 64-bit integer. Past 2^53 it names no lease this
-- edition can hold (nil), and is still a valid argument.
local function lease_id(s)
  if find(s, '^[1-9]%d*$') and (#s < 19 or (#s == 19 and s <= LEASE_MAX)) then
    if #s < 16 or (#s == 16 and s < '9007199254740992') then return s + 0, true end
    return nil, true
  end
  -- (2^63 - 1 is no double: the bound as text.)
  fail('ERR lease must be an integer from 1 to ' .. LEASE_MAX)
end

-- The leases a key holds (unless the one pass has read it: `read_`, and
-- its `bytes`), and its bytes.
local function read_leases(key, read_, bytes)
  if not read_ then bytes = read(key) end
  if not bytes then return nil, nil end
  local view, problem = lease_view(bytes)
  if problem then state_error(key, 'rl.concurrency', problem, bytes) end
  if not view then beyond_state(key, 'rl.concurrency') end
  return view, bytes
end

local function write_leases(key, view, bytes, update)
  apply(key, plan_leases(view, update), bytes)
end

-- rl_concurrency's call; the key's `bytes` and `now`, when the one pass
-- has read them.
function G.concurrency(keys, args, bytes, now)
  local key = one_key(keys, 'rl_concurrency', 'rl.concurrency')
  if #args < 2 then arity_error('rl.concurrency') end
  local req = options('rl.concurrency', args, 3, LEASE_OPTIONS)
  local limit = capped(args[1], 'limit', 'concurrency_max_limit')
  local timeout = duration(args[2], 'timeout', 1, req.unit)
  local lim = new_leases(limit, timeout)
  local view
  view, bytes = read_leases(key, bytes ~= nil or now ~= nil, bytes)
  local a = lim:acquire(view, now or clock(), req.q)
  local reply = five(a.d, req.unit)
  reply[6] = 0
  if a.update and not req.peek then
    write_leases(key, view, bytes, a.update)
    reply[6] = a.lease
  end
  return reply
end

function G.release(keys, args)
  local key = one_key(keys, 'rl_release', 'rl.release')
  if #args ~= 1 then arity_error('rl.release') end
  local id = lease_id(args[1])
  local view, bytes = read_leases(key)
  local now = clock()
  local lease = find_live(view, now, id)
  if not lease then return 0 end
  write_leases(key, view, bytes, lease_update(view, now, id, nil))
  return lease.units
end

function G.renew(keys, args)
  local key = one_key(keys, 'rl_renew', 'rl.renew')
  if #args < 2 then arity_error('rl.renew') end
  local unit = 1000000
  for i = 3, #args do
    if lower(args[i]) == 'ms' then unit = 1000 else unknown_option('rl.renew', args[i], UNIT_OPTIONS, false) end
  end
  local id = lease_id(args[1])
  local timeout = duration(args[2], 'timeout', 1, unit)
  local view, bytes = read_leases(key)
  local now = clock()
  if not find_live(view, now, id) then return 0 end
  write_leases(key, view, bytes, lease_update(view, now, nil, { id = id, deadline = now + timeout }))
  return 1
end
