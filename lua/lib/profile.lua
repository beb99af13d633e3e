-- The user's profile fields (semantics §1.1; unprefixed in the user hash, lib/user.lua): id, created,
-- updated, tz, email, name, sub (subscribed to emails), dt (device tokens, JSON), a:<attribute>,
-- p:<notification type> (JSON channel list), seq; sub, dt and updated only once they differ from their
-- defaults (upsertProfile).
--!include lib/numbers.lua

-- The attributes after this request's upsert (filters are evaluated against them), from the stored
-- ones by key (lib/user.lua's attrs part) and the request's. Read, never written: without request
-- attributes the stored table itself.
local function attributesOf(stored, user)
  if user.attrs == nil then return stored end
  local attrs = {}
  for k, v in pairs(stored) do attrs[k] = v end
  for k, v in pairs(user.attrs) do attrs[k] = v end
  return attrs
end

-- What a request without attributes or preferences iterates (never written).
local NO_PAIRS = {}

-- Upserts the request's user fields into prof (only the fields provided; attributes and preferences
-- merge per key) and moves seq on, putting each field to write (put(field, value), lib/user.lua's
-- buffer). Returns whether the profile changed, the new seq, and the fields to remove (or nil).
--
-- Three fields are stored only while they differ from their defaults, so that a new user's hash holds
-- fewer fields and the stored form of a profile is one (src/redis/user-hash.ts compactProfile, which
-- rebuild writes): sub absent is subscribed ('1'), dt absent no device tokens ('[]'), updated absent
-- the creation time. A request that sets sub or dt back to its default removes the field.
local function upsertProfile(prof, user, now, created, put)
  local removed = nil
  local changed = created
  local function set(field, value)
    if prof[field] ~= value then
      put('', field, value)
      prof[field] = value
      changed = true
    end
  end
  local function setOrDefault(field, value, default)
    if value ~= default then
      set(field, value)
    elseif prof[field] ~= nil then
      -- A default stored by an earlier version is removed too, without changing the profile.
      if prof[field] ~= default then changed = true end
      prof[field] = nil
      removed = removed or {}
      removed[#removed + 1] = field
    end
  end
  if created then
    set('id', user.id)
    set('created', fmt(now))
  end
  if user.email then set('email', user.email) end
  if user.name then set('name', user.name) end
  if user.tz then set('tz', user.tz) end
  if user.dt then setOrDefault('dt', user.dt, '[]') end
  if user.sub ~= nil then setOrDefault('sub', user.sub and '1' or '0', '1') end
  for k, val in pairs(user.attrs or NO_PAIRS) do set('a:' .. k, val) end
  -- Each preference type sent replaces its channel list (a JSON array string, so cjson never
  -- re-encodes an empty list as {}).
  for k, val in pairs(user.prefs or NO_PAIRS) do set('p:' .. k, val) end
  if changed and not created then
    local at = fmt(now)
    if at ~= prof.created then set('updated', at) end
  end
  local seq = num(prof.seq, 0) + 1
  put('', 'seq', fmt(seq))
  return changed, seq, removed
end
