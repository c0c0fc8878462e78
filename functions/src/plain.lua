-- The one-pass call: a call decided in one pass, reading its key once and
-- writing it once, with no table but its reply. It takes the plain call
-- (`params [quantity] [MS]`) and the options that change nothing of what
-- is decided at once (PEEK; BLOCK, WAIT and AT_MOST when the request is
-- allowed now; FORCE; a GCRA refund). Everything else, and every error,
-- takes the general path, which answers the same (tests/functions.rs
-- compares both with the module, call for call).
--
-- `kept` is what a function of the library keeps between calls (see
-- `kept`): the limiters it built, and its last expiry as text. A script
-- keeps nothing (nil).

-- A decimal integer as Redis reads it, when it is one from lo to hi (both
-- below 2^53): its value, else nil. (string.find is looked up here: this
-- runs for a limiter the library has not kept, and in a script, where a
-- name bound for every call would cost more.)
local function decimal(s, lo, hi)
  if #s <= 15 and (string.find(s, '^[1-9]%d*$') or s == '0') then
    local v = s + 0
    if v >= lo and v <= hi then return v end
  end
  return nil
end

-- `[quantity] [options]` from args[from], where the one pass takes them:
-- the quantity, the unit (µs), how the units are taken ('take', 'refund',
-- 'force', 'wait' or 'at_most'), PEEK, and WAIT's and BLOCK's durations
-- (µs); nil for what the general path answers (an error, an option given
-- twice or in mixed case).
local function request(args, from)
  local n = #args
  if from > n then return 1, 1000000, 'take', false end
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
-- goes as the decimal string a command takes: Lua would format a number
-- argument with "%.14g", several thousand instructions, where '%d' costs a
-- fraction of that; the library keeps the last one, as it repeats (a fixed
-- window's end is that of every call in the window).
local function write(key, value, ms, kept)
  local text
  if kept and kept.ms == ms then
    text = kept.ms_text
  else
    text = fmt('%d', ms)
    if kept then kept.ms, kept.ms_text = ms, text end
  end
  if pxat then
    call('SET', key, value, 'PXAT', text)
  else
    call('SET', key, value)
    call('PEXPIREAT', key, text)
  end
end
