--[[
ackWithGlobals: the history writer's last step for a chunk of outbox records on a single Redis: the
cross-user indexes those records imply (lib/globals.lua, one command per index for the chunk) and the records'
acknowledgement and deletion, in one atomic call. A writer that dies before it has either; one that
dies after has both, so every record moves the indexes exactly once (its Postgres rows are idempotent).

KEYS[1..7]  the fixed keys of lib/globals.lua
KEYS[8..]   points totals zsets and outbox streams, referenced by their KEYS index from ARGV

ARGV, flat (no JSON to decode: cjson's decoding of a chunk cost Redis about 24,000 instructions a
record, more than the indexes' own commands):
  [1] the history consumer group, then the chunk's index updates as lib/globals.lua applyGlobals
  takes them (folded by the writer, src/workers/globals.ts globalsArgs);
  then S = the number of outbox streams, and per stream: its KEYS index, c = the number of entries,
  then the c entry ids to acknowledge (then every entry the group is done with is trimmed:
  lib/streams.lua).

Reply: the number of records whose indexes were updated.
]]

--!include lib/globals.lua
--!include lib/streams.lua

local group = ARGV[1]
local records, i = applyGlobals(KEYS, ARGV, 2)
local streams = tonumber(ARGV[i])
i = i + 1
for _ = 1, streams do
  local key, c = KEYS[tonumber(ARGV[i])], tonumber(ARGV[i + 1])
  ackStreamEntries(key, group, { unpack(ARGV, i + 2, i + 1 + c) })
  i = i + 2 + c
end
return records + 0
