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

KEYS[1] the user hash: profile fields and every other part of the user's state under a one-letter
        prefix (lib/user.lua, src/redis/user-hash.ts)
KEYS[2] idempotency hash (the current window bucket, or the forever hash)
KEYS[3] shard outbox stream
KEYS[4] this op's reply marker (kept input.markMs, default 10 s: a retried call with the same op id
        returns it; batch items keep theirs until their chunk is recorded, src/services/batch-events.ts),
        or with input.mf the hash holding it in the op's field (a batch's markers on a single Redis,
        removed with its chunk's progress record: lua/batchProgress.lua)
KEYS[5] the shard's user index (zset userId -> creation ms), written when the op creates the user
KEYS[6] the user's streak period history (string; lib/streak.lua)
KEYS[6 + i] recent awards list of plan.systems[i]
KEYS[ctx.fuse[j].ki ..] the keys of board ctx.boards[ctx.fuse[j].b], whose move is applied here rather
             than by the caller (lua/updateBoard.lua's KEYS, ctx.fuse[j].kn): right after the systems'
             keys, so their indexes depend on the plan only. On a Redis Cluster only in "__multi_node"
             calls, for boards whose slot this master serves too (checked before any write)
KEYS[input.idem.prevKi], KEYS[input.idem.oldKi] (with a window) the idempotency hashes of the previous
             window bucket and of the one before it (last)

ARGV[1] plan: JSON configuration for this op (built by src/engine/plan.ts, cached per snapshot); levels
        are thresholds only (plan.systems[i].lv)
ARGV[2] input: JSON request and time context (src/services/user-op.ts)
ARGV[3] wire: the id of the plan's wire objects (systems, levels, triggers, boosts as the webhooks show
        them: wire_snapshots, src/services/wire-snapshots.ts), or that JSON; never decoded here:
        copied beside the outbox record (field w) when the op has points or level news
ARGV[4] context: JSON of what the op shares with the other ops of its plan, day and boards (boosts,
        boards, fuse: src/redis/user-script.ts UserScriptContext), decoded once per string

Reply: the op's record as JSON, the same string as the outbox entry's field r and the reply marker;
the entry's field x holds what only the history writer needs (shapes: src/redis/user-script.ts), or
{"replay": <event id, '' when derived>, "at": <first use ms>, total, streak} for a replayed
idempotency key. Errors the caller maps to statuses:
  {"err":"TZ","tz":"<zone>","prevTz":"<zone>"?}  the caller assumed another time zone (or another
                              stored zone before a change): recompute and call again
  {"err":"NO_USER"}           an op with mustExist for a user that does not exist
  {"err":"OVERFLOW"}          a total would pass 2^53 millionths
  {"err":"POINTS_OVERFLOW"}   a points total would pass MAX_POINTS (lib/numbers.lua)
  {"err":"LOCKED"} / {"err":"NOT_ELIGIBLE"}   achievement completion refused
Nothing is written before every error check has passed.

Several ops in one call (single Redis only: their users' keys are in different slots; used by event
batches, src/services/batch-events.ts): ARGV[1] = "__multi", ARGV[2] = the plan, ARGV[3] = the wire
id (or JSON), then groups of ops that share a context and the boards' keys, each sent once: per group
its op count, its board key count and its context JSON, then per op its own key count (KEYS[1 .. 6 +
systems] above), its older idempotency buckets' key count (0 or 2) and its input JSON; KEYS = per
group the boards' keys, then each op's own keys and older buckets in turn. Reply: the array of the
ops' replies, in order. Each op is applied as if called alone
(its own reply marker), but its fused board moves carry no threshold (no response is built from them),
and its reply is 'r' for an idempotency replay, 'd' for a record whose board moves were all made here,
else as above. ARGV[1] = "__multi_full" (single events a process gathered, src/services/user-op.ts
gathered): the same layout, each op answered in full as if called alone, and an op that fails answers
"!<error>" in its place while the others are applied.

The steps live in lua/lib/ (one concern each: user, profile, idempotency, streak, achievements,
points, user-boards, board, outbox); this file reads the user's state (one HGETALL), runs them in
order, checks every bound before anything is written, then writes (one HSET of the user hash).
]]


