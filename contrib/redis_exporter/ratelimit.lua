-- redis-ratelimit: the module's `INFO ratelimit` fields for redis_exporter.
--
--   redis_exporter --script contrib/redis_exporter/ratelimit.lua
--
-- redis_exporter runs this script with EVAL at every scrape and exports each
-- (key, value) pair of its reply as a gauge `redis_script_values{key="..."}`.
-- It cannot name metrics itself, so each key here is the series it stands
-- for, and the Prometheus configuration next to this file
-- (contrib/redis_exporter/prometheus.yml) turns the key into the series'
-- name and labels:
--
--   ratelimit_<counter>_total{command="<command>"}  one counter per field
--       <command>_<counter>, e.g. ratelimit_calls_total{command="gcra"} from
--       ratelimit_gcra_calls
--   ratelimit_config_<setting>  each setting: its number, or 1 for yes and
--       0 for no, e.g. ratelimit_config_shadow from ratelimit_shadow
--   ratelimit_info_field{field="<field>"}  a field this script does not know
--       (a newer module's) with a number, that number; one without,
--       ratelimit_info_field{field="<field>",value="<its text>"} 1: nothing
--       is dropped
--
-- On a server without the module `INFO ratelimit` is empty and so is the
-- reply: no series, no error. Runs on Redis 6.0 and newer and on Valkey
-- (INFO is allowed in scripts; nothing is written). docs/metrics.md lists
-- every series and what it counts.

-- The settings among the fields (docs/operations.md, "Configuration").
local settings = {
    sliding_log_max_limit = true,
    concurrency_max_limit = true,
    cl_throttle = true,
    shadow = true,
    tag_max_bytes = true,
}

-- The counters a command's fields end with (docs/operations.md, "INFO"),
-- longest first, so that `token_bucket_shadow_refused` is the counter
-- `shadow_refused` of `token_bucket`, not `refused` of `token_bucket_shadow`.
local counters = {
    "entries_written", "shadow_refused",
    "refunded", "reserved", "acquired", "released", "renewed",
    "allowed", "refused", "refunds", "granted", "expired",
    "errors", "blocks", "forced", "calls",
}

local reply = {}
local function add(key, value)
    reply[#reply + 1] = key
    reply[#reply + 1] = value
end

local function number(value)
    if value == "yes" then return "1" end
    if value == "no" then return "0" end
    if string.match(value, "^%-?%d+$") then return value end
    return nil
end

local info = redis.call("INFO", "ratelimit")
for line in string.gmatch(info, "[^\r\n]+") do
    local name, raw = string.match(line, "^ratelimit_([%w_]+):(.*)$")
    local value = raw and number(raw)
    if value ~= nil then
        local key = nil
        if settings[name] then
            key = "ratelimit_config_" .. name
        else
            for _, counter in ipairs(counters) do
                local tail = "_" .. counter
                if #name > #tail and string.sub(name, -#tail) == tail then
                    local command = string.sub(name, 1, #name - #tail)
                    key = "ratelimit_" .. counter .. '_total{command="' .. command .. '"}'
                    break
                end
            end
        end
        add(key or ('ratelimit_info_field{field="' .. name .. '"}'), value)
    elseif name then
        -- A label value is kept to characters that need no escaping.
        local text = string.gsub(raw, '[^%w_.:/ -]', "_")
        add('ratelimit_info_field{field="' .. name .. '",value="' .. text .. '"}', "1")
    end
end
return reply
