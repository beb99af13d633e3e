--[[
migrateUser: moves one user's state from the layout with one hash per part (layout 1) into the user
hash (layout 2, src/redis/user-hash.ts, lib/user.lua), atomically; a user already in layout 2 is left
as it is. Called for every layout-1 user on start (src/redis/layout.ts).

KEYS[1] the user hash (layout 1's profile hash: its fields stay as they are)
KEYS[2..8] layout 1's hashes: metrics, counters, achievements, points, streak, boards, applied
KEYS[9] the streak period history (lib/streak.lua)

A key of KEYS[2..8] holding a profile (a 'created' field) is another user's hash (an id ending in
':streak', say) and is left alone. The streak hash's per-period fields of an even older layout (h:<epoch>:<idx> = "<length>|<freeze>|<pause>")
are folded into the period history (those of the current epoch, the newest 100).
Completions are re-encoded from layout 1's JSON to "<at ms>|<completion id>", and the streak's scalar
fields packed (s:_ and s:~, lib/streak.lua).
Reply: the number of layout-1 hashes moved (0: nothing to do).
]]
--!include lib/streak.lua

local PREFIXES = { 'm:', 'c:', 'd:', 'n:', 's:', 'b:', 'r:' }
local ACHIEVEMENTS, STREAK = 3, 5

local writes = {}
-- The streak hash's fields (but per-period ones): the scalar ones are stored packed (streakPut).
local streakFieldsIn = {}
local moved = 0
for i = 1, #PREFIXES do
  local prefix = PREFIXES[i]
  local key = KEYS[i + 1]
  local raw = redis.call('HGETALL', key)
  -- A hash with a 'created' field is a profile: the user hash of a user whose id ends in ':<part>'
  -- (never a part of this user's), left alone.
  for j = 1, #raw, 2 do
    if raw[j] == 'created' then raw = {} end
  end
  if #raw > 0 then
    moved = moved + 1
    local epoch = nil
    if i == STREAK then
      for j = 1, #raw, 2 do
        if raw[j] == 'epoch' then epoch = tonumber(raw[j + 1]) end
      end
    end
    local periods = {}
    for j = 1, #raw, 2 do
      local field, value = raw[j], raw[j + 1]
      local e, idx = nil, nil
      if i == STREAK then e, idx = string.match(field, '^h:(%-?%d+):(%-?%d+)$') end
      if e then
        local len, fr, pa = string.match(value, '^(%d+)|(%d)|(%d)')
        if len and tonumber(e) == epoch then
          periods[#periods + 1] = { tonumber(idx), tonumber(len), fr == '1', pa == '1' }
        end
      else
        -- Completions were JSON {"at":…,"cid":…} (65 bytes, past the listpack's value limit).
        if i == ACHIEVEMENTS and string.sub(value, 1, 1) == '{' then
          local ok, c = pcall(cjson.decode, value)
          if ok and type(c) == 'table' and c.at and c.cid then value = fmt(c.at) .. '|' .. c.cid end
        end
        if i == STREAK then
          streakFieldsIn[#streakFieldsIn + 1] = field
          streakFieldsIn[#streakFieldsIn + 1] = value
        else
          writes[#writes + 1] = prefix .. field
          writes[#writes + 1] = value
        end
      end
    end
    if #periods > 0 then
      table.sort(periods, function(a, b) return a[1] < b[1] end)
      local entries = {}
      for _k = 1, #periods do local p = periods[_k] entries[#entries + 1] = histEntry(p[1], p[2], p[3], p[4]) end
      redis.call('SET', KEYS[9], histAppend('', entries))
    end
    redis.call('DEL', key)
  end
end
streakPut({}, streakFieldsIn, function(f, v)
  writes[#writes + 1] = 's:' .. f
  writes[#writes + 1] = v
end)
for j = 1, #writes, 1000 do
  redis.call('HSET', KEYS[1], unpack(writes, j, math.min(j + 999, #writes)))
end
return moved
