--[[
applyUserOp: every state change of one user, applied atomically in the user's shard slot
(semantics §0: per-user serialisation; §2.2: processing order).

Ops (input.op):
  "event"    record a metric event: idempotency, upsert, metric total, streak, achievements,
             points (triggers, boosts, caps), levels, per-run leaderboard values, outbox record
  "complete" complete an `api` achievement: upsert, completion, cascade, achievement triggers
  "grant"    background time-trigger awards (input.grant = trigger ids, input.at = slot time)
  "backdate" complete plan.api for an existing user who is eligible (no error otherwise)
  "freeze"   grant up to input.count streak freezes, capped at the maximum (reply.granted)
  "restore"  restore the streak to its best length since period input.fromIdx (reply.restore)
  "upsert"   identify / create / update a user (user_creation triggers, initial freezes);
             input.user.prefs {type = JSON channel array} merges notification preferences (p:<type>)

KEYS[1] profile hash        KEYS[2] metric totals hash   KEYS[3] counters hash
KEYS[4] achievements hash   KEYS[5] points totals hash   KEYS[6] streak hash
KEYS[7] idempotency hash (the current window bucket, or the forever hash)
KEYS[8] board values hash (boardId -> "<run>|<value>" of the user's latest run, boardId~ -> the run
        before it)    KEYS[9] shard outbox stream
KEYS[10] this op's reply marker (kept input.markMs, default 10 s: a retried call with the same op id
         returns it; batch items keep theirs until their chunk is recorded, src/engine/batch-events.ts)
KEYS[10 + i] recent awards list of plan.systems[i]
KEYS[input.fuse[j].ki ..] (single Redis only) the keys of a board this op's values are applied to
             here rather than by the caller (lua/updateBoard.lua's KEYS, input.fuse[j].kn of them)
KEYS[input.appliedKi] (with input.fuse) the user's applied-moves hash (boardId -> seq)
KEYS[input.shki] the user's streak period history (string; lib/common.lua)
KEYS[input.uki] the shard's user index (zset userId -> creation ms), written when the op creates the user
KEYS[input.idem.prevKi], KEYS[input.idem.oldKi] (with a window) the idempotency hashes of the previous
             window bucket and of the one before it

ARGV[1] plan: JSON configuration for this op (built by src/engine/plan.ts, cached per snapshot)
ARGV[2] input: JSON request and time context (src/engine/user-op.ts)

Reply: a JSON string. Errors the caller maps to statuses:
  {"err":"TZ","tz":"<zone>","prevTz":"<zone>"?}  the caller assumed another time zone (or another
                              stored zone before a change): recompute and call again
  {"err":"NO_USER"}           an op with mustExist for a user that does not exist
  {"err":"OVERFLOW"}          a total would pass 2^53 millionths
  {"err":"POINTS_OVERFLOW"}   a points total would pass MAX_POINTS (lib/common.lua)
  {"err":"LOCKED"} / {"err":"NOT_ELIGIBLE"}   achievement completion refused
Nothing is written before every error check has passed.

Several ops in one call (single Redis only: their users' keys are in different slots; used by event
batches, src/engine/batch-events.ts): ARGV[1] = "__multi", ARGV[2] = the plan (decoded once),
ARGV[3] = JSON [{n = key count, input = input JSON}, ...], KEYS = each op's keys in turn. Reply: the
array of the ops' replies, in order. Each op is applied as if called alone (its own reply marker).
]]

-- The body is one function of (KEYS, ARGV) so that a multi-op call can run it once per op.
local function applyOne(KEYS, ARGV)

--!include lib/common.lua
--!include lib/board.lua

local K_PROFILE, K_METRICS, K_COUNTERS, K_ACH = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local K_POINTS, K_STREAK, K_IDEM, K_BOARDS, K_OUTBOX = KEYS[5], KEYS[6], KEYS[7], KEYS[8], KEYS[9]

local K_OP = KEYS[10]

-- A retried call of an op that already committed (its reply was lost with the connection).
local committed = redis.call('GET', K_OP)
if committed then return committed end

local plan = type(ARGV[1]) == 'table' and ARGV[1] or cjson.decode(ARGV[1])
local input = cjson.decode(ARGV[2])
local op = input.op
local now = input.now
local metricId = plan.metricId
local S = plan.streak
local user = input.user

