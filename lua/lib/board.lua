-- updateBoard as a function, inlined by `--!include lib/board.lua`: lua/updateBoard.lua calls it for
-- one board; lua/applyUserOp.lua calls it for the boards of an event on a single Redis (where every
-- key is reachable from one script). K and A are that call's KEYS and ARGV as lua/updateBoard.lua
-- documents them, with K[5] the ranking's expiry index on a streak board; the reply is the same, as a
-- table. A[9] = '1' (batch items, which answer no response) leaves the threshold out of the reply, and
-- the read it needs. A[10] = '1' (lua/applyUserOp.lua, for a user its op creates) writes the entry of
-- a user without one first, instead of reading it (below).

--!include lib/numbers.lua

-- "<changedAt, 15 digits zero-padded>|<userId>" (changedAt: ms, 13 digits until the year 2286).
local function boardMember(changedAt, id)
  return zeroPad(fmt(changedAt), 15) .. '|' .. id
end

-- A member entry (KEYS[1]'s values): "value|changedAt|group|seq|expires".
local function boardEntry(value, changedAt, group, seq, expires)
  return fmt(value) .. '|' .. fmt(changedAt) .. '|' .. group .. '|' .. fmt(seq) .. '|' .. expires
end

-- A member entry's parts: value, changedAt, group, seq, expires.
local function boardMeta(s)
  return string.match(s, '^([^|]*)|([^|]*)|([^|]*)|([^|]*)|?(.*)$')
end

-- A streak that broke without activity (expires reached) is never ranked (semantics §6.4).
local function boardLapsed(isStreak, meta, now)
  if not isStreak or not meta then return false end
  local _, _, _, _, e = boardMeta(meta)
  e = tonumber(e) or 0
  return e > 0 and e <= now
end

-- The edges read by earlier moves of the same script call, by ranking key: { max = the cap it was read
-- for, edge = the entries }. A multi-op call (lua/applyUserOp.lua "__multi") moves many users on the
-- same rankings, and a move that leaves a ranking's entries from the cap on unchanged leaves its edge
-- valid for the next; any other write to the ranking forgets it, whatever cap it was read for. Only
-- valid within one call: boardCallReset() at the start of each (a Redis Function's tables outlive
-- the call).
local BOARD_EDGES = {}

-- The ranking versions this script call has moved already (boardBumpVersion): no reader runs between
-- the moves of one call, so one bump per board and call tells every reader after it that the rankings
-- changed, as one per move did.
local BOARD_BUMPED = {}

-- Forgets the call's edges and version bumps: at the start of every call that moves boards (each entry
-- of lua/applyUserOp.lua and lua/commitUserOp.lua; an EVAL script such as lua/updateBoard.lua starts
-- with fresh tables anyway).
local function boardCallReset()
  BOARD_EDGES = {}
  BOARD_BUMPED = {}
end

-- One move's ranking state (B): its key, cap, and the entries at positions max and max + 1 (1-based),
-- its edge, read at most once per script call while the ranking is unchanged (BOARD_EDGES): none while
-- it holds fewer than max entries; one, its lowest, when it is at the cap (evictions keep it there);
-- two only after the cap was lowered, when the lowest is read apart. Plain functions of B, not
-- closures made per call.
local function boardEdge(B)
  if B.edge == nil then
    B.edge = redis.call('ZRANGE', B.ranking, fmt(B.max - 1), fmt(B.max), 'WITHSCORES')
    BOARD_EDGES[B.ranking] = { max = B.max, edge = B.edge }
  end
  return B.edge
end

local function boardFull(B)
  return #boardEdge(B) > 0
end

local function boardLowest(B)
  local e = boardEdge(B)
  if #e == 2 then return e end
  return redis.call('ZRANGE', B.ranking, '-1', '-1', 'WITHSCORES')
end

local function boardThreshold(B)
  if not boardFull(B) then return 0 end
  return -tonumber(boardLowest(B)[2])
end

local function boardZrem(B, member)
  redis.call('ZREM', B.ranking, member)
  if B.x then redis.call('ZREM', B.x, member) end
  B.changed = true
  B.edge = nil
  BOARD_EDGES[B.ranking] = nil
end

local function boardZadd(B, score, member)
  redis.call('ZADD', B.ranking, fmt(score), member)
  if B.x then redis.call('ZADD', B.x, B.xs, member) end
  B.changed = true
  B.edge = nil
  BOARD_EDGES[B.ranking] = nil
