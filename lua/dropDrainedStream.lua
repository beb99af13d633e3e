--[[
dropDrainedStream: removes a stream that a consumer group has emptied: a shard outbox stream of the
single-Redis layout before one stream served every user (src/redis/keys.ts legacyOutboxes), once the
history writer has drained it (src/workers/history-writer.ts findLegacy). Atomic, so an entry a
process of an older version adds meanwhile keeps the stream (and is read at the next sweep).

KEYS[1] the stream
ARGV[1] the consumer group

Reply: 1 if the stream was removed (no entries, none pending), else 0.
]]

if redis.call('XLEN', KEYS[1]) > 0 then return 0 end
-- A stream without the group (made by an older process after a removal) has nothing pending.
local pending = redis.pcall('XPENDING', KEYS[1], ARGV[1])
if pending.err == nil and pending[1] > 0 then return 0 end
redis.call('DEL', KEYS[1])
return 1
