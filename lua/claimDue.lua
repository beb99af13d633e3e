--[[
claimDue: claims due members of a scheduler sorted set atomically (one key, so Cluster-safe).
Members scored <= now are returned with their scores (the due slot) and re-scored to `leaseUntil`,
so another scheduler copy does not see them as due; the claimer re-scores them when done. A
claimer that dies leaves the lease to expire: the member becomes due again and is retried (the
work itself is idempotent per slot, so a retry never grants twice).

KEYS[1] sorted set
ARGV[1] now (ms)   ARGV[2] leaseUntil (ms)   ARGV[3] max members

Reply: flat array member, score, member, score, ...
]]
local due = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', ARGV[1], 'WITHSCORES', 'LIMIT', 0, tonumber(ARGV[3]))
for i = 1, #due, 2 do
  redis.call('ZADD', KEYS[1], ARGV[2], due[i])
end
return due
