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
