-- RL.LOG and RL.INSPECT: what a key holds, read and never written.
do
  -- Whether tag a sorts before tag b: by their bytes (false, untagged,
  -- first). (Lua's `<` on strings follows the server's locale.)
  local function tag_before(a, b)
    if not a or not b then return not a and b ~= false end
    for i = 1, min(#a, #b) do
      local x, y = byte(a, i), byte(b, i)
      if x ~= y then return x < y end
    end
    return #a < #b
  end

  -- The sliding log `key` holds, read through a block header (nil: none,
  -- or a header alone), with the errors a rate command on it answers.
  local function log_of(key, bytes)
    local body = bytes
    local name = STATES[4].name
    if byte(bytes, 1) == 66 then
      if #bytes < 8 then
        state_error(key, name, 'expected \'B\' and a 7-byte instant before the state', nil)
      end
      local ends = u56_at(bytes, 2)
      if not ends or ends >= RANGE.instant then beyond_state(key, name) end
      body = sub(bytes, 9)
      if body == '' then return nil end
    end
    local log, problem = STATES[4].decode(body)
    if problem then state_error(key, name, problem, body) end
    if not log then beyond_state(key, name) end
    return log
  end

  -- rl_log's call: the entries of the window, by instant and tag, or by tag.
  function G.log(keys, args)
    local key = one_key(keys, 'rl_log', 'rl.log')
    if #args < 1 then arity_error('rl.log') end
    local unit, by, count = 1000000, false, nil
    local i, n = 2, #args
    while i <= n do
      local word = upper(args[i])
      if word == 'MS' then
        if unit == 1000 then fail('ERR syntax error: MS is given twice') end
        unit = 1000
      elseif word == 'BY' then
        if by then fail('ERR syntax error: BY TAG is given twice') end
        i = i + 1
        local value = args[i]
        if not value then fail('ERR syntax error: BY needs a value (TAG)') end
        if upper(value) ~= 'TAG' then fail(fmt('ERR syntax error: BY takes only TAG, got \'%s\'', printable(value))) end
        by = true
      elseif word == 'COUNT' then
        if count then fail('ERR syntax error: COUNT is given twice') end
        i = i + 1
        count = args[i]
        if not count then fail('ERR syntax error: COUNT needs a value (COUNT count)') end
      else
        fail(fmt('ERR syntax error: unknown option \'%s\' (expected MS, BY TAG or COUNT)', printable(args[i])))
      end
      i = i + 1
    end
    local most = MAX_LIMIT
    if count then most = number(count, 'COUNT count', 1, MAX_LIMIT) end
    local w = duration(args[1], 'window', 1, unit)
    local bytes = read(key)
    local log = bytes and log_of(key, bytes)
    if not log or log.n == 0 then return {} end
    local now = clock()
    local last = log.n - 1
    local first = 0
    if now >= w then first = log.n - log_later_than(log, now - w) end
    local tags = log.tags
    local items = {}
    if by then
      -- Units per tag, most first, ties by the tag's bytes.
      local of, untagged = {}, nil
      for e = first, last do
        local tag = tags and tags[e + 1] or false
        local item
        if tag then item = of[tag] else item = untagged end
        if item then
          item[2] = item[2] + 1
        else
          item = { tag, 1 }
          items[#items + 1] = item
          if tag then of[tag] = item else untagged = item end
        end
      end
      sort(items, function(a, b)
        if a[2] ~= b[2] then return a[2] > b[2] end
        return tag_before(a[1], b[1])
      end)
      for k = #items, most + 1, -1 do items[k] = nil end
      return items
    end
    -- Newest first: an entry adds a unit to the item of its instant and
    -- tag, else starts one (`run`: the first item of its instant).
    local run, run_at = 1, nil
    for e = last, first, -1 do
      local at = log_get(log, e)
      local tag = tags and tags[e + 1] or false
      if at ~= run_at then
        if #items >= most then break end
        run, run_at = #items + 1, at
      end
      local item = nil
      for k = run, #items do
        if items[k][3] == tag then
          item = items[k]
          break
        end
      end
      if item then
        item[2] = item[2] + 1
      elseif #items < most then
        items[#items + 1] = { at, 1, tag }
      end
    end
    return items
  end

  local KINDS = { 'gcra', 'token_bucket', 'fixed', 'sliding_log', 'sliding_counter' }

  -- The fields of a state of algorithm i (STATES), after its kind.
  local function fields(i, st, out)
    local function add(name, value)
      out[#out + 1] = name
      out[#out + 1] = value
    end
    if i == 1 then
      local tat = st.u
      if st.f > 0 then tat = tat + 1 end
      add('tat_us', tat)
    elseif i == 2 then
      add('tokens', st.tok)
      add('updated_us', st.at)
    elseif i == 3 then
      add('window_start_us', st.start)
      add('count', st.count)
    elseif i == 4 then
      add('entries', st.n)
      add('tagged', st.tagged or 0)
      if st.n > 0 then
        add('oldest_us', log_get(st, 0))
        add('newest_us', log_get(st, st.n - 1))
      else
        add('oldest_us', false)
        add('newest_us', false)
      end
    elseif i == 5 then
      add('window_start_us', st.start)
      add('previous', st.prev)
      add('current', st.cur)
    else
      local leases, units, next_deadline = 0, 0, false
      for k = 1, st.n do
        local r = st.records[k]
        if r.deadline ~= 0 then
          leases, units = leases + 1, units + r.units
          if not next_deadline or r.deadline < next_deadline then next_deadline = r.deadline end
        end
      end
      add('leases', leases)
      add('units', units)
      add('next_deadline_us', next_deadline)
      add('last_id', st.last)
    end
  end

  -- rl_inspect's call: the key's kind, its state's fields, its block and
  -- its PTTL, as one flat array of names and values (nil: no key).
  function G.inspect(keys, args)
    local key = one_key(keys, 'rl_inspect', 'rl.inspect')
    if #args ~= 0 then arity_error('rl.inspect') end
    local bytes = read(key)
    if not bytes then return false end
    local function no_state(problem)
      fail(fmt('ERR key \'%s\' does not hold a limiter\'s state: %s', printable(key), problem))
    end
    local block, body = nil, bytes
    if byte(bytes, 1) == 66 then
      if #bytes < 8 then no_state('expected \'B\' and a 7-byte instant before the state') end
      block = u56_at(bytes, 2)
      if not block or block >= RANGE.instant then beyond(fmt('key \'%s\' holds a block', printable(key))) end
      body = sub(bytes, 9)
    end
    local out = { 'kind', false }
    if body ~= '' or not block then
      local first = byte(body, 1)
      local found = nil
      for i = 1, #STATES do
        if first and STATES[i].tags[first] then found = i end
      end
      local st, problem
      if found then
        st, problem = STATES[found].decode(body)
        if problem then state_error(key, STATES[found].name, problem, body) end
        if not st then beyond_state(key, STATES[found].name) end
        out[2] = KINDS[found]
      elseif first == 81 then
        found = 6
        st, problem = lease_view(body)
        if problem then state_error(key, 'rl.concurrency', problem, body) end
        if not st then beyond_state(key, 'rl.concurrency') end
        out[2] = 'concurrency'
      else
        no_state('its first byte is no limiter\'s')
      end
      fields(found, st, out)
    end
    if block then
      out[#out + 1] = 'blocked_until_us'
      out[#out + 1] = block
    end
    out[#out + 1] = 'pttl'
    out[#out + 1] = call('PTTL', key)
    return out
  end
end