end

local function boardRank(B, member)
  local r = redis.call('ZRANK', B.ranking, member)
  if r then return r + 1 end
  return nil
end

-- Every write to a ranking goes through here, so the version moves with each call that changes it, at
-- the call's first change (the later moves' writes come after it, even in a call that fails midway).
local function boardBumpVersion(key)
  if BOARD_BUMPED[key] then return end
  BOARD_BUMPED[key] = true
  if redis.call('INCR', key) == 1 then
    local t = redis.call('TIME')
    redis.call('SET', key, fmt(tonumber(t[1]) * 1000000 + tonumber(t[2])))
  end
end

-- Change records, atomic with the change itself: the scheduler writes them to the users' rank
-- history (leaderboard_rank_changes) and turns them into webhooks (src/workers/board-changes.ts).
local function boardChange(K_CHANGES, K_MEMBERS, group, now, u, pr, r, pv, v)
  local runStart = string.match(K_MEMBERS, ':run:([^:]+):members$') or ''
  redis.call('XADD', K_CHANGES, 'MAXLEN', '~', '100000', '*', 'u', u, 'run', runStart, 'g', group,
    'pr', pr and fmt(pr) or '', 'r', r and fmt(r) or '', 'pv', pv and fmt(pv) or '',
    'v', v and fmt(v) or '', 't', fmt(now))
end

