-- Writes (src/store.rs's Write, src/codec/*.rs): a plan is {kind = 'set',
-- value}, {kind = 'patch', new_len, patches = {{offset, bytes}...},
-- compact} or {kind = 'del'}, with `ms` the absolute expiry; offsets are
-- 0-based, as SETRANGE's.
local function set_plan(value, ms) return { kind = 'set', value = value, ms = ms } end

local function patch_plan(new_len, patches, compact, ms)
  return { kind = 'patch', new_len = new_len, patches = patches, compact = compact, ms = ms }
end

local DELETE = { kind = 'del' }

-- `base` grown to new_len (zero-filled) and patched.
local function patched(base, new_len, patches)
  local v = base
  if #v < new_len then v = v .. rep('\0', new_len - #v) end
  for i = 1, #patches do
    local off, bytes = patches[i][1], patches[i][2]
    v = sub(v, 1, off) .. bytes .. sub(v, off + #bytes + 1)
  end
  return v
end

-- The tagged log's write (a log that holds a tag, or a call that gives
-- one): the whole log rebuilt, as the untagged one is (`plan_log`), the
-- new entries after those at or before `at` and before later ones, the
-- oldest dropped past `keep`; each new entry carries the call's tag.
local function plan_tagged(log, change, ms)
  local keep, q, at, tag = change.keep, change.count, change.at, change.tag or false
  local n, old, olds = 0, '', nil
  if log then n, old, olds = log.n, log_bytes(log, 0, log.n), log.tags end
  local before = n
  if n > 0 and log_get(log, n - 1) > at then before = n - log_later_than(log, at) end
  local word = u64_bytes(at)
  local words, tags, k = {}, {}, 0
  for i = max(n + q - keep, 0) + 1, n + q do
    k = k + 1
    if i > before and i <= before + q then
      words[k], tags[k] = word, tag
    else
      local j = i
      if i > before then j = i - q end
      words[k], tags[k] = sub(old, j * 8 - 7, j * 8), olds and olds[j] or false
    end
  end
  return set_plan(log_value(words, tags), ms)
end

