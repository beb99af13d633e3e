-- The indexes that span users, after user ops: user count, achievement completion counts, points
-- totals per system, current and longest streak rankings. Maintained by the history writer from the
-- outbox (src/workers/globals.ts): lua/ackWithGlobals.lua for a chunk of records on a single Redis,
-- lua/updateGlobals.lua (a chunk of records per call on the {global} slot) on Cluster.
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
-- One user's records can come in any order (several writers read one stream at once; a claim takes
-- entries left pending behind newer ones already written): counts (users, completions) add up and the
-- longest streak keeps the highest length whatever the order; a points total and the current streak,
-- the values after a record's op, are set only by a record newer (by seq) than the last that set them
-- for the user (K[7]), so an older record does not undo a newer one, and a record applied again (a
-- Cluster writer that died before acknowledging it) does not change them.
--
-- The writer folds a chunk's records into what each index needs before the call (src/workers/globals.ts
-- globalsArgs: per guarded field only the chunk's newest record, per user only its longest length and
-- when that length was first extended), so the script does only what depends on Redis's state (the
-- seqs of K[7], the longest lengths of K[5]) and one variadic command per index. Its ARGV from i:
--   R: the number of records (the reply), C: the users created,
--   nC, then nC pairs (achievement id, completions)
--   nF, then nF pairs (K[7] field, the chunk's newest seq for it): the guarded fields
--   nT, then per points totals zset: its KEYS index, nS, nS triples (userId, total, its field's
--       position among the nF), nA, nA user ids that count with 0 when absent (ZADD NX: created users
--       without a total of their own in the chunk)
--   nS, then nS quintuples (userId, 'set' | 'del', length, meta, its field's position): each user's
--       newest current-streak change
--   nL, then nL triples (userId, the chunk's longest length, the ms of its first record of that length
--       that extended the streak, or '')
-- Returns R and the index after them.
local function applyGlobals(K, ARGV, i)
  local records = ARGV[i]
  local created = ARGV[i + 1] + 0
  if created > 0 then redis.call('INCRBY', K[1], created) end
  i = i + 2
  local nC = ARGV[i] + 0
  for j = i + 1, i + 2 * nC, 2 do redis.call('HINCRBY', K[2], ARGV[j], ARGV[j + 1]) end
  i = i + 2 * nC + 1

  -- The guarded fields whose record is newer than the one that last set them.
  local nF = ARGV[i] + 0
  local newer = {}
  if nF > 0 then
    local fields = {}
    for j = 1, nF do fields[j] = ARGV[i + 2 * j - 1] end
    local stored = redis.call('HMGET', K[7], unpack(fields))
    -- A user's first op (seq 1) leaves no field: no record of the user is older (an absent field reads
    -- as older than any), which spares users with one op the memory.
    local seqs = {}
    for j = 1, nF do
      local seq = ARGV[i + 2 * j] + 0
      local old = stored[j]
      if seq > (old and old + 0 or -1) then
        newer[j] = true
        if seq > 1 then
          seqs[#seqs + 1] = fields[j]
          seqs[#seqs + 1] = ARGV[i + 2 * j]
        end
      end
    end
    if #seqs > 0 then redis.call('HSET', K[7], unpack(seqs)) end
  end
  i = i + 2 * nF + 1

  local nT = ARGV[i] + 0
  i = i + 1
  for _ = 1, nT do
    local key, nS = K[ARGV[i] + 0], ARGV[i + 1] + 0
    i = i + 2
    local set = {}
    for j = i, i + 3 * nS - 1, 3 do
      if newer[ARGV[j + 2] + 0] then
        set[#set + 1] = ARGV[j + 1]
        set[#set + 1] = ARGV[j]
      end
    end
    i = i + 3 * nS
    if #set > 0 then redis.call('ZADD', key, unpack(set)) end
    local nA = ARGV[i] + 0
    if nA > 0 then
      local absent = {}
      for j = i + 1, i + nA do
        absent[#absent + 1] = '0'
        absent[#absent + 1] = ARGV[j]
      end
      redis.call('ZADD', key, 'NX', unpack(absent))
    end
    i = i + nA + 1
  end

  local nS = ARGV[i] + 0
  local scores, metas, gone = {}, {}, {}
  for j = i + 1, i + 5 * nS, 5 do
    if newer[ARGV[j + 4] + 0] then
      local userId = ARGV[j]
      if ARGV[j + 1] == 'set' then
        scores[#scores + 1] = ARGV[j + 2]
        scores[#scores + 1] = userId
        metas[#metas + 1] = userId
        metas[#metas + 1] = ARGV[j + 3]
      else
        gone[#gone + 1] = userId
      end
    end
  end
  i = i + 5 * nS + 1
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
  -- it is the longest.
  local nL = ARGV[i] + 0
  if nL > 0 then
    local users, best = {}, {}
    for j = 1, nL do
      local at = i + 3 * j - 2
      users[j] = ARGV[at]
      best[2 * j - 1] = ARGV[at + 1]
      best[2 * j] = ARGV[at]
    end
    local before = redis.call('ZMSCORE', K[5], unpack(users))
    redis.call('ZADD', K[5], 'GT', unpack(best))
    local superseded = {}
    for j = 1, nL do
      local at = i + 3 * j - 2
      local userId, len, first = ARGV[at], ARGV[at + 1] + 0, ARGV[at + 2]
      local cur = before[j] and before[j] + 0 or 0
      if len > cur and cur > 0 then superseded[#superseded + 1] = userId .. '|' .. string.format('%d', cur) end
      if first ~= '' and len >= cur then redis.call('HSETNX', K[6], userId .. '|' .. ARGV[at + 1], first) end
    end
    if #superseded > 0 then redis.call('HDEL', K[6], unpack(superseded)) end
  end
  return records, i + 3 * nL + 1
end
