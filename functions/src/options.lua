-- The options (src/options.rs), their words and how they exclude each other
-- (tests/functions.rs checks that the module's table and this one agree).
local MS, PEEK, REFUND, FORCE, WAIT, AT_MOST, BLOCK, TAG = 1, 2, 3, 4, 5, 6, 7, 8
-- The modes (rl-core's Mode).
local TAKE = 0

local RATE_OPTIONS = { MS, PEEK, REFUND, FORCE, WAIT, AT_MOST, BLOCK }
-- RL.SLIDING_LOG's and RL.ALL's: a log's entries may carry a tag.
local TAGGED_OPTIONS = { MS, PEEK, REFUND, FORCE, WAIT, AT_MOST, BLOCK, TAG }
local LEASE_OPTIONS = { MS, PEEK }
local UNIT_OPTIONS = { MS }
local unknown_option, options
do
  local OPTION_WORDS = { 'MS', 'PEEK', 'REFUND', 'FORCE', 'WAIT', 'AT_MOST', 'BLOCK', 'TAG' }
  local OPTION_OF = { ms = MS, peek = PEEK, refund = REFUND, force = FORCE, wait = WAIT, at_most = AT_MOST, block = BLOCK, tag = TAG }
  -- What the value of an option that takes one is called.
  local VALUE_OF = { [WAIT] = 'WAIT max_wait', [BLOCK] = 'BLOCK duration', [TAG] = 'TAG value' }
  local TAKE_WAYS = 'each says how the units are taken: choose one'
  local EXCLUSIVE = {
    { REFUND, FORCE, TAKE_WAYS },
    { REFUND, WAIT, TAKE_WAYS },
    { REFUND, AT_MOST, TAKE_WAYS },
    { FORCE, WAIT, TAKE_WAYS },
    { FORCE, AT_MOST, TAKE_WAYS },
    { WAIT, AT_MOST, TAKE_WAYS },
    { REFUND, BLOCK, 'a refund is never refused' },
    { FORCE, BLOCK, 'a forced request is never refused' },
    { REFUND, TAG, 'a refund gives back the newest units, whoever logged them' },
  }

  local function accepts_words(accepts, last)
    local list = {}
    for i = 1, #accepts do list[i] = OPTION_WORDS[accepts[i]] end
    return words(list, last)
  end

  local function taken(accepts, option)
    for i = 1, #accepts do
      if accepts[i] == option then return true end
    end
    return false
  end

  function unknown_option(command, token, accepts, takes_quantity)
    local option = OPTION_OF[lower(token)]
    if option then
      fail(fmt('ERR syntax error: \'%s\' does not take %s (it takes %s)', command, OPTION_WORDS[option],
        accepts_words(accepts, 'or')))
    end
    local first = byte(token, 1)
    local numeric = first and ((first >= 48 and first <= 57) or first == 45)
    local hint = ''
    if takes_quantity and numeric then
      hint = '; quantity comes right after the parameters, before any option'
    end
    fail(fmt('ERR syntax error: unknown option \'%s\' (expected %s%s)', printable(token), accepts_words(accepts, 'or'), hint))
  end

  -- `[quantity] [options]` from args[from]: a request {q, unit, peek, mode,
  -- max_wait, block, tag}.
  function options(command, args, from, accepts)
    local req = { q = 1, unit = 1000000, peek = false, mode = TAKE }
    local i, n = from, #args
    if i <= n then
      local first = byte(args[i], 1)
      local alphabetic = first and ((first >= 65 and first <= 90) or (first >= 97 and first <= 122))
      if not alphabetic then
        req.q = number(args[i], 'quantity', 0, MAX_QUANTITY)
        i = i + 1
      end
    end
    if i > n then return req end
    local seen, block, max_wait = {}, nil, nil
    while i <= n do
      local token = args[i]
      local option = OPTION_OF[lower(token)]
      if not option or not taken(accepts, option) then unknown_option(command, token, accepts, true) end
      if VALUE_OF[option] then
        if seen[option] then fail('ERR syntax error: ' .. OPTION_WORDS[option] .. ' is given twice') end
        i = i + 1
        local value = args[i]
        if not value then
          fail(fmt('ERR syntax error: %s needs a value (%s)', OPTION_WORDS[option], VALUE_OF[option]))
        end
        if option == WAIT then
          max_wait = value
        elseif option == BLOCK then
          block = value
        else
          -- (Checked as it is read, as the module does.)
          local most = SETTINGS.tag_max_bytes
          if #value < 1 or #value > most then
            fail(fmt('ERR TAG value must be 1 to %d bytes (the tag_max_bytes setting at the top of the library raises the cap, up to %d)',
              most, MAX_TAG_BYTES))
          end
          req.tag = value
        end
      end
      seen[option] = true
      if option == MS then
        req.unit = 1000
      elseif option == PEEK then
        req.peek = true
      elseif option ~= BLOCK and option ~= WAIT and option ~= TAG then
        req.mode = option
      end
      i = i + 1
    end
    for k = 1, #EXCLUSIVE do
      local pair = EXCLUSIVE[k]
      if seen[pair[1]] and seen[pair[2]] then
        fail(fmt('ERR syntax error: %s and %s cannot be combined (%s)', OPTION_WORDS[pair[1]], OPTION_WORDS[pair[2]], pair[3]))
      end
    end
    if max_wait then
      req.mode = WAIT
      req.max_wait = duration(max_wait, 'WAIT max_wait', 0, req.unit)
    end
    if block then req.block = duration(block, 'BLOCK duration', 1, req.unit) end
    return req
  end
end
