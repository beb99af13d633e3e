--[[
migrateIdem: rewrites one idempotency hash (…:user:<id>:idem, or a window bucket …:idem:<n>) from
fields "<metricId>|<key>" to compact ones (layout 3: the first 16 hex digits of the SHA-1 of
"<metricId>|<key>", src/engine/idempotency.ts idempotencyField), atomically. Values keep the event id
("<event id>|<first use ms>"); a forever entry's "<event id>" becomes "<event id>|0". The key's expiry
is unchanged. Called for every such key on start (src/redis/layout.ts).

A key that is not a hash, or a hash with a 'created' field (the user hash of a user whose id ends in
':idem'), is left alone, as are fields already compact.

KEYS[1] the hash
Reply: the number of fields rewritten.
]]

if redis.call('TYPE', KEYS[1]).ok ~= 'hash' then return 0 end
local raw = redis.call('HGETALL', KEYS[1])
for i = 1, #raw, 2 do
  if raw[i] == 'created' then return 0 end
end

local CHUNK = 500
local writes, dels, moved = {}, {}, 0
local function flush()
  if #dels == 0 then return end
  redis.call('HSET', KEYS[1], unpack(writes))
  redis.call('HDEL', KEYS[1], unpack(dels))
  moved = moved + #dels
  writes, dels = {}, {}
end

for i = 1, #raw, 2 do
  local f, v = raw[i], raw[i + 1]
  if string.find(f, '|', 1, true) then
    if not string.find(v, '|', 1, true) then v = v .. '|0' end
    writes[#writes + 1] = string.sub(redis.sha1hex(f), 1, 16)
    writes[#writes + 1] = v
    dels[#dels + 1] = f
    if #dels >= CHUNK then flush() end
  end
end
flush()
return moved
