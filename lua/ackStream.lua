--[[
ackStream: acknowledges a consumer group's entries of one stream and removes every entry the group is
done with: a board's change stream, read by the scheduler's one group (src/workers/board-changes.ts).

KEYS[1] the stream
ARGV[1] the consumer group   ARGV[2..] the entry ids to acknowledge

Reply: the number of ids given.
]]

--!include lib/streams.lua

local ids = {}
for i = 2, #ARGV do ids[#ids + 1] = ARGV[i] end
ackStreamEntries(KEYS[1], ARGV[1], ids)
return #ids
