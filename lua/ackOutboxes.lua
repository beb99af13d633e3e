--[[
ackOutboxes: the history writer's acknowledgement of what it wrote from many outbox streams of one
Redis Cluster master, in one call (src/workers/globals.ts). A Cluster's outbox is one stream per user
shard, in as many slots: acknowledged with an XACK and an XDEL per stream, a pass of about 300 records
(1,500 events/s) sent about 360 commands. Served as a Redis Function with the allow-cross-slot-keys flag
(src/redis/scripts.ts), so a call reaches the streams of every slot its master serves. Each stream is
acknowledged as lua/ackStream.lua does (XACK, then a trim of every entry the group is done with:
lib/streams.lua), the same as a single Redis's lua/ackWithGlobals.lua.

KEYS[1]  one of the streams (it routes the call to their master)
ARGV[1] the history consumer group
ARGV[2..] per stream: its name, the number of ids n, then its n entry ids

Reply: per stream this call could not acknowledge (a stream whose slot this master no longer serves),
its name then the error, flat: the writer acknowledges those on their own. Nothing of such a stream
was changed: the refusal is of its first command.
]]

--!include lib/numbers.lua
--!include lib/streams.lua

local function run(KEYS, ARGV)
  local group = ARGV[1]
  local failed = {}
  local i = 2
  while i <= #ARGV do
    local key, n = ARGV[i], tonumber(ARGV[i + 1])
    local ids = {}
    for j = 1, n do ids[j] = ARGV[i + 1 + j] end
    i = i + 2 + n
    local ok, err = pcall(ackStreamEntries, key, group, ids)
    if not ok then
      failed[#failed + 1] = key
      failed[#failed + 1] = errorText(err)
    end
  end
  return failed
end

local function served(KEYS, ARGV)
  return run(KEYS, ARGV)
end

-- Served as a Redis Function (src/redis/scripts.ts replaces this line with the registration of
-- `served`); as a plain script (EVAL) it runs here.
return run(KEYS, ARGV)
