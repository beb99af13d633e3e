--[[
encode (rebuild): encodes recent awards and achievement completions exactly as lua/applyUserOp.lua
stores them (lib/points.lua awardEntry), so rebuilt values are byte-identical. Reads and writes no keys.

ARGV[1] JSON {awards = [{id, awarded, total, trigger, boosts, date}], completions = [{cid, at}]}
Reply: JSON {awards = [string], completions = [string]} in input order.
]]
--!include lib/points.lua

local input = cjson.decode(ARGV[1])
local awards, completions = {}, {}
for i, a in ipairs(input.awards or {}) do
  local applied = {}
  for _, b in ipairs(a.boosts or {}) do applied[#applied + 1] = b end
  awards[i] = awardEntry({ id = a.id, awarded = a.awarded, total = a.total, trigger = a.trigger, boosts = applied, date = a.date })
end
for i, c in ipairs(input.completions or {}) do
  -- As applyUserOp.lua stores them: "<at ms>|<completion id>".
  completions[i] = string.format('%.0f', c.at) .. '|' .. c.cid
end
return cjson.encode({ awards = awards, completions = completions })
