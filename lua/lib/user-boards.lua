-- The user's own value on each leaderboard run (the boards' scripts rank it: lib/board.lua), in the
-- user hash's b: part (lib/user.lua): per board, the latest run the user has a value in
-- ("<boardId>" -> "<run>|<value>") and the one before it ("<boardId>~", for a late event of the
-- previous run after a change of zone), so it never outgrows the boards.
--!include lib/numbers.lua

-- A board's slot when the user has no value on it (most boards of a new user's op): read only.
local NO_SLOT = {}

local function boardSlotEntry(raw)
  local r, val = string.match(raw, '^([^|]*)|(.*)$')
  return { run = r, value = tonumber(val), raw = raw }
end

-- Returns value(id, run) and store(id, run, value) over the part `h` (boardId -> raw); store writes
-- through put(field, raw).
local function userBoards(h, put)
  local slots = {}
  local function slot(id)
    local s = slots[id]
    if not s then
      local latest, before = h[id], h[id .. '~']
      if latest or before then
        s = {}
        if latest then s[1] = boardSlotEntry(latest) end
        if before then s[2] = boardSlotEntry(before) end
      else
        s = NO_SLOT
      end
      slots[id] = s
    end
    return s
  end
  local function value(id, run)
    local s = slot(id)
    if s[1] and s[1].run == run then return s[1].value end
    if s[2] and s[2].run == run then return s[2].value end
    return 0
  end
  local function store(id, run, v)
    local s = slot(id)
    local raw = run .. '|' .. fmt(v)
    if s[1] == nil or s[1].run == run then
      put(id, raw)
    elseif run > s[1].run then
      put(id, raw)
      put(id .. '~', s[1].raw)
    elseif s[2] == nil or run >= s[2].run then
      put(id .. '~', raw)
    end
  end
  return value, store
end