-- Streak boards: drops the ranked entries whose streak has broken (expires <= now), so ranks, the
-- threshold and the cap count live ones only. The expiry index B.x holds the ranking's members by
-- expiry, so this reads only the lapsed ones, whatever the ranking's size. An index found out of step
-- with the ranking is made again here, once, from the members' entries: absent or of another size (a
-- ranking Laurel wrote before the index existed), or naming a lapsed entry the ranking does not hold
-- (a move of a process of that version replaced a member: the index then misses the new one, whose
-- expiry is no earlier than the replaced one's, so it is indexed before it can lapse).
local function boardDropLapsed(B, K_MEMBERS, now)
  local n = redis.call('ZCARD', B.ranking)
  if n == 0 then
    redis.call('DEL', B.x)
    return
  end
  if redis.call('ZCARD', B.x) == n then
    local lapsed = redis.call('ZRANGE', B.x, '-inf', fmt(now), 'BYSCORE')
    if #lapsed == 0 then return end
    local gone = 0
    for i = 1, #lapsed do gone = gone + redis.call('ZREM', B.ranking, lapsed[i]) end
    redis.call('ZREM', B.x, unpack(lapsed))
    B.changed = true
    B.edge = nil
    BOARD_EDGES[B.ranking] = nil
    if gone == #lapsed then return end
  end
  redis.call('DEL', B.x)
  local all = redis.call('ZRANGE', B.ranking, '0', '-1')
  if #all == 0 then return end
  local ids = {}
  for i = 1, #all do ids[i] = string.sub(all[i], 17) end
  local metas = redis.call('HMGET', K_MEMBERS, unpack(ids))
  for i = 1, #all do
    local m = all[i]
    local e = metas[i] and tonumber(select(5, boardMeta(metas[i]))) or 0
    if e > 0 and e <= now then
      boardZrem(B, m)
    else
      redis.call('ZADD', B.x, e > 0 and fmt(e) or '+inf', m)
    end
  end
end

local function updateBoard(K, A)
  local K_MEMBERS, K_VERSION, K_CHANGES = K[1], K[3], K[4]
  local userId = A[1]
  local value = tonumber(A[2])
  local seq = tonumber(A[3])
  local now = tonumber(A[4])
  local group = A[5]
  local expires = A[7]
  local isStreak = A[8] == '1'
  local quiet = A[9] == '1'
  local max = tonumber(A[6])
  local known = BOARD_EDGES[K[2]]
  local B = { ranking = K[2], max = max, changed = false, edge = known and known.max == max and known.edge or nil }
  if isStreak then
    if not K[5] then error('a streak board move needs its ranking\'s expiry index (KEYS)') end
    local e = tonumber(expires) or 0
    B.x, B.xs = K[5], e > 0 and fmt(e) or '+inf'
  end

  local prevValue, prevChanged, prevSeq = nil, nil, -1
  -- A[10] = '1': the caller expects the user to have no entry on this run (its op creates the user).
  -- A user without an entry gets value|now|group|seq|expires below whatever the move does, so that
  -- entry is written at once (HSETNX) instead of read first and written last; only if one was there
  -- after all is it read, and the move goes on as for any user.
  local entered, stored = false, nil
  if A[10] == '1' then
    entered = redis.call('HSETNX', K_MEMBERS, userId, boardEntry(value, now, group, seq, expires)) == 1
    if not entered then stored = redis.call('HGET', K_MEMBERS, userId) end
  else
    stored = redis.call('HGET', K_MEMBERS, userId)
  end
  if stored then
    local pv, pc, pg, ps = boardMeta(stored)
    if pg ~= group then return { err = 'GROUP', group = pg } end
    prevValue, prevChanged, prevSeq = num(pv, nil), num(pc, nil), num(ps, nil)
    -- The user was not shown before this update: treat the value as new (changed now, not ranked).
    if boardLapsed(isStreak, stored, now) then prevValue, prevChanged = nil, nil end
  end

  -- Streak boards: drop broken streaks first, so ranks, the threshold and the cap count live ones only.
  if isStreak then boardDropLapsed(B, K_MEMBERS, now) end

  local prevMember = prevChanged and boardMember(prevChanged, userId) or nil
  local prevRank = prevMember and boardRank(B, prevMember) or nil
  local rankedPrevValue = prevRank and prevValue or nil

  -- A late or repeated update never moves a user backwards.
  if seq <= prevSeq then
    if B.changed then boardBumpVersion(K_VERSION) end
    -- Values travel as strings, as in the reply below (cjson would print 14 significant digits).
    local shown = rankedPrevValue and fmt(rankedPrevValue)
    return {
      prevRank = prevRank, rank = prevRank, prevValue = shown, value = shown,
      threshold = fmt(boardThreshold(B)), stale = true,
    }
  end

  local changedAt = prevChanged
  if prevValue ~= value or prevChanged == nil then changedAt = now end
  local member = boardMember(changedAt, userId)
  local evicted = nil
  local rank = nil
  -- The edge as known before this move's writes (read by an earlier move of the call, or not at all).
  local edgeBefore = B.edge

  -- The previous entry goes when its name changes, and when the value is no longer ranked: a value that
  -- falls to 0 in the same millisecond as the change before keeps the name (changedAt|user).
  if prevRank and (member ~= prevMember or value <= 0) then boardZrem(B, prevMember) end
  if value > 0 then
    local added = true
    if prevRank or not boardFull(B) then
      boardZadd(B, -value, member)
    else
      local low = boardLowest(B)
      if value > -tonumber(low[2]) then
        boardZrem(B, low[1])
        boardZadd(B, -value, member)
        evicted = { member = low[1], value = -tonumber(low[2]) }
      else
        -- Below the lowest of a full ranking: not ranked (nothing to look up).
        added = false
      end
    end
    if added then rank = boardRank(B, member) end
  end
  -- A ranked user moved within the ranking, above its edge both before and after: the ranking kept its
  -- size and every entry from position max on, so the edge read before the move still holds for the
  -- reply's threshold and the call's next moves (so of a call's veterans' moves, only the first that
  -- needs the edge reads it).
  if edgeBefore and prevRank and rank and prevRank < B.max and rank < B.max then
    B.edge = edgeBefore
    BOARD_EDGES[B.ranking] = { max = B.max, edge = edgeBefore }
  end

  if not entered then redis.call('HSET', K_MEMBERS, userId, boardEntry(value, changedAt, group, seq, expires)) end

  local rankedValue = rank and value or nil
  local evictedUser = nil
  if evicted then evictedUser = string.sub(evicted.member, 17) end

  if B.changed then boardBumpVersion(K_VERSION) end

  if K_CHANGES and evicted then boardChange(K_CHANGES, K_MEMBERS, group, now, evictedUser, B.max, nil, evicted.value, nil) end
  if K_CHANGES and (prevRank ~= rank or rankedPrevValue ~= rankedValue) then
    boardChange(K_CHANGES, K_MEMBERS, group, now, userId, prevRank, rank, rankedPrevValue, rankedValue)
  end

  return {
    prevRank = prevRank,
    rank = rank,
    prevValue = rankedPrevValue and fmt(rankedPrevValue),
    value = rankedValue and fmt(rankedValue),
    threshold = not quiet and fmt(boardThreshold(B)) or nil,
    evicted = evictedUser,
  }
end
