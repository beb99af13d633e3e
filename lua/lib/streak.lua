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

-- The streak's scalar fields, kept in two fields of the user hash (s:_ and s:~, the streak part's "_"
-- and "~"): each holds its fields' values joined by '|' in this order, '' for one not set
-- (src/redis/user-hash.ts STREAK_PACKS): s:_ holds epoch, length, freezes, longest, curIdx, curMet,
-- lastMet and started, s:~ longestAt, lengthAt and metAt. Two fields instead of eleven: a new user's
-- HSET writes 14 fields rather than 23 on the bench's configuration, and an op puts two at most. Two,
-- not one, so that each value stays within the 64 bytes of Redis's compact hash encoding
-- (hash-max-listpack-value): at most 45 and 41 bytes. A hash of an earlier version holds them as
-- fields of their own (s:epoch, ...): read as they are, and removed when the op writes the packed
-- fields. Written out field by field below (no loop, no table per call): this runs for every op.
-- STREAK_AT: field -> its pack.
local STREAK_AT = {
  epoch = 1, length = 1, freezes = 1, longest = 1, curIdx = 1, curMet = 1, lastMet = 1, started = 1,
  longestAt = 2, lengthAt = 2, metAt = 2,
}

-- Every scalar field as a field of its own (HDEL'd when the part is packed; missing ones are ignored):
-- STREAK_AT's names, listed again because a Function library's load may not call pairs.
local STREAK_OWN = {
  's:epoch', 's:length', 's:freezes', 's:longest', 's:curIdx', 's:curMet', 's:lastMet', 's:started',
  's:longestAt', 's:lengthAt', 's:metAt',
}

-- Spreads the packed fields over the part's named fields ('' is a field not set); where both are
-- stored, the packed ones win. Returns whether the hash holds scalar fields of their own: a hash of an
-- earlier version (or one a process of that version wrote to since; every such write has epoch and
-- longestAt), whose own fields the next write removes (streakPut).
local function streakUnpack(h)
  local own = h.epoch ~= nil or h.longestAt ~= nil
  local p = h._
  if p ~= nil then
    local epoch, length, freezes, longest, curIdx, curMet, lastMet, started =
      string.match(p, '^([^|]*)|([^|]*)|([^|]*)|([^|]*)|([^|]*)|([^|]*)|([^|]*)|(.*)$')
    h.epoch = epoch ~= '' and epoch or nil
    h.length = length ~= '' and length or nil
    h.freezes = freezes ~= '' and freezes or nil
    h.longest = longest ~= '' and longest or nil
    h.curIdx = curIdx ~= '' and curIdx or nil
    h.curMet = curMet ~= '' and curMet or nil
    h.lastMet = lastMet ~= '' and lastMet or nil
    h.started = started ~= '' and started or nil
  end
  p = h['~']
  if p ~= nil then
    local longestAt, lengthAt, metAt = string.match(p, '^([^|]*)|([^|]*)|(.*)$')
    h.longestAt = longestAt ~= '' and longestAt or nil
    h.lengthAt = lengthAt ~= '' and lengthAt or nil
    h.metAt = metAt ~= '' and metAt or nil
  end
  return own
end

-- Puts the streak fields `sf` (flat name, value list) that differ from the stored part `raw` (unpacked;
-- `own`: what streakUnpack said of it): the scalar ones as their packed fields, the others (period sums
-- s:<metricId>, freezeInit) one by one. Returns the hash fields of an earlier version to remove (their
-- values are now packed), or nil.
local function streakPut(raw, sf, put, own)
  -- v holds the scalar fields of sf by name: made with all eleven keys (nil), so that setting them
  -- does not grow the table four times over.
  local v = {
    epoch = nil, length = nil, freezes = nil, longest = nil, curIdx = nil, curMet = nil, lastMet = nil,
    started = nil, longestAt = nil, lengthAt = nil, metAt = nil,
  }
  local changed = false
  for i = 1, #sf, 2 do
    local f, x = sf[i], sf[i + 1]
    if STREAK_AT[f] then
      v[f] = x
      if (raw[f] or '') ~= x then changed = true end
    elseif raw[f] ~= x then
      put(f, x)
    end
  end
  local s1, s2 = raw._, raw['~']
  -- Packed already, and none of them changed (a later event of a met period): nothing to pack.
  if not changed and not own and s1 ~= nil and s2 ~= nil then return nil end
  local p1 = (v.epoch or raw.epoch or '') .. '|' .. (v.length or raw.length or '') .. '|'
    .. (v.freezes or raw.freezes or '') .. '|' .. (v.longest or raw.longest or '') .. '|'
    .. (v.curIdx or raw.curIdx or '') .. '|' .. (v.curMet or raw.curMet or '') .. '|'
    .. (v.lastMet or raw.lastMet or '') .. '|' .. (v.started or raw.started or '')
  local p2 = (v.longestAt or raw.longestAt or '') .. '|' .. (v.lengthAt or raw.lengthAt or '') .. '|'
    .. (v.metAt or raw.metAt or '')
  -- (none set and none stored: nothing to write)
  if p1 ~= s1 and not (s1 == nil and p1 == '|||||||') then put('_', p1) end
  if p2 ~= s2 and not (s2 == nil and p2 == '||') then put('~', p2) end
  if own then return STREAK_OWN end
  return nil
end

-- The streak's fields (the user hash's s: part, lib/user.lua) as a state table; a different settings
-- epoch means a discarded state.
local function loadStreak(h, epoch)
  local own = streakUnpack(h)
  local st = {
    own = own,
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

-- Puts the streak fields that changed (put(field, value): an event later in a met period changes its
-- sums alone; streakPut) and returns what streakCommit writes later: an earlier version's scalar fields
-- to remove, whether an earlier recompute's s:hist is to go, and the period history (appended, false
-- to drop it with a discarded epoch, nil to leave it). `periods` are the op's new periods.
local function streakWrite(S, st, sf, periods, put, histKey)
  local histWrite = nil
  if S.on and #periods > 0 then
    local entries = {}
    for _k = 1, #periods do local p = periods[_k] entries[#entries + 1] = histEntry(p.idx, p.length, p.freeze, p.pause) end
    histWrite = histAppend(streakHistory(st, histKey), entries)
  elseif st.staleHist then
    histWrite = false
  end
  local legacy = streakPut(st.raw, sf, put, st.own)
  -- The period history that earlier versions' streak recompute wrote into the user hash (s:hist)
  -- instead of the history key: never read here, removed.
  return legacy, st.raw.hist ~= nil, histWrite
end

-- Applies what streakWrite returned, once every check of the op has passed.
local function streakCommit(legacy, staleHist, histWrite, histKey, userKey)
  if legacy then redis.call('HDEL', userKey, unpack(legacy)) end
  if staleHist then redis.call('HDEL', userKey, 's:hist') end
  if histWrite then
    redis.call('SET', histKey, histWrite)
  elseif histWrite == false then
    redis.call('DEL', histKey)
  end
end
