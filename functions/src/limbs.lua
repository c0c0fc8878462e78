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
