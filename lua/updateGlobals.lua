--[[
updateGlobals: the indexes that span users, after one user op (src/engine/user-op.ts), in one call
on the {global} slot: user count and ids, achievement completion counts, points totals per system,
current and longest streak rankings. The history writer repairs them after a crash between the user
script and this one.

KEYS[1] user count        KEYS[2] user ids (zset, score = creation ms)
KEYS[3] achievement completion counts (hash)
KEYS[4] active streaks (zset)   KEYS[5] active streak meta (hash)
KEYS[6] longest streaks (zset)  KEYS[7] when each longest length was reached (hash)
KEYS[8..] points totals of one system each (zset)

ARGV[1] userId   ARGV[2] nowMs   ARGV[3] created ('1' | '0')
ARGV[4] streak: '' (unchanged) | 'set' | 'del'   ARGV[5] streak length   ARGV[6] active meta
ARGV[7] extended ('1' | '0')
ARGV[8] n = completed achievement count, ARGV[9 .. 8+n] their ids
ARGV[9+n ..] one per KEYS[8..]: the user's new total, or '' for 0 when absent (a created user)

Reply: 1.
]]

local userId, now = ARGV[1], ARGV[2]
if ARGV[3] == '1' then
  redis.call('INCR', KEYS[1])
  redis.call('ZADD', KEYS[2], 'NX', now, userId)
end
local n = tonumber(ARGV[8])
for i = 1, n do redis.call('HINCRBY', KEYS[3], ARGV[8 + i], 1) end
for j = 8, #KEYS do
  local total = ARGV[n + j + 1]
  if total == '' then
    redis.call('ZADD', KEYS[j], 'NX', 0, userId)
  else
    redis.call('ZADD', KEYS[j], total, userId)
  end
end
if ARGV[4] == 'set' then
  redis.call('ZADD', KEYS[4], ARGV[5], userId)
  redis.call('HSET', KEYS[5], userId, ARGV[6])
  redis.call('ZADD', KEYS[6], 'GT', ARGV[5], userId)
  if ARGV[7] == '1' then redis.call('HSETNX', KEYS[7], userId .. '|' .. ARGV[5], now) end
elseif ARGV[4] == 'del' then
  redis.call('ZREM', KEYS[4], userId)
  redis.call('HDEL', KEYS[5], userId)
end
return 1
