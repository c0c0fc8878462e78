-- The rate algorithms (src/algorithms.rs), in the module's order: one row
-- each, added by its part: its command and state, its name in RL.ALL,
-- whether it takes WAIT, its parameters, how its limiter is built (with
-- the module's errors), and how a state is adopted and written.
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
