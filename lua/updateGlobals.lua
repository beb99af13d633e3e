--[[
updateGlobals: the indexes that span users after a chunk of outbox records, in one call on the
{global} slot: the history writer's path on Cluster, where the outbox streams live in other slots
(src/workers/globals.ts), so the acknowledgement is a call of its own after this one. A record applied
again (its writer failed or died between this call and its acknowledgement) counts twice in the user
count and completion counts: npm run verify-state reports it and npm run rebuild recomputes them (its
totals and streak are not changed again: their seq guard, lib/globals.lua).

KEYS[1..7]  the fixed keys of lib/globals.lua
KEYS[8..]   the points totals zsets of the records' systems, referenced by their KEYS index from ARGV

ARGV, flat: the chunk's index updates as lib/globals.lua applyGlobals takes them (folded by the writer,
src/workers/globals.ts globalsArgs), as lua/ackWithGlobals.lua takes them from its ARGV[2].

Reply: the number of records.
]]

--!include lib/globals.lua

local records = applyGlobals(KEYS, ARGV, 1)
return records + 0
