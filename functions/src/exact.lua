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
