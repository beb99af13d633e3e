--[[
ackWithGlobals: the history writer's last step for a chunk of outbox records on a single Redis: the
cross-user indexes those records imply (lib/globals.lua, one command per index for the chunk) and the records'
acknowledgement and deletion, in one atomic call. A writer that dies before it has either; one that
dies after has both, so every record moves the indexes exactly once (its Postgres rows are idempotent).

KEYS[1..6]  the fixed keys of lib/globals.lua
KEYS[7..]   points totals zsets and outbox streams, referenced by index from ARGV[1]

ARGV[1] JSON with
  r: one object per record: a = its A of lib/globals.lua (A[1 .. 8+n]), t = pairs of
     (KEYS index of a system's totals zset, the user's total or '' for 0 when absent)
  x: one list per shard: the KEYS index of its outbox stream, then the entry ids to acknowledge
ARGV[2] the history consumer group

Reply: the number of records whose indexes were updated.
]]

--!include lib/globals.lua

local input = cjson.decode(ARGV[1])
local records = {}
for _k = 1, #input.r do
  local rec = input.r[_k]
  local T = {}
  for _k = 1, #rec.t do local t = rec.t[_k] T[#T + 1] = { KEYS[t[1]], t[2] } end
  records[#records + 1] = { A = rec.a, T = T }
end
updateGlobalsMany(KEYS, records)
local n = #records
for _k = 1, #input.x do
  local x = input.x[_k]
  local key = KEYS[x[1]]
  local ids = {}
  for i = 2, #x do ids[#ids + 1] = x[i] end
  redis.call('XACK', key, ARGV[2], unpack(ids))
  redis.call('XDEL', key, unpack(ids))
end
return n
