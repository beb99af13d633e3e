--[[
readOutboxes: the history writer's read of many outbox streams of one Redis Cluster master, in one
call (src/workers/history-writer.ts). A Cluster's outbox is one stream per user shard, in as many
slots, and one XREADGROUP per stream and pass was 256 commands a pass, 2,560 a second at the writer's
100 ms pace. Served as a Redis Function with the allow-cross-slot-keys flag (src/redis/scripts.ts), so
a call reaches the streams of every slot its master serves.

KEYS[1]  one of the streams (it routes the call to their master)
ARGV[1] the history consumer group   ARGV[2] the consumer   ARGV[3] the most entries to take of each
ARGV[4] the XREADGROUP id: '>' (new entries) or '0' (the consumer's own pending ones)
ARGV[5..] the streams

A read of new entries ('>') skips an empty stream (XLEN 0) without reading it.

Reply: {reads, failed}. reads: per stream that gave entries, {stream, entries} as XREADGROUP answers;
failed: per stream this call could not read, its name then the error (a stream whose slot this master
no longer serves, or one without the group): the writer reads those on their own.
]]

local function run(KEYS, ARGV)
  local group, consumer, count, id = ARGV[1], ARGV[2], ARGV[3], ARGV[4]
  local reads, failed = {}, {}
  local fresh = id == '>'
  for i = 5, #ARGV do
    local key = ARGV[i]
    local res, empty = nil, false
    -- New entries of an empty stream: none. Most streams of a thin pass are empty (the writer trims
    -- what it has written), and XLEN costs a fraction of an XREADGROUP. Not for the consumer's own
    -- pending entries: an entry deleted while pending leaves the stream empty and is still to be
    -- acknowledged (the writer reads it without fields).
    if fresh then
      local len = redis.pcall('XLEN', key)
      if type(len) == 'table' then res = len else empty = len == 0 end
    end
    if res == nil and not empty then
      res = redis.pcall('XREADGROUP', 'GROUP', group, consumer, 'COUNT', count, 'STREAMS', key, id)
    end
    if type(res) == 'table' and res.err then
      failed[#failed + 1] = key
      failed[#failed + 1] = res.err
    elseif res and #res[1][2] > 0 then
      -- (a read of pending entries answers a stream with none with an empty list)
      reads[#reads + 1] = res[1]
    end
  end
  return { reads, failed }
end

local function served(KEYS, ARGV)
  return run(KEYS, ARGV)
end

-- Served as a Redis Function (src/redis/scripts.ts replaces this line with the registration of
-- `served`); as a plain script (EVAL) it runs here.
return run(KEYS, ARGV)
