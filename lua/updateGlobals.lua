--[[
updateGlobals: the indexes that span users after one outbox record, in one call on the {global}
slot: the history writer's path on Cluster, where the outbox streams live in other slots
(src/workers/globals.ts). A record applied again (its writer failed or died between this call and
its acknowledgement) counts twice in the user count and completion counts: npm run verify-state
reports it and npm run rebuild recomputes them (its totals and streak are not changed again: their
seq guard, lib/globals.lua).

KEYS[1..7] the fixed keys of lib/globals.lua, KEYS[8..] the points totals zsets of the record's
systems. ARGV: the record's A (lib/globals.lua), then one total per KEYS[8..] ('' for 0 when absent).

Reply: 1.
]]

--!include lib/globals.lua

local n = tonumber(ARGV[9])
local A, T = {}, {}
for i = 1, 9 + n do A[i] = ARGV[i] end
for j = 8, #KEYS do T[#T + 1] = { KEYS[j], ARGV[n + j + 2] } end
updateGlobalsMany(KEYS, { { A = A, T = T } })
return 1
