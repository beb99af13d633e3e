--[[
updateGlobals: the indexes that span users after a chunk of outbox records, in one call on the
{global} slot: the history writer's path on Cluster, where the outbox streams live in other slots
(src/workers/globals.ts), so the acknowledgement is a call of its own after this one. A record applied
again (its writer failed or died between this call and its acknowledgement) counts twice in the user
count and completion counts: npm run verify-state reports it and npm run rebuild recomputes them (its
totals and streak are not changed again: their seq guard, lib/globals.lua).

KEYS[1..7]  the fixed keys of lib/globals.lua
KEYS[8..]   the points totals zsets of the records' systems, referenced by their KEYS index from ARGV

ARGV, flat: the records as lua/ackWithGlobals.lua takes them from its ARGV[2] (R, then per record
its A, its number of totals and their (KEYS index, total) pairs).

Reply: the number of records.
]]

--!include lib/globals.lua

local records = globalsRecords(KEYS, ARGV, 1)
updateGlobalsMany(KEYS, records)
return #records
