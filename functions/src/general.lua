-- The general path: every option, every form of state, every error. Its
-- parts, from here to `general_end`, are built on the first call that needs
-- them: once in the library, where `general` then answers what it built;
-- in a script, on each call that takes it, so that a one-pass call never
-- pays for them. Each part gives the others the names it declares before
-- its block, and keeps its helpers in the block; the parts are written at
-- the left margin, as the files they are (functions/src).
function general()
-- The standard library of the general path, and its helpers.
local floor, fmt, sub, byte, char, rep, find = math.floor, string.format, string.sub, string.byte, string.char, string.rep, string.find
local lower, upper, concat, sort = string.lower, string.upper, table.concat, table.sort
local pack, unpack = struct.pack, struct.unpack
local call, pcall_r = redis.call, redis.pcall
local set_repl, REPL_NONE, REPL_ALL = redis.set_repl, redis.REPL_NONE, redis.REPL_ALL
-- The values of a list (Lua's own `unpack`; the name above is struct's).
local spread = _G.unpack

local function max(a, b) if a > b then return a end return b end
local function min(a, b) if a < b then return a end return b end

-- What it gives the functions: the general rate, RL.ALL and lease calls.
local G = {}
