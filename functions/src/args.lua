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
