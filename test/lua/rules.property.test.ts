// Rules written twice, in Lua (for atomicity inside the scripts) and in TypeScript (reads, rebuild,
// webhooks): each property runs both copies on the same generated inputs and compares the results,
// so a change to one copy that the other does not follow fails here.
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { matchesFilters } from '../../src/engine/filters';
import { levelChanged, levelOf } from '../../src/engine/levels';
import {
  dateOfDay,
  dayIndex,
  type Frequency,
  parseDate,
  periodBounds,
  periodIndex,
} from '../../src/engine/periods';
import { type StreakViewSettings, viewStreak } from '../../src/engine/streak-view';
import {
  crossedMultiples,
  nextTriggerCounters,
  type TriggerCounters,
} from '../../src/engine/trigger-counters';
import {
  type Filters,
  luaDateOfDay,
  luaDaysFromCivil,
  luaMatches,
  luaPeriodDays,
  luaRollover,
  type RolloverInput,
} from './common-lib';
import { arr, createLuaHarness, type LuaHarness } from './harness';

// Fixed run counts keep the suite fast and its cost known (one EVAL per run, ~0.1 ms each).
const RUNS = { numRuns: 200 };
// Largest total in millionths (lua/lib/numbers.lua MAX_SAFE, semantics §2.1).
const MAX_SAFE = 9_007_199_254_000_000;

const freqArb = fc.constantFrom<Frequency>('daily', 'weekly', 'monthly');
// 1000-01-01 .. 9999-11-30: every period around these dates has 4-digit-year bounds.
const wideDayArb = fc.integer({ min: -354_285, max: 2_932_865 });
// 2000 .. 2040, where streaks live.
const dayArb = fc.integer({ min: 10_957, max: 25_567 });

let h: LuaHarness;
beforeAll(async () => {
  h = await createLuaHarness();
});
afterAll(async () => {
  await h.close();
});

describe('calendar: lib/calendar.lua and src/engine/periods.ts', () => {
  it('agree on the date of a day index and its inverse', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(wideDayArb, { minLength: 1, maxLength: 25 }), async (days) => {
        const dates = days.map(dateOfDay);
        expect(await luaDateOfDay(h, days)).toEqual(dates);
        const parts = dates.map((d) => {
          const { year, month, day } = parseDate(d);
          return [year, month, day] as [number, number, number];
        });
        expect(await luaDaysFromCivil(h, parts)).toEqual(dates.map(dayIndex));
      }),
      RUNS,
    );
  });

  it('agree on the first and last day of the daily, weekly and monthly period of a date', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.tuple(freqArb, wideDayArb), { minLength: 1, maxLength: 25 }),
        async (cases) => {
          const periods = cases.map(
            ([freq, day]) => [freq, periodIndex(freq, dateOfDay(day))] as [Frequency, number],
          );
          const lua = await luaPeriodDays(h, periods);
          periods.forEach(([freq, idx], i) => {
            const { start, end } = periodBounds(freq, idx);
            expect(lua[i], `${freq} ${idx}`).toEqual([dayIndex(start), dayIndex(end)]);
            // The period TypeScript assigns the date contains it.
            const day = cases[i]![1];
            expect(lua[i]![0] <= day && day <= lua[i]![1]).toBe(true);
          });
        },
      ),
      RUNS,
    );
  });
});

