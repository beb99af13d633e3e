-- updateBoard as a function, inlined by `--!include lib/board.lua`: lua/updateBoard.lua calls it for
-- one board; lua/applyUserOp.lua calls it for the boards of an event on a single Redis (where every
-- key is reachable from one script). K and A are that call's KEYS and ARGV as lua/updateBoard.lua
-- documents them; the reply is the same, as a table. A[9] = '1' (batch items, which answer no
-- response) leaves the threshold out of the reply, and the read it needs.

local function boardValueText(n)
  return string.format('%.0f', n)
end

local function boardMember(changedAt, id)
  return string.format('%015.0f', changedAt) .. '|' .. id
end

-- "value|changedAt|group|seq|expires" (KEYS[1]'s values): value, changedAt, group, seq, expires.
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

local function updateBoard(K, A)
  local K_MEMBERS, K_RANKING, K_VERSION, K_CHANGES = K[1], K[2], K[3], K[4]
  local userId = A[1]
  local value = tonumber(A[2])
  local seq = tonumber(A[3])
  local now = tonumber(A[4])
  local group = A[5]
  local max = tonumber(A[6])
  local expires = A[7]
  local isStreak = A[8] == '1'
  local quiet = A[9] == '1'

  local rankingChanged = false
  -- The ranking's entries at positions max and max + 1 (1-based), read at most once while the ranking
  -- is unchanged: none while it holds fewer than max entries; one, its lowest, when it is at the cap
  -- (evictions keep it there); two only after the cap was lowered, when the lowest is read apart.
  local edge = nil
  local function readEdge()
    if edge == nil then edge = redis.call('ZRANGE', K_RANKING, max - 1, max, 'WITHSCORES') end
    return edge
  end
  local function full()
    return #readEdge() > 0
  end
  local function lowestEntry()
    local e = readEdge()
    if #e == 2 then return e end
    return redis.call('ZRANGE', K_RANKING, -1, -1, 'WITHSCORES')
  end
  local function threshold()
    if not full() then return 0 end
    return -tonumber(lowestEntry()[2])
  end
  local function zrem(member)
    redis.call('ZREM', K_RANKING, member)
    rankingChanged = true
    edge = nil
  end
  local function zadd(score, member)
    redis.call('ZADD', K_RANKING, score, member)
    rankingChanged = true
    edge = nil
  end
  local function rankOf(member)
    local r = redis.call('ZRANK', K_RANKING, member)
    if r then return r + 1 end
    return nil
  end
  -- Every write to a ranking goes through here, so the version moves with each change.
  local function bumpVersion()
    if redis.call('INCR', K_VERSION) == 1 then
      local t = redis.call('TIME')
      redis.call('SET', K_VERSION, string.format('%.0f', tonumber(t[1]) * 1000000 + tonumber(t[2])))
    end
  end

  local prevValue, prevChanged, prevSeq = nil, nil, -1
  local stored = redis.call('HGET', K_MEMBERS, userId)
  if stored then
    local pv, pc, pg, ps = boardMeta(stored)
    if pg ~= group then return { err = 'GROUP', group = pg } end
    prevValue, prevChanged, prevSeq = tonumber(pv), tonumber(pc), tonumber(ps)
    -- The user was not shown before this update: treat the value as new (changed now, not ranked).
    if boardLapsed(isStreak, stored, now) then prevValue, prevChanged = nil, nil end
  end

  -- Streak boards: drop broken streaks first, so ranks, the threshold and the cap count live ones only.
  if isStreak then
    local all = redis.call('ZRANGE', K_RANKING, 0, -1)
    if #all > 0 then
      local ids = {}
      for i, m in ipairs(all) do ids[i] = string.sub(m, 17) end
      local metas = redis.call('HMGET', K_MEMBERS, unpack(ids))
      for i, m in ipairs(all) do
        if boardLapsed(isStreak, metas[i], now) then zrem(m) end
      end
    end
  end

  local prevMember = prevChanged and boardMember(prevChanged, userId) or nil
  local prevRank = prevMember and rankOf(prevMember) or nil
  local rankedPrevValue = prevRank and prevValue or nil

  -- A late or repeated update never moves a user backwards.
  if seq <= prevSeq then
    if rankingChanged then bumpVersion() end
    -- Values travel as strings, as in the reply below (cjson would print 14 significant digits).
    local shown = rankedPrevValue and boardValueText(rankedPrevValue)
    return {
      prevRank = prevRank, rank = prevRank, prevValue = shown, value = shown,
      threshold = boardValueText(threshold()), stale = true,
    }
  end

  local changedAt = prevChanged
  if prevValue ~= value or prevChanged == nil then changedAt = now end
  local member = boardMember(changedAt, userId)
  local evicted = nil
  local rank = nil

  if prevRank and member ~= prevMember then zrem(prevMember) end
  if value > 0 then
    if prevRank or not full() then
      zadd(-value, member)
    else
      local low = lowestEntry()
      if value > -tonumber(low[2]) then
        zrem(low[1])
        zadd(-value, member)
        evicted = { member = low[1], value = -tonumber(low[2]) }
      end
    end
    rank = rankOf(member)
  end

  redis.call('HSET', K_MEMBERS, userId, boardValueText(value) .. '|' .. string.format('%.0f', changedAt) .. '|' .. group .. '|'
    .. string.format('%.0f', seq) .. '|' .. expires)

  local rankedValue = rank and value or nil
  local evictedUser = nil
  if evicted then evictedUser = string.sub(evicted.member, 17) end

  if rankingChanged then bumpVersion() end

  -- Change records, atomic with the change itself: the scheduler writes them to the users' rank
  -- history (leaderboard_rank_changes) and turns them into webhooks (src/workers/board-changes.ts).
  local function change(u, pr, r, pv, v)
    local runStart = string.match(K_MEMBERS, ':run:([^:]+):members$') or ''
    redis.call('XADD', K_CHANGES, 'MAXLEN', '~', 100000, '*', 'u', u, 'run', runStart, 'g', group,
      'pr', pr and boardValueText(pr) or '', 'r', r and boardValueText(r) or '', 'pv', pv and boardValueText(pv) or '',
      'v', v and boardValueText(v) or '', 't', boardValueText(now))
  end
  if K_CHANGES and evicted then change(evictedUser, max, nil, evicted.value, nil) end
  if K_CHANGES and (prevRank ~= rank or rankedPrevValue ~= rankedValue) then
    change(userId, prevRank, rank, rankedPrevValue, rankedValue)
  end

  return {
    prevRank = prevRank,
    rank = rank,
    prevValue = rankedPrevValue and boardValueText(rankedPrevValue),
    value = rankedValue and boardValueText(rankedValue),
    threshold = not quiet and boardValueText(threshold()) or nil,
    evicted = evictedUser,
  }
end
