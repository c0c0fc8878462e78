-- The settings: edit them and load the library again (a script: build the
-- scripts again). docs/functions.md, "Settings". (Constants: a table or a
-- function at a script's top level would cost every call.)

-- Refusals of the rate functions are answered as allowed and record
-- nothing (the module's `ratelimit.shadow`).
local shadow = false
-- The largest `limit` of rl_sliding_log, 1 to 1000000 (memory grows with it).
local sliding_log_max_limit = 10000
-- The largest `limit` of rl_concurrency, 1 to 1000000.
local concurrency_max_limit = 10000
