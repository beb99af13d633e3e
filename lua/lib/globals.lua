-- The indexes that span users, after one user op: user count, achievement completion counts, points
-- totals per system, current and longest streak rankings. Maintained by the history writer from the
-- outbox (src/workers/globals.ts): lua/ackWithGlobals.lua on a single Redis, lua/updateGlobals.lua
-- (one record per call on the {global} slot) on Cluster.
--
-- K[1] user count        K[2] achievement completion counts (hash)
-- K[3] active streaks (zset)   K[4] active streak meta (hash)
-- K[5] longest streaks (zset)  K[6] when each longest length was reached (hash)
-- K[7..] points totals of one system each (zset)
--
-- A[1] userId   A[2] nowMs   A[3] created ('1' | '0')
-- A[4] streak: '' (unchanged) | 'set' | 'del'   A[5] streak length   A[6] active meta
-- A[7] extended ('1' | '0')
-- A[8] n = completed achievement count, A[9 .. 8+n] their ids
-- A[9+n ..] one per K[7..]: the user's new total, or '' for 0 when absent (a created user)
local function updateGlobals(K, A)
  local userId, now = A[1], A[2]
  if A[3] == '1' then redis.call('INCR', K[1]) end
  local n = tonumber(A[8])
  for i = 1, n do redis.call('HINCRBY', K[2], A[8 + i], 1) end
  for j = 7, #K do
    local total = A[n + j + 2]
    if total == '' then
      redis.call('ZADD', K[j], 'NX', 0, userId)
    else
      redis.call('ZADD', K[j], total, userId)
    end
  end
  if A[4] == 'set' then
    redis.call('ZADD', K[3], A[5], userId)
    redis.call('HSET', K[4], userId, A[6])
    redis.call('ZADD', K[5], 'GT', A[5], userId)
    if A[7] == '1' then redis.call('HSETNX', K[6], userId .. '|' .. A[5], now) end
  elseif A[4] == 'del' then
    redis.call('ZREM', K[3], userId)
    redis.call('HDEL', K[4], userId)
  end
end
