--[[
commitUserOp: an event evaluated by the API (src/engine/evaluate-event.ts) from the user's state as
read here ("read"), then committed here ("commit") only if the user has not changed since: the user's
seq (lib/profile.lua: every op of the user moves it, as lua/recomputeStreak.lua's recompute does) is
still the one read. Otherwise nothing is written and the caller applies the op with
lua/applyUserOp.lua, as it would have without the evaluation. What an evaluated event writes, and in
which order, is what lua/applyUserOp.lua writes for it; the fused board moves run here (lib/board.lua),
since they read other users' entries.

ARGV[1] = "read": KEYS[1] the user hash, KEYS[2] the current idempotency bucket, KEYS[3] the user's
period history, KEYS[4] (with a window) the previous bucket; ARGV[2] the key's field ('' without a
key), ARGV[3] the window (ms, 0 = forever), ARGV[4] now (ms).
Reply: {the user hash as a flat list, the history or false, '1' when the key is remembered else '0'}.

ARGV[1] = "commit": KEYS as lua/applyUserOp.lua's for the op (KEYS[1] user hash, [2] idempotency
bucket, [3] outbox, [4] reply marker, [5] user index, [6] history, [6 + i] award lists, the fused
boards' keys, the older buckets). ARGV (src/services/evaluated-op.ts commitArgs): [2] the seq read (''
when the user had none); [3] the writes, one JSON object (one string for the API to write rather than
about 70; Redis pays about the same either way, since its Lua hashes every byte of every string it
makes, bench/HISTORY.md):
  u user id, now (ms, digits), c true when the user is created, seq the new seq, ttl the reply marker's
  time to live (ms), i the idempotency entry when the event has a key {f field, d true when the event
  id is derived, id event id, win window (ms), exp the bucket's expiry (ms), old the old bucket's KEYS
  index}, h 'set' | 'del' for the history (absent: keep) and hv the new history, rm the user-hash
  fields to remove, put the field-value pairs to set, aw the award lists ([KEYS index, entries...],
  pushed in order), mv the fused moves ([first KEYS index, key count, value, cap, board id]), bd the
  record's boards ([id, run, value]);
[4] the record's JSON without its closing brace (everything but boards and moves), [5] the outbox
extra's JSON without its closing brace (everything but ts), [6] the wire reference ('' when the op has
no level news).
Reply: the op's record (JSON), as lua/applyUserOp.lua answers it, or 'STALE' (nothing written). A
retried call whose op committed already answers the committed record (its reply marker).
]]

--!include lib/function.lua
--!include lib/numbers.lua
--!include lib/idempotency.lua
--!include lib/board.lua
--!include lib/outbox.lua

local function read(KEYS, ARGV)
  local hash = redis.call('HGETALL', KEYS[1])
  local hist = redis.call('GET', KEYS[3])
  local remembered = '0'
  if ARGV[2] ~= '' then
    local idem = { f = ARGV[2], win = tonumber(ARGV[3]) }
    local now = tonumber(ARGV[4])
    if idemRemembered(KEYS[2], idem, now) or (KEYS[4] and idemRemembered(KEYS[4], idem, now)) then
      remembered = '1'
    end
  end
  return { hash, hist, remembered }
end

