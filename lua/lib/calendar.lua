-- The calendar of streak periods, in day indexes (days since 1970-01-01); src/engine/periods.ts is the
-- TypeScript copy (test/lua/ compares them).

-- Days since 1970-01-01 of a civil date (Howard Hinnant's algorithm).
local function daysFromCivil(y, m, d)
  if m <= 2 then y = y - 1 end
  local era = math.floor(y / 400)
  local yoe = y - era * 400
  local mp = (m + 9) % 12
  local doy = math.floor((153 * mp + 2) / 5) + d - 1
  local doe = yoe * 365 + math.floor(yoe / 4) - math.floor(yoe / 100) + doy
  return era * 146097 + doe - 719468
end

-- YYYY-MM-DD of a day index (inverse of daysFromCivil).
local function dateOfDay(z)
  z = z + 719468
  local era = math.floor(z / 146097)
  local doe = z - era * 146097
  local yoe = math.floor((doe - math.floor(doe / 1460) + math.floor(doe / 36524) - math.floor(doe / 146096)) / 365)
  local y = yoe + era * 400
  local doy = doe - (365 * yoe + math.floor(yoe / 4) - math.floor(yoe / 100))
  local mp = math.floor((5 * doy + 2) / 153)
  local d = doy - math.floor((153 * mp + 2) / 5) + 1
  local m = mp < 10 and mp + 3 or mp - 9
  if m <= 2 then y = y + 1 end
  return string.format('%04d-%02d-%02d', y, m, d)
end

-- First and last day index of a streak period (daily: day index; weekly: ISO week index with
-- 1969-12-29 as week 0; monthly: year * 12 + month - 1).
local function periodDays(freq, idx)
  if freq == 'daily' then return idx, idx end
  if freq == 'weekly' then return idx * 7 - 3, idx * 7 + 3 end
  local y = math.floor(idx / 12)
  local m = idx - y * 12 + 1
  local first = daysFromCivil(y, m, 1)
  local ny, nm = y, m + 1
  if nm == 13 then ny, nm = y + 1, 1 end
  return first, daysFromCivil(ny, nm, 1) - 1
end

