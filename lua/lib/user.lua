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
-- (prefix '' for a profile field); flush(key) writes them.
local function userWrites()
  local w = {}
  local function put(prefix, field, value)
    w[#w + 1] = prefix .. field
    w[#w + 1] = value
  end
  local function flush(key)
    if #w > 0 then redis.call('HSET', key, unpack(w)) end
  end
  return put, flush
end
