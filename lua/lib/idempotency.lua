-- Idempotency keys (application-api §4): "<event id>|<first use ms>" in the hash of the current or
-- previous window bucket, remembered for idem.win ms (0: forever, the value is the event id alone).
-- idem is the user script's input.idem (src/redis/user-script.ts): field f, window win, bucket expiry exp.
--!include lib/numbers.lua

-- The event id a key was first used by, if it is still remembered at `now`.
local function idemRemembered(key, idem, now)
  local v = redis.call('HGET', key, idem.f)
  if not v then return nil end
  local id, at = string.match(v, '^([^|]*)|(%d+)$')
  if not id then return v end
  if now - tonumber(at) >= idem.win then return nil end
  return id
end

-- Remembers a key in the current bucket. The bucket's first key sets its expiry (the end of the next
-- bucket, relative to the op's clock, which need not be Redis's) and unlinks the bucket before the
-- previous one, past the window.
local function idemRemember(key, oldKey, idem, eventId, now)
  if idem.win > 0 then
    redis.call('HSET', key, idem.f, eventId .. '|' .. fmt(now))
    if redis.call('PEXPIRE', key, math.max(1, idem.exp - now), 'NX') == 1 then redis.call('UNLINK', oldKey) end
  else
    redis.call('HSET', key, idem.f, eventId)
  end
end