local idsUsed = 0
local function nextId()
  idsUsed = idsUsed + 1
  return input.ids[idsUsed]
end

-- ---------------------------------------------------------------- read phase

local praw = redis.call('HGETALL', K_PROFILE)
local prof = {}
for i = 1, #praw, 2 do prof[praw[i]] = praw[i + 1] end
local exists = prof.created ~= nil

-- Idempotency (application-api §4): "<event id>|<first use ms>" in the current or previous window
-- bucket, remembered for input.idem.win ms (0: forever, the value is the event id alone).
local prior = nil
local function remembered(key)
  local v = redis.call('HGET', key, input.idem.f)
  if not v then return nil end
  local id, at = string.match(v, '^([^|]*)|(%d+)$')
  if not id then return v end
  if now - tonumber(at) >= input.idem.win then return nil end
  return id
end
if op == 'event' and input.idem then
  prior = remembered(K_IDEM)
  if not prior and input.idem.prevKi then prior = remembered(KEYS[input.idem.prevKi]) end
end

-- The time zone this request is evaluated in: a replay does not upsert, so the stored one.
local tz = prof.tz or 'UTC'
if not prior and user.tz then tz = user.tz end
if tz ~= input.assumedTz then return cjson.encode({ err = 'TZ', tz = tz }) end
-- A request that changes the stored zone: input.skip (local dates skipped by the change) was
-- computed from input.prevTz, which must be the stored zone.
local skip = nil
if exists and not prior and user.tz and user.tz ~= (prof.tz or 'UTC') then
  if input.prevTz ~= (prof.tz or 'UTC') then return cjson.encode({ err = 'TZ', tz = tz, prevTz = prof.tz or 'UTC' }) end
  skip = input.skip
end

local st = loadStreak(K_STREAK, S.epoch)
-- The period history, read only when needed (an event that adds no period does not).
local function streakHistory()
  if st.hist == nil then
    if st.legacyHist then
      st.hist = st.legacyHist
    elseif st.fresh then
      st.hist = ''
    else
      st.hist = redis.call('GET', KEYS[input.shki]) or ''
    end
  end
  return st.hist
end
local cur = input.periodIdx

