-- The indexes that span users, after user ops: user count, achievement completion counts, points
-- totals per system, current and longest streak rankings. Maintained by the history writer from the
-- outbox (src/workers/globals.ts): lua/ackWithGlobals.lua for a chunk of records on a single Redis,
-- lua/updateGlobals.lua (one record per call on the {global} slot) on Cluster.
--
-- K[1] user count        K[2] achievement completion counts (hash)
-- K[3] active streaks (zset)   K[4] active streak meta (hash)
-- K[5] longest streaks (zset)  K[6] when each user's longest length was first reached (hash
--      "<userId>|<length>" -> ms; one field per user, for the user's current longest length only:
--      the longest ranking's ties read it, src/services/streak-reads.ts)
-- K[7] the seq of the newest record applied to each user's current streak (field "<userId>") and to
--      each of the user's points totals (field "<userId>\0<systemId>": NUL is never in a user id) (hash,
--      a field per user and index, from the user's second op on)
--
-- One record: A[1] userId   A[2] the op's seq (the user's, lib/profile.lua)   A[3] nowMs
-- A[4] created ('1' | '0')   A[5] streak: '' (unchanged) | 'set' | 'del'   A[6] streak length
-- A[7] active meta   A[8] extended ('1' | '0')
-- A[9] n = completed achievement count, A[10 .. 9+n] their ids
-- and its totals T: a list of {points totals zset key (its last part the system id), the user's new
-- total or '' for 0 when absent (a created user)}.

