// lua/lib/ (numbers, calendar, filters, streak) on its own, run on real Redis (test/lua/harness.ts).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  luaDateOfDay,
  luaDaysFromCivil,
  luaFloordiv,
  luaMatches,
  luaPeriodDays,
  luaRollover,
  type RolloverInput,
} from './common-lib';
import { arr, createLuaHarness, type LuaHarness } from './harness';

let h: LuaHarness;
beforeAll(async () => {
  h = await createLuaHarness();
});
afterAll(async () => {
  await h.close();
});

describe('calendar', () => {
  it('counts days from 1970-01-01, before it and across leap days and century years', async () => {
    expect(
      await luaDaysFromCivil(h, [
        [1970, 1, 1],
        [1969, 12, 31],
        [2000, 3, 1],
        [2024, 2, 29],
        [1, 1, 1],
        [1600, 2, 29],
      ]),
    ).toEqual([0, -1, 11017, 19782, -719162, -135081]);
  });

  it('formats a day index as YYYY-MM-DD, the inverse of daysFromCivil', async () => {
    expect(await luaDateOfDay(h, [0, -1, 11017, 19782, -719162, -135081])).toEqual([
      '1970-01-01',
      '1969-12-31',
      '2000-03-01',
      '2024-02-29',
      '0001-01-01',
      '1600-02-29',
    ]);
  });

  it('gives the first and last day of daily, ISO-weekly and monthly periods', async () => {
    const week = Math.floor((20157 + 3) / 7); // 2025-03-10 is a Monday
    expect(
      await luaPeriodDays(h, [
        ['daily', 20157],
        ['weekly', 0],
        ['weekly', week],
        ['monthly', 2024 * 12 + 1],
        ['monthly', 2023 * 12 + 11],
      ]),
    ).toEqual([
      [20157, 20157],
      [-3, 3], // 1969-12-29 (Monday) .. 1970-01-04
      [20157, 20163],
      [19754, 19782], // February 2024 has 29 days
      [19692, 19722], // December 2023 ends before 2024-01-01
    ]);
  });
});

describe('floordiv', () => {
  it('floors towards minus infinity with a non-negative remainder', async () => {
    expect(
      await luaFloordiv(h, [
        [7, 3],
        [-7, 3],
        [6, 3],
        [-6, 3],
        [0, 5],
        [-1, 1_000_000],
      ]),
    ).toEqual([
      [2, 1],
      [-3, 2],
      [2, 0],
      [-2, 0],
      [0, 0],
      [-1, 999_999],
    ]);
  });

  it('stays exact for totals near 2^53', async () => {
    expect(
      await luaFloordiv(h, [
        [9_007_199_254_740_991, 1_000_000],
        [9_007_199_254_740_991, 3],
        [-9_007_199_254_000_000, 7], // the largest total in magnitude (MAX_SAFE)
        [9_007_199_254_740_990, 9_007_199_254_740_991],
      ]),
    ).toEqual([
      [9_007_199_254, 740_991],
      [3_002_399_751_580_330, 1],
      [-1_286_742_750_571_429, 3],
      [0, 9_007_199_254_740_990],
    ]);
  });
});

describe('matches', () => {
  it('matches when there are no filters', async () => {
    expect(await luaMatches(h, [{ attrs: {} }, { filters: [], attrs: { plan: 'pro' } }])).toEqual([
      true,
      true,
    ]);
  });

  it('matches only when every pair equals the attribute value', async () => {
    expect(
      await luaMatches(h, [
        { filters: [['plan', 'pro']], attrs: { plan: 'pro' } },
        {
          filters: [
            ['plan', 'pro'],
            ['region', 'eu'],
          ],
          attrs: { plan: 'pro', region: 'eu', other: 'x' },
        },
        {
          filters: [
            ['plan', 'pro'],
            ['region', 'eu'],
          ],
          attrs: { plan: 'pro', region: 'us' },
        },
        { filters: [['plan', 'pro']], attrs: {} },
        { filters: [['plan', 'pro']], attrs: { plan: 'Pro' } },
      ]),
    ).toEqual([true, true, false, false, false]);
  });
});

