-- The indexes that span users, after one user op: user count and ids, achievement completion counts,
-- points totals per system, current and longest streak rankings. Shared by lua/updateGlobals.lua (its
-- own call on the {global} slot) and lua/applyUserOp.lua (in the user's call, on a single Redis).
--
-- K[1] user count        K[2] user ids (zset, score = creation ms)
-- K[3] achievement completion counts (hash)
-- K[4] active streaks (zset)   K[5] active streak meta (hash)
-- K[6] longest streaks (zset)  K[7] when each longest length was reached (hash)
-- K[8..] points totals of one system each (zset)
--
-- A[1] userId   A[2] nowMs   A[3] created ('1' | '0')
-- A[4] streak: '' (unchanged) | 'set' | 'del'   A[5] streak length   A[6] active meta
-- A[7] extended ('1' | '0')
-- A[8] n = completed achievement count, A[9 .. 8+n] their ids
-- A[9+n ..] one per K[8..]: the user's new total, or '' for 0 when absent (a created user)
local function updateGlobals(K, A)
  local userId, now = A[1], A[2]
  if A[3] == '1' then
    redis.call('INCR', K[1])
    redis.call('ZADD', K[2], 'NX', now, userId)
  end
  local n = tonumber(A[8])
  for i = 1, n do redis.call('HINCRBY', K[3], A[8 + i], 1) end
  for j = 8, #K do
    local total = A[n + j + 1]
    if total == '' then
      redis.call('ZADD', K[j], 'NX', 0, userId)
    else
      redis.call('ZADD', K[j], total, userId)
    end
  end
  if A[4] == 'set' then
    redis.call('ZADD', K[4], A[5], userId)
    redis.call('HSET', K[5], userId, A[6])
    redis.call('ZADD', K[6], 'GT', A[5], userId)
    if A[7] == '1' then redis.call('HSETNX', K[7], userId .. '|' .. A[5], now) end
  elseif A[4] == 'del' then
    redis.call('ZREM', K[4], userId)
    redis.call('HDEL', K[5], userId)
  end
end
