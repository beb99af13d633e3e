-- What a Redis Function's library (lua/applyUserOp.lua, lua/commitUserOp.lua) has around its
-- run(KEYS, ARGV); included first, before any other lib.
--
-- The standard library the code reads, as upvalues of the chunk rather than globals. A Redis Function's
-- globals are an empty table whose metatable finds them, so each global read there costs two table
-- lookups and a metamethod (about 60 a new user's event). Its library loads with none of them
-- reachable, so they are bound at the first call (bindGlobals); `redis` stays a global, which the
-- Function's registration at the end reads while loading. globalsNow is compiled before the locals
-- below, so the names in it are the globals.
local function globalsNow()
  return string, math, table, cjson, tonumber, tostring, type, unpack, pairs, pcall
end
local string, math, table, cjson, tonumber, tostring, type, unpack, pairs, pcall

-- Binds the upvalues above at the first call (and at every call of a plain script, which loads anew):
-- true that first time.
local function bindGlobals()
  if string ~= nil then return false end
  string, math, table, cjson, tonumber, tostring, type, unpack, pairs, pcall = globalsNow()
  return true
end

-- What src/redis/scripts.ts registers as the Redis Function (`local served = servedBy(run)`). The
-- Functions engine's Lua state holds function libraries only (never EVAL scripts), and its live data
-- is small (the kept plans and contexts): a collection cycle waits until the heap has grown to 4 times
-- it (Lua's default: twice), which halves the collector's share of a call (about 6 % of the
-- instructions) for a heap of a few MB. A plain script (EVAL, tests) runs `run` and leaves the EVAL
-- state's collector as it is.
local function servedBy(run)
  local gcTuned = false
  return function(KEYS, ARGV)
    if not gcTuned then
      gcTuned = true
      collectgarbage('setpause', 400)
    end
    return run(KEYS, ARGV)
  end
end
