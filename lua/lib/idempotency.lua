-- Idempotency keys (application-api §4) in the hash of the current or previous window bucket,
-- remembered for idem.win ms (0: forever). idem is the user script's input.idem
-- (src/redis/user-script.ts): field f (a hash of metric and key: src/engine/idempotency.ts), the raw
-- key k, whether the event id is the one derived from key and first use (d), window win, bucket
-- expiry exp. A value is the first use's ms when the id is derived, else "<event id>|<ms>" (and, in a
-- forever hash written before compact entries, the event id alone).
--!include lib/numbers.lua

-- The event id a key was first used by ('' when it is the derived one) and when, if the key is still
-- remembered at `now`.
local function idemRemembered(key, idem, now)
  local v = redis.call('HGET', key, idem.f)
  if not v then return nil end
  local id, at = string.match(v, '^([^|]*)|(%d+)$')
  if not id then
    at = string.match(v, '^%d+$')
    if not at then return v, '0' end
    id = ''
  end
  if idem.win > 0 and now - tonumber(at) >= idem.win then return nil end
  return id, at
end

-- Remembers a key in the current bucket. The bucket's first key sets its expiry (the end of the next
-- bucket, relative to the op's clock, which need not be Redis's) and unlinks the bucket before the
-- previous one, past the window.
local function idemRemember(key, oldKey, idem, eventId, now)
  local value = idem.d and fmt(now) or (eventId .. '|' .. fmt(now))
  redis.call('HSET', key, idem.f, value)
  if idem.win > 0 and redis.call('PEXPIRE', key, fmt(math.max(1, idem.exp - now)), 'NX') == 1 then
    redis.call('UNLINK', oldKey)
  end
end
