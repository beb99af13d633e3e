-- Streak state: rollover of ended periods, period history, the stored hash (semantics §4).
--!include lib/numbers.lua
--!include lib/calendar.lua

-- Streak state after resolving every ended, unmet period before `cur` (semantics §4.5), without
-- writing. `st` holds length, lastMet, freezes; pauses is a list of {firstDay, lastDay}; `skip`
-- (optional) is {firstDay, lastDay} of the local dates a time-zone change in this request skipped.
-- Returns the new state plus the list of resolved periods {idx, length, freeze, pause}
-- and the length lost by a break (0 if none).
local function rollover(freq, st, cur, pauses, freezesOn, skip)
  local resolved = {}
  local lost = 0
  if st.length <= 0 or st.lastMet == nil then return resolved, lost end
  local p = st.lastMet + 1
  while p < cur and st.length > 0 do
    local first, last = periodDays(freq, p)
    local paused = false
    for _k = 1, #pauses do
      local pz = pauses[_k]
      if pz[1] <= last and pz[2] >= first then
        paused = true
        break
      end
    end
    if skip and first >= skip[1] and last <= skip[2] then
      -- Never lived in any zone (semantics §4.7, moving east): neither met nor missed.
      st.lastMet = p
      resolved[#resolved + 1] = { p, st.length, false, false }
    elseif paused then
      st.lastMet = p
      resolved[#resolved + 1] = { p, st.length, false, true }
    elseif freezesOn and st.freezes >= 1 then
      st.freezes = st.freezes - 1
      st.lastMet = p
      resolved[#resolved + 1] = { p, st.length, true, false }
    else
      lost = st.length
      st.length = 0
      st.started = nil
    end
    p = p + 1
  end
  return resolved, lost
end

-- Period history, a string key of its own beside the user hash (so the hash stays small and compact,
-- and an event that adds no period never reads it): the newest HIST_MAX met or bridged periods of the
-- streak's settings epoch, oldest first, as "<idx>:<length>[f|p]" joined by ',' (f = bridged by a
-- freeze, p = by a pause). 100 covers the longest history a read can ask (historyPeriods <= 100) and
-- every restore look-back (90 days, 53 weeks, 24 months); older periods live only in streak_periods.
local HIST_MAX = 100

local function histEntry(idx, length, freeze, pause)
  return fmt(idx) .. ':' .. fmt(length) .. (freeze and 'f' or (pause and 'p' or ''))
end

-- Appends entries (strings) to a history string, keeping the newest HIST_MAX.
local function histAppend(hist, entries)
  if #entries == 0 then return hist end
  local add = table.concat(entries, ',')
  if hist == nil or hist == '' then hist = add else hist = hist .. ',' .. add end
  local _, commas = string.gsub(hist, ',', '')
  local drop = commas + 1 - HIST_MAX
  if drop > 0 then
    local pos = 0
    for _ = 1, drop do pos = string.find(hist, ',', pos + 1, true) end
    hist = string.sub(hist, pos + 1)
  end
  return hist
end

-- Calls fn(idx, length) for each entry of a history string.
local function histEach(hist, fn)
  if hist == nil or hist == '' then return end
  for idx, len in string.gmatch(hist, '(%-?%d+):(%d+)') do fn(tonumber(idx), tonumber(len)) end
end

-- The streak's fields (the user hash's s: part, lib/user.lua) as a state table; a different settings
-- epoch means a discarded state.
local function loadStreak(h, epoch)
  local st = {
    freezes = num(h.freezes, 0),
    longest = num(h.longest, 0),
    longestAt = num(h.longestAt, 0),
    pauses = h.pauses and cjson.decode(h.pauses) or {},
    freezeInit = h.freezeInit,
    raw = h,
  }
  if num(h.epoch, -1) == epoch then
    st.length = num(h.length, 0)
    st.lastMet = num(h.lastMet, nil)
    st.started = h.started ~= '' and h.started or nil
    st.curIdx = num(h.curIdx, nil)
    st.curMet = h.curMet == '1'
    st.lengthAt = num(h.lengthAt, 0)
    st.metAt = num(h.metAt, 0)
  else
    st.length = 0
    st.fresh = true
    st.lengthAt = 0
    st.metAt = 0
    st.curMet = false
    -- A state of another epoch: its period history is discarded with it.
    st.staleHist = h.epoch ~= nil
  end
  return st
end

-- The period history, read only when needed (an event that adds no period does not).
local function streakHistory(st, histKey)
  if st.hist == nil then
    if st.fresh then
      st.hist = ''
    else
      st.hist = redis.call('GET', histKey) or ''
    end
  end
  return st.hist
end

-- The streak as a reply shows it (rollover projected, nothing written).
local function streakReply(st, extended)
  return {
    length = st.length,
    started = st.started,
    lastMet = st.lastMet,
    freezes = st.freezes,
    extended = extended,
    -- Pauses bridge periods without a freeze: the streak's expiry counts them (src/engine/streak-expiry.ts).
    pauses = (st.pauses and #st.pauses > 0) and st.pauses or nil,
    -- Set by the user script's record (lua/applyUserOp.lua): named here so the table is made with
    -- room for them (a constructor sizes the table by its fields, nil or not).
    periods = nil,
    lost = nil,
    changed = nil,
  }
end

-- Resolves the periods ended before `cur` and opens the period the op counts in (semantics §4.3–§4.7).
-- Returns the resolved periods, the length lost by a break, the effective period and its sums so far
-- (metric id -> millionths).
local function streakAdvance(S, st, cur, skip)
  local resolved, lost = rollover(S.freq, st, cur, st.pauses, S.freezesOn, skip)
  -- A late event of a period before the last met one counts in the last met one.
  local eff = cur
  if st.lastMet ~= nil and st.length > 0 and cur < st.lastMet then eff = st.lastMet end
  local sums = {}
  if st.curIdx ~= eff then
    st.curIdx = eff
    st.curMet = st.length > 0 and st.lastMet == eff
  else
    for _k = 1, #S.conds do local c = S.conds[_k] sums[c.m] = num(st.raw['s:' .. c.m], 0) end
  end
  return resolved, lost, eff, sums
end

-- Whether the period's sums meet the streak's conditions (all, or any).
local function streakConditionsMet(S, sums)
  if S.mode == 'any' then
    for _k = 1, #S.conds do
      local c = S.conds[_k]
      if (sums[c.m] or 0) >= c.thr then return true end
    end
    return false
  end
  if #S.conds == 0 then return false end
  for _k = 1, #S.conds do
    local c = S.conds[_k]
    if (sums[c.m] or 0) < c.thr then return false end
  end
  return true
end

-- The period `eff` becomes met: the streak extends, or starts again at 1 (semantics §4.3).
local function streakExtend(st, eff, localDate, now)
  if st.length > 0 and st.lastMet == eff - 1 then
    st.length = st.length + 1
  else
    st.length = 1
    st.started = localDate
  end
  st.lastMet = eff
  st.curMet = true
  st.lengthAt = now
  st.metAt = now
  if st.length > st.longest then
    st.longest = st.length
    st.longestAt = now
  end
end

-- Restores the streak to its best length among the periods fromIdx..cur of the history (semantics
-- §4.8). Returns {from, to}, or {issue = 'none' | 'max'} when nothing changes.
local function streakRestore(S, st, hist, fromIdx, cur, now)
  local best, bestIdx = 0, nil
  histEach(hist, function(idx, len)
    if idx >= fromIdx and idx <= cur and (len > best or (len == best and bestIdx and idx > bestIdx)) then
      best, bestIdx = len, idx
    end
  end)
  if best == 0 then return { issue = 'none' } end
  if st.length >= best then return { issue = 'max' } end
  local restore = { from = st.length, to = best }
  st.started = dateOfDay(periodDays(S.freq, bestIdx - best + 1))
  if st.curMet and st.curIdx == cur then
    st.length = best + 1
    st.lastMet = cur
  else
    st.length = best
    st.lastMet = cur - 1
  end
  st.lengthAt = now
  if st.length > st.longest then
    st.longest = st.length
    st.longestAt = now
  end
  return restore
end

-- The streak hash's fields after the op (flat field, value list; period history excluded).
local function streakFields(S, st, sums)
  local sf = {
    'epoch', fmt(S.epoch), 'length', fmt(st.length), 'freezes', fmt(st.freezes),
    'longest', fmt(st.longest), 'longestAt', fmt(st.longestAt),
  }
  if st.freezeInit then
    sf[#sf + 1] = 'freezeInit'
    sf[#sf + 1] = '1'
  end
  if S.on then
    sf[#sf + 1] = 'curIdx'
    sf[#sf + 1] = fmt(st.curIdx)
    sf[#sf + 1] = 'curMet'
    sf[#sf + 1] = st.curMet and '1' or '0'
    sf[#sf + 1] = 'lengthAt'
    sf[#sf + 1] = fmt(st.lengthAt)
    sf[#sf + 1] = 'metAt'
    sf[#sf + 1] = fmt(st.metAt)
    if st.lastMet ~= nil then
      sf[#sf + 1] = 'lastMet'
      sf[#sf + 1] = fmt(st.lastMet)
    end
    sf[#sf + 1] = 'started'
    sf[#sf + 1] = st.started or ''
    for _k = 1, #S.conds do
      local c = S.conds[_k]
      sf[#sf + 1] = 's:' .. c.m
      sf[#sf + 1] = fmt(sums[c.m] or 0)
    end
  end
  return sf
end

-- The streak fields that changed (put(field, value) each: an event later in a met period changes its
-- sums alone), and a function writing the period history (appended, or dropped with a discarded
-- epoch). `periods` are the op's new periods.
local function streakWrite(S, st, sf, periods, put, histKey)
  local histWrite = nil
  if S.on and #periods > 0 then
    local entries = {}
    for _k = 1, #periods do local p = periods[_k] entries[#entries + 1] = histEntry(p.idx, p.length, p.freeze, p.pause) end
    histWrite = histAppend(streakHistory(st, histKey), entries)
  elseif st.staleHist then
    histWrite = false
  end
  for i = 1, #sf, 2 do
    if st.raw[sf[i]] ~= sf[i + 1] then put(sf[i], sf[i + 1]) end
  end
  return function()
    if histWrite then
      redis.call('SET', histKey, histWrite)
    elseif histWrite == false then
      redis.call('DEL', histKey)
    end
  end
end
