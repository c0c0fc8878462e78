-- What a function of the library keeps between calls (a script keeps
-- nothing: its whole text runs on each call): the limiters it built, by
-- unit and parameter strings (at most 1024, then forgotten all at once),
-- and the last expiry it wrote, as text (see `write`).
local function keep(kept, unit, args, from, n, lim)
  if kept.held >= 1024 then
    kept[1000000], kept[1000], kept.held = {}, {}, 0
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

local function new_kept()
  return { [1000000] = {}, [1000] = {}, held = 0, keep = keep }
end
