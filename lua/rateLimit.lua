--[[
rateLimit: token bucket of one API key (semantics §9), atomic across every API process.

KEYS[1] bucket hash {tokens, ts}
ARGV[1] rate (tokens per second)   ARGV[2] burst (bucket size)   ARGV[3] nowMs

Reply: {allowed (1/0), retryAfterMs}. A refused request takes no token.
]]

local K_BUCKET = KEYS[1]
local rate = tonumber(ARGV[1])
local burst = tonumber(ARGV[2])
local now = tonumber(ARGV[3])

local state = redis.call('HMGET', K_BUCKET, 'tokens', 'ts')
local tokens = tonumber(state[1]) or burst
local ts = tonumber(state[2]) or now
if now > ts then tokens = math.min(burst, tokens + (now - ts) * rate / 1000) end

local allowed = 0
local retry = 0
if tokens >= 1 then
  tokens = tokens - 1
  allowed = 1
else
  retry = math.ceil((1 - tokens) * 1000 / rate)
end
redis.call('HSET', K_BUCKET, 'tokens', tostring(tokens), 'ts', string.format('%.0f', math.max(now, ts)))
-- A full bucket carries no information: let idle keys expire.
redis.call('PEXPIRE', K_BUCKET, math.ceil(burst * 1000 / rate) + 1000)
return { allowed, retry }
