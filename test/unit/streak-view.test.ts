import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { dayIndex, periodIndex } from '../../src/engine/periods';
import {
  formatHistory,
  HISTORY_MAX,
  parseHistory,
  type StreakViewSettings,
  streakHistory,
  viewStreak,
} from '../../src/engine/streak-view';

const daily: StreakViewSettings = { enabled: true, frequency: 'daily', freezesEnabled: true, epoch: 3 };
const TODAY = '2025-03-10';
const cur = dayIndex(TODAY);

/** A stored streak hash as lua/applyUserOp.lua writes it. */
function hash(fields: {
  length: number;
  lastMet?: number;
  freezes?: number;
  started?: string;
  epoch?: number;
  metAt?: number;
  history?: Record<number, string>;
  pauses?: string;
}): Record<string, string> {
  const epoch = fields.epoch ?? 3;
  const out: Record<string, string> = {
    epoch: String(epoch),
    length: String(fields.length),
    freezes: String(fields.freezes ?? 0),
    started: fields.started ?? '',
    metAt: String(fields.metAt ?? 0),
  };
  if (fields.lastMet !== undefined) out.lastMet = String(fields.lastMet);
  for (const [idx, v] of Object.entries(fields.history ?? {})) out[`h:${epoch}:${idx}`] = v;
  if (fields.pauses !== undefined) out.pauses = fields.pauses;
  return out;
}

describe('viewStreak', () => {
  it('keeps a streak whose latest met period is the current or the previous one', () => {
    for (const lastMet of [cur, cur - 1]) {
      const v = viewStreak(hash({ length: 4, lastMet, started: '2025-03-06', metAt: 5 }), daily, cur);
      expect(v).toMatchObject({ length: 4, lastMet, started: '2025-03-06', freezes: 0, metAt: 5, lost: 0 });
    }
  });

  it('breaks a streak when an ended period was missed without freezes or pauses', () => {
    const v = viewStreak(hash({ length: 4, lastMet: cur - 2, started: '2025-03-05', metAt: 5 }), daily, cur);
    expect(v).toMatchObject({ length: 0, started: undefined, metAt: undefined, lost: 4 });
  });

  it('bridges missed periods with freezes one by one, oldest first, then breaks', () => {
    const bridged = viewStreak(hash({ length: 3, lastMet: cur - 3, freezes: 2 }), daily, cur);
    expect(bridged).toMatchObject({ length: 3, lastMet: cur - 1, freezes: 0, lost: 0 });
    expect(bridged.periods.get(cur - 2)).toEqual({ length: 3, usedFreeze: true, usedPause: false });
    expect(bridged.periods.get(cur - 1)).toEqual({ length: 3, usedFreeze: true, usedPause: false });

    const broken = viewStreak(hash({ length: 3, lastMet: cur - 3, freezes: 1 }), daily, cur);
    expect(broken).toMatchObject({ length: 0, freezes: 0, lost: 3 });
  });

  it('does not use freezes while freezes are disabled', () => {
    const v = viewStreak(
      hash({ length: 3, lastMet: cur - 2, freezes: 5 }),
      { ...daily, freezesEnabled: false },
      cur,
    );
    expect(v).toMatchObject({ length: 0, freezes: 5, lost: 3 });
  });

  it('bridges a missed period that a pause touches without spending a freeze', () => {
    const weekly: StreakViewSettings = { ...daily, frequency: 'weekly' };
    const week = periodIndex('weekly', TODAY);
    // The pause covers only the Sunday of the missed week (2025-03-09).
    const pauses = JSON.stringify([[dayIndex('2025-03-09'), dayIndex('2025-03-12')]]);
    const v = viewStreak(hash({ length: 2, lastMet: week - 2, freezes: 1, pauses }), weekly, week);
    expect(v).toMatchObject({ length: 2, lastMet: week - 1, freezes: 1 });
    expect(v.periods.get(week - 1)).toEqual({ length: 2, usedFreeze: false, usedPause: true });
  });

  it('reads an empty pause list written by cjson as {}', () => {
    const v = viewStreak(hash({ length: 2, lastMet: cur - 2, pauses: '{}' }), daily, cur);
    expect(v.length).toBe(0);
  });

  it('shows no streak while streaks are disabled or after the settings epoch changed, keeping freezes', () => {
    const raw = hash({ length: 5, lastMet: cur, freezes: 2 });
    expect(viewStreak(raw, { ...daily, enabled: false }, cur)).toMatchObject({ length: 0, freezes: 2 });
    expect(viewStreak(raw, { ...daily, epoch: 4 }, cur)).toMatchObject({ length: 0, freezes: 2 });
  });

  it('never breaks or bridges anything for a user without a streak', () => {
    const v = viewStreak(hash({ length: 0, lastMet: cur - 10, freezes: 1 }), daily, cur);
    expect(v).toMatchObject({ length: 0, freezes: 1, lost: 0 });
  });

  it('leaves a projected streak alive only up to the previous period, with freezes never negative', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 50 }),
        fc.integer({ min: 0, max: 20 }),
        fc.integer({ min: 0, max: 10 }),
        (length, gap, freezes) => {
          const v = viewStreak(hash({ length, lastMet: cur - gap, freezes }), daily, cur);
          expect(v.freezes).toBeGreaterThanOrEqual(0);
          if (gap <= 1 + freezes) {
            expect(v.length).toBe(length);
            expect(v.freezes).toBe(freezes - Math.max(0, gap - 1));
            expect(v.lastMet).toBe(Math.max(cur - gap, cur - 1));
          } else {
            expect(v.length).toBe(0);
            expect(v.lost).toBe(length);
          }
        },
      ),
    );
  });
});