-- Streak as seen now, without writing (rollover projected).
local function streakReply(state, extended)
  return {
    length = state.length,
    started = state.started,
    lastMet = state.lastMet,
    freezes = state.freezes,
    extended = extended,
    -- Pauses bridge periods without a freeze: the streak's expiry counts them (src/engine/streak-expiry.ts).
    pauses = (state.pauses and #state.pauses > 0) and state.pauses or nil,
  }
end

if prior then
  if S.on then rollover(S.freq, st, cur, st.pauses, S.freezesOn) else st.length = 0 end
  return cjson.encode({
    replay = prior,
    total = redis.call('HGET', K_METRICS, metricId) or '0',
    streak = streakReply(st, false),
  })
end

if input.mustExist and not exists then return cjson.encode({ err = 'NO_USER' }) end

-- Attributes after this request's upsert (filters are evaluated against them).
local attrs = {}
for k, v in pairs(prof) do
  if string.sub(k, 1, 2) == 'a:' then attrs[string.sub(k, 3)] = v end
end
for k, v in pairs(user.attrs or {}) do attrs[k] = v end

local done = {}
local araw = redis.call('HGETALL', K_ACH)
for i = 1, #araw, 2 do done[araw[i]] = araw[i + 1] end

if op == 'complete' then
  local a = plan.api
  if not done[a.id] then
    if a.locked then return cjson.encode({ err = 'LOCKED' }) end
    if not matches(a.uf, attrs) then return cjson.encode({ err = 'NOT_ELIGIBLE' }) end
  end
end

-- Event sums: compute every new running value first, so an overflow changes nothing.
local v = 0
local eattrs = input.eattrs or {}
local total0, total1 = 0, 0
local counters = {}
local function counter(field)
  if counters[field] == nil then counters[field] = num(redis.call('HGET', K_COUNTERS, field), 0) end
  return counters[field]
end
local overflow = false
local function setCounter(field, value)
  if math.abs(value) > MAX_SAFE then overflow = true end
  counters[field] = value
end

if op == 'event' then
  v = tonumber(input.value)
  total0 = num(redis.call('HGET', K_METRICS, metricId), 0)
  total1 = total0 + v
  if math.abs(total1) > MAX_SAFE then overflow = true end
  for _, a in ipairs(plan.achievements.metric) do
    if a.ef and #a.ef > 0 and matches(a.ef, eattrs) then
      setCounter('af:' .. a.id, counter('af:' .. a.id) + v)
    end
  end
  for _, sys in ipairs(plan.systems) do
    for _, t in ipairs(sys.mt) do
      if matches(t.ef, eattrs) then
        local tf = 'mtT:' .. t.id .. ':' .. t.ep
        setCounter(tf, counter(tf) + v)
      end
    end
  end
end

-- Streak: resolve ended periods, then the current one (semantics §4.3–§4.7).
local resolved, lost = {}, 0
local extended = false
local sums = {}
local eff = cur
if S.on then
  resolved, lost = rollover(S.freq, st, cur, st.pauses, S.freezesOn, skip)
  if st.lastMet ~= nil and st.length > 0 and cur < st.lastMet then eff = st.lastMet end
  if st.curIdx ~= eff then
    st.curIdx = eff
    st.curMet = st.length > 0 and st.lastMet == eff
  else
    for _, c in ipairs(S.conds) do sums[c.m] = num(st.raw['s:' .. c.m], 0) end
  end
  if op == 'event' then
    for _, c in ipairs(S.conds) do
      if c.m == metricId then
        sums[c.m] = (sums[c.m] or 0) + v
        if math.abs(sums[c.m]) > MAX_SAFE then overflow = true end
      end
    end
  end
else
  st.length = 0
end

-- The user's value on a board run: kept for the latest run the user has a value in and the one before
-- it (a late event of the previous run, after a change of zone), so the hash never outgrows the boards.
local boardSlots = {}
local function boardSlot(id)
  local s = boardSlots[id]
  if not s then
    local vals = redis.call('HMGET', K_BOARDS, id, id .. '~')
    s = {}
    for j = 1, 2 do
      if vals[j] then
        local r, val = string.match(vals[j], '^([^|]*)|(.*)$')
        s[j] = { run = r, value = tonumber(val), raw = vals[j] }
      end
    end
    boardSlots[id] = s
  end
  return s
end
local function boardValue(id, run)
  local s = boardSlot(id)
  if s[1] and s[1].run == run then return s[1].value end
  if s[2] and s[2].run == run then return s[2].value end
  return 0
end
local function boardStore(id, run, value)
  local s = boardSlot(id)
  local raw = run .. '|' .. fmt(value)
  if s[1] == nil or s[1].run == run then
    redis.call('HSET', K_BOARDS, id, raw)
  elseif run > s[1].run then
    redis.call('HSET', K_BOARDS, id, raw, id .. '~', s[1].raw)
  elseif s[2] == nil or run >= s[2].run then
    redis.call('HSET', K_BOARDS, id .. '~', raw)
  end
end

local boardValues = {}
if op == 'event' and v ~= 0 then
  for _, b in ipairs(input.boards or {}) do
    if b.kind == 'metric' and b.ref == metricId then
      local f = b.id .. '|' .. b.run
      local nv = boardValue(b.id, b.run) + v
      if math.abs(nv) > MAX_SAFE then overflow = true end
      boardValues[f] = nv
    end
  end
end

if overflow then return cjson.encode({ err = 'OVERFLOW' }) end

-- Admin streak operations (semantics §4.6, §4.8).
local granted = nil
if op == 'freeze' then
  granted = math.max(0, math.min(input.count, S.maxF - st.freezes))
  -- Auto-earn (input.slot): each slot at most once; fz is the last slot earned.
  if input.slot then
    if input.slot <= counter('fz') then granted = 0 else counters['fz'] = input.slot end
  end
  st.freezes = st.freezes + granted
end
local restore = nil
if op == 'restore' then
  local best, bestIdx = 0, nil
  histEach(streakHistory(), function(idx, len)
    if idx >= input.fromIdx and idx <= cur and (len > best or (len == best and bestIdx and idx > bestIdx)) then
      best, bestIdx = len, idx
    end
  end)
  if best == 0 then
    restore = { issue = 'none' }
  elseif st.length >= best then
    restore = { issue = 'max' }
  else
    restore = { from = st.length, to = best }
    local startIdx = bestIdx - best + 1
    local firstDay = periodDays(S.freq, startIdx)
    st.started = dateOfDay(firstDay)
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
  end
end

-- ---------------------------------------------------------------- write phase

-- Upsert (semantics §1.1): only provided fields; attributes merge per key.
local created = not exists
local profileChanged = created
local pfields = {}
local function setProfile(field, value)
  if prof[field] ~= value then
    pfields[#pfields + 1] = field
    pfields[#pfields + 1] = value
    prof[field] = value
    profileChanged = true
  end
end
if created then
  setProfile('id', user.id)
  setProfile('created', fmt(now))
  setProfile('sub', '1')
  setProfile('dt', '[]')
end
if user.email then setProfile('email', user.email) end
if user.name then setProfile('name', user.name) end
if user.tz then setProfile('tz', user.tz) end
if user.dt then setProfile('dt', user.dt) end
if user.sub ~= nil then setProfile('sub', user.sub and '1' or '0') end
for k, val in pairs(user.attrs or {}) do setProfile('a:' .. k, val) end
-- Notification preferences: each type sent replaces its channel list (a JSON array string, so cjson
-- never re-encodes an empty list as {}).
for k, val in pairs(user.prefs or {}) do setProfile('p:' .. k, val) end
if profileChanged then setProfile('updated', fmt(now)) end
local seq = num(prof.seq, 0) + 1
pfields[#pfields + 1] = 'seq'
pfields[#pfields + 1] = fmt(seq)
-- The writes of the steps before points wait until every points total is known to stay within its
-- bound (POINTS_OVERFLOW): a refused op writes nothing. Nothing before points reads what they write.
local deferred = {}
local function later(f) deferred[#deferred + 1] = f end

later(function()
  redis.call('HSET', K_PROFILE, unpack(pfields))
  if created then redis.call('ZADD', KEYS[input.uki], 'NX', now, user.id) end
end)

if created and S.freezesOn and st.freezeInit == nil then
  st.freezes = math.min(math.max(st.freezes, S.initF), math.max(st.freezes, S.maxF))
  st.freezeInit = '1'
end

if op == 'event' then
  later(function()
    redis.call('HSET', K_METRICS, metricId, fmt(total1))
    if input.idem then
      if input.idem.win > 0 then
        redis.call('HSET', K_IDEM, input.idem.f, input.eventId .. '|' .. fmt(now))
        -- The bucket's first key: it expires at the end of the next bucket (relative to the op's clock,
        -- which need not be Redis's), and the bucket before the previous one, past the window, goes now.
        if redis.call('PEXPIRE', K_IDEM, math.max(1, input.idem.exp - now), 'NX') == 1 then
          redis.call('UNLINK', KEYS[input.idem.oldKi])
        end
      else
        redis.call('HSET', K_IDEM, input.idem.f, input.eventId)
      end
    end
  end)
end

-- Streak: the current period becomes met?
local increased = false
if S.on and op == 'event' and not st.curMet then
  local met
  if S.mode == 'any' then
    met = false
    for _, c in ipairs(S.conds) do
      if (sums[c.m] or 0) >= c.thr then met = true end
    end
  else
    met = #S.conds > 0
    for _, c in ipairs(S.conds) do
      if (sums[c.m] or 0) < c.thr then met = false end
    end
  end
  if met then
    if st.length > 0 and st.lastMet == eff - 1 then
      st.length = st.length + 1
    else
      st.length = 1
      st.started = input.localDate
    end
    st.lastMet = eff
    st.curMet = true
    st.lengthAt = now
    st.metAt = now
    extended = true
    increased = true
    if st.length > st.longest then
      st.longest = st.length
      st.longestAt = now
    end
  end
end
local streakChanged = increased or lost > 0 or (restore ~= nil and restore.to ~= nil)

local periods = {}
for _, r in ipairs(resolved) do
  periods[#periods + 1] = { idx = r[1], length = r[2], freeze = r[3], pause = r[4] }
end
if increased then periods[#periods + 1] = { idx = eff, length = st.length, freeze = false, pause = false } end

local streakFields = nil
if S.on or st.freezeInit or granted then
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
    for _, c in ipairs(S.conds) do
      sf[#sf + 1] = 's:' .. c.m
      sf[#sf + 1] = fmt(sums[c.m] or 0)
    end
  end
  -- The fields about to be written, except period history (kept in streak_periods): rebuild merges them.
  streakFields = {}
  for i = 1, #sf do streakFields[i] = sf[i] end
  -- The period history (its own key): appended, folded from the old layout, or dropped with an epoch.
  local histWrite = nil
  if S.on and #periods > 0 then
    local entries = {}
    for _, p in ipairs(periods) do entries[#entries + 1] = histEntry(p.idx, p.length, p.freeze, p.pause) end
    histWrite = histAppend(streakHistory(), entries)
  elseif st.legacyHist and st.legacyHist ~= '' then
    histWrite = st.legacyHist
  elseif st.staleHist then
    histWrite = false
  end
  local legacy = st.legacy
  later(function()
    redis.call('HSET', K_STREAK, unpack(sf))
    if legacy and #legacy > 0 then redis.call('HDEL', K_STREAK, unpack(legacy)) end
    if histWrite then
      redis.call('SET', KEYS[input.shki], histWrite)
    elseif histWrite == false then
      redis.call('DEL', KEYS[input.shki])
    end
  end)
  if st.started == nil or st.started == '' then st.started = nil end
end

-- Achievements (semantics §3): metric, streak (if the length increased), composites until stable.
local completions = {}
local function complete(id)
  local c = { id = id, cid = nextId(), at = now }
  local encoded = cjson.encode({ cid = c.cid, at = now })
  done[id] = encoded
  later(function() redis.call('HSET', K_ACH, id, encoded) end)
  completions[#completions + 1] = c
end

if op == 'event' then
  for _, a in ipairs(plan.achievements.metric) do
    local value = total1
    if a.ef and #a.ef > 0 then value = counter('af:' .. a.id) end
    if a.active and not done[a.id] and value >= a.thr and matches(a.uf, attrs) then complete(a.id) end
  end
end
if op == 'complete' and not done[plan.api.id] then complete(plan.api.id) end
if op == 'backdate' and not done[plan.api.id] and matches(plan.api.uf, attrs) then complete(plan.api.id) end
if increased then
  for _, a in ipairs(plan.achievements.streak) do
    if not done[a.id] and st.length >= a.len and matches(a.uf, attrs) then complete(a.id) end
  end
end
if #completions > 0 then
  local more = true
  while more do
    more = false
    for _, a in ipairs(plan.achievements.composite) do
      if not done[a.id] and matches(a.uf, attrs) then
        local all = true
        for _, pre in ipairs(a.pre) do
          if not done[pre] then all = false end
        end
        if all then
          complete(a.id)
          more = true
        end
      end
    end
  end
end

-- Points (semantics §5): user_creation, metric, streak, achievement triggers; boosts; bounds.
local pointsReply = {}
local pointsBySystem = {}
local outAwards = {}
-- Levels of each system at commit (plan.systems[i].lv, ascending): webhooks are built from these.
local outLevels = {}
local pointsOverflow = false
for i, sys in ipairs(plan.systems) do
  local total = num(redis.call('HGET', K_POINTS, sys.id), 0)
  local before = total
  local function levelAt(t)
    local found = false
    for _, l in ipairs(sys.lv or {}) do
      if l.p <= t then found = l.o end
    end
    return found
  end
  local awards = {}
  local boosts = (input.boosts or {})[sys.id] or {}

  local function award(t, base)
    if base == 0 or not matches(t.uf, attrs) then return end
    local x = base
    local applied = {}
    local n, d, mode = 1, 1, nil
    for _, b in ipairs(boosts) do
      if matches(b.uf, attrs) then
        n = n * b.num
        d = d * b.den
        applied[#applied + 1] = b.id
        if mode == nil then mode = b.r elseif mode ~= b.r then mode = 'down' end
      end
    end
    if #applied > 0 then
      local q, r = floordiv(base * n, d)
      x = q
      if mode == 'up' and r > 0 then x = q + 1 end
      if mode == 'nearest' and 2 * r >= d then x = q + 1 end
    end
    local new
    if x > 0 then
      new = total + x
      if sys.max >= 0 then new = math.min(new, math.max(total, sys.max)) end
    else
      new = math.max(total + x, 0)
    end
    local awarded = new - total
    if awarded == 0 then return end
    if new > MAX_POINTS then pointsOverflow = true end
    total = new
    awards[#awards + 1] = { id = nextId(), awarded = awarded, total = new, trigger = t.id, boosts = applied, date = input.at or now }
  end

  if created then
    for _, t in ipairs(sys.uc) do award(t, t.p) end
  end
  if op == 'event' then
    for _, t in ipairs(sys.mt) do
      if matches(t.ef, eattrs) then
        local tf = 'mtT:' .. t.id .. ':' .. t.ep
        local hf = 'mtH:' .. t.id .. ':' .. t.ep
        local t1 = counters[tf]
        local h = num(redis.call('HGET', K_COUNTERS, hf), 0)
        local k = math.max(0, floordiv(t1, t.thr) - floordiv(h, t.thr))
        if t1 > h then counters[hf] = t1 end
        if k > 0 then award(t, k * t.p) end
      end
    end
  end
  if op == 'grant' then
    for _, t in ipairs(sys.tt or {}) do
      for _, g in ipairs(input.grant or {}) do
        -- Each slot at most once (semantics §5.6): tt:<id> is the last slot granted.
        local tf = 'tt:' .. t.id
        if g == t.id and (input.at or now) > counter(tf) then
          counters[tf] = input.at or now
          award(t, t.p)
        end
      end
    end
  end
  if increased then
    for _, t in ipairs(sys.st) do
      if st.length % t.len == 0 then award(t, t.p) end
    end
  end
  for _, c in ipairs(completions) do
    for _, t in ipairs(sys.at) do
      if t.ach == c.id then award(t, t.p) end
    end
  end

  -- A user created by this op had no level before it (semantics §5.11).
  local lb = false
  if not created then lb = levelAt(before) end
  local la = levelAt(total)
  if #awards > 0 then
    local listKey = KEYS[10 + i]
    local final = total
    later(function()
      redis.call('HSET', K_POINTS, sys.id, fmt(final))
      for _, a in ipairs(awards) do redis.call('LPUSH', listKey, cjson.encode(a)) end
      -- The newest RECENT_AWARDS (src/engine/points-reads.ts); older ones are read from points_awards.
      redis.call('LTRIM', listKey, 0, 19)
    end)
    local added = total - before
    pointsReply[#pointsReply + 1] = {
      sys = sys.id, total = total, added = added, awards = awards, lb = lb, la = la,
    }
    pointsBySystem[sys.id] = added
    outAwards[#outAwards + 1] = { sys = sys.id, awards = awards }
    outLevels[#outLevels + 1] = { sys = sys.id, b = lb, a = la, sb = sys.sb }
  elseif created and la then
    -- A new user at a level without an award (e.g. a 0-threshold level): the level is news too.
    pointsReply[#pointsReply + 1] = { sys = sys.id, total = total, added = 0, awards = {}, lb = lb, la = la }
    outLevels[#outLevels + 1] = { sys = sys.id, b = lb, a = la, sb = sys.sb }
  end
end

if pointsOverflow then return cjson.encode({ err = 'POINTS_OVERFLOW' }) end
for _, f in ipairs(deferred) do f() end

local cw = {}
for f, val in pairs(counters) do
  cw[#cw + 1] = f
  cw[#cw + 1] = fmt(val)
end
if #cw > 0 then redis.call('HSET', K_COUNTERS, unpack(cw)) end

-- Per-run leaderboard values (the boards' own scripts rank them).
local boards = {}
for _, b in ipairs(input.boards or {}) do
  local f = b.id .. '|' .. b.run
  local nv = nil
  if b.kind == 'metric' and boardValues[f] ~= nil then
    nv = boardValues[f]
  elseif b.kind == 'points' and pointsBySystem[b.ref] then
    nv = boardValue(b.id, b.run) + pointsBySystem[b.ref]
  elseif b.kind == 'streak' and streakChanged then
    nv = st.length
  end
  if nv ~= nil then
    boardStore(b.id, b.run, nv)
    boards[#boards + 1] = { id = b.id, run = b.run, value = fmt(nv) }
  end
end

-- Board moves applied here (input.fuse, on a single Redis): the same script the caller would run
-- next (lib/board.lua), for boards without breakdowns, so an event needs one call instead of one per
-- board. A board whose stored group differs (its breakdowns were removed) answers err = 'GROUP'
-- without writing anything and is left to the caller.
local moves = nil
if input.fuse then
  local valueOf = {}
  for _, b in ipairs(boards) do valueOf[b.id .. '|' .. b.run] = b.value end
  local applied = {}
  for _, f in ipairs(input.fuse) do
    local value = valueOf[f.id .. '|' .. f.run]
    if value then
      local K = {}
      for j = 1, f.kn do K[j] = KEYS[f.ki + j - 1] end
      local m = updateBoard(K, { user.id, value, fmt(seq), fmt(now), '', tostring(f.max), '0', '0' })
      m.id = f.id
      moves = moves or {}
      moves[#moves + 1] = m
      if not m.err then
        applied[#applied + 1] = f.id
        applied[#applied + 1] = fmt(seq)
      end
    end
  end
  if #applied > 0 then
    redis.call('HSET', KEYS[input.appliedKi], unpack(applied))
    -- The outbox record says so too (board.ap), so the history writer skips their repair look-up.
    local moved = {}
    for i = 1, #applied, 2 do moved[applied[i]] = true end
    for _, b in ipairs(boards) do
      if moved[b.id] then b.ap = true end
    end
  end
end

local battrs = {}
for _, k in ipairs(plan.breakdownKeys or {}) do
  if attrs[k] then battrs[k] = attrs[k] end
end

local streakOut = streakReply(st, extended)
streakOut.periods = periods
streakOut.lost = lost
streakOut.changed = streakChanged

local record = {
  op = op,
  id = input.eventId,
  user = user.id,
  now = now,
  tz = tz,
  date = input.localDate,
  seq = seq,
  created = created,
  metric = metricId,
  value = op == 'event' and fmt(v) or nil,
  eattrs = input.eattrs,
  idem = input.idem and input.idem.f or nil,
  completions = completions,
  awards = outAwards,
  levels = #outLevels > 0 and outLevels or nil,
  streak = streakOut,
  boards = boards,
  battrs = battrs,
  freq = S.freq,
  granted = granted,
  slot = input.slot,
  -- For rebuild (src/rebuild/): commit order (Redis TIME, µs), settings epoch, hash fields written.
  ts = (function() local t = redis.call('TIME') return t[1] .. string.format('%06d', tonumber(t[2])) end)(),
  epoch = S.epoch,
  sh = streakFields,
  cw = #cw > 0 and cw or nil,
}
if profileChanged then record.profile = prof end
redis.call('XADD', K_OUTBOX, '*', 'r', cjson.encode(record))

local already = nil
if restore then record.restore = restore end
if op == 'complete' and #completions == 0 then already = done[plan.api.id] end

local reply = cjson.encode({
  already = already,
  granted = granted,
  restore = restore,
  eventId = input.eventId,
  total = fmt(total1),
  created = created,
  seq = seq,
  completions = completions,
  points = pointsReply,
  streak = streakOut,
  boards = boards,
  battrs = battrs,
  -- Events do not need the profile back (it is most of the reply otherwise).
  profile = op ~= 'event' and prof or nil,
  moves = moves,
})
redis.call('SET', K_OP, reply, 'PX', input.markMs or 10000)
return reply
end

if ARGV[1] ~= '__multi' then return applyOne(KEYS, ARGV) end
local plan = cjson.decode(ARGV[2])
local ops = cjson.decode(ARGV[3])
local replies = {}
local at = 0
for i, o in ipairs(ops) do
  local K = {}
  for j = 1, o.n do K[j] = KEYS[at + j] end
  at = at + o.n
  replies[i] = applyOne(K, { plan, o.input })
end
return replies
