-- Achievement completion (semantics §3): metric achievements by the metric total (or, with event
-- filters, their own filtered total), API achievements on request, streak achievements when the
-- length increased, then composites until nothing more completes.
--!include lib/filters.lua

-- Calls complete(id) for each achievement the op completes, in completion order. done: achievement
-- id -> stored completion (updated by complete); counter(field): a running counter's value.
-- streakLen: the new streak length when it increased, else nil.
local function evaluateAchievements(plan, op, done, attrs, total, counter, streakLen, complete)
  local completed = 0
  local function take(id)
    complete(id)
    completed = completed + 1
  end
  if op == 'event' then
    for _k = 1, #plan.achievements.metric do
      local a = plan.achievements.metric[_k]
      local value = total
      if a.ef and #a.ef > 0 then value = counter('af:' .. a.id) end
      if a.active and not done[a.id] and value >= a.thr and matches(a.uf, attrs) then take(a.id) end
    end
  end
  if op == 'complete' and not done[plan.api.id] then take(plan.api.id) end
  if op == 'backdate' and not done[plan.api.id] and matches(plan.api.uf, attrs) then take(plan.api.id) end
  if streakLen then
    for _k = 1, #plan.achievements.streak do
      local a = plan.achievements.streak[_k]
      if not done[a.id] and streakLen >= a.len and matches(a.uf, attrs) then take(a.id) end
    end
  end
  if completed == 0 then return end
  local more = true
  while more do
    more = false
    for _k = 1, #plan.achievements.composite do
      local a = plan.achievements.composite[_k]
      if not done[a.id] and matches(a.uf, attrs) then
        local all = true
        for _k = 1, #a.pre do
          local pre = a.pre[_k]
          if not done[pre] then all = false end
        end
        if all then
          take(a.id)
          more = true
        end
      end
    end
  end
end
