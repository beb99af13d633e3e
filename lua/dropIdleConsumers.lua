--[[
dropIdleConsumers: removes a stream group's consumers that hold nothing and have been idle a while:
each history writer process reads the outbox as a consumer of its own (host, pid and a random
suffix), and a stopped one's name would otherwise stay in the group for ever, one more for every
restart, and the acknowledgement's XPENDING summary walks them all (lua/lib/streams.lua). Atomic, so a
consumer is removed only while it holds no pending entry (XGROUP DELCONSUMER drops what it holds).
A live consumer removed after an idle hour is made again by its next read.

KEYS[1] the stream
ARGV[1] the consumer group   ARGV[2] idle time (ms) a consumer must have   ARGV[3] a consumer to keep

Reply: how many consumers were removed.
]]

local ok, consumers = pcall(redis.call, 'XINFO', 'CONSUMERS', KEYS[1], ARGV[1])
if not ok then return 0 end -- no stream or no group: nothing to remove
local minIdle = tonumber(ARGV[2])
local removed = 0
for c = 1, #consumers do
  local info = consumers[c]
  local name, pending, idle = nil, nil, nil
  for i = 1, #info, 2 do
    local f = info[i]
    if f == 'name' then name = info[i + 1] elseif f == 'pending' then pending = info[i + 1] elseif f == 'idle' then idle = info[i + 1] end
  end
  if name and name ~= ARGV[3] and pending == 0 and idle and idle >= minIdle then
    redis.call('XGROUP', 'DELCONSUMER', KEYS[1], ARGV[1], name)
    removed = removed + 1
  end
end
return removed
