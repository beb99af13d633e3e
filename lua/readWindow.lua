--[[
readWindow: the window of one ranking around a user, in one call (GET /v1/leaderboards/{key}?userId=,
and a user's own standing), with the board's ranking version read in the same call.

KEYS[1] members hash of the run: userId -> "value|changedAt|group|seq|expires"
KEYS[2] ranking sorted set of the group (member = "<changedAt, 15 digits>|<userId>", score = -value)
KEYS[3] the board's ranking version (lua/updateBoard.lua moves it on every ranking write)

ARGV[1] userId   ARGV[2] offset from the user's index (may be negative)   ARGV[3] limit

Reply: {version, start, member, score, member, score, ...} with start the 0-based index of the first
entry (the window is clamped at the top); start is nil when the user is not ranked in this group, and
version is nil when the board was never written.
]]

local version = redis.call('GET', KEYS[3])
local meta = redis.call('HGET', KEYS[1], ARGV[1])
if not meta then return { version, false } end
local changedAt = tonumber(string.match(meta, '^[^|]*|([^|]*)'))
if not changedAt then return { version, false } end
local idx = redis.call('ZRANK', KEYS[2], string.format('%015.0f', changedAt) .. '|' .. ARGV[1])
if not idx then return { version, false } end
local start = math.max(0, idx + tonumber(ARGV[2]))
local limit = tonumber(ARGV[3])
if limit <= 0 then return { version, start } end
local flat = redis.call('ZRANGE', KEYS[2], start, start + limit - 1, 'WITHSCORES')
table.insert(flat, 1, start)
table.insert(flat, 1, version)
return flat