describe('rollover', () => {
  const cur = 20157;
  const base: RolloverInput = {
    freq: 'daily',
    length: 4,
    lastMet: cur - 1,
    freezes: 0,
    cur,
    pauses: [],
    freezesOn: true,
  };

  it('resolves nothing while the latest met period is the previous or the current one', async () => {
    const [prev, same] = await luaRollover(h, [base, { ...base, lastMet: cur }]);
    expect(prev).toMatchObject({ length: 4, lastMet: cur - 1, lost: 0, resolved: [] });
    expect(same).toMatchObject({ length: 4, lastMet: cur, lost: 0, resolved: [] });
  });

  it('resolves nothing for a streak of length 0 or without a met period', async () => {
    const [zero, never] = await luaRollover(h, [
      { ...base, length: 0, lastMet: cur - 5 },
      { ...base, lastMet: undefined },
    ]);
    expect(zero).toMatchObject({ length: 0, lastMet: cur - 5, lost: 0, resolved: [] });
    expect(never).toMatchObject({ length: 4, lastMet: undefined, lost: 0, resolved: [] });
  });

  it('breaks the streak on a missed period without freezes, reporting the lost length', async () => {
    const [r] = await luaRollover(h, [{ ...base, lastMet: cur - 3, started: '2025-03-01' }]);
    expect(r).toEqual({ length: 0, lastMet: cur - 3, freezes: 0, started: undefined, lost: 4, resolved: [] });
  });

  it('spends one freeze per missed period, oldest first, then breaks when they run out', async () => {
    const [bridged, broken] = await luaRollover(h, [
      { ...base, lastMet: cur - 3, freezes: 2 },
      { ...base, lastMet: cur - 4, freezes: 2 },
    ]);
    expect(bridged).toMatchObject({
      length: 4,
      lastMet: cur - 1,
      freezes: 0,
      lost: 0,
      resolved: [
        [cur - 2, 4, true, false],
        [cur - 1, 4, true, false],
      ],
    });
    expect(broken).toMatchObject({ length: 0, lastMet: cur - 2, freezes: 0, lost: 4 });
    expect(broken!.resolved).toEqual([
      [cur - 3, 4, true, false],
      [cur - 2, 4, true, false],
    ]);
  });

  it('keeps freezes while freezes are disabled', async () => {
    const [r] = await luaRollover(h, [{ ...base, lastMet: cur - 2, freezes: 3, freezesOn: false }]);
    expect(r).toMatchObject({ length: 0, freezes: 3, lost: 4 });
  });

  it('bridges a period touched by a pause before spending a freeze', async () => {
    // Weekly: the pause covers only the Sunday of the missed week.
    const week = Math.floor((cur + 3) / 7);
    const [r] = await luaRollover(h, [
      { ...base, freq: 'weekly', cur: week, lastMet: week - 2, freezes: 1, pauses: [[cur - 1, cur + 2]] },
    ]);
    expect(r).toMatchObject({
      length: 4,
      lastMet: week - 1,
      freezes: 1,
      resolved: [[week - 1, 4, false, true]],
    });
  });

  it('neither meets nor misses periods a time-zone change skipped entirely', async () => {
    const [skipped, partly] = await luaRollover(h, [
      { ...base, lastMet: cur - 2, skip: [cur - 1, cur - 1] },
      { ...base, freq: 'weekly', cur: 2880, lastMet: 2878, skip: [cur - 8, cur - 8] },
    ]);
    expect(skipped).toMatchObject({
      length: 4,
      lastMet: cur - 1,
      freezes: 0,
      resolved: [[cur - 1, 4, false, false]],
    });
    // A week of which one day was skipped was lived on its other days: it is missed.
    expect(partly).toMatchObject({ length: 0, lost: 4 });
  });
});

describe('period history', () => {
  const entries = (from: number, to: number) =>
    Array.from({ length: to - from + 1 }, (_, i) => `${from + i}:${from + i - 99}`);

  async function append(hist: string | undefined, chunks: string[][]): Promise<string> {
    return h.run<string>(
      ['streak', 'filters'],
      `local hist = INPUT.hist
       for _, chunk in ipairs(INPUT.chunks) do hist = histAppend(hist, chunk) end
       return hist`,
      { hist, chunks },
    );
  }

  it('appends entries and formats them as idx:length with f or p for bridged periods', async () => {
    const hist = await h.run<string>(
      ['streak', 'filters'],
      `return histAppend(histAppend('', { histEntry(-3, 1, false, false) }), { histEntry(-2, 1, true, false), histEntry(-1, 1, false, true) })`,
      null,
    );
    expect(hist).toBe('-3:1,-2:1f,-1:1p');
    expect(await append('5:1', [[]])).toBe('5:1');
  });

  it('keeps the newest 100 entries, oldest first', async () => {
    const hist = await append(undefined, [entries(100, 160), entries(161, 161), entries(162, 249)]);
    const list = hist.split(',');
    expect(list).toHaveLength(100);
    expect(list[0]).toBe('150:51');
    expect(list[99]).toBe('249:150');
    expect(await append(entries(1, 100).join(','), [entries(101, 350)])).toBe(entries(251, 350).join(','));
  });

  it('calls back once per entry with its period and length', async () => {
    const seen = await h.run<Array<[number, number]>>(
      ['streak', 'filters'],
      `local out = {}
       histEach(INPUT, function(idx, len) out[#out + 1] = { idx, len } end)
       histEach('', function() out[#out + 1] = 'never' end)
       return out`,
      '-2:3,-1:3f,0:4p,7:1',
    );
    expect(arr(seen)).toEqual([
      [-2, 3],
      [-1, 3],
      [0, 4],
      [7, 1],
    ]);
  });
});