--!include lib/function.lua
--!include lib/numbers.lua
--!include lib/filters.lua
--!include lib/user.lua
--!include lib/profile.lua
--!include lib/idempotency.lua
--!include lib/streak.lua
--!include lib/achievements.lua
--!include lib/points.lua
--!include lib/user-boards.lua
--!include lib/board.lua
--!include lib/outbox.lua

-- A decoder that keeps what it decoded by its JSON, up to `limit` strings (then it starts over): served
-- as a Redis Function, its table outlives the call. What it returns is shared by every op that sends
-- the same string, so it is read, never written (but for memoized derived fields:
-- lib/points.lua triggerFields).
local function keptDecoder(limit)
  local kept, count = {}, 0
  return function(json)
    local v = kept[json]
    if v == nil then
      if count >= limit then kept, count = {}, 0 end
      v = cjson.decode(json)
      kept[json] = v
      count = count + 1
    end
    return v
  end
end

-- Plans (ARGV[1]): decoded once per configuration rather than once per op; 32 are the configurations
-- in use. Contexts (ARGV[4]): the ops of one plan, day and boards share one.
local planOf = keptDecoder(32)
local contextOf = keptDecoder(256)

-- The k-th id (1-based) an op mints for its completions and awards: its event id (a UUID, random or
-- hashed) with the number its last 12 hex digits spell advanced by k, modulo 16^12. Distinct for every
-- k of one op, the same on every attempt of it, and as unlikely to meet another op's ids as two random
-- UUIDs are (the other 20 hex digits are the event id's own).
local function derivedId(eventId, k)
  local tail = tonumber(string.sub(eventId, 25), 16)
  return string.sub(eventId, 1, 24) .. string.format('%012x', (tail + k) % 281474976710656)
end

-- The op being applied (applyOne sets them for each op; ops are applied one at a time, also in a
-- multi-op call), so that nextId, stored, counter and bounded are functions of the chunk rather than
-- closures made for every op: its event id and the ids it has minted, its user's stored counters
-- (the hash's c: part), the running counters it changes (written at the end), and whether a sum it
-- computed passed MAX_SAFE.
local OP_EVENT_ID, OP_IDS, OP_STORED, OP_COUNTERS, OP_OVERFLOW = nil, 0, nil, nil, false

-- The op's next id (its completions' and awards', in the order it makes them).
local function nextId()
  OP_IDS = OP_IDS + 1
  return derivedId(OP_EVENT_ID, OP_IDS)
end

-- A running counter's stored value, and its value in this op.
local function stored(field)
  return num(OP_STORED[field], 0)
end
local function counter(field)
  local c = OP_COUNTERS[field]
  if c == nil then
    c = stored(field)
    OP_COUNTERS[field] = c
  end
  return c
end

-- A sum as it is, noting whether it passed MAX_SAFE (the op then fails with OVERFLOW).
local function bounded(value)
  if math.abs(value) > MAX_SAFE then OP_OVERFLOW = true end
  return value
end

-- The KEYS of one op of a multi-op call, and of one fused board move: tables kept from op to op (an
-- op does not keep them past its own end) rather than made and grown anew for each.
local OP_KEYS, MOVE_KEYS = {}, {}
-- An op's ARGV in a multi-op call, and a fused move's, likewise.
local OP_ARGS, MOVE_ARGS = {}, {}

-- The user hash's streak and board fields (put through lib/user.lua's write buffer, which an op
-- resets): functions of the chunk rather than closures made for each op.
local function putStreakField(f, val) userPut('s:', f, val) end
local function putBoardField(f, raw) userPut('b:', f, raw) end

local function err(code, extra)
  local e = extra or {}
  e.err = code
  return cjson.encode(e)
end

-- The body is one function of (KEYS, ARGV) so that a multi-op call can run it once per op; quiet (the
-- ops of a multi-op call, batch items, whose caller builds no response) leaves the boards' thresholds
-- out of the moves and answers 'r' for a replay and 'd' for a record that leaves the caller nothing to
-- do (src/redis/user-script.ts quietOutcome).
local function applyOne(KEYS, ARGV, quiet, node)
  local K_USER, K_IDEM, K_OUTBOX, K_OP, K_USERS, K_HIST = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5], KEYS[6]

  local input = cjson.decode(ARGV[2])
  -- With input.mf the reply marker is the field of KEYS[4] (a hash) named by the op's id.
  local mf = input.mf and input.eventId
  -- A retried call of an op that already committed (its reply was lost with the connection), or a
  -- resumed batch item. This read comes first: on a Cluster it is what refuses an op of a slot the
  -- master does not serve before anything is written ("__multi_node" below).
  local committed
  if mf then committed = redis.call('HGET', K_OP, mf) else committed = redis.call('GET', K_OP) end
  if committed then return committed end

  local plan = type(ARGV[1]) == 'table' and ARGV[1] or planOf(ARGV[1])
  local ctx = contextOf(ARGV[4])
  -- On a Cluster ("__multi_node") the fused boards are in other slots of this master, as the caller's
  -- slot table said: one read of each board's keys, before anything is written, makes Redis refuse the
  -- op here ("non local key") if this master no longer serves a board's slot, or is moving it away and
  -- a key is already gone, rather than halfway through the op's writes.
  if node and ctx.fuse then
    for _k = 1, #ctx.fuse do
      local f = ctx.fuse[_k]
      redis.call('EXISTS', unpack(KEYS, f.ki, f.ki + f.kn - 1))
    end
  end
  local op, now, user = input.op, input.now, input.user
  local metricId = plan.metricId
  local S = plan.streak
  local cur = input.periodIdx

  -- Ids of the op's completions and awards, in the order it makes them.
  OP_EVENT_ID, OP_IDS = input.eventId, 0

  -- ------------------------------------------------------------ read and check

  local U = loadUser(K_USER)
  local prof = U.profile
  local put, flush = userWrites()
  local exists = prof.created ~= nil

  local prior, priorAt = nil, nil
  if op == 'event' and input.idem then
    prior, priorAt = idemRemembered(K_IDEM, input.idem, now)
    if not prior and input.idem.prevKi then
      prior, priorAt = idemRemembered(KEYS[input.idem.prevKi], input.idem, now)
    end
  end

  -- The time zone this request is evaluated in: a replay does not upsert, so the stored one.
  local storedTz = prof.tz or 'UTC'
  local tz = storedTz
  if not prior and user.tz then tz = user.tz end
  if tz ~= input.assumedTz then return err('TZ', { tz = tz }) end
  -- A request that changes the stored zone: input.skip (local dates skipped by the change) was
  -- computed from input.prevTz, which must be the stored zone.
  local skip = nil
  if exists and not prior and user.tz and user.tz ~= storedTz then
    if input.prevTz ~= storedTz then return err('TZ', { tz = tz, prevTz = storedTz }) end
    skip = input.skip
  end

  local st = loadStreak(U.streak, S.epoch)

  if prior then
    -- A quiet op's caller needs no state: 'r' (lua/applyUserOp.lua "__multi").
    if quiet then return 'r' end
    if S.on then rollover(S.freq, st, cur, st.pauses, S.freezesOn) else st.length = 0 end
    return cjson.encode({
      replay = prior,
      at = priorAt,
      total = U.metrics[metricId] or '0',
      streak = streakReply(st, false),
    })
  end

  if input.mustExist and not exists then return err('NO_USER') end

  local attrs = attributesOf(U.attrs, user)
  local done = U.achievements

  if op == 'complete' and not done[plan.api.id] then
    if plan.api.locked then return err('LOCKED') end
    if not matches(plan.api.uf, attrs) then return err('NOT_ELIGIBLE') end
  end

  -- Running counters (filtered achievement totals, trigger totals and marks, slots): the ones this op
  -- changes, written at the end.
  local counters = {}
  OP_STORED, OP_COUNTERS = U.counters, counters

  -- Event sums: every new running value first (bounded), so an overflow changes nothing.
  OP_OVERFLOW = false
  local v = 0
  local eattrs = input.eattrs or NO_FIELDS
  local total1 = 0
  if op == 'event' then
    v = tonumber(input.value)
    total1 = bounded(num(U.metrics[metricId], 0) + v)
    for _k = 1, #plan.achievements.metric do
      local a = plan.achievements.metric[_k]
      if a.ef and #a.ef > 0 and matches(a.ef, eattrs) then
        counters['af:' .. a.id] = bounded(counter('af:' .. a.id) + v)
      end
    end
    for _k = 1, #plan.systems do
      local sys = plan.systems[_k]
      for _k = 1, #sys.mt do
        local t = sys.mt[_k]
        -- Counted from the trigger's activation (semantics §5.3): an op whose clock reads earlier (a
        -- process whose clock is behind the one that activated it) leaves the trigger's total alone,
        -- as rebuild's replay of the events does.
        if now >= t.ep and matches(t.ef, eattrs) then
          local tf = triggerFields(t)
          counters[tf] = bounded(counter(tf) + v)
        end
      end
    end
  end

  -- Streak: resolve ended periods, then open the current one.
  local resolved, lost, eff, sums = {}, 0, cur, {}
  if S.on then
    resolved, lost, eff, sums = streakAdvance(S, st, cur, skip)
    if op == 'event' then
      for _k = 1, #S.conds do
        local c = S.conds[_k]
        if c.m == metricId then sums[c.m] = bounded((sums[c.m] or 0) + v) end
      end
    end
  else
    st.length = 0
  end

  userBoards(U.boards, putBoardField)
  -- nvAt[i]: the user's new value on ctx.boards[i]; the metric boards' here, before the overflow check,
  -- the others' with the points below (the fused moves find theirs by that index).
  local nvAt = {}
  if op == 'event' and v ~= 0 then
    for _k = 1, #ctx.boards do
      local b = ctx.boards[_k]
      if b.kind == 'metric' and b.ref == metricId then
        nvAt[_k] = bounded(boardValue(b.id, b.run) + v)
      end
    end
  end

  if OP_OVERFLOW then return err('OVERFLOW') end

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
  if op == 'restore' then restore = streakRestore(S, st, streakHistory(st, K_HIST), input.fromIdx, cur, now) end

  -- ------------------------------------------------------------ compute the writes
  -- Writes other than the user hash's (put, flushed at the end) wait until every points total is known
  -- to stay within its bound (POINTS_OVERFLOW): a refused op writes nothing. What they write is kept in
  -- locals (premoved, the streak's sLegacy, sStaleHist and sHist, awardLists) and written under "write"
  -- below; nothing computed before then reads it.
  local created = not exists
  local profileChanged, seq, premoved = upsertProfile(prof, user, now, created, put)

  if created and S.freezesOn and st.freezeInit == nil then
    st.freezes = math.min(math.max(st.freezes, S.initF), math.max(st.freezes, S.maxF))
    st.freezeInit = '1'
  end

  if op == 'event' then put('m:', metricId, fmt(total1)) end

  -- Streak: the current period becomes met?
  local increased = false
  if S.on and op == 'event' and not st.curMet and streakConditionsMet(S, sums) then
    streakExtend(st, eff, input.localDate, now)
    increased = true
  end
  local streakChanged = increased or lost > 0 or (restore ~= nil and restore.to ~= nil)

  local periods = {}
  for _k = 1, #resolved do
    local r = resolved[_k]
    -- The flags only when set: readers take an absent one as false (src/redis/user-script.ts).
    periods[#periods + 1] = { idx = r[1], length = r[2], freeze = r[3] or nil, pause = r[4] or nil }
  end
  if increased then periods[#periods + 1] = { idx = eff, length = st.length, freeze = nil, pause = nil } end

  local sh = nil
  -- What streakWrite leaves for streakCommit (under "write"): only when it ran, that is with sh.
  local sLegacy, sStaleHist, sHist = nil, false, nil
  if S.on or st.freezeInit or granted then
    sh = streakFields(S, st, sums)
    sLegacy, sStaleHist, sHist = streakWrite(S, st, sh, periods, putStreakField, K_HIST)
    if st.started == '' then st.started = nil end
  end

  local completions = {}
  evaluateAchievements(plan, op, done, attrs, total1, counter, increased and st.length or nil, function(id)
    local c = { id = id, cid = nextId(), at = now }
    -- "<at ms>|<completion id>" (src/redis/user-hash.ts decodeCompletion; lua/rebuild/encode.lua).
    local encoded = fmt(now) .. '|' .. c.cid
    done[id] = encoded
    put('d:', id, encoded)
    completions[#completions + 1] = c
  end)

  -- Points: each system's awards and levels. A user created by this op had no level (semantics §5.11).
  local pointsReply = {}
  local pointsAdded = {}
  -- Some system's levels are news (positions in plan.systems[i].lv): the outbox record then carries
  -- the systems' and levels' wire objects as configured at commit (ARGV[3]).
  local levelNews = false
  local pointsOverflow = false
  -- Per system with awards: its recent awards list's KEYS index, then the awards (written below).
  local awardLists = nil
  local pctx = {
    op = op, created = created, attrs = attrs, eattrs = eattrs, boosts = ctx.boosts,
    counters = counters, counter = counter, stored = stored, grant = input.grant,
    streakLen = increased and st.length or nil, completions = completions, nextId = nextId,
    date = input.at or now,
  }
  for i = 1, #plan.systems do
    local sys = plan.systems[i]
    local before = num(U.points[sys.id], 0)
    local awards, total, over = awardPoints(sys, before, pctx)
    if over then pointsOverflow = true end
    local lb = false
    if not created then lb = levelAt(sys.lv, before) end
    local la = levelAt(sys.lv, total)
    if #awards > 0 then
      put('n:', sys.id, fmt(total))
      awardLists = awardLists or {}
      awardLists[#awardLists + 1] = 6 + i
      awardLists[#awardLists + 1] = awards
      pointsReply[#pointsReply + 1] = { sys = sys.id, total = total, added = total - before, awards = awards, lb = lb, la = la }
      pointsAdded[sys.id] = total - before
      levelNews = true
    elseif created and la then
      -- A new user at a level without an award (e.g. a 0-threshold level): the level is news too.
      pointsReply[#pointsReply + 1] = { sys = sys.id, total = total, added = 0, awards = {}, lb = lb, la = la }
      levelNews = true
    end
  end
  if pointsOverflow then return err('POINTS_OVERFLOW') end

  -- ------------------------------------------------------------ write

  if premoved then redis.call('HDEL', K_USER, unpack(premoved)) end
  if created then redis.call('ZADD', K_USERS, 'NX', fmt(now), user.id) end
  if op == 'event' and input.idem then
    idemRemember(K_IDEM, input.idem.oldKi and KEYS[input.idem.oldKi], input.idem, input.eventId, now)
  end
  if sh then streakCommit(sLegacy, sStaleHist, sHist, K_HIST, K_USER) end
  if awardLists then
    for j = 1, #awardLists, 2 do
      local listKey, awards = KEYS[awardLists[j]], awardLists[j + 1]
      local length = 0
      for _k = 1, #awards do length = redis.call('LPUSH', listKey, awardEntry(awards[_k])) end
      -- The newest RECENT_AWARDS (src/services/points-reads.ts); older ones are read from points_awards.
      if length > 10 then redis.call('LTRIM', listKey, '0', '9') end
    end
  end

  local cw = {}
  for f, val in pairs(counters) do
    cw[#cw + 1] = f
    cw[#cw + 1] = fmt(val)
    put('c:', f, cw[#cw])
  end

  -- Per-run leaderboard values (the boards' own scripts rank them).
  local boards = {}
  for i = 1, #ctx.boards do
    local b = ctx.boards[i]
    local nv = nil
    if b.kind == 'metric' then
      nv = nvAt[i]
    elseif b.kind == 'points' and pointsAdded[b.ref] then
      nv = boardValue(b.id, b.run) + pointsAdded[b.ref]
    elseif b.kind == 'streak' and streakChanged then
      nv = st.length
    end
    if nv ~= nil then
      boardStore(b.id, b.run, nv)
      boards[#boards + 1] = { id = b.id, run = b.run, value = fmt(nv) }
      nvAt[i] = nv
    end
  end

  -- Board moves applied here (ctx.fuse, on a single Redis): the same script the caller would run
  -- next (lib/board.lua), for boards without breakdowns, so an event needs one call instead of one per
  -- board. A board whose stored group differs (its breakdowns were removed) answers err = 'GROUP'
  -- without writing anything and is left to the caller.
  local moves = nil
  if ctx.fuse then
    for _k = 1, #ctx.fuse do
      local f = ctx.fuse[_k]
      local fb = ctx.boards[f.b]
      local value = nvAt[f.b]
      if value then
        local K = MOVE_KEYS
        for j = 1, f.kn do K[j] = KEYS[f.ki + j - 1] end
        for j = f.kn + 1, #K do K[j] = nil end
        -- Value, seq, time and cap as numbers (updateBoard's tonumber keeps them): no text round trip.
        local A = MOVE_ARGS
        A[1], A[2], A[3], A[4], A[5], A[6], A[7], A[8], A[9] = user.id, value, seq, now, '', f.max, '0', '0', quiet and '1' or '0'
        -- A user this op creates has no entry on the board's run yet (lib/board.lua A[10]).
        A[10] = created and '1' or '0'
        local m = updateBoard(K, A)
        m.id = fb.id
        moves = moves or {}
        moves[#moves + 1] = m
        if not m.err then
          -- The outbox record says so (board.ap), so the history writer does not look this move up (it
          -- reads the board's member entry for the moves the caller applies itself).
          for _j = 1, #boards do
            local b = boards[_j]
            if b.id == fb.id then b.ap = true end
          end
        end
      end
    end
  end
  flush(K_USER)

  -- The user's breakdown attributes (absent when none: readers take {}).
  local battrs = nil
  local breakdownKeys = plan.breakdownKeys or NO_FIELDS
  for _k = 1, #breakdownKeys do
    local k = breakdownKeys[_k]
    if attrs[k] then
      battrs = battrs or {}
      battrs[k] = attrs[k]
    end
  end

  -- A quiet op whose boards were all moved here answers 'd' (below): its record is only the outbox
  -- entry, which needs no moves (they are the reply's, src/services/user-op.ts).
  local left = false
  for _k = 1, #boards do
    local b = boards[_k]
    if not b.ap then left = true end
  end
  if quiet and not left then moves = nil end

  local streakOut = streakReply(st, increased)
  streakOut.periods = periods
  streakOut.lost = lost
  streakOut.changed = streakChanged

  -- The record's integers travel as their digits, through fmt, which has mostly formatted them already
  -- for the user hash, the award lists and the streak fields: cjson prints a number through
  -- snprintf('%.14g'), about 2,400 instructions each, 14 of them in a new user's event. The readers
  -- take digits or numbers (src/redis/user-script.ts trustedRecord, recordSchema).
  streakOut.length, streakOut.freezes, streakOut.lost = fmt(st.length), fmt(st.freezes), fmt(lost)
  if st.lastMet ~= nil then streakOut.lastMet = fmt(st.lastMet) end
  for _k = 1, #periods do
    local p = periods[_k]
    p.idx, p.length = fmt(p.idx), fmt(p.length)
  end
  for _k = 1, #completions do local c = completions[_k] c.at = fmt(c.at) end
  for _k = 1, #pointsReply do
    local p = pointsReply[_k]
    p.total, p.added = fmt(p.total), fmt(p.added)
    for _k = 1, #p.awards do
      local a = p.awards[_k]
      a.total, a.awarded, a.date = fmt(a.total), fmt(a.awarded), fmt(a.date)
    end
  end

  -- The op's record: the reply, the reply marker and the outbox entry (lib/outbox.lua).
  local record = {
    op = op,
    id = input.eventId,
    user = user.id,
    now = fmt(now),
    tz = tz,
    date = input.localDate,
    seq = fmt(seq),
    created = created,
    metric = metricId,
    value = op == 'event' and fmt(v) or nil,
    total = fmt(total1),
    eattrs = input.eattrs,
    ik = input.idem and input.idem.k or nil,
    completions = completions,
    points = pointsReply,
    streak = streakOut,
    boards = boards,
    battrs = battrs,
    freq = S.freq,
    granted = granted,
    restore = restore,
    slot = input.slot,
    moves = moves,
    -- Replies of ops other than events show the stored profile.
    profile = op ~= 'event' and prof or nil,
  }
  if op == 'complete' and #completions == 0 then record.already = done[plan.api.id] end
  local reply = cjson.encode(record)
  -- A replay (input.noHistory, src/simulations/) has no history to write.
  if not input.noHistory then
    local extra = cjson.encode({
      ts = commitOrder(),
      epoch = S.epoch,
      sh = sh,
      cw = #cw > 0 and cw or nil,
      -- The stored profile when the op changed it (the history writer writes it to users).
      profile = profileChanged and prof or nil,
    })
    appendOutbox(K_OUTBOX, reply, extra, levelNews and ARGV[3] or nil)
  end
  -- 'd': nothing is left to the caller of a quiet op (every board moved here), so the record need not
  -- travel back, and the reply marker (what a resumed batch item is answered) need not hold it either.
  if quiet and not left then reply = 'd' end
  if mf then
    redis.call('HSET', K_OP, mf, reply)
  else
    redis.call('SET', K_OP, reply, 'PX', fmt(input.markMs or 10000))
  end
  return reply
end

local function run(KEYS, ARGV)
  -- The standard library bound at the first call (lib/function.lua), and NO_FIELDS guarded then.
  if bindGlobals() then guardNoFields() end
  boardCallReset()
  local mode = ARGV[1]
  if mode ~= '__multi' and mode ~= '__multi_full' and mode ~= '__multi_node' then return applyOne(KEYS, ARGV) end
  -- "__multi_full": single events gathered by their process (src/services/user-op.ts), each answered
  -- in full as if called alone; an op that fails answers "!<error>" and fails alone.
  -- "__multi_node": the same on a Redis Cluster, for ops of users in several slots of this master:
  -- their keys come in ARGV (ARGV[4] their count, then the keys), as a Function's declared keys must
  -- share one slot; KEYS holds one key of the first op, which routed the call here. The library is
  -- registered with the allow-cross-slot-keys flag (src/redis/scripts.ts), which lets a call reach
  -- keys of other slots that this master serves, and only those. An op's first command reads its reply
  -- marker, a key that does not exist before the op: if this master no longer serves the op's slot, or
  -- is moving it away, Redis refuses that read ("non local key"), so the op fails before anything of
  -- it is written, and its caller sends it again alone, routed by its keys (src/services/user-op.ts).
  local quiet = mode == '__multi'
  local node = mode == '__multi_node'
  local plan = planOf(ARGV[2])
  local wire = ARGV[3]
  local replies = {}
  local at, i = 0, 4
  local KS = KEYS
  if node then
    local nk = tonumber(ARGV[4])
    KS = {}
    for j = 1, nk do KS[j] = ARGV[4 + j] end
    i = 5 + nk
  end
  -- Groups of ops sharing a context and the boards' keys (sent once per group).
  while i <= #ARGV do
    local nOps, nTail, ctx = tonumber(ARGV[i]), tonumber(ARGV[i + 1]), ARGV[i + 2]
    local tail = {}
    for j = 1, nTail do tail[j] = KS[at + j] end
    at = at + nTail
    i = i + 3
    for _ = 1, nOps do
      -- An op's keys as applyOne reads them: its own, the group's, then its older idempotency buckets.
      local nOwn, nExtra = tonumber(ARGV[i]), tonumber(ARGV[i + 1])
      local K, n = OP_KEYS, nOwn + nTail + nExtra
      for j = 1, nOwn do K[j] = KS[at + j] end
      for j = 1, nTail do K[nOwn + j] = tail[j] end
      for j = 1, nExtra do K[nOwn + nTail + j] = KS[at + nOwn + j] end
      for j = n + 1, #K do K[j] = nil end
      at = at + nOwn + nExtra
      local args = OP_ARGS
      args[1], args[2], args[3], args[4] = plan, ARGV[i + 2], wire, ctx
      if quiet then
        replies[#replies + 1] = applyOne(K, args, true)
      else
        local ok, reply = pcall(applyOne, K, args, false, node)
        replies[#replies + 1] = ok and reply or '!' .. errorText(reply)
      end
      i = i + 3
    end
  end
  return replies
end

-- What src/redis/scripts.ts registers as the Redis Function (lib/function.lua).
local served = servedBy(run)

-- Served as a Redis Function (src/redis/scripts.ts replaces this line with the registration of
-- `served`), so the code above is loaded once, not per call; as a plain script (EVAL) it runs here.
return run(KEYS, ARGV)
