-- The rate functions (rl_gcra, rl_token_bucket, rl_fixed, rl_sliding_log,
-- rl_sliding_counter): the call in one pass where it can be, else the
-- general path, handed what was read (the key and the clock are read once).
-- `alg` numbers the algorithm (the general path's ALGORITHMS), `n` its
-- parameters; `limiter` and `decide` are its one-pass functions.
local function rate(keys, args, kept, alg, n, limiter, decide)
  if #keys == 1 and #args >= n then
    local q, unit, mode, peek, _, block = request(args, n + 1)
    local lim
    if q and kept then
      -- The limiter kept for these parameter strings (see `kept`).
      lim = kept[unit][args[1]]
      if lim then
        lim = lim[args[2]]
        if lim and n == 3 then lim = lim[args[3]] end
      end
    end
    if q and not lim then
      lim = limiter(args, 1, unit)
      if lim and kept then kept:keep(unit, args, 1, n, lim) end
    end
    if lim and (mode ~= 'wait' or lim.reserves) then
      local key = keys[1]
      local bytes = pcall_r('GET', key)
      -- A string, false (no key), or the error of another type.
      if not bytes or not bytes.err then
        bytes = bytes or nil
        local t = call('TIME')
        local now = t[1] * 1000000 + t[2]
        local blocked, remaining, retry, reset, value, ms = decide(lim, bytes, now, q, mode)
        -- A refusal is the one pass's where it is the answer: not with a
        -- WAIT that may reserve, an AT_MOST that may grant less, a BLOCK
        -- that starts, or the shadow switch.
        if blocked == 0 or (blocked == 1 and mode ~= 'wait' and mode ~= 'at_most' and not block and not SETTINGS.shadow) then
          if value and not peek then
            if value == true then call('DEL', key) else write(key, value, ms, kept) end
          end
          -- The reply in `unit`, times rounded up.
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
          if mode == 'at_most' then return { blocked, lim.limit, remaining, retry, reset, q } end
          return { blocked, lim.limit, remaining, retry, reset }
        end
        return general().rate(alg, keys, args, bytes, now)
      end
    end
  end
  return general().rate(alg, keys, args)
end