-- Applies records {A, T} with one variadic command per index instead of one command per record and
-- index. One user's records can come in any order (several writers read one stream at once; a claim
-- takes entries left pending behind newer ones already written): counts (users, completions) add up and
-- the longest streak keeps the highest length whatever the order; a points total and the current
-- streak, the values after a record's op, are set only by a record newer (by seq) than the last that set
-- them for the user (K[7]), so an older record does not undo a newer one, and a record applied again
-- (a Cluster writer that died before acknowledging it) does not change them.
local function updateGlobalsMany(K, records)
  -- The K[7] fields the chunk's records may set, read once.
  local fields, fieldOrder, sysOf = {}, {}, {}
  local function need(f)
    if not fields[f] then
      fields[f] = true
      fieldOrder[#fieldOrder + 1] = f
    end
  end
  for _k = 1, #records do
    local rec = records[_k]
    local A = rec.A
    if A[5] == 'set' or A[5] == 'del' then need(A[1]) end
    for _j = 1, #rec.T do
      local t = rec.T[_j]
      if t[2] ~= '' then
        local sys = sysOf[t[1]]
        if not sys then
          sys = '\0' .. string.match(t[1], '[^:]+$')
          sysOf[t[1]] = sys
        end
        t[3] = A[1] .. sys
        need(t[3])
      end
    end
  end
  local last, before = {}, {}
  if #fieldOrder > 0 then
    local applied = redis.call('HMGET', K[7], unpack(fieldOrder))
    for i = 1, #fieldOrder do
      local seq = tonumber(applied[i]) or -1
      last[fieldOrder[i]] = seq
      before[fieldOrder[i]] = seq
    end
  end
  local created = 0
  local completions, achOrder = {}, {}
  local totals, totalKeys = {}, {}
  local active, activeOrder = {}, {}
  local longest, longestOrder = {}, {}
  -- Every 'set' in order: {userId, length, extended, now} (the longest's "first reached at" below).
  local lengths = {}
  for _k = 1, #records do
    local rec = records[_k]
    local A = rec.A
    local userId, seq, now = A[1], tonumber(A[2]), A[3]
    if A[4] == '1' then created = created + 1 end
    local n = tonumber(A[9])
    for i = 1, n do
      local id = A[9 + i]
      if not completions[id] then
        completions[id] = 0
        achOrder[#achOrder + 1] = id
      end
      completions[id] = completions[id] + 1
    end
    for _j = 1, #rec.T do
      local t = rec.T[_j]
      local key, total, f = t[1], t[2], t[3]
      -- '' (0 when absent: ZADD NX) never replaces a total; a total only when newer than the last.
      local newer = total == '' or seq > last[f]
      if newer then
        if f then last[f] = seq end
        local byUser = totals[key]
        if not byUser then
          byUser = { order = {}, value = {} }
          totals[key] = byUser
          totalKeys[#totalKeys + 1] = key
        end
        if byUser.value[userId] == nil then byUser.order[#byUser.order + 1] = userId end
        if total ~= '' or byUser.value[userId] == nil then byUser.value[userId] = total end
      end
    end
    if (A[5] == 'set' or A[5] == 'del') and seq > last[userId] then
      last[userId] = seq
      if active[userId] == nil then activeOrder[#activeOrder + 1] = userId end
      active[userId] = A[5] == 'set' and { A[6], A[7] } or false
    end
    if A[5] == 'set' then
      local len = tonumber(A[6])
      if longest[userId] == nil then longestOrder[#longestOrder + 1] = userId end
      if longest[userId] == nil or len > longest[userId] then longest[userId] = len end
      lengths[#lengths + 1] = { userId, len, A[8] == '1', now }
    end
  end
  -- A user's first op (seq 1) leaves no field: no record of the user is older (an absent field reads as
  -- older than any), which spares users with one op the memory.
  local seqs = {}
  for _k = 1, #fieldOrder do
    local f = fieldOrder[_k]
    if last[f] > before[f] and last[f] > 1 then
      seqs[#seqs + 1] = f
      seqs[#seqs + 1] = string.format('%d', last[f])
    end
  end
  if #seqs > 0 then redis.call('HSET', K[7], unpack(seqs)) end

  if created > 0 then redis.call('INCRBY', K[1], created) end
  for _k = 1, #achOrder do local id = achOrder[_k] redis.call('HINCRBY', K[2], id, completions[id]) end
  for _k = 1, #totalKeys do
    local key = totalKeys[_k]
    local byUser = totals[key]
    local set, absent = {}, {}
    for _k = 1, #byUser.order do
      local userId = byUser.order[_k]
      local total = byUser.value[userId]
      if total == '' then
        absent[#absent + 1] = '0'
        absent[#absent + 1] = userId
      else
        set[#set + 1] = total
        set[#set + 1] = userId
      end
    end
    if #set > 0 then redis.call('ZADD', key, unpack(set)) end
    if #absent > 0 then redis.call('ZADD', key, 'NX', unpack(absent)) end
  end
  local scores, metas, gone = {}, {}, {}
  for _k = 1, #activeOrder do
    local userId = activeOrder[_k]
    local a = active[userId]
    if a then
      scores[#scores + 1] = a[1]
      scores[#scores + 1] = userId
      metas[#metas + 1] = userId
      metas[#metas + 1] = a[2]
    else
      gone[#gone + 1] = userId
    end
  end
  if #scores > 0 then
    redis.call('ZADD', K[3], unpack(scores))
    redis.call('HSET', K[4], unpack(metas))
  end
  if #gone > 0 then
    redis.call('ZREM', K[3], unpack(gone))
    redis.call('HDEL', K[4], unpack(gone))
  end
  -- K[6] keeps the field of each user's current longest length only (bounded: one per user): a new
  -- longest removes the field of the one before, and a length is recorded when first reached while
  -- it is the longest (records with a smaller length change nothing there).
  if #longestOrder > 0 then
    local before = redis.call('ZMSCORE', K[5], unpack(longestOrder))
    local cur, gone, pending, pendingOrder = {}, {}, {}, {}
    for i = 1, #longestOrder do local userId = longestOrder[i] cur[userId] = tonumber(before[i]) or 0 end
    for _k = 1, #lengths do
      local r = lengths[_k]
      local userId, len, ext, now = r[1], r[2], r[3], r[4]
      local c = cur[userId]
      if len > c then
        if c > 0 then
          local old = userId .. '|' .. string.format('%d', c)
          gone[#gone + 1] = old
          pending[old] = nil
        end
        cur[userId] = len
        c = len
      end
      if ext and len == c then
        local f = userId .. '|' .. string.format('%d', len)
        if pending[f] == nil then
          pending[f] = now
          pendingOrder[#pendingOrder + 1] = f
        end
      end
    end
    local best = {}
    for _k = 1, #longestOrder do
      local userId = longestOrder[_k]
      best[#best + 1] = string.format('%d', longest[userId])
      best[#best + 1] = userId
    end
    redis.call('ZADD', K[5], 'GT', unpack(best))
    if #gone > 0 then redis.call('HDEL', K[6], unpack(gone)) end
    for _k = 1, #pendingOrder do
      local f = pendingOrder[_k]
      if pending[f] then redis.call('HSETNX', K[6], f, pending[f]) end
    end
  end
end

-- The records of a flat argument list (lua/ackWithGlobals.lua, lua/updateGlobals.lua), from ARGV[i]:
-- R = the number of records, then per record its A (A[1 .. 9+n], A[9] = n), then m = its number of
-- totals, then m pairs (KEYS index of a system's totals zset, the user's total or '' for 0 when
-- absent). Returns the records ({A, T} as updateGlobalsMany takes them) and the index after them.
local function globalsRecords(KEYS, ARGV, i)
  local n = tonumber(ARGV[i])
  local records = {}
  i = i + 1
  for r = 1, n do
    local last = i + 8 + tonumber(ARGV[i + 8])
    local A = { unpack(ARGV, i, last) }
    i = last + 1
    local m = tonumber(ARGV[i])
    local T = {}
    for j = 1, m do T[j] = { KEYS[tonumber(ARGV[i + 2 * j - 1])], ARGV[i + 2 * j] } end
    i = i + 2 * m + 1
    records[r] = { A = A, T = T }
  end
  return records, i
end