-- The sliding log's write for `q` entries at `at` (src/codec/sliding_log.rs):
-- in place while the ring allows, else the whole log rebuilt in order.
local function plan_log(log, change, ms)
  if change.tag or (log and log.tags) then return plan_tagged(log, change, ms) end
  local keep, q, at = change.keep, change.count, change.at
  local word = u64_bytes(at)
  local n = log and log.n or 0
  if log and n > 0 and log_get(log, n - 1) > at then
    -- Reservations are the newest: the entries go in before them.
    local later = log_later_than(log, at)
    local parts = { log_bytes(log, 0, n - later), rep(word, q), log_bytes(log, n - later, n) }
    local all = concat(parts)
    local skip = max(n + q - keep, 0)
    return set_plan(log_header(0) .. sub(all, skip * 8 + 1), ms)
  end
  if log and not (n > keep or (n < keep and log.oldest ~= 0) or q > keep) then
    if n < keep then
      local grow = min(q, keep - n)
      local rest = q - grow
      local patches = { { slot(n), rep(word, grow) } }
      if rest > 0 then
        patches[2] = { slot(0), rep(word, rest) }
        patches[3] = { 0, log_header(rest % keep) }
      end
      return patch_plan(slot(n + grow), patches, n + grow == keep, ms)
    end
    local oldest = log.oldest
    local first = min(q, n - oldest)
    local patches = { { slot(oldest), rep(word, first) } }
    if q > first then patches[#patches + 1] = { slot(0), rep(word, q - first) } end
    patches[#patches + 1] = { 0, log_header((oldest + q) % n) }
    return patch_plan(slot(n), patches, false, ms)
  end
  local skip = max(n + q - keep, 0)
  local kept = ''
  if log then kept = log_bytes(log, min(skip, n), n) end
  return set_plan(log_header(0) .. kept .. rep(word, q - max(skip - n, 0)), ms)
end

-- The log without its `newest` newest entries: in place past 64 bytes (the
-- freed slots take an instant out of the window and become the oldest),
-- else rebuilt.
local function plan_shed(log, shed, ms)
  local n = log.n
  local k = min(shed.newest, n)
  local left = n - k
  if log.tags then
    -- A tagged log: rebuilt without them (untagged if no tag is left).
    local old, words, tags = log_bytes(log, 0, left), {}, {}
    for i = 1, left do words[i], tags[i] = sub(old, i * 8 - 7, i * 8), log.tags[i] end
    return set_plan(log_value(words, tags), ms)
  end
  if shed.horizon and slot(n) > WHOLE_VALUE_MAX then
    local filler = u64_bytes(min(shed.horizon, log_get(log, 0)))
    local start = (log.oldest + left) % n
    local first = min(k, n - start)
    local patches = { { slot(start), rep(filler, first) } }
    if k > first then patches[2] = { slot(0), rep(filler, k - first) } end
    patches[#patches + 1] = { 0, log_header(start) }
    return patch_plan(slot(n), patches, false, ms)
  end
  return set_plan(log_header(0) .. log_bytes(log, 0, left), ms)
end

-- The leases' write (src/codec/concurrency.rs).
local function plan_leases(view, update)
  if not update.expires_at then return DELETE end
  local ms = ceil_div(update.expires_at, 1000)
  local plain = update.expired == 0 and not update.acquired and not update.renewed
  if view and update.released and plain then
    local len = LEASE_HEADER + view.n * RECORD
    local held = #leases_of(view)
    if len > WHOLE_VALUE_MAX and held >= 1 and view.n - held + 1 <= held - 1 then
      for i = 1, view.n do
        local r = view.records[i]
        if r.id == update.released and r.deadline ~= 0 then
          return patch_plan(len, { { LEASE_HEADER + (i - 1) * RECORD + 8, u64_bytes(0) } }, false, ms)
        end
      end
    end
  end
  if view and update.expired == 0 and not update.released then
    local n = view.n
    if update.acquired and not update.renewed then
      local a = update.acquired
      local new_len = LEASE_HEADER + (n + 1) * RECORD
      return patch_plan(new_len, { { LEASE_HEADER + n * RECORD, record_bytes(a.id, a.deadline, a.units) } },
        new_len > WHOLE_VALUE_MAX, ms)
    end
    if update.renewed and not update.acquired then
      for i = 1, n do
        local r = view.records[i]
        if r.id == update.renewed.id and r.deadline ~= 0 then
          return patch_plan(LEASE_HEADER + n * RECORD,
            { { LEASE_HEADER + (i - 1) * RECORD + 8, u64_bytes(update.renewed.deadline) } }, false, ms)
        end
      end
    end
  end
  local parts = { 'Q', u64_bytes(update.last) }
  for _, l in ipairs(leases_of(view)) do
    if update.now < l.deadline and l.id ~= update.released then
      local deadline = l.deadline
      if update.renewed and update.renewed.id == l.id then deadline = update.renewed.deadline end
      parts[#parts + 1] = record_bytes(l.id, deadline, l.units)
    end
  end
  if update.acquired then
    local a = update.acquired
    parts[#parts + 1] = record_bytes(a.id, a.deadline, a.units)
  end
  return set_plan(concat(parts), ms)
end

-- Apply a plan to `key`, whose value is `stored`, with the effects the
-- module replicates: a patched value of at most 64 bytes written whole, a
-- longer one by SETRANGE (O(patch) to replicate). A value to be compacted
-- (grown by appends) is then set at its exact size here only, as the
-- module compacts it without replicating more than the patch.
local function apply(key, plan, stored)
  if plan.kind == 'set' then
    write(key, plan.value, plan.ms)
  elseif plan.kind == 'patch' then
    if plan.new_len <= WHOLE_VALUE_MAX then
      write(key, patched(stored or '', plan.new_len, plan.patches), plan.ms)
    else
      for i = 1, #plan.patches do call('SETRANGE', key, plan.patches[i][1], plan.patches[i][2]) end
      call('PEXPIREAT', key, fmt('%d', plan.ms))
      if plan.compact then
        set_repl(REPL_NONE)
        call('SET', key, patched(stored or '', plan.new_len, plan.patches), 'KEEPTTL')
        set_repl(REPL_ALL)
      end
    end
  else
    call('DEL', key)
  end
end
