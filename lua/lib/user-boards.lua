-- The user's own value on each leaderboard run (the boards' scripts rank it: lib/board.lua), in the
-- user hash's b: part (lib/user.lua): per board, the latest run the user has a value in
-- ("<boardId>" -> "<run>|<value>") and the one before it ("<boardId>~", for a late event of the
-- previous run after a change of zone), so it never outgrows the boards.
--!include lib/numbers.lua

-- A board's slot when the user has no value on it (most boards of a new user's op): read only.
local NO_SLOT = {}

local function boardSlotEntry(raw)
  local r, val = string.match(raw, '^([^|]*)|(.*)$')
  return { run = r, value = num(val, nil), raw = raw }
end

-- The op's part and writer, and the slots it has parsed (by board id): set by userBoards for each op
-- (ops are applied one at a time, also in a multi-op call), so that boardValue and boardStore are
-- functions of the chunk rather than closures made for every op.
local UB_PART, UB_PUT, UB_SLOTS = nil, nil, nil

-- Starts an op's boards over the part `h` (boardId -> raw); boardStore writes through put(field, raw).
local function userBoards(h, put)
  UB_PART, UB_PUT, UB_SLOTS = h, put, {}
end

local function boardSlot(id)
  local s = UB_SLOTS[id]
  if not s then
    local latest, before = UB_PART[id], UB_PART[id .. '~']
    if latest or before then
      s = {}
      if latest then s[1] = boardSlotEntry(latest) end
      if before then s[2] = boardSlotEntry(before) end
    else
      s = NO_SLOT
    end
    UB_SLOTS[id] = s
  end
  return s
end

-- The user's value on run `run` of board `id` (0 without one).
local function boardValue(id, run)
  local s = boardSlot(id)
  if s[1] and s[1].run == run then return s[1].value end
  if s[2] and s[2].run == run then return s[2].value end
  return 0
end

-- Sets the user's value on run `run` of board `id`, keeping the run before it when `run` is newer.
local function boardStore(id, run, v)
  local s = boardSlot(id)
  local raw = run .. '|' .. fmt(v)
  if s[1] == nil or s[1].run == run then
    UB_PUT(id, raw)
  elseif run > s[1].run then
    UB_PUT(id, raw)
    UB_PUT(id .. '~', s[1].raw)
  elseif s[2] == nil or run >= s[2].run then
    UB_PUT(id .. '~', raw)
  end
end
