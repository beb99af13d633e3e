--[[
claimBatch: takes over an accepted event batch whose lease has expired (its processor died or
stalled), atomically: the batch's owner token is incremented, so the previous owner's progress
writes are refused from now on (lua/batchProgress.lua), and the lease is renewed for the claimer.

KEYS[1] sorted set of unfinished batches (batch id -> lease expiry ms)
KEYS[2] the batch's hash (items JSON, n, done, owner)
ARGV[1] batch id   ARGV[2] now (ms)   ARGV[3] leaseUntil (ms)

Reply: false when the batch is not due (or gone); else {owner token, done, items JSON, mk} (mk '1': its
items' reply markers are fields of the batch's markers hash; '': keys of their own, as batches accepted
on a Cluster or by an earlier version keep them).
]]
local K_PENDING, K_BATCH = KEYS[1], KEYS[2]
local id, now, leaseUntil = ARGV[1], tonumber(ARGV[2]), ARGV[3]

local score = redis.call('ZSCORE', K_PENDING, id)
if not score or tonumber(score) > now then return false end
if redis.call('EXISTS', K_BATCH) == 0 then
  redis.call('ZREM', K_PENDING, id)
  return false
end
local owner = redis.call('HINCRBY', K_BATCH, 'owner', 1)
redis.call('ZADD', K_PENDING, leaseUntil, id)
local f = redis.call('HMGET', K_BATCH, 'done', 'items', 'mk')
return { owner, f[1], f[2], f[3] or '' }
