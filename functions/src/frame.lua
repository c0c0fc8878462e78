-- The block header (src/codec/frame.rs): 'B' and the block's end in 7 bytes.
local BLOCK_HEADER = 8

local function block_header(ends)
  return 'B' .. pack('<I7', min(ends, MAX_WINDOW_START))
end

-- The write of a plan made on the state alone, with the header while the
-- block lasts (`block`: its end, in force), dropped once it has ended.
local function framed(plan, frame, block)
  if not block and not frame.block then return plan end
  if block then
    local header = block_header(block)
    local until_ms = ceil_div(block, 1000)
    if plan.kind == 'set' then
      return set_plan(header .. plan.value, max(plan.ms, until_ms))
    elseif plan.kind == 'patch' then
      if frame.block then
        local shifted = {}
        for i = 1, #plan.patches do shifted[i] = { plan.patches[i][1] + BLOCK_HEADER, plan.patches[i][2] } end
        return patch_plan(plan.new_len + BLOCK_HEADER, shifted, plan.compact, max(plan.ms, until_ms))
      end
      return set_plan(header .. patched(frame.body, plan.new_len, plan.patches), max(plan.ms, until_ms))
    end
    return set_plan(header, until_ms)
  end
  if plan.kind == 'patch' then return set_plan(patched(frame.body, plan.new_len, plan.patches), plan.ms) end
  return plan
end

-- The write that blocks the key until `ends`, its state unchanged.
local function block_plan(frame, ends, ms)
  if frame.block then return patch_plan(BLOCK_HEADER + #frame.body, { { 0, block_header(ends) } }, false, ms) end
  return set_plan(block_header(ends) .. frame.body, ms)
end
