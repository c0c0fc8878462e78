-- The rate algorithms (src/algorithms.rs): one row each, which its part
-- adds, by the module's order: its command and state (the codec's), its
-- name in RL.ALL, whether it reserves (takes WAIT), its parameters, how
-- its limiter is built (the one-pass limiter, checked with the errors
-- the module answers), how a state it reads is adopted and how it is
-- written.
local ALGORITHMS, ALGORITHM_OF = {}, {}

local function algorithm(i, row)
  local state = STATES[i]
  row.name, row.tags, row.decode, row.encode = state.name, state.tags, state.decode, state.encode
  if row.encode then
    row.plan = function(lim, _, change, ms) return set_plan(row.encode(lim, change), ms) end
    row.plan_refund = row.plan
  end
  ALGORITHMS[i], ALGORITHM_OF[row.word] = row, row
end
