-- Shared helpers, inlined into scripts by `--!include lib/common.lua` (src/redis/scripts.ts).
-- Numbers: Lua numbers are doubles, exact for integers below 2^53; big integers travel as strings
-- because cjson prints only 14 significant digits.

-- Largest magnitude of any total in millionths (semantics §2.1: totals stay within 9,007,199,254,
-- which keeps every sum of two totals below 2^53 and so exact in a double).
local MAX_SAFE = 9007199254000000
-- Largest points total (README Limits): the same bound as metric totals, so totals, their sums on
-- points leaderboards and any award stay exact integers in a double.
local MAX_POINTS = 9007199254

local function fmt(n)
  return string.format('%.0f', n)
end

local function num(s, default)
  if s == nil or s == false then return default end
  return tonumber(s)
end

-- Exact floor division of integers a / b (b > 0): returns quotient and non-negative remainder.
local function floordiv(a, b)
  local q = math.floor(a / b)
  local r = a - q * b
  if r < 0 then
    q = q - 1
    r = r + b
  elseif r >= b then
    q = q + 1
    r = r - b
  end
  return q, r
end

-- Days since 1970-01-01 of a civil date (Howard Hinnant's algorithm).
local function daysFromCivil(y, m, d)
  if m <= 2 then y = y - 1 end
  local era = math.floor(y / 400)
  local yoe = y - era * 400
  local mp = (m + 9) % 12
  local doy = math.floor((153 * mp + 2) / 5) + d - 1
  local doe = yoe * 365 + math.floor(yoe / 4) - math.floor(yoe / 100) + doy
  return era * 146097 + doe - 719468
end

-- YYYY-MM-DD of a day index (inverse of daysFromCivil).
local function dateOfDay(z)
  z = z + 719468
  local era = math.floor(z / 146097)
  local doe = z - era * 146097
  local yoe = math.floor((doe - math.floor(doe / 1460) + math.floor(doe / 36524) - math.floor(doe / 146096)) / 365)
  local y = yoe + era * 400
  local doy = doe - (365 * yoe + math.floor(yoe / 4) - math.floor(yoe / 100))
  local mp = math.floor((5 * doy + 2) / 153)
  local d = doy - math.floor((153 * mp + 2) / 5) + 1
  local m = mp < 10 and mp + 3 or mp - 9
  if m <= 2 then y = y + 1 end
  return string.format('%04d-%02d-%02d', y, m, d)
end

-- First and last day index of a streak period (daily: day index; weekly: ISO week index with
-- 1969-12-29 as week 0; monthly: year * 12 + month - 1).
local function periodDays(freq, idx)
  if freq == 'daily' then return idx, idx end
  if freq == 'weekly' then return idx * 7 - 3, idx * 7 + 3 end
  local y = math.floor(idx / 12)
  local m = idx - y * 12 + 1
  local first = daysFromCivil(y, m, 1)
  local ny, nm = y, m + 1
  if nm == 13 then ny, nm = y + 1, 1 end
  return first, daysFromCivil(ny, nm, 1) - 1
end

-- Whether every [key, value] filter matches the attribute map.
local function matches(filters, attrs)
  if filters == nil then return true end
  for _, f in ipairs(filters) do
    if attrs[f[1]] ~= f[2] then return false end
  end
  return true
end

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
    for _, pz in ipairs(pauses) do
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

-- Period history, a string key of its own beside the streak hash (so the hash stays small and compact,
-- and an event that adds no period never reads it): the newest HIST_MAX met or bridged periods of the
-- hash's settings epoch, oldest first, as "<idx>:<length>[f|p]" joined by ',' (f = bridged by a freeze,
-- p = by a pause). 100 covers the longest history a read can ask (historyPeriods <= 100) and every
-- restore look-back (90 days, 53 weeks, 24 months); older periods live only in streak_periods. Older
-- layouts kept one field per period in the hash (h:<epoch>:<idx>); loadStreak folds those in
-- (st.legacyHist) and the next write moves them.
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

-- Reads the streak hash into a state table; a different settings epoch means a discarded state.
local function loadStreak(key, epoch)
  local raw = redis.call('HGETALL', key)
  local h = {}
  local legacy = nil
  for i = 1, #raw, 2 do
    local f = raw[i]
    if string.byte(f, 1) == 104 and string.byte(f, 2) == 58 then -- 'h:'
      legacy = legacy or {}
      legacy[#legacy + 1] = f
      local e, idx = string.match(f, '^h:(%-?%d+):(%-?%d+)$')
      if e and tonumber(e) == epoch then
        local len, fr, pa = string.match(raw[i + 1], '^(%d+)|(%d)|(%d)')
        legacy[#legacy + 1] = { tonumber(idx), tonumber(len), fr == '1', pa == '1' }
      end
    else
      h[f] = raw[i + 1]
    end
  end
  local st = {
    freezes = num(h.freezes, 0),
    longest = num(h.longest, 0),
    longestAt = num(h.longestAt, 0),
    pauses = h.pauses and cjson.decode(h.pauses) or {},
    freezeInit = h.freezeInit,
    raw = h,
  }
  if legacy then
    -- Fold the old per-period fields into hist (entries of this epoch, by period).
    st.legacy = {}
    local entries = {}
    for _, x in ipairs(legacy) do
      if type(x) == 'string' then st.legacy[#st.legacy + 1] = x else entries[#entries + 1] = x end
    end
    table.sort(entries, function(a, b) return a[1] < b[1] end)
    local strs = {}
    for _, x in ipairs(entries) do strs[#strs + 1] = histEntry(x[1], x[2], x[3], x[4]) end
    st.legacyHist = histAppend('', strs)
  end
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
