-- The outbox stream (src/redis/keys.ts outboxes): one entry per committed op, read by the history writer
-- (src/redis/user-script.ts parseRecord): r = the op's record (also the op's reply), x = what only the
-- history writer and rebuild need, w = the id of the wire objects at commit (wire_snapshots; when the
-- op has points or level news).

--!include lib/numbers.lua

-- Redis TIME in µs as a decimal string: the commit order of records across processes.
local function commitOrder()
  local t = redis.call('TIME')
  return t[1] .. zeroPad(t[2], 6)
end

local function appendOutbox(key, record, extra, wire)
  if wire then
    redis.call('XADD', key, '*', 'r', record, 'x', extra, 'w', wire)
  else
    redis.call('XADD', key, '*', 'r', record, 'x', extra)
  end
end
