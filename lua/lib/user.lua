-- The user hash (src/redis/user-hash.ts): the profile's fields as they are, every other part under a
-- one-letter prefix. An op reads it with one HGETALL and writes its changes with one HSET.

local USER_PARTS = { m = 'metrics', c = 'counters', d = 'achievements', n = 'points', s = 'streak', b = 'boards', r = 'applied' }

-- The user hash split into its parts (fields without their prefix); profile holds the rest.
local function loadUser(key)
  local raw = redis.call('HGETALL', key)
  local u = { profile = {}, metrics = {}, counters = {}, achievements = {}, points = {}, streak = {}, boards = {}, applied = {} }
  for i = 1, #raw, 2 do
    local f = raw[i]
    local part = string.byte(f, 2) == 58 and USER_PARTS[string.sub(f, 1, 1)]
    if part then u[part][string.sub(f, 3)] = raw[i + 1] else u.profile[f] = raw[i + 1] end
  end
  return u
end

-- An op's writes to the user hash, applied by one HSET: put(prefix, field, value) adds one
-- (prefix '' for a profile field); flush(key) writes them. Ops are applied one at a time (also in a
-- multi-op call), so one buffer serves them all: its first WN entries are the op's, and it keeps its
-- size from call to call (served as a Redis Function) instead of growing anew, a rehash at each
-- doubling, for every op.
local W, WN = {}, 0
local function userPut(prefix, field, value)
  W[WN + 1] = prefix .. field
  W[WN + 2] = value
  WN = WN + 2
end
local function userFlush(key)
  if WN > 0 then redis.call('HSET', key, unpack(W, 1, WN)) end
end
local function userWrites()
  WN = 0
  return userPut, userFlush
end
