-- The general path: every option, form of state and error. Its parts, to
-- `general_end`, are built by the first call that needs them (kept by the
-- library; a script builds them in each call that takes it). Each part
-- declares before its block what others use, and keeps its helpers inside.
local function general()
-- The standard library of the general path, and its helpers.
local floor, fmt, sub, byte, char, rep, find = math.floor, string.format, string.sub, string.byte, string.char, string.rep, string.find
local lower, upper, concat, sort = string.lower, string.upper, table.concat, table.sort
local pack, unpack = struct.pack, struct.unpack
local call, pcall_r = redis.call, redis.pcall
local set_repl, REPL_NONE, REPL_ALL = redis.set_repl, redis.REPL_NONE, redis.REPL_ALL
local SETTINGS = settings()

local function max(a, b) if a > b then return a end return b end
local function min(a, b) if a < b then return a end return b end

-- What it gives the functions: the general rate, RL.ALL and lease calls.
local G = {}
