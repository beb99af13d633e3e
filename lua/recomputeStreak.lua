--[[
recomputeStreak: replaces one user's streak state by one recomputed from recorded activity under new
streak settings (semantics §4.10, frequency change), only if nothing happened to the user since the
history it was computed from was read (the profile's seq is the one given); otherwise nothing is
written and the caller retries once the history writer has caught up. Freezes and the longest streak
are kept (the longest only grows). Writes an outbox record (op "recompute") so the history writer
carries the new length to the streak rankings, streak leaderboards, streak_periods and user_states,
like any op's; it fires no webhooks. Also used with the streak unchanged (fields = {}, pauses given)
when a user's pauses changed, so the indexes take the expiry under the new pauses.

KEYS[1] the user hash (profile fields, streak fields under s:, the scalar ones packed in s:_ and s:~: lib/streak.lua,
        src/redis/user-hash.ts)
KEYS[2] shard outbox stream
KEYS[3] the user's streak period history (lib/streak.lua): replaced by hist when it is given
ARGV[1] expected profile seq
ARGV[2] JSON {epoch, fields = {field, value, ...} (streak fields, without their s: prefix), hist? (the
        recomputed period history, '' for none), length, lastMet?, started?,
        longest, periods = [{idx, length}], pauses? = {{firstDay, lastDay}, ...}, record = {...} (record
        fields the caller knows: id, user, now, tz, date, freq, boards), breakdownKeys = [...]}

Reply: 1 written, 0 the user changed since (or does not exist): nothing written.
]]
--!include lib/streak.lua

local K_USER, K_OUTBOX, K_HIST = KEYS[1], KEYS[2], KEYS[3]
local expected = ARGV[1]
local input = cjson.decode(ARGV[2])

local seq = redis.call('HGET', K_USER, 'seq')
if seq == false or seq ~= expected then return 0 end
seq = tonumber(seq) + 1

-- The stored streak part's scalar fields: packed (s:_, s:~), or a hash of an earlier version's own fields.
local names = { 's:_', 's:~' }
for i = 1, #STREAK_OWN do names[i + 2] = STREAK_OWN[i] end
local got = redis.call('HMGET', K_USER, unpack(names))
local raw = {}
for i = 1, #names do
  if got[i] then raw[string.sub(names[i], 3)] = got[i] end
end
local own = streakUnpack(raw)
local freezes = tonumber(raw.freezes or '0')
local longest = tonumber(raw.longest or '0')
local longestAt = raw.longestAt or '0'
if input.longest > longest then
  longest = input.longest
  longestAt = tostring(input.record.now)
end

local fields = input.fields
fields[#fields + 1] = 'longest'
fields[#fields + 1] = string.format('%.0f', longest)
fields[#fields + 1] = 'longestAt'
fields[#fields + 1] = longestAt
fields[#fields + 1] = 'freezes'
fields[#fields + 1] = string.format('%.0f', freezes)
local writes = { 'seq', string.format('%.0f', seq) }
-- The period sums (s:<metricId>) are compared with nothing read: put whatever differs from nil.
local legacy = streakPut(raw, fields, function(f, v)
  writes[#writes + 1] = 's:' .. f
  writes[#writes + 1] = v
end, own)
if legacy then redis.call('HDEL', K_USER, unpack(legacy)) end
redis.call('HSET', K_USER, unpack(writes))
if input.hist ~= nil then
  if input.hist == '' then redis.call('DEL', K_HIST) else redis.call('SET', K_HIST, input.hist) end
  -- Earlier versions wrote the history into the user hash instead (s:hist), leaving the key as it was.
  redis.call('HDEL', K_USER, 's:hist')
end

local battrs = {}
local breakdownKeys = input.breakdownKeys or {}
for _k = 1, #breakdownKeys do
  local k = breakdownKeys[_k]
  local v = redis.call('HGET', K_USER, 'a:' .. k)
  if v then battrs[k] = v end
end

local record = input.record
record.op = 'recompute'
record.seq = seq
record.created = false
record.completions = {}
record.awards = {}
record.battrs = battrs
record.epoch = input.epoch
record.streak = {
  length = input.length,
  lastMet = input.lastMet,
  started = input.started,
  freezes = freezes,
  extended = false,
  changed = true,
  periods = input.periods,
  -- The user's pauses, when the caller gives them (their streak expiry counts them).
  pauses = input.pauses,
}
record.sh = fields
record.ts = (function() local t = redis.call('TIME') return t[1] .. string.format('%06d', tonumber(t[2])) end)()
redis.call('XADD', K_OUTBOX, '*', 'r', cjson.encode(record))
return 1
