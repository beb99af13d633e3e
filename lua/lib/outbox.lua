-- The shard's outbox stream: one entry per committed op, read by the history writer
-- (src/redis/user-script.ts parseRecord): r = the op's record (also the op's reply), x = what only the
-- history writer and rebuild need, w = the id of the wire objects at commit (wire_snapshots; when the
-- op has points or level news).

-- Redis TIME in µs as a decimal string: the commit order of records across processes.
local function commitOrder()
  local t = redis.call('TIME')
  local us = t[2]
  if #us < 6 then us = string.rep('0', 6 - #us) .. us end
  return t[1] .. us
end

local function appendOutbox(key, record, extra, wire)
  if wire then
    redis.call('XADD', key, '*', 'r', record, 'x', extra, 'w', wire)
  else
    redis.call('XADD', key, '*', 'r', record, 'x', extra)
  end
end
