-- What a function of the library keeps between calls (a script, nothing):
-- its limiters' numbers by unit and parameter strings (1024, then all
-- forgotten), lone quantities' values in kept[0], the settings, its last
-- expiry as text.
-- RL.ALL keeps each algorithm's limiters apart, in kept[1] on.
local function keep(kept, unit, args, from, n, lim)
  if kept.held >= 1024 then
    kept[1000000], kept[1000], kept[0], kept.held = {}, {}, {}, 0
  end
  local t = kept[unit]
  for i = from, from + n - 2 do
    local s = args[i]
    local next_t = t[s]
    if not next_t then
      next_t = {}
      t[s] = next_t
    end
    t = next_t
  end
  t[args[from + n - 1]] = lim
  kept.held = kept.held + 1
end

local function new_kept(algorithms)
  local kept = { [1000000] = {}, [1000] = {}, [0] = {}, held = 0, keep = keep, settings = settings() }
  for i = 1, algorithms or 0 do kept[i] = new_kept() end
  return kept
end