describe('streak rollover: lib/streak.lua rollover() and src/engine/streak-view.ts viewStreak()', () => {
  const caseArb = fc
    .record({
      freq: freqArb,
      day: dayArb,
      length: fc.oneof(fc.constant(0), fc.integer({ min: 1, max: 40 })),
      hasLastMet: fc.oneof(
        { weight: 9, arbitrary: fc.constant(true) },
        { weight: 1, arbitrary: fc.constant(false) },
      ),
      gap: fc.integer({ min: -2, max: 10 }),
      freezes: fc.integer({ min: 0, max: 6 }),
      freezesOn: fc.boolean(),
      // Pauses as [start, length] in thousandths of the span from the latest met period to now.
      pauses: fc.array(fc.tuple(fc.integer({ min: -100, max: 1100 }), fc.integer({ min: 0, max: 400 })), {
        maxLength: 3,
      }),
    })
    .map((c): RolloverInput => {
      const lastMet = periodIndex(c.freq, dateOfDay(c.day));
      const first = dayIndex(periodBounds(c.freq, lastMet).start);
      const span = dayIndex(periodBounds(c.freq, lastMet + Math.max(c.gap, 0)).end) - first + 1;
      const pauses = c.pauses.map(([s, l]): [number, number] => {
        const from = first + Math.floor((s * span) / 1000);
        return [from, from + Math.floor((l * span) / 1000)];
      });
      return {
        freq: c.freq,
        length: c.length,
        lastMet: c.hasLastMet ? lastMet : undefined,
        freezes: c.freezes,
        started: c.length > 0 ? dateOfDay(c.day - 3) : undefined,
        cur: lastMet + c.gap,
        pauses,
        freezesOn: c.freezesOn,
      };
    });

  it('agree on length, latest met period, freezes left, lost length and bridged periods', async () => {
    await fc.assert(
      fc.asyncProperty(caseArb, async (c) => {
        const [lua] = await luaRollover(h, [c]);
        const raw: Record<string, string> = {
          epoch: '1',
          length: String(c.length),
          freezes: String(c.freezes),
          started: c.started ?? '',
          metAt: '0',
          pauses: JSON.stringify(c.pauses),
        };
        if (c.lastMet !== undefined) raw.lastMet = String(c.lastMet);
        const settings: StreakViewSettings = {
          enabled: true,
          frequency: c.freq,
          freezesEnabled: c.freezesOn,
          epoch: 1,
        };
        const ts = viewStreak(raw, settings, c.cur);
        expect({
          length: ts.length,
          lastMet: ts.lastMet,
          freezes: ts.freezes,
          started: ts.started,
          lost: ts.lost,
          resolved: [...ts.periods]
            .sort((a, b) => a[0] - b[0])
            .map(([idx, r]) => [idx, r.length, r.usedFreeze, r.usedPause]),
        }).toEqual(lua);
      }),
      RUNS,
    );
  });
});

describe('attribute filters: lib/filters.lua matches() and src/engine/filters.ts matchesFilters()', () => {
  // Few keys and values so that matches are common; prototype member names stay ordinary keys.
  const keyArb = fc.constantFrom('plan', 'region', 'tier', 'a-b_1', '__proto__', 'constructor', 'toString');
  const valueArb = fc.constantFrom('pro', 'eu', '', '0', 'Pro', 'ü', 'a|b');
  const caseArb = fc.record({
    filters: fc.option(fc.array(fc.tuple(keyArb, valueArb), { maxLength: 4 }), { nil: undefined }),
    attrs: fc.array(fc.tuple(keyArb, valueArb), { maxLength: 5 }).map((e) => Object.fromEntries(e)),
  });

  it('agree on whether every filter matches', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(caseArb, { minLength: 1, maxLength: 20 }), async (cases) => {
        const lua = await luaMatches(
          h,
          cases.map((c) => ({ filters: c.filters as Filters | undefined, attrs: c.attrs })),
        );
        expect(cases.map((c) => matchesFilters(c.filters, c.attrs))).toEqual(lua);
      }),
      RUNS,
    );
  });
});

