--[[
updateGlobals: the indexes that span users after one outbox record, in one call on the {global}
slot: the history writer's path on Cluster, where the outbox streams live in other slots
(src/workers/globals.ts). A writer dying between this call and its acknowledgement counts the record
twice when another writer claims it: npm run verify-state reports it and npm run rebuild recomputes
them.

KEYS and ARGV: those of updateGlobals(K, A) in lib/globals.lua.

Reply: 1.
]]

--!include lib/globals.lua

updateGlobals(KEYS, ARGV)
return 1
