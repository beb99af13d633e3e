-- Attribute filters of achievements, triggers and boosts (src/engine/ has the TypeScript copy).

-- Whether every [key, value] filter matches the attribute map.
local function matches(filters, attrs)
  if filters == nil then return true end
  for _k = 1, #filters do
    local f = filters[_k]
    if attrs[f[1]] ~= f[2] then return false end
  end
  return true
end