describe('metric-trigger counters: lua/lib/points.lua and src/engine/trigger-counters.ts', () => {
  // The rule as the points step applies it (lib/points.lua awardPoints): per event, the running total
  // T1 after the event, triggerCrossings for the multiples crossed k and the high-water mark H.
  const body = `
    local store = {}
    local out = {}
    for i, v in ipairs(INPUT.values) do
      local t1 = num(store.t, 0) + v
      local h = num(store.h, 0)
      local k, mark = triggerCrossings(INPUT.thr, t1, h)
      store.t = t1
      if mark ~= h then store.h = mark end
      out[i] = { N(k), N(store.t), N(num(store.h, 0)) }
    end
    return out`;

  const thrArb = fc.oneof(
    fc.integer({ min: 1, max: 10 }),
    fc.integer({ min: 1, max: 1_000_000_000 }),
    fc.constantFrom(1_000_000, 2_500_000, MAX_SAFE),
  );
  const valueArb = fc.oneof(
    fc.integer({ min: -20, max: 20 }),
    fc.integer({ min: -5, max: 50 }).map((n) => n * 1_000_000),
    fc.integer({ min: -MAX_SAFE, max: MAX_SAFE }),
  );
  // Values whose running total stays within MAX_SAFE (the script refuses an event that passes it).
  const valuesArb = fc.array(valueArb, { minLength: 1, maxLength: 30 }).map((vs) => {
    let t = 0;
    return vs.filter((v) => {
      if (Math.abs(t + v) > MAX_SAFE) return false;
      t += v;
      return true;
    });
  });

  it('agree on the multiples crossed, the running total and the high-water mark after each event', async () => {
    await fc.assert(
      fc.asyncProperty(thrArb, valuesArb, async (thr, values) => {
        const lua = arr(await h.run<Array<[string, string, string]>>(['points'], body, { thr, values }));
        let c: TriggerCounters = { total: 0, high: 0 };
        const ts = values.map((v) => {
          const crossed = crossedMultiples(c, c.total + v, thr);
          c = nextTriggerCounters(c, v);
          return [crossed, c.total, c.high];
        });
        expect(ts).toEqual(lua.map((r) => r.map(Number)));
      }),
      RUNS,
    );
  });
});

describe('levels: lua/lib/points.lua levelAt() and src/engine/levels.ts', () => {
  // levelAt and the before/after rule of lua/applyUserOp.lua's points step (semantics §5.11: a user
  // created by the op had no level before it); positions map back to the plan's levels.
  const body = `
    local out = {}
    for i, c in ipairs(INPUT.cases) do
      local lb = false
      if not c.created then lb = levelAt(INPUT.lv, c.before) end
      local la = levelAt(INPUT.lv, c.after)
      out[i] = { lb = lb and INPUT.ids[lb] or false, la = la and INPUT.ids[la] or false }
    end
    return out`;

  const levelsArb = fc
    .uniqueArray(fc.integer({ min: 0, max: 1000 }), { maxLength: 6 })
    .map((ps) => ps.sort((a, b) => a - b).map((points, i) => ({ id: `L${i}`, points })));
  const totalArb = fc.oneof(fc.integer({ min: 0, max: 1100 }), fc.constantFrom(0, 1000, 9_007_199_254));
  const caseArb = fc.record({ created: fc.boolean(), before: totalArb, after: totalArb });

  it('agree on the level before and after a change of total, and so on whether it changed', async () => {
    await fc.assert(
      fc.asyncProperty(
        levelsArb,
        fc.array(caseArb, { minLength: 1, maxLength: 20 }),
        async (levels, cases) => {
          // As src/engine/plan.ts builds it: lv only when the system has levels, ascending.
          const lv = levels.length ? levels.map((l) => l.points) : undefined;
          const ids = levels.map((l) => l.id);
          const lua = arr(
            await h.run<Array<{ lb: string | false; la: string | false }>>(['points'], body, {
              lv,
              ids,
              cases,
            }),
          );
          const sys = { levels };
          cases.forEach((c, i) => {
            // Semantics §5.11: a user created by the request had no level before it.
            const before = c.created ? null : levelOf(sys, c.before);
            const after = levelOf(sys, c.after);
            const l = lua[i]!;
            expect([l.lb || null, l.la || null], JSON.stringify(c)).toEqual([
              before?.id ?? null,
              after?.id ?? null,
            ]);
            const asLevel = (id: string | false) => (id === false ? false : { id });
            expect(levelChanged(asLevel(l.lb), asLevel(l.la))).toBe(levelChanged(before, after));
          });
        },
      ),
      RUNS,
    );
  });
});
