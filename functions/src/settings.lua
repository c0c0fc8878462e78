-- The settings: edit them and load the library again (a script: build the
-- scripts again). docs/functions.md, "Settings". (A function: a script
-- builds the table only in a call that reads it; the library, once.)
local function settings()
  return {
    -- Refusals of the rate functions are answered as allowed and record
    -- nothing (the module's `ratelimit.shadow`).
    shadow = false,
    -- The largest `limit` of rl_sliding_log, 1 to 1000000 (memory grows with it).
    sliding_log_max_limit = 10000,
    -- The largest `limit` of rl_concurrency, 1 to 1000000.
    concurrency_max_limit = 10000,
  }
end
