--[[
batchProgress: records how far an event batch has been processed and renews its lease, only for
the batch's current owner (a processor whose lease was taken over by lua/claimBatch.lua is told to
stop). When every item is done the batch is removed (nothing of it stays in Redis). A record that moves
`done` on also removes the reply markers of the items before it (their chunk is recorded: no resume
runs them again), atomically with the record.

KEYS[1] sorted set of unfinished batches (batch id -> lease expiry ms)
KEYS[2] the batch's hash (items JSON, n, done, owner)
KEYS[3] the batch's reply markers (hash: op id -> reply; lua/applyUserOp.lua input.mf)
ARGV[1] batch id   ARGV[2] owner token   ARGV[3] items done (all items before this index are
committed; a smaller value than the one
recorded only renews the lease)   ARGV[4] leaseUntil (ms)

Reply: 1 recorded (or finished), 0 not the owner any more (nothing written).
]]
local K_PENDING, K_BATCH, K_MARKS = KEYS[1], KEYS[2], KEYS[3]
local id, owner, done, leaseUntil = ARGV[1], ARGV[2], tonumber(ARGV[3]), ARGV[4]

local f = redis.call('HMGET', K_BATCH, 'owner', 'n', 'done')
if f[1] ~= owner then return 0 end
-- A lease renewal may arrive after a later progress record: progress never goes back.
if done < tonumber(f[3]) then done = tonumber(f[3]) end
-- Only the markers of a recorded chunk go: a lease renewal (done unchanged) keeps the running chunk's.
if done > tonumber(f[3]) then redis.call('DEL', K_MARKS) end
if done >= tonumber(f[2]) then
  redis.call('DEL', K_MARKS)
  redis.call('DEL', K_BATCH)
  redis.call('ZREM', K_PENDING, id)
  return 1
end
redis.call('HSET', K_BATCH, 'done', done)
redis.call('ZADD', K_PENDING, 'XX', leaseUntil, id)
return 1