describe('streakHistory', () => {
  it('lists exactly the requested periods, oldest first, ending with the current one at the current length', () => {
    const raw = hash({
      length: 2,
      lastMet: cur - 1,
      history: { [cur - 4]: '1|0|0', [cur - 2]: '1|0|0', [cur - 1]: '2|0|0' },
    });
    const v = viewStreak(raw, daily, cur);
    expect(streakHistory(v, daily, cur, 5)).toEqual([
      { periodStart: '2025-03-06', periodEnd: '2025-03-06', length: 1, usedFreeze: false, usedPause: false },
      { periodStart: '2025-03-07', periodEnd: '2025-03-07', length: 0, usedFreeze: false, usedPause: false },
      { periodStart: '2025-03-08', periodEnd: '2025-03-08', length: 1, usedFreeze: false, usedPause: false },
      { periodStart: '2025-03-09', periodEnd: '2025-03-09', length: 2, usedFreeze: false, usedPause: false },
      { periodStart: '2025-03-10', periodEnd: '2025-03-10', length: 2, usedFreeze: false, usedPause: false },
    ]);
    expect(streakHistory(v, daily, cur, 1)).toHaveLength(1);
  });

  it('includes projected bridges and omits usedFreeze while freezes are disabled', () => {
    const v = viewStreak(hash({ length: 3, lastMet: cur - 2, freezes: 1 }), daily, cur);
    expect(streakHistory(v, daily, cur, 2)).toEqual([
      { periodStart: '2025-03-09', periodEnd: '2025-03-09', length: 3, usedFreeze: true, usedPause: false },
      { periodStart: '2025-03-10', periodEnd: '2025-03-10', length: 3, usedFreeze: false, usedPause: false },
    ]);
    const off = { ...daily, freezesEnabled: false };
    expect(streakHistory(viewStreak(hash({ length: 1, lastMet: cur }), off, cur), off, cur, 1)).toEqual([
      { periodStart: '2025-03-10', periodEnd: '2025-03-10', length: 1, usedPause: false },
    ]);
  });

  it('is empty while streaks are disabled', () => {
    const off = { ...daily, enabled: false };
    expect(streakHistory(viewStreak({}, off, cur), off, cur, 7)).toEqual([]);
  });

  it('uses week and month bounds for weekly and monthly streaks', () => {
    const weekly: StreakViewSettings = { ...daily, frequency: 'weekly' };
    const w = periodIndex('weekly', TODAY);
    expect(streakHistory(viewStreak({}, weekly, w), weekly, w, 1)[0]).toMatchObject({
      periodStart: '2025-03-10',
      periodEnd: '2025-03-16',
    });
    const monthly: StreakViewSettings = { ...daily, frequency: 'monthly' };
    const m = periodIndex('monthly', TODAY);
    expect(streakHistory(viewStreak({}, monthly, m), monthly, m, 2).map((h) => h.periodStart)).toEqual([
      '2025-02-01',
      '2025-03-01',
    ]);
  });
});

describe('bounded period history (the hist field)', () => {
  it('keeps the newest 100 periods in order and reads back what it wrote', () => {
    const records = Array.from({ length: 150 }, (_, i) => [
      1000 + 149 - i,
      { length: 150 - i, usedFreeze: i % 7 === 0, usedPause: i % 11 === 0 && i % 7 !== 0 },
    ]) as Array<[number, { length: number; usedFreeze: boolean; usedPause: boolean }]>;
    const hist = formatHistory(records);
    const parsed = parseHistory(hist);
    expect(parsed).toHaveLength(HISTORY_MAX);
    expect(parsed[0]![0]).toBe(1050);
    expect(parsed[99]![0]).toBe(1149);
    const byIdx = new Map(records);
    for (const [idx, r] of parsed) expect(r).toEqual(byIdx.get(idx));
  });

  it('reads hist only for the epoch the hash belongs to, and the older per-period fields too', () => {
    const settings = { enabled: true, frequency: 'daily' as const, freezesEnabled: false, epoch: 2 };
    const raw = { epoch: '2', length: '2', lastMet: '11', hist: '10:1,11:2', 'h:2:9': '1|0|1' };
    const view = viewStreak(raw, settings, 11);
    expect([...view.periods.keys()].sort()).toEqual([10, 11, 9]);
    expect(view.periods.get(9)).toEqual({ length: 1, usedFreeze: false, usedPause: true });
    const other = viewStreak({ ...raw, epoch: '1' }, settings, 11);
    expect([...other.periods.keys()]).toEqual([9]);
  });
});
