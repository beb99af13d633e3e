-- The user hash (src/redis/user-hash.ts): the profile's fields as they are, every other part under a
-- one-letter prefix. An op reads it with one HGETALL and writes its changes with one HSET.

local USER_PARTS = { m = 'metrics', c = 'counters', d = 'achievements', n = 'points', s = 'streak', b = 'boards', r = 'applied' }

-- What a field name says, kept from call to call (served as a Redis Function) rather than worked out
-- with two or three string functions for every field of every user read (a returning user's hash has
-- about 26): FIELD_PART[f] its part ('profile' for a profile field, 'attrs' for a profile attribute
-- a:<key>), FIELD_NAME[f] its name there (without the prefix). Field names are the configuration's ids
-- and the profile's names, a small set; past FIELD_MAX (attribute keys, counters of past epochs) the
-- tables start over.
local FIELD_PART, FIELD_NAME, FIELD_COUNT, FIELD_MAX = {}, {}, 0, 4096
local function learnField(f)
  if FIELD_COUNT >= FIELD_MAX then FIELD_PART, FIELD_NAME, FIELD_COUNT = {}, {}, 0 end
  local part = string.byte(f, 2) == 58 and USER_PARTS[string.sub(f, 1, 1)]
  if part then
    FIELD_NAME[f] = string.sub(f, 3)
  elseif string.sub(f, 1, 2) == 'a:' then
    part = 'attrs'
    FIELD_NAME[f] = string.sub(f, 3)
  else
    part = 'profile'
    FIELD_NAME[f] = f
  end
  FIELD_PART[f] = part
  FIELD_COUNT = FIELD_COUNT + 1
  return part
end

-- The user hash split into its parts (fields without their prefix); profile holds the rest, and attrs
-- the profile's attributes again by their keys (a:<key> -> <key>). The parts an op only reads (attrs,
-- metrics, counters, points, streak, boards, applied) are made when the hash has a field of theirs: a
-- user without any shares NO_FIELDS (a table made and collected for each op costs more than the
-- lookups), which refuses writes once guardNoFields has run (a Function's library cannot call
-- setmetatable while it loads: lua/applyUserOp.lua runs it at the first call). profile and
-- achievements are written, so each op has its own.
local NO_FIELDS = {}
local function guardNoFields()
  setmetatable(NO_FIELDS, { __newindex = function() error('loadUser: a part without fields is read only') end })
end
local function loadUser(key)
  local raw = redis.call('HGETALL', key)
  local u = {
    profile = {}, attrs = NO_FIELDS, metrics = NO_FIELDS, counters = NO_FIELDS, achievements = {},
    points = NO_FIELDS, streak = NO_FIELDS, boards = NO_FIELDS, applied = NO_FIELDS,
  }
  for i = 1, #raw, 2 do
    local f, v = raw[i], raw[i + 1]
    local part = FIELD_PART[f] or learnField(f)
    if part == 'profile' then
      u.profile[f] = v
    else
      if part == 'attrs' then u.profile[f] = v end
      local t = u[part]
      if t == NO_FIELDS then
        t = {}
        u[part] = t
      end
      t[FIELD_NAME[f]] = v
    end
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
