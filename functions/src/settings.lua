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
