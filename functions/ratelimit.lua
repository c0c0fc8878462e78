#!lua name=ratelimit
-- redis-ratelimit, the functions edition (SPEC 17): the module's commands
-- as a Redis Functions library: the module's answers and bytes.
--
--   redis-cli -x FUNCTION LOAD REPLACE < functions/ratelimit.lua
--   FCALL rl_gcra 1 user:42 9 10 1 MS WAIT 500
--
-- Written by functions/build.py from functions/src/ (edit those): each
-- part is the file of its name, after a line `-- part: NAME`. A
-- function's script, for EVALSHA (docs/functions.md), is its line below:
-- `-- script NAME: LINE | PARTS | LINE | PARTS | LINE`, each LINE a line
-- of its own and each PARTS the parts it names, in order (the last two
-- fields may be absent).
-- script rl_gcra: if not redis.REDIS_VERSION_NUM then redis.replicate_commands() end | settings exact plain plain_gcra plain_rate | local ok, reply, a, b = pcall(rate, KEYS, ARGV, nil, 1, 3, gcra_limiter, request, write, settings, decimal) if ok and reply ~= false then return reply end | base general bounds errors limbs args options decision codec codec_gcra codec_token_bucket codec_fixed_window codec_sliding_log codec_sliding_counter codec_concurrency writes frame algorithms gcra request store rate general_end | if not ok then return failure(reply) end return guard(general().rate, 1, KEYS, ARGV, a, b)
-- script rl_token_bucket: if not redis.REDIS_VERSION_NUM then redis.replicate_commands() end | settings exact plain plain_token_bucket plain_rate | local ok, reply, a, b = pcall(rate, KEYS, ARGV, nil, 2, 3, bucket_limiter, request, write, settings, decimal) if ok and reply ~= false then return reply end | base general bounds errors limbs args options decision codec codec_gcra codec_token_bucket codec_fixed_window codec_sliding_log codec_sliding_counter codec_concurrency writes frame algorithms token_bucket request store rate general_end | if not ok then return failure(reply) end return guard(general().rate, 2, KEYS, ARGV, a, b)
-- script rl_fixed: if not redis.REDIS_VERSION_NUM then redis.replicate_commands() end | settings exact plain plain_fixed plain_rate | local ok, reply, a, b = pcall(rate, KEYS, ARGV, nil, 3, 2, fixed_limiter, request, write, settings, decimal) if ok and reply ~= false then return reply end | base general bounds errors limbs args options decision codec codec_gcra codec_token_bucket codec_fixed_window codec_sliding_log codec_sliding_counter codec_concurrency writes frame algorithms fixed_window request store rate general_end | if not ok then return failure(reply) end return guard(general().rate, 3, KEYS, ARGV, a, b)
-- script rl_sliding_log: if not redis.REDIS_VERSION_NUM then redis.replicate_commands() end | settings exact plain plain_sliding_log plain_rate | local ok, reply, a, b = pcall(rate, KEYS, ARGV, nil, 4, 2, log_limiter, request, write, settings, decimal) if ok and reply ~= false then return reply end | base general bounds errors limbs args options decision codec codec_gcra codec_token_bucket codec_fixed_window codec_sliding_log codec_sliding_counter codec_concurrency writes frame algorithms sliding_log request store rate general_end | if not ok then return failure(reply) end return guard(general().rate, 4, KEYS, ARGV, a, b)
-- script rl_sliding_counter: if not redis.REDIS_VERSION_NUM then redis.replicate_commands() end | settings exact plain plain_sliding_counter plain_rate | local ok, reply, a, b = pcall(rate, KEYS, ARGV, nil, 5, 2, counter_limiter, request, write, settings, decimal) if ok and reply ~= false then return reply end | base general bounds errors limbs args options decision codec codec_gcra codec_token_bucket codec_fixed_window codec_sliding_log codec_sliding_counter codec_concurrency writes frame algorithms sliding_counter request store rate general_end | if not ok then return failure(reply) end return guard(general().rate, 5, KEYS, ARGV, a, b)
-- script rl_all: if not redis.REDIS_VERSION_NUM then redis.replicate_commands() end | settings exact plain plain_gcra plain_token_bucket plain_fixed plain_sliding_log plain_sliding_counter plain_all | local ok, reply, a, b = pcall(all, KEYS, ARGV, nil, request, write, settings, decimal, gcra_limiter, bucket_limiter, fixed_limiter, log_limiter, counter_limiter) if ok and reply ~= false then return reply end | base general bounds errors limbs args options decision codec codec_gcra codec_token_bucket codec_fixed_window codec_sliding_log codec_sliding_counter codec_concurrency writes frame algorithms gcra token_bucket fixed_window sliding_log sliding_counter request store rate all general_end | if not ok then return failure(reply) end return guard(general().all, KEYS, ARGV, a, b)
-- script rl_concurrency: if not redis.REDIS_VERSION_NUM then redis.replicate_commands() end | settings exact plain plain_leases | local ok, reply, a, b = pcall(concurrency, KEYS, ARGV) if ok and reply ~= false then return reply end | base general bounds errors limbs args options decision codec codec_gcra codec_token_bucket codec_fixed_window codec_sliding_log codec_sliding_counter codec_concurrency writes concurrency store leases general_end | if not ok then return failure(reply) end return guard(general().concurrency, KEYS, ARGV, a, b)
-- script rl_release: if not redis.REDIS_VERSION_NUM then redis.replicate_commands() end | settings exact plain plain_leases | local ok, reply, a, b = pcall(release, KEYS, ARGV) if ok and reply ~= false then return reply end | base general bounds errors limbs args options decision codec codec_gcra codec_token_bucket codec_fixed_window codec_sliding_log codec_sliding_counter codec_concurrency writes concurrency store leases general_end | if not ok then return failure(reply) end return guard(general().release, KEYS, ARGV, a, b)
-- script rl_renew: if not redis.REDIS_VERSION_NUM then redis.replicate_commands() end | settings exact plain plain_leases | local ok, reply, a, b = pcall(renew, KEYS, ARGV) if ok and reply ~= false then return reply end | base general bounds errors limbs args options decision codec codec_gcra codec_token_bucket codec_fixed_window codec_sliding_log codec_sliding_counter codec_concurrency writes concurrency store leases general_end | if not ok then return failure(reply) end return guard(general().renew, KEYS, ARGV, a, b)
-- script rl_version: if not redis.REDIS_VERSION_NUM then redis.replicate_commands() end | version | return VERSION
-- script rl_log: if not redis.REDIS_VERSION_NUM then redis.replicate_commands() end | settings exact base general bounds errors limbs args decision codec codec_gcra codec_token_bucket codec_fixed_window codec_sliding_log codec_sliding_counter codec_concurrency store inspect general_end | return guard(general().log, KEYS, ARGV)
-- script rl_inspect: if not redis.REDIS_VERSION_NUM then redis.replicate_commands() end | settings exact base general bounds errors limbs args decision codec codec_gcra codec_token_bucket codec_fixed_window codec_sliding_log codec_sliding_counter codec_concurrency store inspect general_end | return guard(general().inspect, KEYS, ARGV)
-- part: settings
-- The settings (docs/functions.md): edit, load again (scripts: build again).
-- A function: a script builds the table only in a call that reads it.
local function settings()
  return {
    -- Refusals of the rate functions are answered as allowed and record
    -- nothing (the module's `ratelimit.shadow`).
    shadow = false,
    -- The largest `limit` of rl_sliding_log, 1 to 1000000 (memory grows with it).
    sliding_log_max_limit = 10000,
    -- The largest `limit` of rl_concurrency, 1 to 1000000.
    concurrency_max_limit = 10000,
    -- The longest TAG value, in bytes, 1 to 1024 (a tagged log entry takes
    -- 10 bytes and its tag's).
    tag_max_bytes = 64,
  }
end
-- part: version
-- The library's version: the module's (Cargo.toml), answered by rl_version.
local VERSION = '0.1.0'
-- part: exact
-- Exact arithmetic on doubles (the general path adds the limbs, `limbs`).
-- Lua's numbers are doubles: every value here is an integer below 2^53, or
-- is computed exactly by `muldivmod`.

-- floor(a * b / d) and a * b % d, exactly, for integers 0 <= a, b < 2^53 and
-- 1 <= d < 2^53; nil for a quotient of 2^53 or more. A product below 2^52 is
-- exact in a double; past it, b is split as qb * d + rb and a * rb / d is
-- summed over a's bits in chunks so small that no step leaves 2^53.
local function muldivmod(a, b, d)
  local p = a * b
  if p < 2^52 then
    -- (p % d is p - floor(p / d) * d, exact here: the quotient as
    -- math.floor gives it, without the call.)
    local r = p % d
    local q = (p - r) / d
    if r < 0 then q, r = q - 1, r + d elseif r >= d then q, r = q + 1, r - d end
    return q, r
  end
  local floor = math.floor
  local qb = floor(b / d)
  local rb = b - qb * d
  if rb < 0 then qb, rb = qb - 1, rb + d elseif rb >= d then qb, rb = qb + 1, rb - d end
  local high = a * qb
  if high >= 2^53 then return nil end
  if d > 2^51 then
    -- Past 2^51 even one bit at a time would leave 2^53 (r * 2 + rb < 3d):
    -- a's bits from the top, each step modulo d without a sum past d.
    local bits, top = {}, a
    while top > 0 do
      local c = top % 2
      bits[#bits + 1] = c
      top = (top - c) / 2
    end
    local q, r = 0, 0
    for i = #bits, 1, -1 do
      local t = d - r
      if r >= t then q, r = q * 2 + 1, r - t else q, r = q * 2, r + r end
      if bits[i] == 1 then
        t = d - rb
        if r >= t then q, r = q + 1, r - t else r = r + rb end
      end
    end
    q = q + high
    if q >= 2^53 then return nil end
    return q, r
  end
  -- Chunks of k bits: acc_r * 2^k + chunk * rb < 2 * d * 2^k <= 2^53.
  local span = 2
  while span * 4 * d <= 2^53 do span = span * 2 end
  local chunks, top = {}, a
  while top > 0 do
    local c = top % span
    chunks[#chunks + 1] = c
    top = (top - c) / span
  end
  local q, r = 0, 0
  for i = #chunks, 1, -1 do
    local v = r * span + chunks[i] * rb
    local s = floor(v / d)
    local t = v - s * d
    if t < 0 then s, t = s - 1, t + d elseif t >= d then s, t = s + 1, t - d end
    q, r = q * span + s, t
  end
  q = q + high
  if q >= 2^53 then return nil end
  return q, r
end
-- part: plain
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
-- part: plain_gcra
-- GCRA in one pass (the general path: `gcra`, `codec_gcra`). A state in
-- its usual form: 'G' and the TAT in ticks of 1/840 µs (9 bytes).

-- The limiter of `max_burst count period` (args[from] on, the period in
-- `unit` µs): the limit, the emission interval T / d µs in lowest terms,
-- and the tolerance, tol_u µs and tol_f ticks of 1/d µs; nil past the
-- edition's range ((max_burst + 1) * period / count at most 3e15 µs).
local function gcra_limiter(args, from, unit)
  local a, b, c = args[from], args[from + 1], args[from + 2]
  -- Integers as Redis reads them: max_burst may be 0, with no leading zero
  -- (among digits, a < '1' is one; a string comparison costs less than a call).
  if #a > 15 or #b > 15 or #c > 15 or (#a > 1 and a < '1')
    or not string.find(a .. ' ' .. b .. ' ' .. c, '^%d+ [1-9]%d* [1-9]%d*$') then
    return nil
  end
  local max_burst, count, period = a + 0, b + 0, c + 0
  if max_burst >= 1e9 or count > 1e9 or period > 1e15 / unit then return nil end
  period = period * unit
  local g, r = period, count
  while r ~= 0 do g, r = r, g % r end
  local limit, d, T = max_burst + 1, count / g, period / g
  local tol_u, tol_f
  if d == 1 then tol_u, tol_f = limit * T, 0 else tol_u, tol_f = muldivmod(limit, T, d) end
  if not tol_u or tol_u > 3e15 or (tol_u == 3e15 and tol_f > 0) then return nil end
  -- The decision at `now` on the stored bytes: blocked (0, 1), remaining,
  -- retry (µs; -1 allowed, -2 never), reset (µs), and for a write the value
  -- (true: delete) and its expiry (ms); nil where the general path answers.
  -- 'wait' and 'at_most' decide as 'take' (a refusal goes to the general path).
  local function gcra_decide(bytes, now, q, mode, limit, d, T, tol_u, tol_f)
    -- The TAT in this limiter's ticks (tu µs and tf ticks), now at rest.
    local tu, tf, stored = now, 0, false
    if bytes then
      if #bytes ~= 9 then return nil end
      local tag, lo, hi = struct.unpack('<BI4I4', bytes)
      if tag ~= 71 then return nil end
      -- (Whole divisions by `%`, exact on these integers below 2^42.)
      local hr = hi % 840
      local qh = (hi - hr) / 840
      local rest = hr * 2^32 + lo
      local f = rest % 840
      local u = qh * 2^32 + (rest - f) / 840
      if qh >= 2^21 or u >= 6e15 then return nil end
      if d ~= 840 and f > 0 then
        -- In this limiter's ticks, rounded up (Gcra:adopt): f * d < 840 * 10^9.
        local x = f * d
        local c = (x - x % 840) / 840
        if c * 840 < x then c = c + 1 end
        if c == d then u, f = u + 1, 0 else f = c end
      end
      if u > now or (u == now and f > 0) then tu, tf, stored = u, f, true end
    end
    local hu, hf = now + tol_u, tol_f
    -- The answer, measured from the TAT it leaves (ru, rf).
    local blocked, retry, ru, rf = 0, -1, tu, tf
    local nu, nf
    if mode == 'refund' then
      if not stored or q == 0 then
        -- Nothing to give back: a query.
      else
        -- Gcra:refund: the TAT less q * T, rested (the key deleted) where that
        -- is no later than now.
        local bu, bf
        if d == 1 then bu, bf = q * T, 0 else bu, bf = muldivmod(q, T, d) end
        nu, nf = now, 0
        if bu then
          nu, nf = tu - bu, tf - bf
          if nf < 0 then nu, nf = nu - 1, nf + d end
        end
        if not (nu > now or (nu == now and nf > 0)) then
          ru, rf, nu = now, 0, true
        end
      end
    elseif q > 0 then
      local force = mode == 'force'
      if q > limit and not force then
        blocked, retry = 1, -2
      else
        local qu, qf
        if d == 1 then qu, qf = q * T, 0 else qu, qf = muldivmod(q, T, d) end
        if not qu or qu >= 6e15 - tu then return nil end
        nu, nf = tu + qu, tf + qf
        if nf >= d then nu, nf = nu + 1, nf - d end
        if force then
          -- Overdrawn past MAX_HELD (4 * 10^9) intervals ahead of now, or
          -- near it: the general path words it (Gcra:force).
          local x = (tu - now) * d + tf
          if x >= 2^52 or x / T + q >= 4e9 - 1 then return nil end
        elseif nu > hu or (nu == hu and nf > hf) then
          local wu, wf = nu - hu, nf - hf
          if wf < 0 then wu, wf = wu - 1, wf + d end
          if wf > 0 then wu = wu + 1 end
          blocked, retry, nu = 1, wu, nil
        end
      end
    end
    local value, ms
    if nu == true then
      value = true
    elseif nu then
      if nu >= 6e15 or 840 % d ~= 0 then return nil end
      local ul = nu % 2^32
      local low = ul * 840 + nf * (840 / d)
      local lo = low % 2^32
      value = struct.pack('<BI4I4', 71, lo, (nu - ul) / 2^32 * 840 + (low - lo) / 2^32)
      ru, rf = nu, nf
    end
    -- reset: to the TAT, rounded up; remaining: the requests that fit between
    -- it and the horizon (Gcra:free).
    local reset = ru - now
    if rf > 0 then reset = reset + 1 end
    if value and value ~= true then
      ms = now + reset
      local r = ms % 1000
      ms = (ms - r) / 1000
      if r > 0 then ms = ms + 1 end
    end
    local room = 0
    if hu > ru or (hu == ru and hf > rf) then
      local du, df = hu - ru, hf - rf
      if df < 0 then du, df = du - 1, df + d end
      -- floor((du * d + df) / T): inline while du * d stays below 2^52.
      local x = du * d
      local k, r
      if x < 2^52 then
        r = x % T
        k = (x - r) / T
      else
        k, r = muldivmod(du, d, T)
      end
      r = r + df
      if r >= T then
        local s = r % T
        k = k + (r - s) / T
      end
      if k < limit then room = k else room = limit end
    end
    return blocked, room, retry, reset, value, ms
  end
  return limit, d, T, tol_u, tol_f, gcra_decide
end
-- part: plain_token_bucket
-- The token bucket in one pass (the general path: `token_bucket`,
-- `codec_token_bucket`). A state in its usual form: 'T', the instant (8
-- bytes), the grains per token (7 bytes) and a level of whole grains, not
-- in debt (12 bytes).

-- The limiter of `capacity refill_count refill_period` (as gcra_limiter):
-- the capacity, and gpt, gpm: a level is `tok` whole tokens and `gr`
-- grains of 1/gpt token; a token refills in gpt / gpm µs; and the function
-- `refill_time`. nil past the edition's range (capacity * refill_period /
-- refill_count at most 3e15 µs). (The function is made here, with the
-- limiter, kept by the library: at a script's top level it would cost each
-- call an allocation, and one more for the local it is, used or not.)
local function bucket_limiter(args, from, unit)
  local a, b, c = args[from], args[from + 1], args[from + 2]
  if #a > 15 or #b > 15 or #c > 15 or not string.find(a .. ' ' .. b .. ' ' .. c, '^[1-9]%d* [1-9]%d* [1-9]%d*$') then
    return nil
  end
  local capacity, count, period = a + 0, b + 0, c + 0
  if capacity > 1e9 or count > 1e9 or period > 1e15 / unit then return nil end
  period = period * unit
  local g, r = count, period
  while r ~= 0 do g, r = r, g % r end
  local gpt, gpm = period / g, count / g
  local full_u, full_r = muldivmod(capacity, gpt, gpm)
  if not full_u or full_u > 3e15 or (full_u == 3e15 and full_r > 0) then return nil end
  -- ceil((a * gpt + b) / gpm) µs, for a >= 0 and -gpt < b (Bucket:time_for);
  -- nil past 2^53.
  local function refill_time(gpt, gpm, a, b)
    local q, r = muldivmod(a, gpt, gpm)
    if not q then return nil end
    r = r + b
    local rest = r % gpm
    local extra = (r - rest) / gpm
    if rest < 0 then extra, rest = extra - 1, rest + gpm elseif rest >= gpm then extra, rest = extra + 1, rest - gpm end
    if rest > 0 then extra = extra + 1 end
    return q + extra
  end
  -- The decision, as gcra_decide answers it ('refund' goes to the general
  -- path; FORCE only where the bucket has the units, no debt).
  local function bucket_decide(bytes, now, q, mode, limit, gpt, gpm, refill_time)
    if mode == 'refund' then return nil end
    local tok, gr = limit, 0
    if bytes then
      if #bytes ~= 28 then return nil end
      local tag, alo, ahi, sgpt, l0, l1, h0, h1 = struct.unpack('<BI4I4I7I4I2I4I2', bytes)
      if tag ~= 84 or sgpt ~= gpt or h1 >= 32768 or ahi >= 2^21 then return nil end
      -- The stored level in whole tokens and grains.
      local lo48, hi48 = l1 * 2^32 + l0, h1 * 2^32 + h0
      local r
      if hi48 == 0 then
        r = lo48 % gpt
        tok = (lo48 - r) / gpt
      else
        local q1, r1 = muldivmod(hi48, 2^48, gpt)
        if not q1 then return nil end
        r = r1 + lo48
        local r2 = r % gpt
        tok, r = q1 + (r - r2) / gpt, r2
      end
      local at = ahi * 2^32 + alo
      if tok > 1e9 or (tok == 1e9 and r > 0) or at >= 6e15 then return nil end
      gr = r
      -- The level at `now` (Bucket:level_at): the stored one refilled since,
      -- or less the refill still owed when it was written for later.
      if tok >= limit then tok, gr = limit, 0 end
      if now >= at then
        local elapsed = now - at
        if elapsed > 0 and tok < limit then
          local to_full = refill_time(gpt, gpm, limit - tok, -gr)
          if not to_full then return nil end
          if elapsed >= to_full then
            tok, gr = limit, 0
          else
            local dt, dg = muldivmod(elapsed, gpm, gpt)
            tok, gr = tok + dt, gr + dg
            if gr >= gpt then tok, gr = tok + 1, gr - gpt end
            if tok >= limit then tok, gr = limit, 0 end
          end
        end
      else
        local ot, og = muldivmod(at - now, gpm, gpt)
        if not ot then return nil end
        tok, gr = tok - ot, gr - og
        if gr < 0 then tok, gr = tok - 1, gr + gpt end
      end
    end
    local remaining = 0
    if tok > 0 then
      if tok < limit then remaining = tok else remaining = limit end
    end
    local reset = 0
    if tok < limit then
      reset = refill_time(gpt, gpm, limit - tok, -gr)
      if not reset then return nil end
    end
    if q == 0 then return 0, remaining, -1, reset end
    if tok < q then
      if mode == 'force' then return nil end
      if q > limit then return 1, remaining, -2, reset end
      local retry = refill_time(gpt, gpm, q - tok, -gr)
      if not retry then return nil end
      return 1, remaining, retry, reset
    end
    -- Taken: the level left, written at now.
    local lt = tok - q
    if now >= 6e15 or lt * gpt >= 2^52 then return nil end
    local full = 0
    if lt < limit then
      full = refill_time(gpt, gpm, limit - lt, -gr)
      if not full then return nil end
    end
    if now + full >= 6e15 then return nil end
    local level = lt * gpt + gr
    local l48 = level % 2^48
    local h48 = (level - l48) / 2^48
    local nlo = now % 2^32
    local l32, h32 = l48 % 2^32, h48 % 2^32
    local value = struct.pack('<BI4I4I7I4I2I4I2', 84, nlo, (now - nlo) / 2^32, gpt, l32, (l48 - l32) / 2^32, h32, (h48 - h32) / 2^32)
    local left = 0
    if lt > 0 then
      if lt < limit then left = lt else left = limit end
    end
    local ms = now + full
    local r = ms % 1000
    ms = (ms - r) / 1000
    if r > 0 then ms = ms + 1 end
    return 0, left, -1, full, value, ms
  end
  return capacity, gpt, gpm, refill_time, nil, bucket_decide
end
-- part: plain_fixed
-- The fixed window in one pass (the general path: `fixed_window`,
-- `codec_fixed_window`). A state: 'F', the window's start (7 bytes) and the
-- count (4 bytes).

-- The limiter of `limit window` (as gcra_limiter): the limit and the
-- window (µs).
local function fixed_limiter(args, from, unit)
  local a, b = args[from], args[from + 1]
  if #a > 15 or #b > 15 or not string.find(a .. ' ' .. b, '^[1-9]%d* [1-9]%d*$') then return nil end
  local limit, window = a + 0, b + 0
  if limit > 1e9 or window > 1e15 / unit then return nil end
  -- The decision, as gcra_decide answers it ('refund' goes to the general
  -- path).
  local function fixed_decide(bytes, now, q, mode, limit, w)
    -- (A window cannot hold a later window's requests: WAIT is an error.)
    if mode == 'refund' or mode == 'wait' then return nil end
    -- The window in force (aligned to the epoch) and its count.
    local start, used = now - now % w, 0
    if bytes then
      if #bytes ~= 12 then return nil end
      local tag, s, count = struct.unpack('<BI7I4', bytes)
      if tag ~= 70 or count > 4e9 or s >= 6e15 then return nil end
      if s >= start then start, used = s - s % w, count end
    end
    local finish = start + w
    local to_end = 0
    if finish > now then to_end = finish - now end
    local reset = to_end
    if used == 0 then reset = 0 end
    local remaining = 0
    if limit > used then remaining = limit - used end
    if q == 0 then return 0, remaining, -1, reset end
    local count = used + q
    if mode == 'force' then
      -- More than MAX_HELD units: the general path words it.
      if count > 4e9 then return nil end
    else
      if q > limit then return 1, remaining, -2, reset end
      if count > limit then return 1, remaining, to_end, reset end
    end
    local left = 0
    if limit > count then left = limit - count end
    local ms = finish % 1000
    ms = (finish - ms) / 1000 + (ms > 0 and 1 or 0)
    return 0, left, -1, to_end, struct.pack('<BI7I4', 70, start, count), ms
  end
  return limit, window * unit, nil, nil, nil, fixed_decide
end
-- part: plain_sliding_log
-- The sliding log in one pass (the general path: `sliding_log`,
-- `codec_sliding_log`). A state written whole, of at most 64 bytes: 'L', the
-- ring's oldest slot 0 (4 bytes), then the instants, oldest first (8 bytes
-- each).

-- The limiter of `limit window` (as gcra_limiter, the limit capped by its
-- setting): the limit, the window (µs), that cap, and a list for the
-- log's instants (kept with the limiter). `settings` as an argument, as
-- every limiter is handed it (`rate`, `all`).
local function log_limiter(args, from, unit, settings)
  local a, b = args[from], args[from + 1]
  if #a > 15 or #b > 15 or not string.find(a .. ' ' .. b, '^[1-9]%d* [1-9]%d*$') then return nil end
  local cap = settings().sliding_log_max_limit
  local limit, window = a + 0, b + 0
  if limit > cap or limit > 1e9 or window > 1e15 / unit then return nil end
  -- The decision, as gcra_decide answers it ('refund' goes to the general
  -- path; a log with reservations, or that would grow past 64 bytes, too).
  local function log_decide(bytes, now, q, mode, limit, w, cap, entries)
    if mode == 'refund' then return nil end
    local n = 0
    if bytes then
      local len = #bytes
      if len > 64 or len < 5 or (len - 5) % 8 ~= 0 then return nil end
      local tag, oldest = struct.unpack('<BI4', bytes)
      if tag ~= 76 or oldest ~= 0 then return nil end
      n = (len - 5) / 8
      local previous = 0
      for i = 1, n do
        local v = struct.unpack('<I8', bytes, 6 + (i - 1) * 8)
        if v < previous or v >= 6e15 then return nil end
        entries[i], previous = v, v
      end
    end
    -- The entries in the window: the newest later than now - w.
    local in_window = n
    if now >= w then
      in_window = 0
      for i = n, 1, -1 do
        if entries[i] > now - w then in_window = in_window + 1 else break end
      end
    end
    local reset = 0
    if n > 0 and in_window > 0 and entries[n] + w > now then reset = entries[n] + w - now end
    local remaining = 0
    if limit > in_window then remaining = limit - in_window end
    if q == 0 then return 0, remaining, -1, reset end
    if mode == 'force' then
      -- More than MAX_HELD units: the general path words it.
      if in_window + q > 4e9 then return nil end
    else
      if q > limit then return 1, remaining, -2, reset end
      local may_stay = limit - q
      if n > may_stay then
        local ends = entries[n - may_stay] + w
        if ends > now then return 1, remaining, ends - now, reset end
      end
    end
    -- Appended at now: the log keeps at least `limit` entries (Log:appended).
    local keep = in_window + q
    if keep < limit then keep = limit end
    if n > 0 and entries[n] > now then return nil end -- reservations to keep the newest
    local most = n + q
    if most > keep then most = keep end
    if n >= keep or q > keep - n or most > cap or 5 + (n + q) * 8 > 64 then
      return nil
    end
    local left = 0
    if limit > in_window + q then left = limit - in_window - q end
    local lo = now % 2^32
    local value = string.rep(struct.pack('<I4I4', lo, (now - lo) / 2^32), q)
    if bytes then value = bytes .. value else value = 'L\0\0\0\0' .. value end
    local ms = now + w
    local r = ms % 1000
    ms = (ms - r) / 1000
    if r > 0 then ms = ms + 1 end
    return 0, left, -1, w, value, ms
  end
  return limit, window * unit, cap, {}, nil, log_decide
end
-- part: plain_sliding_counter
-- The sliding counter in one pass (the general path: `sliding_counter`,
-- `codec_sliding_counter`). A state: 'C', the current window's start (7
-- bytes), the previous and current windows' counts (4 bytes each).

-- The limiter of `limit window` (as gcra_limiter): the limit, the window
-- (µs), and the functions `counter_reset` and `counter_next_fit` (made
-- here, with the limiter, kept by the library: at a script's top level each
-- would cost every call an allocation, and one more for the local it is).
local function counter_limiter(args, from, unit)
  local a, b = args[from], args[from + 1]
  if #a > 15 or #b > 15 or not string.find(a .. ' ' .. b, '^[1-9]%d* [1-9]%d*$') then return nil end
  local limit, window = a + 0, b + 0
  if limit > 1e9 or window > 1e15 / unit then return nil end
  -- µs from now until the window that starts at `start` (counts prev and
  -- cur) stops counting: 0 when both are empty (Counter:reset).
  local function counter_reset(w, now, start, prev, cur)
    local ends
    if cur > 0 then ends = start + 2 * w elseif prev > 0 then ends = start + w else return 0 end
    if ends > now then return ends - now end
    return 0
  end

  -- The earliest instant `q` more fit, once refused (Counter:next_fit): nil
  -- past 2^53.
  local function counter_next_fit(limit, w, start, elapsed, prev, cur, q)
    if cur + q <= limit and prev > 0 then
      -- floor(n * w / prev) capped at w (Counter:span).
      local n, span = limit - cur - q, w
      if n < prev then span = muldivmod(n, w, prev) end
      local e = w - span
      if e < w and e > elapsed then return start + e end
    end
    local nxt = start + w
    if cur == 0 then return nxt end
    local n, span = limit - q, w
    if n < cur then span = muldivmod(n, w, cur) end
    return nxt + (w - span)
  end
  -- The decision, as gcra_decide answers it ('refund' goes to the general
  -- path).
  local function counter_decide(bytes, now, q, mode, limit, w, counter_reset, counter_next_fit)
    -- (A window cannot hold a later window's requests: WAIT is an error.)
    if mode == 'refund' or mode == 'wait' then return nil end
    local current = now - now % w
    -- The window in force, the previous one's count and its own.
    local start, prev, cur = current, 0, 0
    if bytes then
      if #bytes ~= 16 then return nil end
      local tag, s, p, c = struct.unpack('<BI7I4I4', bytes)
      if tag ~= 67 or p > 4e9 or c > 4e9 or s >= 6e15 then return nil end
      local st = s - s % w
      if st ~= s then p, c = 0, c + p end
      if st >= current then
        start, prev, cur = st, p, c
      elseif st + w == current then
        prev = c
      end
    end
    local elapsed = 0
    if now > start then
      elapsed = now - start
      if elapsed > w then elapsed = w end
    end
    -- The previous window's weighted share, ceil(prev * (w - elapsed) / w).
    local share, r = muldivmod(prev, w - elapsed, w)
    if r > 0 then share = share + 1 end
    local free = 0
    if limit > share then free = limit - share end
    local remaining = 0
    if free > cur then
      remaining = free - cur
      if remaining > limit then remaining = limit end
    end
    local reset = counter_reset(w, now, start, prev, cur)
    if q == 0 then return 0, remaining, -1, reset end
    if mode == 'force' then
      -- More than MAX_HELD units: the general path words it.
      if cur + q > 4e9 then return nil end
    else
      if q > limit then return 1, remaining, -2, reset end
      if share + cur + q > limit then
        local at = counter_next_fit(limit, w, start, elapsed, prev, cur, q)
        if not at then return nil end
        local retry = 0
        if at > now then retry = at - now end
        return 1, remaining, retry, reset
      end
    end
    cur = cur + q
    local full = counter_reset(w, now, start, prev, cur)
    local left = 0
    if free > cur then
      left = free - cur
      if left > limit then left = limit end
    end
    local ms = now + full
    local rest = ms % 1000
    ms = (ms - rest) / 1000
    if rest > 0 then ms = ms + 1 end
    return 0, left, -1, full, struct.pack('<BI7I4I4', 67, start, prev, cur), ms
  end
  return limit, window * unit, counter_reset, counter_next_fit, nil, counter_decide
end
-- part: plain_rate
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
-- part: plain_all
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
-- part: plain_leases
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
-- part: base
-- How a function's failures are worded: its one pass is called with pcall
-- and `failure`, its general path with `guard`. (A script reaches this part
-- only in a call its one pass did not answer: see `plain`.)

-- A failure as the module words it: a refusal (raised by `fail`, a table
-- with its message) as its message, a server's error reply as it is, and
-- any other failure as an error that shows no script location.
local function failure(result)
  if type(result) == 'table' then
    if result.message then return redis.error_reply(result.message) end
    if result.err then return result end
  end
  -- A server's refusal of a write (out of memory, a read-only replica),
  -- raised as text by scripts on older servers: its own words.
  if type(result) == 'string' then
    local refusal = result:match('OOM command not allowed.*') or result:match('READONLY .*')
    if refusal then return redis.error_reply((refusal:gsub('%s*script: .*$', ''))) end
  end
  return redis.error_reply('ERR internal error in the ratelimit library (the request was not applied)')
end

-- body(...)'s reply, or its failure worded.
local function guard(body, ...)
  local ok, result = pcall(body, ...)
  if ok then return result end
  return failure(result)
end
-- part: general
-- The general path: every option, form of state and error. Its parts, to
-- `general_end`, are built by the first call that needs them (kept by the
-- library; a script builds them in each call that takes it). Each part
-- declares before its block what others use, and keeps its helpers inside.
local function general()
-- The standard library of the general path, and its helpers.
local floor, fmt, sub, byte, char, rep, find = math.floor, string.format, string.sub, string.byte, string.char, string.rep, string.find
local lower, upper, concat, sort = string.lower, string.upper, table.concat, table.sort
local pack, unpack = struct.pack, struct.unpack
local call, pcall_r = redis.call, redis.pcall
local set_repl, REPL_NONE, REPL_ALL = redis.set_repl, redis.REPL_NONE, redis.REPL_ALL
local SETTINGS = settings()

local function max(a, b) if a > b then return a end return b end
local function min(a, b) if a < b then return a end return b end

-- What it gives the functions: the general rate, RL.ALL and lease calls.
local G = {}
-- part: bounds
-- The module's bounds (rl-core/src/bounds.rs), and the edition's own
-- (docs/functions.md, "Ranges"). The one-pass parts write them as numbers
-- (see `plain`): a name would cost each script call an upvalue.
local RANGE = {
  -- How far ahead of now a limiter may reach when requests fill its burst
  -- or empty its bucket: (max_burst + 1) * period / count, and
  -- capacity * refill_period / refill_count, at most this many
  -- microseconds (about 95 years).
  ahead = 3000000000000000,
  -- The latest instant a state may hold, in microseconds since the epoch
  -- (the year 2160). With `ahead` it keeps every sum below 2^53.
  instant = 6000000000000000,
}
local MAX_LIMIT = 1000000000
local MAX_QUANTITY = 1000000000
local MAX_PERIOD = 1000000000000000
local MAX_HELD = 4000000000
local MAX_WINDOW_START = 72057594037927935 -- 2^56 - 1 (never reached below RANGE.instant)
local SETTING_CEILING = 1000000
local MAX_KEYS = 100
-- The longest tag a log entry may carry (the tag_max_bytes setting's ceiling).
local MAX_TAG_BYTES = 1024
local WHOLE_VALUE_MAX = 64
local LEASE_MAX = '9223372036854775807'

local TWO32 = 4294967296
local TWO53 = 9007199254740992
-- part: errors
-- Errors, as the module words them (src/error.rs).

-- An error the function answers: raised as a table with its message,
-- which `guard` answers (any other error is an internal one).
local function fail(message)
  error({ message = message }, 0)
end

-- Untrusted bytes for a message: printable ASCII kept, the rest escaped,
-- past 64 bytes shortened.
local function printable(s)
  local out = {}
  local n = min(#s, 64)
  for i = 1, n do
    local b = byte(s, i)
    if b >= 32 and b < 127 and b ~= 39 and b ~= 92 then
      out[i] = char(b)
    else
      out[i] = fmt('\\x%02x', b)
    end
  end
  if #s > 64 then out[#out + 1] = '...' end
  return concat(out)
end

local function words(list, last)
  if #list == 1 then return list[1] end
  return concat(list, ', ', 1, #list - 1) .. ' ' .. last .. ' ' .. list[#list]
end

local function arity_error(command)
  fail('ERR wrong number of arguments for \'' .. command .. '\' command')
end

local function bad_number(name, lo, hi)
  fail(fmt('ERR %s must be an integer from %.0f to %.0f', name, lo, hi))
end

local WRONGTYPE = 'WRONGTYPE Operation against a key holding the wrong kind of value'

-- An instant past the edition's range.
local function beyond(what)
  fail('ERR ' .. what .. ' beyond the functions edition\'s range (instants up to '
    .. fmt('%.0f', RANGE.instant) .. ' microseconds after the epoch, the year 2160)')
end
-- part: limbs
-- Exact arithmetic past 2^53: limbs, little-endian base-2^16 digits, for
-- the stored fields wider than a double (the token bucket's 96-bit level,
-- the GCRA's 112-bit fraction), and the stored integer fields.
local LIMB = 65536

local function limbs_of(n, count)
  local out = {}
  for i = 1, count do
    local d = n % LIMB
    out[i] = d
    n = (n - d) / LIMB
  end
  return out
end

-- a * b + c (a, b, c below 2^53, as limbs of `count`).
local function limbs_muladd(a, b, c, count)
  local la, lb = limbs_of(a, 4), limbs_of(b, 4)
  local out = limbs_of(c, count)
  for i = 1, 4 do
    if la[i] ~= 0 then
      local carry = 0
      for j = 1, count - i + 1 do
        local v = out[i + j - 1] + la[i] * (lb[j] or 0) + carry
        local d = v % LIMB
        out[i + j - 1] = d
        carry = (v - d) / LIMB
      end
    end
  end
  return out
end

-- 2^(16 * count) - n: the two's complement of a magnitude.
local function limbs_negate(l)
  local out, borrow = {}, 0
  for i = 1, #l do
    -- (0 - x, not -x: the limb of a zero is 0, never the double -0.)
    local v = 0 - l[i] - borrow
    if v < 0 then v, borrow = v + LIMB, 1 else borrow = 0 end
    out[i] = v
  end
  return out
end

local function limbs_bytes(l)
  local parts = {}
  for i = 1, #l do parts[i] = char(l[i] % 256, floor(l[i] / 256)) end
  return concat(parts)
end

local function limbs_from_bytes(s, at, nbytes)
  local out = {}
  for i = 1, nbytes / 2 do
    local lo, hi = byte(s, at + 2 * i - 2, at + 2 * i - 1)
    out[i] = lo + hi * 256
  end
  return out
end

-- Divide limbs by d (1 <= d < 2^37): the quotient's limbs and the remainder.
local function limbs_divmod(l, d)
  local q, r = {}, 0
  for i = #l, 1, -1 do
    local v = r * LIMB + l[i]
    local s = floor(v / d)
    r = v - s * d
    q[i] = s
  end
  return q, r
end

-- The value of limbs, or nil at 2^53 or more.
local function limbs_value(l)
  local v = 0
  for i = #l, 1, -1 do
    v = v * LIMB + l[i]
    if v >= TWO53 then return nil end
  end
  return v
end

local function limbs_compare(a, b)
  for i = max(#a, #b), 1, -1 do
    local x, y = a[i] or 0, b[i] or 0
    if x ~= y then return x < y and -1 or 1 end
  end
  return 0
end

-- A u64 field, little-endian at `at`; nil at 2^53 or more.
local function u64_at(s, at)
  local lo, hi = unpack('<I4I4', s, at)
  if hi >= 2097152 then return nil end
  return hi * TWO32 + lo
end

local function u64_bytes(v)
  local lo = v % TWO32
  return pack('<I4I4', lo, (v - lo) / TWO32)
end

-- A 7-byte little-endian field; nil at 2^53 or more.
local function u56_at(s, at)
  local lo, hi = unpack('<I4I3', s, at)
  if hi >= 2097152 then return nil end
  return hi * TWO32 + lo
end
-- part: args
-- Arguments (src/args.rs, src/param.rs).

-- The key of a single-key function: none is the module command without
-- its key (wrong number of arguments), more than one an error of FCALL's.
local function one_key(keys, fname, command)
  if #keys == 0 then arity_error(command) end
  if #keys ~= 1 then
    fail(fmt('ERR %s takes exactly one key (FCALL %s 1 key ...), got numkeys %d', fname, fname, #keys))
  end
  return keys[1]
end

-- A decimal integer as Redis reads it, when it is one from lo to hi (both
-- below 2^53): its value, else nil.
local function integer_in(s, lo, hi)
  if #s <= 15 and (find(s, '^[1-9]%d*$') or s == '0') then
    local v = s + 0
    if v >= lo and v <= hi then return v end
  end
  return nil
end

local function number(s, name, lo, hi)
  local v = integer_in(s, lo, hi)
  if not v then bad_number(name, lo, hi) end
  return v
end

-- Whether s is an integer Redis reads (it fits a signed 64-bit) above v.
local function positive_above(s, v)
  if not find(s, '^[1-9]%d*$') then return false end
  if #s > 19 or (#s == 19 and s > LEASE_MAX) then return false end
  if #s > 15 then return true end
  return s + 0 > v
end

-- A parameter whose bound is a setting: the hint names the table.
local function capped(s, name, setting)
  local hi = min(SETTINGS[setting], MAX_LIMIT)
  local v = integer_in(s, 1, hi)
  if v then return v end
  if positive_above(s, hi) and hi < SETTING_CEILING then
    fail(fmt('ERR %s must be an integer from 1 to %.0f (the %s setting at the top of the library raises the cap, up to %.0f)',
      name, hi, setting, SETTING_CEILING))
  end
  bad_number(name, 1, hi)
end

-- A duration in the unit: µs.
local function duration(s, name, lo, per_unit)
  return number(s, name, lo, MAX_PERIOD / per_unit) * per_unit
end

-- The parameters of a limit: an error RL.ALL names the limit of.
local PARAM = 'param'

local function fail_param(message)
  error({ message = message, kind = PARAM }, 0)
end

local function param_number(s, name, lo, hi)
  local v = integer_in(s, lo, hi)
  if not v then fail_param(fmt('ERR %s must be an integer from %.0f to %.0f', name, lo, hi)) end
  return v
end

-- A parameter: a number, a duration in the request's unit, or a number
-- capped by a setting.
local function parse_param(spec, s, unit)
  if spec.duration then return param_number(s, spec.name, 1, MAX_PERIOD / unit) * unit end
  if spec.setting then
    local ok, v = pcall(capped, s, spec.name, spec.setting)
    if ok then return v end
    v.kind = PARAM
    error(v, 0)
  end
  return param_number(s, spec.name, spec.lo, spec.hi)
end

-- How far ahead of now a full burst or an empty bucket reaches, `units *
-- per / count`, at most RANGE.ahead: `units` at most
-- floor(ahead * count / per), shown less `offset` (max_burst is units - 1).
local function within_ahead(units, per, count, name, offset, formula)
  local most = muldivmod(RANGE.ahead, count, per)
  if most and units > most then
    fail_param(fmt('ERR %s must be an integer from %d to %.0f in the functions edition for this rate (%s at most %.0f microseconds, about 95 years)',
      name, 1 - offset, most - offset, formula, RANGE.ahead))
  end
end
-- part: options
-- The options (src/options.rs), their words and how they exclude each other
-- (tests/functions.rs checks that the module's table and this one agree).
local MS, PEEK, REFUND, FORCE, WAIT, AT_MOST, BLOCK, TAG = 1, 2, 3, 4, 5, 6, 7, 8
-- The modes (rl-core's Mode).
local TAKE = 0

local RATE_OPTIONS = { MS, PEEK, REFUND, FORCE, WAIT, AT_MOST, BLOCK }
-- RL.SLIDING_LOG's and RL.ALL's: a log's entries may carry a tag.
local TAGGED_OPTIONS = { MS, PEEK, REFUND, FORCE, WAIT, AT_MOST, BLOCK, TAG }
local LEASE_OPTIONS = { MS, PEEK }
local UNIT_OPTIONS = { MS }
local unknown_option, options
do
  local OPTION_WORDS = { 'MS', 'PEEK', 'REFUND', 'FORCE', 'WAIT', 'AT_MOST', 'BLOCK', 'TAG' }
  local OPTION_OF = { ms = MS, peek = PEEK, refund = REFUND, force = FORCE, wait = WAIT, at_most = AT_MOST, block = BLOCK, tag = TAG }
  -- What the value of an option that takes one is called.
  local VALUE_OF = { [WAIT] = 'WAIT max_wait', [BLOCK] = 'BLOCK duration', [TAG] = 'TAG value' }
  local TAKE_WAYS = 'each says how the units are taken: choose one'
  local EXCLUSIVE = {
    { REFUND, FORCE, TAKE_WAYS },
    { REFUND, WAIT, TAKE_WAYS },
    { REFUND, AT_MOST, TAKE_WAYS },
    { FORCE, WAIT, TAKE_WAYS },
    { FORCE, AT_MOST, TAKE_WAYS },
    { WAIT, AT_MOST, TAKE_WAYS },
    { REFUND, BLOCK, 'a refund is never refused' },
    { FORCE, BLOCK, 'a forced request is never refused' },
    { REFUND, TAG, 'a refund gives back the newest units, whoever logged them' },
  }

  local function accepts_words(accepts, last)
    local list = {}
    for i = 1, #accepts do list[i] = OPTION_WORDS[accepts[i]] end
    return words(list, last)
  end

  local function taken(accepts, option)
    for i = 1, #accepts do
      if accepts[i] == option then return true end
    end
    return false
  end

  function unknown_option(command, token, accepts, takes_quantity)
    local option = OPTION_OF[lower(token)]
    if option then
      fail(fmt('ERR syntax error: \'%s\' does not take %s (it takes %s)', command, OPTION_WORDS[option],
        accepts_words(accepts, 'or')))
    end
    local first = byte(token, 1)
    local numeric = first and ((first >= 48 and first <= 57) or first == 45)
    local hint = ''
    if takes_quantity and numeric then
      hint = '; quantity comes right after the parameters, before any option'
    end
    fail(fmt('ERR syntax error: unknown option \'%s\' (expected %s%s)', printable(token), accepts_words(accepts, 'or'), hint))
  end

  -- `[quantity] [options]` from args[from]: a request {q, unit, peek, mode,
  -- max_wait, block, tag}.
  function options(command, args, from, accepts)
    local req = { q = 1, unit = 1000000, peek = false, mode = TAKE }
    local i, n = from, #args
    if i <= n then
      local first = byte(args[i], 1)
      local alphabetic = first and ((first >= 65 and first <= 90) or (first >= 97 and first <= 122))
      if not alphabetic then
        req.q = number(args[i], 'quantity', 0, MAX_QUANTITY)
        i = i + 1
      end
    end
    if i > n then return req end
    local seen, block, max_wait = {}, nil, nil
    while i <= n do
      local token = args[i]
      local option = OPTION_OF[lower(token)]
      if not option or not taken(accepts, option) then unknown_option(command, token, accepts, true) end
      if VALUE_OF[option] then
        if seen[option] then fail('ERR syntax error: ' .. OPTION_WORDS[option] .. ' is given twice') end
        i = i + 1
        local value = args[i]
        if not value then
          fail(fmt('ERR syntax error: %s needs a value (%s)', OPTION_WORDS[option], VALUE_OF[option]))
        end
        if option == WAIT then
          max_wait = value
        elseif option == BLOCK then
          block = value
        else
          -- (Checked as it is read, as the module does.)
          local most = SETTINGS.tag_max_bytes
          if #value < 1 or #value > most then
            fail(fmt('ERR TAG value must be 1 to %d bytes (the tag_max_bytes setting at the top of the library raises the cap, up to %d)',
              most, MAX_TAG_BYTES))
          end
          req.tag = value
        end
      end
      seen[option] = true
      if option == MS then
        req.unit = 1000
      elseif option == PEEK then
        req.peek = true
      elseif option ~= BLOCK and option ~= WAIT and option ~= TAG then
        req.mode = option
      end
      i = i + 1
    end
    for k = 1, #EXCLUSIVE do
      local pair = EXCLUSIVE[k]
      if seen[pair[1]] and seen[pair[2]] then
        fail(fmt('ERR syntax error: %s and %s cannot be combined (%s)', OPTION_WORDS[pair[1]], OPTION_WORDS[pair[2]], pair[3]))
      end
    end
    if max_wait then
      req.mode = WAIT
      req.max_wait = duration(max_wait, 'WAIT max_wait', 0, req.unit)
    end
    if block then req.block = duration(block, 'BLOCK duration', 1, req.unit) end
    return req
  end
end
-- part: decision
-- Decisions (rl-core/src/decision.rs, limiter.rs): retry is -1
-- (allowed), -2 (never) or µs.
local ALLOWED, NEVER = -1, -2

local function decision(blocked, limit, remaining, retry, reset)
  return { blocked = blocked, limit = limit, remaining = remaining, retry = retry, reset = reset }
end

local function ceil_div(n, d)
  local q = floor(n / d)
  if q * d < n then q = q + 1 end
  return q
end

-- The reply: five integers, times in `unit` rounded up.
local function five(d, unit)
  local retry = d.retry
  if retry < 0 then retry = -1 else retry = ceil_div(retry, unit) end
  return { d.blocked and 1 or 0, d.limit, d.remaining, retry, ceil_div(d.reset, unit) }
end

-- An outcome: the decision, and the update (change, expires_at) if any.
local function unchanged(d) return { d = d } end

-- A query (q 0) changes nothing; more than the limit can never pass.
local function settled(d, q)
  if q == 0 then return unchanged(d) end
  if q > d.limit then
    d.blocked, d.retry = true, NEVER
    return unchanged(d)
  end
  return nil
end

-- rl-core's `refunded`: the decision of a query on the state a refund leaves.
local function refunded(lim, state, now, kind, value)
  if kind == 'same' then
    return { d = lim:check(state, now, 0).d, give = 'nothing' }
  elseif kind == 'rested' then
    return { d = lim:check(nil, now, 0).d, give = 'rested' }
  end
  local d = lim:check(value, now, 0).d
  return { d = d, give = 'store', change = value, expires_at = now + d.reset }
end

-- x = q * d + r with 0 <= r < d, for |x| below 2^52.
local function divmod_floor(x, d)
  local q = floor(x / d)
  local r = x - q * d
  if r < 0 then q, r = q - 1, r + d elseif r >= d then q, r = q + 1, r - d end
  return q, r
end

-- µs from now until `at`, or 0.
local function until_(now, at)
  if at > now then return at - now end
  return 0
end
-- part: codec
-- Codecs: the module's bytes (src/codec/*.rs). `decode` answers the state,
-- or nil and what is wrong with it, or nil, nil and true for a valid state
-- this edition cannot compute exactly.
--
-- The state of each rate command, in the order of the algorithms
-- (ALGORITHMS, below): its command, the tags its bytes start with, its
-- decoder and encoder. Every function holds every codec (an error names
-- the command whose state a key holds).
local STATES = {}
-- part: codec_gcra
-- GCRA's state (src/codec/gcra.rs): 'G' and the TAT in ticks of 1/840 µs
-- (9 bytes), or 'g', the ticks per µs (4 bytes) and the TAT in them (14
-- bytes); and earlier releases' decimal forms.
local TICKS_PER_MICRO = 840
do
  local MAX_TAT_LIMBS = { 32767, 10438, 49461, 28478, 20233, 3 } -- 2^64 - 1 + 4 * 10^24 + 10^15
  local NOT_A_TAT = 'expected a theoretical arrival time'
  local TAT_RANGE = 'theoretical arrival time out of range'

  -- units / per_micro, as limbs, into whole µs and a fraction.
  local function tat_of(units, per_micro)
    if per_micro < 1 or per_micro > MAX_LIMIT then return nil, TAT_RANGE end
    local q, r = limbs_divmod(units, per_micro)
    local u = limbs_value(q)
    if not u then
      if limbs_compare(q, MAX_TAT_LIMBS) > 0 then return nil, TAT_RANGE end
      return nil, nil, true
    end
    if u >= RANGE.instant then return nil, nil, true end
    return { u = u, f = r, d = per_micro }
  end

  -- A canonical decimal (no sign, no leading zero), as limbs; nil past 2^128.
  local function decimal_limbs(s)
    if #s == 0 or #s > 39 or not find(s, '^%d+$') or (#s > 1 and byte(s, 1) == 48) then return nil end
    local l = { 0, 0, 0, 0, 0, 0, 0, 0, 0 }
    for i = 1, #s do
      local carry = byte(s, i) - 48
      for j = 1, 9 do
        local v = l[j] * 10 + carry
        local dgt = v % LIMB
        l[j] = dgt
        carry = (v - dgt) / LIMB
      end
    end
    if l[9] ~= 0 then return nil end
    l[9] = nil
    return l
  end

  local function decode_gcra(s)
    local tag = byte(s, 1)
    if tag == 71 and #s == 9 then
      local lo, hi = unpack('<I4I4', s, 2)
      local qh = floor(hi / TICKS_PER_MICRO)
      local rest = (hi - qh * TICKS_PER_MICRO) * TWO32 + lo
      local ql = floor(rest / TICKS_PER_MICRO)
      local f = rest - ql * TICKS_PER_MICRO
      if qh >= 2097152 then return nil, nil, true end
      local u = qh * TWO32 + ql
      if u >= RANGE.instant then return nil, nil, true end
      return { u = u, f = f, d = TICKS_PER_MICRO }
    end
    if tag == 103 and #s == 19 then
      return tat_of(limbs_from_bytes(s, 6, 14), unpack('<I4', s, 2))
    end
    -- The decimal forms of earlier releases: ticks of 1/840 µs, or units/per_micro.
    local units = decimal_limbs(s)
    if units then return tat_of(units, TICKS_PER_MICRO) end
    local slash = find(s, '/', 1, true)
    if not slash then return nil, NOT_A_TAT end
    units = decimal_limbs(sub(s, 1, slash - 1))
    local per = decimal_limbs(sub(s, slash + 1))
    if not units or not per or per[5] ~= 0 or per[6] ~= 0 or per[7] ~= 0 or per[8] ~= 0 then return nil, NOT_A_TAT end
    local p = limbs_value(per)
    if not p or p > MAX_LIMIT then return nil, TAT_RANGE end
    return tat_of(units, p)
  end

  local function encode_gcra(lim, tat)
    local d, u, f = lim.d, tat.u, tat.f
    if TICKS_PER_MICRO % d == 0 then
      local ul = u % TWO32
      local low = ul * TICKS_PER_MICRO + f * (TICKS_PER_MICRO / d)
      local lo = low % TWO32
      return 'G' .. pack('<I4I4', lo, (u - ul) / TWO32 * TICKS_PER_MICRO + (low - lo) / TWO32)
    end
    return 'g' .. pack('<I4', d) .. limbs_bytes(limbs_muladd(u, d, f, 7))
  end

  STATES[1] = { name = 'rl.gcra', tags = { [71] = true, [103] = true }, decode = decode_gcra, encode = encode_gcra }
end
-- part: codec_token_bucket
-- The token bucket's state (src/codec/token_bucket.rs): 'T', the instant
-- (8 bytes), the grains per token (7 bytes), the level in grains (96-bit
-- two's complement: negative in debt).
do
  local BUCKET_RANGE = 'token level or refill unit out of range'

  local function decode_bucket(s)
    if #s ~= 28 or byte(s, 1) ~= 84 then return nil, 'expected 28 bytes starting with \'T\'' end
    local at = u64_at(s, 2)
    local gpt = u56_at(s, 10)
    if not gpt or gpt < 1 or gpt > MAX_PERIOD then return nil, BUCKET_RANGE end
    local l = limbs_from_bytes(s, 17, 12)
    local negative = l[6] >= 32768
    if negative then l = limbs_negate(l) end
    local lo = l[1] + l[2] * LIMB + l[3] * LIMB * LIMB
    local hi = l[4] + l[5] * LIMB + l[6] * LIMB * LIMB
    local q1, r1 = muldivmod(hi, 281474976710656, gpt)
    if not q1 then return nil, BUCKET_RANGE end
    local q2, r = divmod_floor(r1 + lo, gpt)
    local mt = q1 + q2
    local bound = MAX_LIMIT
    if negative then bound = MAX_HELD end
    if mt > bound or (mt == bound and r > 0) then return nil, BUCKET_RANGE end
    if not at or at >= RANGE.instant then return nil, nil, true end
    if not negative then return { tok = mt, gr = r, gpt = gpt, at = at } end
    if r == 0 then return { tok = -mt, gr = 0, gpt = gpt, at = at } end
    return { tok = -mt - 1, gr = gpt - r, gpt = gpt, at = at }
  end

  local function encode_bucket(lim, b)
    local gpt, l = lim.gpt, nil
    if b.tok >= 0 then
      l = limbs_muladd(b.tok, gpt, b.gr, 6)
    elseif b.gr == 0 then
      l = limbs_negate(limbs_muladd(-b.tok, gpt, 0, 6))
    else
      l = limbs_negate(limbs_muladd(-b.tok - 1, gpt, gpt - b.gr, 6))
    end
    return 'T' .. u64_bytes(b.at) .. pack('<I7', gpt) .. limbs_bytes(l)
  end

  STATES[2] = { name = 'rl.token_bucket', tags = { [84] = true }, decode = decode_bucket, encode = encode_bucket }
end
-- part: codec_fixed_window
-- The fixed window's state (src/codec/fixed_window.rs): 'F', the window's
-- start (7 bytes), the count (4 bytes).
local COUNT_RANGE = 'count out of range'
do
  local function decode_fixed(s)
    if #s ~= 12 or byte(s, 1) ~= 70 then return nil, 'expected 12 bytes starting with \'F\'' end
    local count = unpack('<I4', s, 9)
    if count > MAX_HELD then return nil, COUNT_RANGE end
    local start = u56_at(s, 2)
    if not start or start >= RANGE.instant then return nil, nil, true end
    return { start = start, count = count }
  end

  local function encode_fixed(_, w)
    return 'F' .. pack('<I7I4', w.start, w.count)
  end

  STATES[3] = { name = 'rl.fixed', tags = { [70] = true }, decode = decode_fixed, encode = encode_fixed }
end
-- part: codec_sliding_log
-- The sliding log's state (src/codec/sliding_log.rs), read in place: 'L',
-- the ring's oldest slot (4 bytes), then 8-byte instants. Or the tagged
-- log, 'l': the count of entries (4 bytes), their instants, oldest first,
-- then a tag record per entry in the same order (its length, 2 bytes, 0
-- for none, then its bytes), read as the linear 'L' log of its instants
-- (`s`) with its entries' tags (`tags`, false for none).
local LOG_HEADER = 5

-- The i-th instant from the oldest (0-based).
local function log_get(log, i)
  local slot = (log.oldest + i) % log.n
  local v = u64_at(log.s, LOG_HEADER + 1 + slot * 8)
  if not v or v >= RANGE.instant then beyond('the sliding log holds an instant') end
  return v
end

-- How many entries are later than `after` (binary search).
local function log_later_than(log, after)
  local lo, hi = 0, log.n
  while lo < hi do
    local mid = floor((lo + hi) / 2)
    if log_get(log, mid) > after then hi = mid else lo = mid + 1 end
  end
  return log.n - lo
end

-- The bytes of log entries i .. j - 1 (0-based, from the oldest).
local function log_bytes(log, i, j)
  if j <= i then return '' end
  local n, s = log.n, log.s
  local a = (log.oldest + i) % n
  local count = j - i
  local first = min(count, n - a)
  local out = sub(s, LOG_HEADER + 1 + a * 8, LOG_HEADER + (a + first) * 8)
  if count > first then out = out .. sub(s, LOG_HEADER + 1, LOG_HEADER + (count - first) * 8) end
  return out
end

local function log_header(oldest)
  return 'L' .. pack('<I4', oldest)
end

local function slot(i) return LOG_HEADER + i * 8 end

-- The log of `words` (8-byte instants, oldest first) and their `tags`
-- (false for none), written whole as the module writes it: the untagged
-- log at ring position 0 when no entry carries a tag, else the tagged one.
local function log_value(words, tags)
  local n, records, tagged = #words, {}, false
  for i = 1, n do
    local t = tags[i]
    if t then
      tagged = true
      records[i] = pack('<I2', #t) .. t
    else
      records[i] = '\0\0'
    end
  end
  if not tagged then return log_header(0) .. concat(words) end
  return 'l' .. pack('<I4', n) .. concat(words) .. concat(records)
end

do
  local TAGGED_SHAPE = 'expected \'l\', an entry count, its 8-byte instants and as many tags'

  local function decode_tagged(s)
    local len = #s
    if len < LOG_HEADER then return nil, TAGGED_SHAPE end
    local n = unpack('<I4', s, 2)
    local records = LOG_HEADER + n * 8
    if records > len then return nil, TAGGED_SHAPE end
    local tags, at, tagged = {}, records + 1, 0
    for i = 1, n do
      if at + 1 > len then return nil, TAGGED_SHAPE end
      local size = unpack('<I2', s, at)
      if size > MAX_TAG_BYTES or at + 1 + size > len then return nil, TAGGED_SHAPE end
      if size == 0 then
        tags[i] = false
      else
        tags[i] = sub(s, at + 2, at + 1 + size)
        tagged = tagged + 1
      end
      at = at + 2 + size
    end
    if at ~= len + 1 then return nil, TAGGED_SHAPE end
    if n > 0 then
      local flo, fhi = unpack('<I4I4', s, LOG_HEADER + 1)
      local llo, lhi = unpack('<I4I4', s, records - 7)
      if fhi > lhi or (fhi == lhi and flo > llo) then return nil, 'order of instants out of range' end
      if lhi >= 2097152 or lhi * TWO32 + llo >= RANGE.instant then return nil, nil, true end
    end
    return { s = log_header(0) .. sub(s, LOG_HEADER + 1, records), n = n, oldest = 0, tags = tags, tagged = tagged }
  end

  local function decode_log(s)
    if byte(s, 1) == 108 then return decode_tagged(s) end
    if #s < LOG_HEADER or byte(s, 1) ~= 76 or (#s - LOG_HEADER) % 8 ~= 0 then
      return nil, 'expected \'L\', a 4-byte ring position and 8-byte instants'
    end
    local n = (#s - LOG_HEADER) / 8
    local oldest = unpack('<I4', s, 2)
    local bad = 'ring position or order of instants out of range'
    if oldest >= max(n, 1) then return nil, bad end
    local log = { s = s, n = n, oldest = oldest }
    if n > 0 then
      local first_at, last_at = LOG_HEADER + 1 + oldest * 8, LOG_HEADER + 1 + ((oldest + n - 1) % n) * 8
      local flo, fhi = unpack('<I4I4', s, first_at)
      local llo, lhi = unpack('<I4I4', s, last_at)
      if fhi > lhi or (fhi == lhi and flo > llo) then return nil, bad end
      if lhi >= 2097152 or lhi * TWO32 + llo >= RANGE.instant then return nil, nil, true end
    end
    return log
  end

  STATES[4] = { name = 'rl.sliding_log', tags = { [76] = true, [108] = true }, decode = decode_log }
end
-- part: codec_sliding_counter
-- The sliding counter's state (src/codec/sliding_counter.rs): 'C', the
-- current window's start (7 bytes), the previous window's count and the
-- current one's (4 bytes each).
do
  local function decode_counter(s)
    if #s ~= 16 or byte(s, 1) ~= 67 then return nil, 'expected 16 bytes starting with \'C\'' end
    local prev, cur = unpack('<I4I4', s, 9)
    if prev > MAX_HELD or cur > MAX_HELD then return nil, COUNT_RANGE end
    local start = u56_at(s, 2)
    if not start or start >= RANGE.instant then return nil, nil, true end
    return { start = start, prev = prev, cur = cur }
  end

  local function encode_counter(_, p)
    return 'C' .. pack('<I7I4I4', p.start, p.prev, p.cur)
  end

  STATES[5] = { name = 'rl.sliding_counter', tags = { [67] = true }, decode = decode_counter, encode = encode_counter }
end
-- part: codec_concurrency
-- The leases' state (src/codec/concurrency.rs): 'Q', the last lease id
-- (8 bytes), then 20-byte records: id, deadline (0 once released in
-- place), units.
local LEASE_HEADER, RECORD = 9, 20

-- The leases a value holds: {records, last, n}, or nil and what is wrong
-- with it, or nil, nil and true past the edition's range.
local function lease_view(s)
  local shape = 'expected \'Q\', the last lease id and 20-byte leases'
  if #s < LEASE_HEADER or byte(s, 1) ~= 81 or (#s - LEASE_HEADER) % RECORD ~= 0 then return nil, shape end
  local n = (#s - LEASE_HEADER) / RECORD
  -- The last id as the module reads it, the header's or the newest
  -- lease's, whichever is larger: 0, or past 2^62, the clock never gives.
  local lo, hi = unpack('<I4I4', s, 2)
  if n > 0 then
    local newest_lo, newest_hi = unpack('<I4I4', s, LEASE_HEADER + (n - 1) * RECORD + 1)
    if newest_hi > hi or (newest_hi == hi and newest_lo > lo) then lo, hi = newest_lo, newest_hi end
  end
  if (lo == 0 and hi == 0) or hi > 1073741824 or (hi == 1073741824 and lo > 0) then
    return nil, 'a lease id of 0 or past 2^62, which the server\'s clock never gives'
  end
  local records = {}
  local last = u64_at(s, 2)
  if not last then return nil, nil, true end
  local previous = 0
  for i = 1, n do
    local at = LEASE_HEADER + (i - 1) * RECORD + 1
    local id, deadline = u64_at(s, at), u64_at(s, at + 8)
    if not id or not deadline then return nil, nil, true end
    local units = unpack('<I4', s, at + 16)
    records[i] = { id = id, deadline = deadline, units = units }
  end
  if n > 0 then last = max(last, records[n].id) end
  for i = 1, n do
    local r = records[i]
    if r.id <= previous or r.id > last or r.units == 0 then
      return nil, 'a lease out of order, or with no units'
    end
    previous = r.id
  end
  return { records = records, last = last, n = n }
end

local function record_bytes(id, deadline, units)
  return u64_bytes(id) .. u64_bytes(deadline) .. pack('<I4', units)
end

-- The leases of a view (not released), with their position among records.
local function leases_of(view)
  local out = {}
  if not view then return out end
  for i = 1, view.n do
    local r = view.records[i]
    if r.deadline ~= 0 then out[#out + 1] = r end
  end
  return out
end
-- part: writes
-- Writes (src/store.rs's Write, src/codec/*.rs): a plan is {kind = 'set',
-- value}, {kind = 'patch', new_len, patches = {{offset, bytes}...},
-- compact} or {kind = 'del'}, with `ms` the absolute expiry; offsets are
-- 0-based, as SETRANGE's.
local function set_plan(value, ms) return { kind = 'set', value = value, ms = ms } end

local function patch_plan(new_len, patches, compact, ms)
  return { kind = 'patch', new_len = new_len, patches = patches, compact = compact, ms = ms }
end

local DELETE = { kind = 'del' }

-- `base` grown to new_len (zero-filled) and patched.
local function patched(base, new_len, patches)
  local v = base
  if #v < new_len then v = v .. rep('\0', new_len - #v) end
  for i = 1, #patches do
    local off, bytes = patches[i][1], patches[i][2]
    v = sub(v, 1, off) .. bytes .. sub(v, off + #bytes + 1)
  end
  return v
end

-- The tagged log's write (a log that holds a tag, or a call that gives
-- one): the whole log rebuilt, as the untagged one is (`plan_log`), the
-- new entries after those at or before `at` and before later ones, the
-- oldest dropped past `keep`; each new entry carries the call's tag.
local function plan_tagged(log, change, ms)
  local keep, q, at, tag = change.keep, change.count, change.at, change.tag or false
  local n, old, olds = 0, '', nil
  if log then n, old, olds = log.n, log_bytes(log, 0, log.n), log.tags end
  local before = n
  if n > 0 and log_get(log, n - 1) > at then before = n - log_later_than(log, at) end
  local word = u64_bytes(at)
  local words, tags, k = {}, {}, 0
  for i = max(n + q - keep, 0) + 1, n + q do
    k = k + 1
    if i > before and i <= before + q then
      words[k], tags[k] = word, tag
    else
      local j = i
      if i > before then j = i - q end
      words[k], tags[k] = sub(old, j * 8 - 7, j * 8), olds and olds[j] or false
    end
  end
  return set_plan(log_value(words, tags), ms)
end

-- The sliding log's write for `q` entries at `at` (src/codec/sliding_log.rs):
-- in place while the ring allows, else the whole log rebuilt in order.
local function plan_log(log, change, ms)
  if change.tag or (log and log.tags) then return plan_tagged(log, change, ms) end
  local keep, q, at = change.keep, change.count, change.at
  local word = u64_bytes(at)
  local n = log and log.n or 0
  if log and n > 0 and log_get(log, n - 1) > at then
    -- Reservations are the newest: the entries go in before them.
    local later = log_later_than(log, at)
    local parts = { log_bytes(log, 0, n - later), rep(word, q), log_bytes(log, n - later, n) }
    local all = concat(parts)
    local skip = max(n + q - keep, 0)
    return set_plan(log_header(0) .. sub(all, skip * 8 + 1), ms)
  end
  if log and not (n > keep or (n < keep and log.oldest ~= 0) or q > keep) then
    if n < keep then
      local grow = min(q, keep - n)
      local rest = q - grow
      local patches = { { slot(n), rep(word, grow) } }
      if rest > 0 then
        patches[2] = { slot(0), rep(word, rest) }
        patches[3] = { 0, log_header(rest % keep) }
      end
      return patch_plan(slot(n + grow), patches, n + grow == keep, ms)
    end
    local oldest = log.oldest
    local first = min(q, n - oldest)
    local patches = { { slot(oldest), rep(word, first) } }
    if q > first then patches[#patches + 1] = { slot(0), rep(word, q - first) } end
    patches[#patches + 1] = { 0, log_header((oldest + q) % n) }
    return patch_plan(slot(n), patches, false, ms)
  end
  local skip = max(n + q - keep, 0)
  local kept = ''
  if log then kept = log_bytes(log, min(skip, n), n) end
  return set_plan(log_header(0) .. kept .. rep(word, q - max(skip - n, 0)), ms)
end

-- The log without its `newest` newest entries: in place past 64 bytes (the
-- freed slots take an instant out of the window and become the oldest),
-- else rebuilt.
local function plan_shed(log, shed, ms)
  local n = log.n
  local k = min(shed.newest, n)
  local left = n - k
  if log.tags then
    -- A tagged log: rebuilt without them (untagged if no tag is left).
    local old, words, tags = log_bytes(log, 0, left), {}, {}
    for i = 1, left do words[i], tags[i] = sub(old, i * 8 - 7, i * 8), log.tags[i] end
    return set_plan(log_value(words, tags), ms)
  end
  if shed.horizon and slot(n) > WHOLE_VALUE_MAX then
    local filler = u64_bytes(min(shed.horizon, log_get(log, 0)))
    local start = (log.oldest + left) % n
    local first = min(k, n - start)
    local patches = { { slot(start), rep(filler, first) } }
    if k > first then patches[2] = { slot(0), rep(filler, k - first) } end
    patches[#patches + 1] = { 0, log_header(start) }
    return patch_plan(slot(n), patches, false, ms)
  end
  return set_plan(log_header(0) .. log_bytes(log, 0, left), ms)
end

-- The leases' write (src/codec/concurrency.rs).
local function plan_leases(view, update)
  if not update.expires_at then return DELETE end
  local ms = ceil_div(update.expires_at, 1000)
  local plain = update.expired == 0 and not update.acquired and not update.renewed
  if view and update.released and plain then
    local len = LEASE_HEADER + view.n * RECORD
    local held = #leases_of(view)
    if len > WHOLE_VALUE_MAX and held >= 1 and view.n - held + 1 <= held - 1 then
      for i = 1, view.n do
        local r = view.records[i]
        if r.id == update.released and r.deadline ~= 0 then
          return patch_plan(len, { { LEASE_HEADER + (i - 1) * RECORD + 8, u64_bytes(0) } }, false, ms)
        end
      end
    end
  end
  if view and update.expired == 0 and not update.released then
    local n = view.n
    if update.acquired and not update.renewed then
      local a = update.acquired
      local new_len = LEASE_HEADER + (n + 1) * RECORD
      return patch_plan(new_len, { { LEASE_HEADER + n * RECORD, record_bytes(a.id, a.deadline, a.units) } },
        new_len > WHOLE_VALUE_MAX, ms)
    end
    if update.renewed and not update.acquired then
      for i = 1, n do
        local r = view.records[i]
        if r.id == update.renewed.id and r.deadline ~= 0 then
          return patch_plan(LEASE_HEADER + n * RECORD,
            { { LEASE_HEADER + (i - 1) * RECORD + 8, u64_bytes(update.renewed.deadline) } }, false, ms)
        end
      end
    end
  end
  local parts = { 'Q', u64_bytes(update.last) }
  for _, l in ipairs(leases_of(view)) do
    if update.now < l.deadline and l.id ~= update.released then
      local deadline = l.deadline
      if update.renewed and update.renewed.id == l.id then deadline = update.renewed.deadline end
      parts[#parts + 1] = record_bytes(l.id, deadline, l.units)
    end
  end
  if update.acquired then
    local a = update.acquired
    parts[#parts + 1] = record_bytes(a.id, a.deadline, a.units)
  end
  return set_plan(concat(parts), ms)
end

-- Apply a plan to `key`, whose value is `stored`, with the effects the
-- module replicates: a patched value of at most 64 bytes written whole, a
-- longer one by SETRANGE (O(patch) to replicate). A value to be compacted
-- (grown by appends) is then set at its exact size here only, as the
-- module compacts it without replicating more than the patch.
local function apply(key, plan, stored)
  if plan.kind == 'set' then
    write(key, plan.value, plan.ms)
  elseif plan.kind == 'patch' then
    if plan.new_len <= WHOLE_VALUE_MAX then
      write(key, patched(stored or '', plan.new_len, plan.patches), plan.ms)
    else
      for i = 1, #plan.patches do call('SETRANGE', key, plan.patches[i][1], plan.patches[i][2]) end
      call('PEXPIREAT', key, fmt('%d', plan.ms))
      if plan.compact then
        set_repl(REPL_NONE)
        call('SET', key, patched(stored or '', plan.new_len, plan.patches), 'KEEPTTL')
        set_repl(REPL_ALL)
      end
    end
  else
    call('DEL', key)
  end
end
-- part: frame
-- The block header (src/codec/frame.rs): 'B' and the block's end in 7 bytes.
local BLOCK_HEADER = 8

local function block_header(ends)
  return 'B' .. pack('<I7', min(ends, MAX_WINDOW_START))
end

-- The write of a plan made on the state alone, with the header while the
-- block lasts (`block`: its end, in force), dropped once it has ended.
local function framed(plan, frame, block)
  if not block and not frame.block then return plan end
  if block then
    local header = block_header(block)
    local until_ms = ceil_div(block, 1000)
    if plan.kind == 'set' then
      return set_plan(header .. plan.value, max(plan.ms, until_ms))
    elseif plan.kind == 'patch' then
      if frame.block then
        local shifted = {}
        for i = 1, #plan.patches do shifted[i] = { plan.patches[i][1] + BLOCK_HEADER, plan.patches[i][2] } end
        return patch_plan(plan.new_len + BLOCK_HEADER, shifted, plan.compact, max(plan.ms, until_ms))
      end
      return set_plan(header .. patched(frame.body, plan.new_len, plan.patches), max(plan.ms, until_ms))
    end
    return set_plan(header, until_ms)
  end
  if plan.kind == 'patch' then return set_plan(patched(frame.body, plan.new_len, plan.patches), plan.ms) end
  return plan
end

-- The write that blocks the key until `ends`, its state unchanged.
local function block_plan(frame, ends, ms)
  if frame.block then return patch_plan(BLOCK_HEADER + #frame.body, { { 0, block_header(ends) } }, false, ms) end
  return set_plan(block_header(ends) .. frame.body, ms)
end
-- part: algorithms
-- The rate algorithms (src/algorithms.rs), in the module's order: one row
-- each, added by its part: its command and state, its name in RL.ALL,
-- whether it takes WAIT, its parameters, how its limiter is built (with
-- the module's errors), and how a state is adopted and written.
local ALGORITHMS, ALGORITHM_OF = {}, {}

local function algorithm(i, row)
  local state = STATES[i]
  row.name, row.tags, row.decode, row.encode = state.name, state.tags, state.decode, state.encode
  if row.encode then
    row.plan = function(lim, _, change, ms) return set_plan(row.encode(lim, change), ms) end
    row.plan_refund = row.plan
  end
  ALGORITHMS[i], ALGORITHM_OF[row.word] = row, row
end
-- part: gcra
-- GCRA (rl-core/src/gcra.rs). Instants are exact rationals kept as whole µs
-- `u` and ticks `f` (0 <= f < d) of 1/d µs, d = count / gcd(period, count):
-- the module's ticks, split so each part fits a double.

do
  local Gcra = {}
  Gcra.__index = Gcra

  local function tt_add(au, af, bu, bf, d)
    local u, f = au + bu, af + bf
    if f >= d then u, f = u + 1, f - d end
    return u, f
  end

  local function tt_sub(au, af, bu, bf, d)
    local u, f = au - bu, af - bf
    if f < 0 then u, f = u - 1, f + d end
    return u, f
  end

  local function tt_gt(au, af, bu, bf)
    return au > bu or (au == bu and af > bf)
  end

  local function ceil_us(u, f)
    if f > 0 then return u + 1 end
    return u
  end

  -- The ticks of (u, f) as whole emission intervals and the rest in ticks.
  function Gcra:per_interval(u, f)
    local q, r = muldivmod(u, self.d, self.T)
    if not q then return nil end
    local extra, rest = divmod_floor(r + f, self.T)
    return q + extra, rest
  end

  -- How many requests fit between (u, f) and the horizon (hu, hf).
  function Gcra:free(hu, hf, u, f)
    if not tt_gt(hu, hf, u, f) then return 0 end
    local du, df = tt_sub(hu, hf, u, f, self.d)
    return min(self:per_interval(du, df), self.limit)
  end

  function Gcra:recorded(now, nu, nf)
    if nu >= RANGE.instant then beyond('the theoretical arrival time would be') end
    local hu, hf = tt_add(now, 0, self.tol_u, self.tol_f, self.d)
    local ru, rf = tt_sub(nu, nf, now, 0, self.d)
    return {
      d = decision(false, self.limit, self:free(hu, hf, nu, nf), ALLOWED, ceil_us(ru, rf)),
      change = { u = nu, f = nf },
      expires_at = ceil_us(nu, nf),
    }
  end

  function Gcra:tat(state, at)
    if state and tt_gt(state.u, state.f, at, 0) then return state.u, state.f end
    return at, 0
  end

  function Gcra:check(state, now, q)
    local d = self.d
    local tu, tf = self:tat(state, now)
    local hu, hf = tt_add(now, 0, self.tol_u, self.tol_f, d)
    local ru, rf = tt_sub(tu, tf, now, 0, d)
    local dec = decision(false, self.limit, self:free(hu, hf, tu, tf), ALLOWED, ceil_us(ru, rf))
    local done = settled(dec, q)
    if done then return done end
    local qu, qf = muldivmod(q, self.T, d)
    local nu, nf = tt_add(tu, tf, qu, qf, d)
    if tt_gt(nu, nf, hu, hf) then
      dec.blocked = true
      dec.retry = ceil_us(tt_sub(nu, nf, hu, hf, d))
      return unchanged(dec)
    end
    return self:recorded(now, nu, nf)
  end

  function Gcra:force(state, now, q)
    local d = self.d
    local tu, tf = self:tat(state, now)
    -- Overdrawn (rl-core): TAT - now + q * T > MAX_HELD * T, counted in
    -- emission intervals.
    local ahead_u, ahead_f = tt_sub(tu, tf, now, 0, d)
    local k, rest = self:per_interval(ahead_u, ahead_f)
    if not k then beyond('the theoretical arrival time would be') end
    if k + q > MAX_HELD or (k + q == MAX_HELD and rest > 0) then return nil end
    local qu, qf = muldivmod(q, self.T, d)
    if not qu or qu >= RANGE.instant - tu then beyond('the theoretical arrival time would be') end
    return self:recorded(now, tt_add(tu, tf, qu, qf, d))
  end

  function Gcra:reserve(state, now, at, q)
    local tu, tf = self:tat(state, max(at, now))
    local qu, qf = muldivmod(q, self.T, self.d)
    return self:recorded(now, tt_add(tu, tf, qu, qf, self.d))
  end

  function Gcra:rested_at(state, now)
    if not state then return now end
    return max(ceil_us(state.u, state.f), now)
  end

  function Gcra:refund(state, now, q)
    if not state or q == 0 or not tt_gt(state.u, state.f, now, 0) then
      return refunded(self, state, now, 'same')
    end
    local bu, bf = muldivmod(q, self.T, self.d)
    if not bu or not tt_gt(state.u, state.f, bu, bf) then return refunded(self, state, now, 'rested') end
    local tu, tf = tt_sub(state.u, state.f, bu, bf, self.d)
    if not tt_gt(tu, tf, now, 0) then return refunded(self, state, now, 'rested') end
    return refunded(self, state, now, 'store', { u = tu, f = tf })
  end

  -- The stored TAT in this limiter's ticks, rounded up (later) when it was
  -- written with another denominator: it never admits more.
  function Gcra:adopt(raw)
    if raw.d == self.d then return { u = raw.u, f = raw.f } end
    local c, r = muldivmod(raw.f, self.d, raw.d)
    if r > 0 then c = c + 1 end
    if c == self.d then return { u = raw.u + 1, f = 0 } end
    return { u = raw.u, f = c }
  end

  algorithm(1, {
    word = 'GCRA', reserves = true,
    params = { { name = 'max_burst', lo = 0, hi = MAX_LIMIT - 1 }, { name = 'count', lo = 1, hi = MAX_LIMIT }, { name = 'period', duration = true } },
    build = function(v, args, from, unit)
      within_ahead(v[1] + 1, v[3], v[2], 'max_burst', 1, '(max_burst + 1) * period / count')
      local limit, d, T, tol_u, tol_f = gcra_limiter(args, from, unit)
      return setmetatable({ limit = limit, d = d, T = T, tol_u = tol_u, tol_f = tol_f, reserves = true }, Gcra)
    end,
    adopt = function(lim, raw) return lim:adopt(raw) end,
  })
end
-- part: token_bucket
-- Token bucket (rl-core/src/token_bucket.rs). A level is `tok` whole tokens
-- and `gr` grains (0 <= gr < gpt, the grains per token); `tok` is negative
-- in debt.
do
  local Bucket = {}
  Bucket.__index = Bucket

  -- ceil((a * gpt + b) / gpm) µs, for a >= 0 and -gpt < b.
  function Bucket:time_for(a, b)
    return self.refill_time(self.gpt, self.gpm, a, b) or beyond('the token bucket would refill')
  end

  -- The time until full from (tok, gr).
  function Bucket:to_full(tok, gr)
    if tok >= self.limit then return 0 end
    return self:time_for(self.limit - tok, -gr)
  end

  function Bucket:remaining(tok)
    if tok <= 0 then return 0 end
    return min(tok, self.limit)
  end

  -- The level at `now`: the stored one refilled since it was written, or less
  -- the refill still owed when it was written for a later instant.
  function Bucket:level_at(state, now)
    if not state then return self.limit, 0 end
    local tok, gr = state.tok, state.gr
    if tok >= self.limit then tok, gr = self.limit, 0 end
    if now >= state.at then
      local elapsed = now - state.at
      if elapsed == 0 or tok >= self.limit then return tok, gr end
      if elapsed >= self:to_full(tok, gr) then return self.limit, 0 end
      local dt, dg = muldivmod(elapsed, self.gpm, self.gpt)
      tok, gr = tok + dt, gr + dg
      if gr >= self.gpt then tok, gr = tok + 1, gr - self.gpt end
      if tok >= self.limit then return self.limit, 0 end
      return tok, gr
    end
    local ot, og = muldivmod(state.at - now, self.gpm, self.gpt)
    if not ot then beyond('the token bucket would owe a refill') end
    tok, gr = tok - ot, gr - og
    if gr < 0 then tok, gr = tok - 1, gr + self.gpt end
    return tok, gr
  end

  function Bucket:recorded(now, at, tok, gr)
    if at >= RANGE.instant then beyond('the token bucket would be written') end
    local stored = { tok = tok, gr = gr, at = at }
    local lt, lg = tok, gr
    if at ~= now then lt, lg = self:level_at(stored, now) end
    local reset = self:to_full(lt, lg)
    if now + reset >= RANGE.instant then beyond('the token bucket would refill') end
    return {
      d = decision(false, self.limit, self:remaining(lt), ALLOWED, reset),
      change = stored,
      expires_at = now + reset,
    }
  end

  function Bucket:check(state, now, q)
    local tok, gr = self:level_at(state, now)
    local dec = decision(false, self.limit, self:remaining(tok), ALLOWED, self:to_full(tok, gr))
    local done = settled(dec, q)
    if done then return done end
    if tok < q then
      dec.blocked = true
      dec.retry = self:time_for(q - tok, -gr)
      return unchanged(dec)
    end
    return self:recorded(now, now, tok - q, gr)
  end

  function Bucket:force(state, now, q)
    local tok, gr = self:level_at(state, now)
    if self.limit - (tok - q) > MAX_HELD then return nil end
    return self:recorded(now, now, tok - q, gr)
  end

  function Bucket:reserve(state, now, at, q)
    at = max(at, now)
    local tok, gr = self:level_at(state, at)
    return self:recorded(now, at, tok - q, gr)
  end

  function Bucket:rested_at(state, now)
    return now + self:check(state, now, 0).d.reset
  end

  function Bucket:refund(state, now, q)
    if not state or q == 0 then return refunded(self, state, now, 'same') end
    local tok, gr = self:level_at(state, now)
    if tok >= self.limit then return refunded(self, state, now, 'same') end
    if tok + q >= self.limit then return refunded(self, state, now, 'rested') end
    return refunded(self, state, now, 'store', self:owing(now, tok + q, gr))
  end

  -- rl-core's `owing`: the level (tok, gr) at `now`, below full, stored as
  -- of `now` when a state may hold it; deeper (a refill owed to a later
  -- instant, at a faster rate), as of the instant the refill brings it
  -- within one microsecond's refill of full: the same level at every
  -- instant, in a state that reads back.
  function Bucket:owing(now, tok, gr)
    if tok >= -MAX_HELD then return { tok = tok, gr = gr, at = now } end
    -- (limit - tok) * gpt - gr grains short of full: d whole µs of refill
    -- and rem grains more.
    local qd, r = muldivmod(self.limit - tok, self.gpt, self.gpm)
    if not qd then beyond('the token bucket would refill') end
    local extra, rem = divmod_floor(r - gr, self.gpm)
    local at = now + qd + extra
    if at >= RANGE.instant then beyond('the token bucket would be written') end
    local nt, ng = divmod_floor(-rem, self.gpt)
    return { tok = self.limit + nt, gr = ng, at = at }
  end

  -- A stored level in this bucket's grains: rounded toward less when it was
  -- written with another grain, never granting a grain more.
  function Bucket:adopt(raw)
    local gpt = self.gpt
    if raw.gpt == gpt then return { tok = raw.tok, gr = raw.gr, at = raw.at } end
    if raw.tok >= 0 then
      local part = muldivmod(raw.gr, gpt, raw.gpt)
      return { tok = raw.tok, gr = part, at = raw.at }
    end
    -- A debt: its magnitude, rescaled up.
    local mt, mr = -raw.tok, 0
    if raw.gr > 0 then mt, mr = -raw.tok - 1, raw.gpt - raw.gr end
    local c, r = muldivmod(mr, gpt, raw.gpt)
    if r > 0 then c = c + 1 end
    if c == 0 then return { tok = -mt, gr = 0, at = raw.at } end
    if c == gpt then return { tok = -mt - 1, gr = 0, at = raw.at } end
    return { tok = -mt - 1, gr = gpt - c, at = raw.at }
  end

  algorithm(2, {
    word = 'TOKEN_BUCKET', reserves = true,
    params = { { name = 'capacity', lo = 1, hi = MAX_LIMIT }, { name = 'refill_count', lo = 1, hi = MAX_LIMIT }, { name = 'refill_period', duration = true } },
    build = function(v, args, from, unit)
      within_ahead(v[1], v[3], v[2], 'capacity', 0, 'capacity * refill_period / refill_count')
      local capacity, gpt, gpm, refill_time = bucket_limiter(args, from, unit)
      return setmetatable({ limit = capacity, gpt = gpt, gpm = gpm, refill_time = refill_time, reserves = true }, Bucket)
    end,
    adopt = function(lim, raw) return lim:adopt(raw) end,
  })
end
-- part: fixed_window
-- The fixed window (rl-core/src/fixed_window.rs), aligned to the epoch
-- (rl-core/src/window.rs).
do
  local Fixed = {}
  Fixed.__index = Fixed

  function Fixed:in_force(state, now)
    local current = now - now % self.w
    if state and state.start >= current then
      return state.start - state.start % self.w, state.count
    end
    return current, 0
  end

  function Fixed:recorded(dec, start, count, now)
    local finish = start + self.w
    dec.remaining = max(self.limit - count, 0)
    dec.reset = until_(now, finish)
    return { d = dec, change = { start = start, count = count }, expires_at = finish }
  end

  function Fixed:check(state, now, q)
    local start, used = self:in_force(state, now)
    local to_end = until_(now, start + self.w)
    local reset = to_end
    if used == 0 then reset = 0 end
    local dec = decision(false, self.limit, max(self.limit - used, 0), ALLOWED, reset)
    local done = settled(dec, q)
    if done then return done end
    if start > MAX_WINDOW_START then
      dec.blocked, dec.retry = true, NEVER
      return unchanged(dec)
    end
    if used + q > self.limit then
      dec.blocked, dec.retry = true, to_end
      return unchanged(dec)
    end
    return self:recorded(dec, start, used + q, now)
  end

  function Fixed:force(state, now, q)
    local start, used = self:in_force(state, now)
    if used + q > MAX_HELD or start > MAX_WINDOW_START then return nil end
    return self:recorded(decision(false, self.limit, 0, ALLOWED, 0), start, used + q, now)
  end

  function Fixed:rested_at(state, now)
    return now + self:check(state, now, 0).d.reset
  end

  function Fixed:refund(state, now, q)
    local start, used = self:in_force(state, now)
    if used == 0 or q == 0 then return refunded(self, state, now, 'same') end
    if used <= q then return refunded(self, state, now, 'rested') end
    return refunded(self, state, now, 'store', { start = start, count = used - q })
  end

  algorithm(3, {
    word = 'FIXED', reserves = false,
    params = { { name = 'limit', lo = 1, hi = MAX_LIMIT }, { name = 'window', duration = true } },
    build = function(_, args, from, unit)
      local limit, w = fixed_limiter(args, from, unit)
      return setmetatable({ limit = limit, w = w, reserves = false }, Fixed)
    end,
  })
end
-- part: sliding_log
-- The sliding log (rl-core/src/sliding_log.rs), read in the stored bytes
-- (`codec_sliding_log`).
do
  local Log = {}
  Log.__index = Log

  function Log:in_window(log, now)
    if not log then return 0 end
    if now >= self.w then return log_later_than(log, now - self.w) end
    return log.n
  end

  -- A query's decision on the log's first n entries, of which the newest
  -- in_window are in the window.
  function Log:query(log, now, n, in_window)
    local reset = 0
    if n > 0 and in_window > 0 then reset = until_(now, log_get(log, n - 1) + self.w) end
    return decision(false, self.limit, max(self.limit - in_window, 0), ALLOWED, reset)
  end

  -- `q` entries at `at` (>= now): they go in at their instant; entries from
  -- the future (reservations) stay the newest.
  function Log:appended(newest, in_window, now, at, q)
    local keep = max(self.limit, in_window + q)
    local last = at
    if newest and newest > last then last = newest end
    local reset = until_(now, last + self.w)
    return {
      d = decision(false, self.limit, max(self.limit - in_window - q, 0), ALLOWED, reset),
      change = { at = at, count = q, keep = keep },
      expires_at = now + reset,
    }
  end

  function Log:survey(log, now)
    if not log or log.n == 0 then return nil, 0 end
    return log_get(log, log.n - 1), self:in_window(log, now)
  end

  function Log:check(log, now, q)
    local n = log and log.n or 0
    local in_window = self:in_window(log, now)
    local dec = self:query(log, now, n, in_window)
    local done = settled(dec, q)
    if done then return done end
    local may_stay = self.limit - q
    if n > may_stay then
      local wait = until_(now, log_get(log, n - 1 - may_stay) + self.w)
      if wait > 0 then
        dec.blocked, dec.retry = true, wait
        return unchanged(dec)
      end
    end
    local newest = nil
    if n > 0 then newest = log_get(log, n - 1) end
    return self:appended(newest, in_window, now, now, q)
  end

  function Log:force(log, now, q)
    local newest, in_window = self:survey(log, now)
    if in_window + q > MAX_HELD then return nil end
    return self:appended(newest, in_window, now, now, q)
  end

  function Log:reserve(log, now, at, q)
    local newest, in_window = self:survey(log, now)
    return self:appended(newest, in_window, now, max(at, now), q)
  end

  function Log:rested_at(log, now)
    return now + self:check(log, now, 0).d.reset
  end

  function Log:refund(log, now, q)
    if not log then return { d = self:check(nil, now, 0).d, give = 'nothing' } end
    local in_window = self:in_window(log, now)
    local shed = min(q, in_window)
    local dec = self:query(log, now, log.n - shed, in_window - shed)
    if shed == 0 then return { d = dec, give = 'nothing' } end
    if shed == in_window then return { d = dec, give = 'rested' } end
    local horizon = nil
    if now >= self.w then horizon = now - self.w end
    return { d = dec, give = 'store', change = { newest = shed, horizon = horizon }, expires_at = now + dec.reset }
  end

  algorithm(4, {
    word = 'SLIDING_LOG', reserves = true, logs = true,
    params = { { name = 'limit', setting = 'sliding_log_max_limit' }, { name = 'window', duration = true } },
    build = function(_, args, from, unit)
      local limit, w = log_limiter(args, from, unit, settings)
      return setmetatable({ limit = limit, w = w, reserves = true }, Log)
    end,
    plan = function(_, log, change, ms) return plan_log(log, change, ms) end,
    plan_refund = function(_, log, change, ms) return plan_shed(log, change, ms) end,
  })
end
-- part: sliding_counter
-- The sliding counter (rl-core/src/sliding_counter.rs): two windows
-- aligned to the epoch (rl-core/src/window.rs), the previous one weighted.
do
  local Counter = {}
  Counter.__index = Counter

  function Counter:counts_at(state, now)
    local w = self.w
    local current = now - now % w
    if not state then return current, 0, 0 end
    local start = state.start - state.start % w
    local prev, cur = state.prev, state.cur
    if start ~= state.start then prev, cur = 0, state.cur + state.prev end
    if start >= current then return start, prev, cur end
    if start + w == current then return current, cur, 0 end
    return current, 0, 0
  end

  function Counter:reset(now, start, prev, cur)
    return self.counter_reset(self.w, now, start, prev, cur)
  end

  -- ceil(prev * (W - e) / W): the previous window's weighted share.
  function Counter:share(prev, elapsed)
    local q, r = muldivmod(prev, self.w - elapsed, self.w)
    if r > 0 then q = q + 1 end
    return q
  end

  function Counter:elapsed(now, start)
    local e = 0
    if now > start then e = now - start end
    return min(e, self.w)
  end

  function Counter:check(state, now, q)
    local start, prev, cur = self:counts_at(state, now)
    local limit = self.limit
    local elapsed = self:elapsed(now, start)
    local share = self:share(prev, elapsed)
    local free = max(limit - share, 0)
    local function remaining_with(c) return min(max(free - c, 0), limit) end
    local dec = decision(false, limit, remaining_with(cur), ALLOWED, self:reset(now, start, prev, cur))
    local done = settled(dec, q)
    if done then return done end
    if start > MAX_WINDOW_START then
      dec.blocked, dec.retry = true, NEVER
      return unchanged(dec)
    end
    if share + cur + q > limit then
      dec.blocked = true
      dec.retry = until_(now, self.counter_next_fit(self.limit, self.w, start, elapsed, prev, cur, q))
      return unchanged(dec)
    end
    local reset = self:reset(now, start, prev, cur + q)
    return {
      d = decision(false, limit, remaining_with(cur + q), ALLOWED, reset),
      change = { start = start, prev = prev, cur = cur + q },
      expires_at = now + reset,
    }
  end

  function Counter:force(state, now, q)
    local start, prev, cur = self:counts_at(state, now)
    cur = cur + q
    if cur > MAX_HELD or prev > MAX_HELD or start > MAX_WINDOW_START then return nil end
    local reset = self:reset(now, start, prev, cur)
    local share = self:share(prev, self:elapsed(now, start))
    return {
      d = decision(false, self.limit, max(self.limit - share - cur, 0), ALLOWED, reset),
      change = { start = start, prev = prev, cur = cur },
      expires_at = now + reset,
    }
  end

  function Counter:rested_at(state, now)
    return now + self:check(state, now, 0).d.reset
  end

  function Counter:refund(state, now, q)
    local start, prev, cur = self:counts_at(state, now)
    local from_cur = min(q, cur)
    local from_prev = min(q - from_cur, prev)
    local p, c = prev - from_prev, cur - from_cur
    if q == 0 or prev + cur == 0 or start > MAX_WINDOW_START then return refunded(self, state, now, 'same') end
    if p + c == 0 then return refunded(self, state, now, 'rested') end
    return refunded(self, state, now, 'store', { start = start, prev = p, cur = c })
  end

  algorithm(5, {
    word = 'SLIDING_COUNTER', reserves = false,
    params = { { name = 'limit', lo = 1, hi = MAX_LIMIT }, { name = 'window', duration = true } },
    build = function(_, args, from, unit)
      local limit, w, counter_reset, counter_next_fit = counter_limiter(args, from, unit)
      return setmetatable({ limit = limit, w = w, counter_reset = counter_reset, counter_next_fit = counter_next_fit, reserves = false }, Counter)
    end,
  })
end
-- part: concurrency
-- Concurrency (rl-core/src/concurrency.rs): leases of units, each with a
-- deadline; their ids derive from the server's clock (`codec_concurrency`).
local Leases = {}
Leases.__index = Leases

local function new_leases(limit, timeout)
  return setmetatable({ limit = limit, timeout = timeout }, Leases)
end

-- When a key whose latest deadline is `latest` and last id `last` stops
-- mattering: no earlier than the instant after its last id, so that an id
-- derived from the clock never repeats.
local function lease_expiry(latest, last)
  return max(latest, last + 1)
end

function Leases:acquire(view, now, q)
  local held, latest, expired = 0, now, 0
  local live = {}
  for _, l in ipairs(leases_of(view)) do
    if now < l.deadline then
      held = held + l.units
      latest = max(latest, l.deadline)
      live[#live + 1] = l
    else
      expired = expired + 1
    end
  end
  local dec = decision(false, self.limit, max(self.limit - held, 0), ALLOWED, latest - now)
  if q == 0 then return { d = dec } end
  if q > self.limit then
    dec.blocked, dec.retry = true, NEVER
    return { d = dec }
  end
  if held + q > self.limit then
    sort(live, function(a, b)
      if a.deadline ~= b.deadline then return a.deadline < b.deadline end
      return a.units < b.units
    end)
    local wait, left = 0, held
    for _, l in ipairs(live) do
      left = left - l.units
      if left + q <= self.limit then
        wait = l.deadline - now
        break
      end
    end
    dec.blocked, dec.retry = true, wait
    return { d = dec }
  end
  local last = view and view.last or 0
  local id = max(now, last + 1)
  local deadline = now + self.timeout
  latest = max(latest, deadline)
  dec.remaining = self.limit - held - q
  dec.reset = latest - now
  return {
    d = dec,
    lease = id,
    update = { now = now, acquired = { id = id, deadline = deadline, units = q }, last = id, expired = expired,
      expires_at = lease_expiry(latest, id) },
  }
end

-- The update that keeps the live leases at `now` less `released`, with
-- `renewed` ({id, deadline}).
local function lease_update(view, now, released, renewed)
  local expired, latest, any = 0, 0, false
  for _, l in ipairs(leases_of(view)) do
    if now >= l.deadline then
      expired = expired + 1
    elseif l.id ~= released then
      local deadline = l.deadline
      if renewed and renewed.id == l.id then deadline = renewed.deadline end
      latest = max(latest, deadline)
      any = true
    end
  end
  local last = view.last
  local expires_at = nil
  if any then
    expires_at = lease_expiry(latest, last)
  elseif last >= now then
    expires_at = lease_expiry(now, last)
  end
  return { now = now, released = released, renewed = renewed, last = last, expired = expired, expires_at = expires_at }
end

local function find_live(view, now, id)
  if not view or not id then return nil end
  for _, l in ipairs(leases_of(view)) do
    if l.id == id and now < l.deadline then return l end
  end
  return nil
end
-- part: request
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
-- part: store
-- Reading a limiter's key (src/store.rs, src/codec/mod.rs).

-- The command whose state `body` holds (for the error of another command
-- on its key).
local function holder_of(body)
  local tag = byte(body, 1)
  for i = 1, #STATES do
    local state = STATES[i]
    if tag and state.tags[tag] then
      local st, problem = state.decode(body)
      if st or not problem then return state.name end
    end
  end
  if tag == 81 then
    local view, problem = lease_view(body)
    if view or not problem then return 'rl.concurrency' end
  end
  return nil
end

local function state_error(key, command, problem, body)
  local holder = body and holder_of(body)
  if holder and holder ~= command then
    fail(fmt('ERR key \'%s\' holds an %s state, not an %s one (use another key, or DEL it to start over)',
      printable(key), upper(holder), upper(command)))
  end
  fail(fmt('ERR key \'%s\' does not hold a valid %s state: %s', printable(key), upper(command), problem))
end

local function beyond_state(key, command)
  beyond(fmt('key \'%s\' holds an %s state', printable(key), upper(command)))
end

-- The key's value (nil: none); the standard error for another type.
local function read(key)
  local v = pcall_r('GET', key)
  if type(v) == 'table' then fail(WRONGTYPE) end
  return v or nil
end

local function clock()
  local t = call('TIME')
  return t[1] * 1000000 + t[2]
end
-- part: rate
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
-- part: all
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
-- part: leases
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
-- part: inspect
-- RL.LOG and RL.INSPECT: what a key holds, read and never written.
do
  -- Whether tag a sorts before tag b: by their bytes (false, untagged,
  -- first). (Lua's `<` on strings follows the server's locale.)
  local function tag_before(a, b)
    if not a or not b then return not a and b ~= false end
    for i = 1, min(#a, #b) do
      local x, y = byte(a, i), byte(b, i)
      if x ~= y then return x < y end
    end
    return #a < #b
  end

  -- The sliding log `key` holds, read through a block header (nil: none,
  -- or a header alone), with the errors a rate command on it answers.
  local function log_of(key, bytes)
    local body = bytes
    local name = STATES[4].name
    if byte(bytes, 1) == 66 then
      if #bytes < 8 then
        state_error(key, name, 'expected \'B\' and a 7-byte instant before the state', nil)
      end
      local ends = u56_at(bytes, 2)
      if not ends or ends >= RANGE.instant then beyond_state(key, name) end
      body = sub(bytes, 9)
      if body == '' then return nil end
    end
    local log, problem = STATES[4].decode(body)
    if problem then state_error(key, name, problem, body) end
    if not log then beyond_state(key, name) end
    return log
  end

  -- rl_log's call: the entries of the window, by instant and tag, or by tag.
  function G.log(keys, args)
    local key = one_key(keys, 'rl_log', 'rl.log')
    if #args < 1 then arity_error('rl.log') end
    local unit, by, count = 1000000, false, nil
    local i, n = 2, #args
    while i <= n do
      local word = upper(args[i])
      if word == 'MS' then
        if unit == 1000 then fail('ERR syntax error: MS is given twice') end
        unit = 1000
      elseif word == 'BY' then
        if by then fail('ERR syntax error: BY TAG is given twice') end
        i = i + 1
        local value = args[i]
        if not value then fail('ERR syntax error: BY needs a value (TAG)') end
        if upper(value) ~= 'TAG' then fail(fmt('ERR syntax error: BY takes only TAG, got \'%s\'', printable(value))) end
        by = true
      elseif word == 'COUNT' then
        if count then fail('ERR syntax error: COUNT is given twice') end
        i = i + 1
        count = args[i]
        if not count then fail('ERR syntax error: COUNT needs a value (COUNT count)') end
      else
        fail(fmt('ERR syntax error: unknown option \'%s\' (expected MS, BY TAG or COUNT)', printable(args[i])))
      end
      i = i + 1
    end
    local most = MAX_LIMIT
    if count then most = number(count, 'COUNT count', 1, MAX_LIMIT) end
    local w = duration(args[1], 'window', 1, unit)
    local bytes = read(key)
    local log = bytes and log_of(key, bytes)
    if not log or log.n == 0 then return {} end
    local now = clock()
    local last = log.n - 1
    local first = 0
    if now >= w then first = log.n - log_later_than(log, now - w) end
    local tags = log.tags
    local items = {}
    if by then
      -- Units per tag, most first, ties by the tag's bytes.
      local of, untagged = {}, nil
      for e = first, last do
        local tag = tags and tags[e + 1] or false
        local item
        if tag then item = of[tag] else item = untagged end
        if item then
          item[2] = item[2] + 1
        else
          item = { tag, 1 }
          items[#items + 1] = item
          if tag then of[tag] = item else untagged = item end
        end
      end
      sort(items, function(a, b)
        if a[2] ~= b[2] then return a[2] > b[2] end
        return tag_before(a[1], b[1])
      end)
      for k = #items, most + 1, -1 do items[k] = nil end
      return items
    end
    -- Newest first: an entry adds a unit to the item of its instant and
    -- tag, else starts one (`run`: the first item of its instant).
    local run, run_at = 1, nil
    for e = last, first, -1 do
      local at = log_get(log, e)
      local tag = tags and tags[e + 1] or false
      if at ~= run_at then
        if #items >= most then break end
        run, run_at = #items + 1, at
      end
      local item = nil
      for k = run, #items do
        if items[k][3] == tag then
          item = items[k]
          break
        end
      end
      if item then
        item[2] = item[2] + 1
      elseif #items < most then
        items[#items + 1] = { at, 1, tag }
      end
    end
    return items
  end

  local KINDS = { 'gcra', 'token_bucket', 'fixed', 'sliding_log', 'sliding_counter' }

  -- The fields of a state of algorithm i (STATES), after its kind.
  local function fields(i, st, out)
    local function add(name, value)
      out[#out + 1] = name
      out[#out + 1] = value
    end
    if i == 1 then
      local tat = st.u
      if st.f > 0 then tat = tat + 1 end
      add('tat_us', tat)
    elseif i == 2 then
      add('tokens', st.tok)
      add('updated_us', st.at)
    elseif i == 3 then
      add('window_start_us', st.start)
      add('count', st.count)
    elseif i == 4 then
      add('entries', st.n)
      add('tagged', st.tagged or 0)
      if st.n > 0 then
        add('oldest_us', log_get(st, 0))
        add('newest_us', log_get(st, st.n - 1))
      else
        add('oldest_us', false)
        add('newest_us', false)
      end
    elseif i == 5 then
      add('window_start_us', st.start)
      add('previous', st.prev)
      add('current', st.cur)
    else
      local leases, units, next_deadline = 0, 0, false
      for k = 1, st.n do
        local r = st.records[k]
        if r.deadline ~= 0 then
          leases, units = leases + 1, units + r.units
          if not next_deadline or r.deadline < next_deadline then next_deadline = r.deadline end
        end
      end
      add('leases', leases)
      add('units', units)
      add('next_deadline_us', next_deadline)
      add('last_id', st.last)
    end
  end

  -- rl_inspect's call: the key's kind, its state's fields, its block and
  -- its PTTL, as one flat array of names and values (nil: no key).
  function G.inspect(keys, args)
    local key = one_key(keys, 'rl_inspect', 'rl.inspect')
    if #args ~= 0 then arity_error('rl.inspect') end
    local bytes = read(key)
    if not bytes then return false end
    local function no_state(problem)
      fail(fmt('ERR key \'%s\' does not hold a limiter\'s state: %s', printable(key), problem))
    end
    local block, body = nil, bytes
    if byte(bytes, 1) == 66 then
      if #bytes < 8 then no_state('expected \'B\' and a 7-byte instant before the state') end
      block = u56_at(bytes, 2)
      if not block or block >= RANGE.instant then beyond(fmt('key \'%s\' holds a block', printable(key))) end
      body = sub(bytes, 9)
    end
    local out = { 'kind', false }
    if body ~= '' or not block then
      local first = byte(body, 1)
      local found = nil
      for i = 1, #STATES do
        if first and STATES[i].tags[first] then found = i end
      end
      local st, problem
      if found then
        st, problem = STATES[found].decode(body)
        if problem then state_error(key, STATES[found].name, problem, body) end
        if not st then beyond_state(key, STATES[found].name) end
        out[2] = KINDS[found]
      elseif first == 81 then
        found = 6
        st, problem = lease_view(body)
        if problem then state_error(key, 'rl.concurrency', problem, body) end
        if not st then beyond_state(key, 'rl.concurrency') end
        out[2] = 'concurrency'
      else
        no_state('its first byte is no limiter\'s')
      end
      fields(found, st, out)
    end
    if block then
      out[#out + 1] = 'blocked_until_us'
      out[#out + 1] = block
    end
    out[#out + 1] = 'pttl'
    out[#out + 1] = call('PTTL', key)
    return out
  end
end
-- part: general_end
-- Built: from now on `general` answers it.
general = function() return G end
return G
end
-- part: kept
-- What a function of the library keeps between calls (a script, nothing):
-- its limiters' numbers by unit and parameter strings (1024, then all
-- forgotten), lone quantities' values in kept[0], the settings, its last
-- expiry as text.
-- RL.ALL keeps each algorithm's limiters apart, in kept[1] on.
local function keep(kept, unit, args, from, n, lim)
  if kept.held >= 1024 then
    kept[1000000], kept[1000], kept[0], kept.held = {}, {}, {}, 0
  end
  local t = kept[unit]
  for i = from, from + n - 2 do
    local s = args[i]
    local next_t = t[s]
    if not next_t then
      next_t = {}
      t[s] = next_t
    end
    t = next_t
  end
  t[args[from + n - 1]] = lim
  kept.held = kept.held + 1
end

local function new_kept(algorithms)
  local kept = { [1000000] = {}, [1000] = {}, [0] = {}, held = 0, keep = keep, settings = settings() }
  for i = 1, algorithms or 0 do kept[i] = new_kept() end
  return kept
end
-- part: register
-- The functions: each runs its script's lines, with what it keeps.
do
  local kept = new_kept()
  redis.register_function('rl_gcra', function(keys, args)
    local ok, reply, a, b = pcall(rate, keys, args, kept, 1, 3, gcra_limiter, request, write, settings, decimal) if ok and reply ~= false then return reply end
    if not ok then return failure(reply) end return guard(general().rate, 1, keys, args, a, b)
  end)
end
do
  local kept = new_kept()
  redis.register_function('rl_token_bucket', function(keys, args)
    local ok, reply, a, b = pcall(rate, keys, args, kept, 2, 3, bucket_limiter, request, write, settings, decimal) if ok and reply ~= false then return reply end
    if not ok then return failure(reply) end return guard(general().rate, 2, keys, args, a, b)
  end)
end
do
  local kept = new_kept()
  redis.register_function('rl_fixed', function(keys, args)
    local ok, reply, a, b = pcall(rate, keys, args, kept, 3, 2, fixed_limiter, request, write, settings, decimal) if ok and reply ~= false then return reply end
    if not ok then return failure(reply) end return guard(general().rate, 3, keys, args, a, b)
  end)
end
do
  local kept = new_kept()
  redis.register_function('rl_sliding_log', function(keys, args)
    local ok, reply, a, b = pcall(rate, keys, args, kept, 4, 2, log_limiter, request, write, settings, decimal) if ok and reply ~= false then return reply end
    if not ok then return failure(reply) end return guard(general().rate, 4, keys, args, a, b)
  end)
end
do
  local kept = new_kept()
  redis.register_function('rl_sliding_counter', function(keys, args)
    local ok, reply, a, b = pcall(rate, keys, args, kept, 5, 2, counter_limiter, request, write, settings, decimal) if ok and reply ~= false then return reply end
    if not ok then return failure(reply) end return guard(general().rate, 5, keys, args, a, b)
  end)
end
do
  local kept = new_kept(5)
  redis.register_function('rl_all', function(keys, args)
    local ok, reply, a, b = pcall(all, keys, args, kept, request, write, settings, decimal, gcra_limiter, bucket_limiter, fixed_limiter, log_limiter, counter_limiter) if ok and reply ~= false then return reply end
    if not ok then return failure(reply) end return guard(general().all, keys, args, a, b)
  end)
end
redis.register_function('rl_concurrency', function(keys, args)
  local ok, reply, a, b = pcall(concurrency, keys, args) if ok and reply ~= false then return reply end
  if not ok then return failure(reply) end return guard(general().concurrency, keys, args, a, b)
end)
redis.register_function('rl_release', function(keys, args)
  local ok, reply, a, b = pcall(release, keys, args) if ok and reply ~= false then return reply end
  if not ok then return failure(reply) end return guard(general().release, keys, args, a, b)
end)
redis.register_function('rl_renew', function(keys, args)
  local ok, reply, a, b = pcall(renew, keys, args) if ok and reply ~= false then return reply end
  if not ok then return failure(reply) end return guard(general().renew, keys, args, a, b)
end)
redis.register_function { function_name = 'rl_version', callback = function() return VERSION end, flags = { 'no-writes', 'allow-stale' } }
redis.register_function { function_name = 'rl_log', callback = function(keys, args) return guard(general().log, keys, args) end, flags = { 'no-writes' } }
redis.register_function { function_name = 'rl_inspect', callback = function(keys, args) return guard(general().inspect, keys, args) end, flags = { 'no-writes' } }
