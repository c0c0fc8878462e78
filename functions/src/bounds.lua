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