-- Reused from call to call (a Function's tables outlive it); a move does not keep them past its end.
local MOVE_KEYS, MOVE_ARGS = {}, {}

local function commit(KEYS, ARGV)
  local K_USER, K_IDEM, K_OUTBOX, K_OP, K_USERS, K_HIST = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5], KEYS[6]
  local committed = redis.call('GET', K_OP)
  if committed then return committed end
  if (redis.call('HGET', K_USER, 'seq') or '') ~= ARGV[2] then return 'STALE' end

  local w = cjson.decode(ARGV[3])
  local userId, now, seq = w.u, tonumber(w.now), w.seq
  if #w.rm > 0 then redis.call('HDEL', K_USER, unpack(w.rm)) end
  if w.c then redis.call('ZADD', K_USERS, 'NX', w.now, userId) end
  local idem = w.i
  if idem then idemRemember(K_IDEM, idem.old and KEYS[idem.old], idem, idem.id, now) end
  if w.h == 'set' then
    redis.call('SET', K_HIST, w.hv)
  elseif w.h == 'del' then
    redis.call('DEL', K_HIST)
  end
  for _, list in ipairs(w.aw) do
    local key, length = KEYS[list[1]], 0
    for j = 2, #list do length = redis.call('LPUSH', key, list[j]) end
    -- The newest RECENT_AWARDS (src/services/points-reads.ts), as lua/applyUserOp.lua keeps them.
    if length > 10 then redis.call('LTRIM', key, '0', '9') end
  end

  -- The fused board moves (lua/applyUserOp.lua's, with the same arguments).
  local moves, applied = nil, {}
  for _, mv in ipairs(w.mv) do
    local ki, kn = mv[1], mv[2]
    local K = MOVE_KEYS
    for j = 1, kn do K[j] = KEYS[ki + j - 1] end
    for j = kn + 1, #K do K[j] = nil end
    local A = MOVE_ARGS
    A[1], A[2], A[3], A[4], A[5], A[6], A[7], A[8], A[9] = userId, mv[3], seq, now, '', mv[4], '0', '0', '0'
    local m = updateBoard(K, A)
    m.id = mv[5]
    moves = moves or {}
    moves[#moves + 1] = m
    if not m.err then applied[m.id] = true end
  end
  if #w.put > 0 then redis.call('HSET', K_USER, unpack(w.put)) end

  local boards = {}
  for b, bd in ipairs(w.bd) do
    boards[b] = { id = bd[1], run = bd[2], value = bd[3], ap = applied[bd[1]] or nil }
  end
  local record = ARGV[4] .. ',"boards":' .. (#boards > 0 and cjson.encode(boards) or '[]')
    .. (moves and (',"moves":' .. cjson.encode(moves)) or '') .. '}'
  local extra = ARGV[5] .. ',"ts":"' .. commitOrder() .. '"}'
  local wire = ARGV[6]
  appendOutbox(K_OUTBOX, record, extra, wire ~= '' and wire or nil)
  redis.call('SET', K_OP, record, 'PX', w.ttl)
  return record
end

-- The ops a process gathered within one turn of its event loop (src/services/evaluated-op.ts): "readMany"
-- (ARGV per op: its key count, 3 or 4, then the read's three arguments; KEYS, each op's in turn)
-- answers each op's read; "commitMany" (ARGV per op: its key count, its argument count, then its
-- commit's arguments without the mode; KEYS, each op's in turn) answers each op's commit, an op that
-- fails answering "!<error>" alone (as lua/applyUserOp.lua's "__multi_full").
local OP_K, OP_A = {}, {}

local function readMany(KEYS, ARGV)
  local out, k, i = {}, 0, 2
  local A = { 'read' }
  while i <= #ARGV do
    local nk = tonumber(ARGV[i])
    OP_K[1], OP_K[2], OP_K[3], OP_K[4] = KEYS[k + 1], KEYS[k + 2], KEYS[k + 3], nk == 4 and KEYS[k + 4] or nil
    A[2], A[3], A[4] = ARGV[i + 1], ARGV[i + 2], ARGV[i + 3]
    out[#out + 1] = read(OP_K, A)
    k = k + nk
    i = i + 4
  end
  return out
end

local function commitMany(KEYS, ARGV)
  local replies, k, i = {}, 0, 2
  local K, A = OP_K, OP_A
  A[1] = 'commit'
  while i <= #ARGV do
    local nk, na = tonumber(ARGV[i]), tonumber(ARGV[i + 1])
    for j = 1, nk do K[j] = KEYS[k + j] end
    for j = nk + 1, #K do K[j] = nil end
    for j = 1, na do A[j + 1] = ARGV[i + 1 + j] end
    for j = na + 2, #A do A[j] = nil end
    local ok, reply = pcall(commit, K, A)
    replies[#replies + 1] = ok and reply or ('!' .. errorText(reply))
    k = k + nk
    i = i + 2 + na
  end
  return replies
end

local function run(KEYS, ARGV)
  bindGlobals()
  boardCallReset()
  local mode = ARGV[1]
  if mode == 'commitMany' then return commitMany(KEYS, ARGV) end
  if mode == 'readMany' then return readMany(KEYS, ARGV) end
  if mode == 'read' then return read(KEYS, ARGV) end
  return commit(KEYS, ARGV)
end

-- What src/redis/scripts.ts registers as the Redis Function (lib/function.lua).
local served = servedBy(run)

return run(KEYS, ARGV)
