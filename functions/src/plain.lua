-- The one pass: a call that reads its key once and writes it once, with no
-- table but its reply: the plain call and the options decided at once
-- (PEEK; BLOCK, WAIT, AT_MOST when allowed now; FORCE; a GCRA refund). All
-- else, errors too, takes the general path, which answers the same
-- (tests/functions.rs compares both with the module): a one-pass function
-- answers false, then what it read, and the function's caller (build.py's
-- FUNCTIONS: the library's registration, a script's last lines) hands that
-- to the general path. So no one-pass function refers to the general path,
-- and a script builds it only in a call that takes it.
--
-- A limiter is the numbers its parameters give, limit first (nil: the
-- general path words it), in five values (nil where it has fewer), then its
-- decision function: made by the limiter, kept by the library with the
-- numbers, so that a script makes only those of the algorithms a call
-- uses. Bounds as numbers (see `bounds`): MAX_LIMIT 1e9,
-- MAX_PERIOD 1e15 µs, MAX_HELD 4e9, RANGE.ahead 3e15, RANGE.instant 6e15
-- µs. `kept`: what the library keeps (see `kept`); nil in a script.
--
-- A script runs its whole text each call, up to its one pass's answer:
-- each top-level function and each local that such a function uses costs
-- it an allocation, so the one-pass parts are few functions, and look the
-- standard library up where they use it.

-- A decimal integer as Redis reads it, from lo to hi (both below 2^53):
-- its value, else nil.
local function decimal(s, lo, hi)
  if #s <= 15 and (string.find(s, '^[1-9]%d*$') or s == '0') then
    local v = s + 0
    if v >= lo and v <= hi then return v end
  end
  return nil
end

-- `[quantity] [options]` from args[from]: the quantity, the unit (µs), the
-- mode ('take', 'refund', 'force', 'wait', 'at_most'), PEEK, WAIT's and
-- BLOCK's durations (µs); nil for the general path (an error, an option
-- twice or in mixed case). `decimal` as an argument: a script pays for each
-- local a function takes from outside it.
local function request(args, from, decimal)
  local n = #args
  local q, unit, mode, peek, wait, block = 1, 1000000, 'take', false, nil, nil
  local i = from
  while i <= n do
    local a = args[i]
    if a == 'MS' or a == 'ms' then
      if unit == 1000 then return nil end
      unit = 1000
    elseif a == 'PEEK' or a == 'peek' then
      if peek then return nil end
      peek = true
    elseif a == 'WAIT' or a == 'wait' then
      if mode ~= 'take' or i == n then return nil end
      mode, wait, i = 'wait', args[i + 1], i + 1
    elseif a == 'BLOCK' or a == 'block' then
      if block or i == n then return nil end
      block, i = args[i + 1], i + 1
    elseif a == 'REFUND' or a == 'refund' or a == 'FORCE' or a == 'force' or a == 'AT_MOST' or a == 'at_most' then
      if mode ~= 'take' then return nil end
      if a == 'REFUND' or a == 'refund' then
        mode = 'refund'
      elseif a == 'FORCE' or a == 'force' then
        mode = 'force'
      else
        mode = 'at_most'
      end
    elseif i == from then
      q = decimal(a, 0, 1e9)
      if not q then return nil end
    else
      return nil
    end
    i = i + 1
  end
  if block then
    -- (A refund or a forced request is never refused: no BLOCK with them.)
    if mode == 'refund' or mode == 'force' then return nil end
    block = decimal(block, 1, 1e15 / unit)
    if not block then return nil end
    block = block * unit
  end
  if wait then
    wait = decimal(wait, 0, 1e15 / unit)
    if not wait then return nil end
    wait = wait * unit
  end
  return q, unit, mode, peek, wait, block
end

-- SET with an absolute expiry (ms), as the module replicates it. The expiry
-- goes as a string ('%d': Lua's "%.14g", and the server's own "%.17g" of a
-- number, are far dearer); the library keeps the last (a window's calls
-- share it), and a caller may hand back the expiry and text of its last
-- write (`last`, `last_text`: RL.ALL's limits often share one), and
-- `redis` (`R`, where the caller holds it: a global costs the library's
-- functions far more than a local). Answers the text. A server that does
-- not tell scripts its version (before 7.0; not the library's: `kept`) gets
-- SET then PEXPIREAT, as from the module (6.0 has no PXAT).
local function write(key, value, ms, kept, last, last_text, R)
  local text
  if kept and kept.ms == ms then
    text = kept.ms_text
  elseif ms == last then
    text = last_text
  else
    text = string.format('%d', ms)
    if kept then kept.ms, kept.ms_text = ms, text end
  end
  R = R or redis
  if kept or R.REDIS_VERSION_NUM then
    R.call('SET', key, value, 'PXAT', text)
  else
    R.call('SET', key, value)
    R.call('PEXPIREAT', key, text)
  end
  return text
end
