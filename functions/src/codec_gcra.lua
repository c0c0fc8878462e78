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
