--[[
rateLimit: token bucket of one API key (semantics §9), atomic across every API process. A process
may lease a few tokens at once (ARGV[4]) and spend them locally: fewer round trips, and at most the
lease size per process can go unused.

KEYS[1] bucket hash {tokens, ts}
ARGV[1] rate (tokens per second)   ARGV[2] burst (bucket size)   ARGV[3] nowMs
ARGV[4] tokens wanted (lease size, >= 1)

Reply: {granted, retryAfterMs}. granted is 0..wanted; retryAfterMs is set when nothing was granted.
]]

local K_BUCKET = KEYS[1]
local rate = tonumber(ARGV[1])
local burst = tonumber(ARGV[2])
local now = tonumber(ARGV[3])
local want = tonumber(ARGV[4] or '1')

local state = redis.call('HMGET', K_BUCKET, 'tokens', 'ts')
local tokens = tonumber(state[1]) or burst
local ts = tonumber(state[2]) or now
if now > ts then tokens = math.min(burst, tokens + (now - ts) * rate / 1000) end

local granted = math.min(want, math.floor(tokens))
local retry = 0
if granted >= 1 then
  tokens = tokens - granted
else
  granted = 0
  retry = math.ceil((1 - tokens) * 1000 / rate)
end
redis.call('HSET', K_BUCKET, 'tokens', tostring(tokens), 'ts', string.format('%.0f', math.max(now, ts)))
-- A full bucket carries no information: let idle keys expire.
redis.call('PEXPIRE', K_BUCKET, math.ceil(burst * 1000 / rate) + 1000)
return { granted, retry }
