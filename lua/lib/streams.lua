-- Acknowledging a consumer group's entries of a stream (lua/ackStream.lua, lua/ackWithGlobals.lua):
-- XACK, then one XTRIM MINID that removes every entry the group is done with, instead of an XDEL of
-- the ids: XDEL finds each id by walking its node from the node's first entry (about 29,000
-- instructions per change record, whose nodes hold up to 100 entries), while a trim drops whole
-- nodes from the head. The group reads in id order (ids are auto, increasing), so every entry below
-- the oldest still pending (delivered to a consumer that has not acknowledged it, a dead one's
-- included until it is claimed), or, with none pending, up to the last one delivered, has been
-- delivered and acknowledged: nothing unprocessed is removed, and a stream whose entries are all
-- processed ends empty, whichever of several consumers acknowledges last. Only for streams read by
-- this one group.

-- The id after a stream id "<ms>-<seq>".
local function streamIdAfter(id)
  local ms, seq = string.match(id, '^(%d+)-(%d+)$')
  return ms .. '-' .. string.format('%d', tonumber(seq) + 1)
end

-- The group's last delivered id (XINFO GROUPS lists each group as name/value pairs).
local function lastDelivered(key, group)
  local groups = redis.call('XINFO', 'GROUPS', key)
  for g = 1, #groups do
    local info = groups[g]
    local name, last = nil, nil
    for i = 1, #info, 2 do
      if info[i] == 'name' then name = info[i + 1] elseif info[i] == 'last-delivered-id' then last = info[i + 1] end
    end
    if name == group then return last end
  end
  return nil
end

local function ackStreamEntries(key, group, ids)
  redis.call('XACK', key, group, unpack(ids))
  local pending = redis.call('XPENDING', key, group)
  local minId
  if pending[1] > 0 then
    minId = pending[2]
  else
    local last = lastDelivered(key, group)
    if not last then return end
    minId = streamIdAfter(last)
  end
  redis.call('XTRIM', key, 'MINID', minId)
end
