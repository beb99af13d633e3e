-- Points (semantics §5): the awards of one system's triggers for an op (user_creation, metric, time,
-- streak and achievement triggers), boosted and bounded; levels as positions in the plan's thresholds.
--!include lib/numbers.lua
--!include lib/filters.lua

-- The level a total reaches: its 1-based position in lv (thresholds, ascending), false for none.
local function levelAt(lv, total)
  local found = false
  lv = lv or {}
  for j = 1, #lv do
    local p = lv[j]
    if p <= total then found = j end
  end
  return found
end

-- A metric trigger's counter fields (its running total and its high-water mark, counting from its
-- activation ep), memoized on the plan's trigger: plans outlive the call (lua/applyUserOp.lua planOf).
local function triggerFields(t)
  local tf = t.tf
  if not tf then
    local suffix = t.id .. ':' .. fmt(t.ep)
    tf = 'mtT:' .. suffix
    t.tf, t.hf = tf, 'mtH:' .. suffix
  end
  return tf, t.hf
end

-- A metric trigger's crossings: the multiples of its threshold a running total t1 (after the event)
-- passes beyond the high-water mark h, and the new mark (the trigger counts from its activation).
local function triggerCrossings(thr, t1, h)
  local k = math.max(0, floordiv(t1, thr) - floordiv(h, thr))
  if t1 > h then h = t1 end
  return k, h
end

-- The awards of plan system `sys` for an op, from the user's total `total`. ctx: op, created, attrs,
-- eattrs, boosts (system id -> active boosts), counters (running counters this op writes),
-- counter(field) (a counter's current value), stored(field) (a counter's stored value), grant (time
-- trigger ids) and at (their slot time), streakLen (the new length when it increased), completions,
-- nextId(), date (the awards' date). Returns the awards, the new total and whether a total would pass
-- MAX_POINTS.
-- One entry of the recent-awards list (src/redis/user-hash.ts decodeAward; lua/rebuild/encode.lua):
-- "<total>|<awarded>|<award id>|<date ms>|<trigger id>|<boost ids, comma-separated>".
local function awardEntry(a)
  return fmt(a.total) .. '|' .. fmt(a.awarded) .. '|' .. a.id .. '|' .. fmt(a.date) .. '|' .. a.trigger .. '|'
    .. table.concat(a.boosts, ',')
end

local function awardPoints(sys, total, ctx)
  local awards = {}
  local overflow = false
  local boosts = ctx.boosts[sys.id] or {}

  local function award(t, base)
    if base == 0 or not matches(t.uf, ctx.attrs) then return end
    local x = base
    local applied = {}
    local n, d, mode = 1, 1, nil
    for _k = 1, #boosts do
      local b = boosts[_k]
      if matches(b.uf, ctx.attrs) then
        n = n * b.num
        d = d * b.den
        applied[#applied + 1] = b.id
        if mode == nil then mode = b.r elseif mode ~= b.r then mode = 'down' end
      end
    end
    -- Boosts multiply, then round once (mixed roundings round down).
    if #applied > 0 then
      local q, r = floordiv(base * n, d)
      x = q
      if mode == 'up' and r > 0 then x = q + 1 end
      if mode == 'nearest' and 2 * r >= d then x = q + 1 end
    end
    local new
    if x > 0 then
      new = total + x
      if sys.max >= 0 then new = math.min(new, math.max(total, sys.max)) end
    else
      new = math.max(total + x, 0)
    end
    local awarded = new - total
    if awarded == 0 then return end
    if new > MAX_POINTS then overflow = true end
    total = new
    awards[#awards + 1] = { id = ctx.nextId(), awarded = awarded, total = new, trigger = t.id, boosts = applied, date = ctx.date }
  end

  if ctx.created then
    for _k = 1, #sys.uc do local t = sys.uc[_k] award(t, t.p) end
  end
  if ctx.op == 'event' then
    for _k = 1, #sys.mt do
      local t = sys.mt[_k]
      local tf, hf = triggerFields(t)
      local t1 = ctx.counters[tf]
      -- Only triggers whose total this op moved (lua/applyUserOp.lua: the event matches their filters,
      -- and they were active before the op).
      if t1 then
        local h = ctx.stored(hf)
        local k, mark = triggerCrossings(t.thr, t1, h)
        if mark ~= h then ctx.counters[hf] = mark end
        if k > 0 then award(t, k * t.p) end
      end
    end
  end
  if ctx.op == 'grant' then
    local timeTriggers, granted = sys.tt or {}, ctx.grant or {}
    for _k = 1, #timeTriggers do
      local t = timeTriggers[_k]
      for _k = 1, #granted do
        local g = granted[_k]
        -- Each slot at most once (semantics §5.6): tt:<id> is the last slot granted.
        local tf = 'tt:' .. t.id
        if g == t.id and ctx.date > ctx.counter(tf) then
          ctx.counters[tf] = ctx.date
          award(t, t.p)
        end
      end
    end
  end
  if ctx.streakLen then
    for _k = 1, #sys.st do
      local t = sys.st[_k]
      if ctx.streakLen % t.len == 0 then award(t, t.p) end
    end
  end
  for _k = 1, #ctx.completions do
    local c = ctx.completions[_k]
    for _k = 1, #sys.at do
      local t = sys.at[_k]
      if t.ach == c.id then award(t, t.p) end
    end
  end
  return awards, total, overflow
end
