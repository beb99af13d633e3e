import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { addDays, dateOfDay, dayIndex } from '../../src/engine/periods';
import {
  type BoardTiming,
  type RunUnit,
  runByIndex,
  runContaining,
  runFinalizationMs,
} from '../../src/engine/runs';

const board = (
  start: string,
  end: string | null,
  runUnit: RunUnit | null = null,
  runInterval = 1,
): BoardTiming => ({ start, end, runUnit, runInterval });

describe('runContaining on perpetual boards', () => {
  it('returns one open run from start for any later date when the board has no end', () => {
    expect(runContaining(board('2024-01-01', null), '2024-01-01')).toEqual({
      index: 0,
      start: '2024-01-01',
      end: null,
    });
    expect(runContaining(board('2024-01-01', null), '2090-05-05')).toEqual({
      index: 0,
      start: '2024-01-01',
      end: null,
    });
  });

  it('returns the run start..end for dates inside a bounded board', () => {
    expect(runContaining(board('2024-01-01', '2024-03-31'), '2024-03-31')).toEqual({
      index: 0,
      start: '2024-01-01',
      end: '2024-03-31',
    });
  });

  it.each([
    ['2023-12-31', null],
    ['2024-04-01', '2024-03-31'],
  ])('returns null for %s outside the board (end %s)', (date, end) => {
    expect(runContaining(board('2024-01-01', end), date)).toBeNull();
  });

  it('has only run 0', () => {
    expect(runByIndex(board('2024-01-01', null), 0)).toEqual({ index: 0, start: '2024-01-01', end: null });
    expect(runByIndex(board('2024-01-01', null), 1)).toBeNull();
    expect(runByIndex(board('2024-01-01', null), -1)).toBeNull();
  });
});

describe('runContaining on repeating boards', () => {
  it.each([
    // Weekly runs (7 days) clipped at the board end.
    [board('2024-01-01', '2024-02-15', 'day', 7), '2024-01-01', 0, '2024-01-01', '2024-01-07'],
    [board('2024-01-01', '2024-02-15', 'day', 7), '2024-01-08', 1, '2024-01-08', '2024-01-14'],
    [board('2024-01-01', '2024-02-15', 'day', 7), '2024-02-15', 6, '2024-02-12', '2024-02-15'],
    [board('2024-01-01', null, 'day', 1), '2024-02-29', 59, '2024-02-29', '2024-02-29'],
    [board('2024-01-01', null, 'day', 3), '2124-01-01', 12_174, '2123-12-30', '2124-01-01'],
    // Monthly from the 31st: clamp to shorter months, always stepping from the original start.
    [board('2024-01-31', null, 'month', 1), '2024-01-31', 0, '2024-01-31', '2024-02-28'],
    [board('2024-01-31', null, 'month', 1), '2024-02-28', 0, '2024-01-31', '2024-02-28'],
    [board('2024-01-31', null, 'month', 1), '2024-02-29', 1, '2024-02-29', '2024-03-30'],
    [board('2024-01-31', null, 'month', 1), '2024-03-30', 1, '2024-02-29', '2024-03-30'],
    [board('2024-01-31', null, 'month', 1), '2024-03-31', 2, '2024-03-31', '2024-04-29'],
    [board('2024-01-31', null, 'month', 1), '2024-04-30', 3, '2024-04-30', '2024-05-30'],
    [board('2023-01-31', null, 'month', 1), '2023-02-27', 0, '2023-01-31', '2023-02-27'],
    [board('2023-01-31', null, 'month', 1), '2023-02-28', 1, '2023-02-28', '2023-03-30'],
    [board('2024-11-30', null, 'month', 3), '2025-02-27', 0, '2024-11-30', '2025-02-27'],
    [board('2024-11-30', null, 'month', 3), '2025-02-28', 1, '2025-02-28', '2025-05-29'],
    [board('2024-11-30', '2025-04-15', 'month', 3), '2025-04-15', 1, '2025-02-28', '2025-04-15'],
    [board('2024-01-15', null, 'month', 1), '2024-12-31', 11, '2024-12-15', '2025-01-14'],
    // Yearly from a leap day.
    [board('2024-02-29', null, 'year', 1), '2025-02-27', 0, '2024-02-29', '2025-02-27'],
    [board('2024-02-29', null, 'year', 1), '2025-02-28', 1, '2025-02-28', '2026-02-27'],
    [board('2024-02-29', null, 'year', 1), '2028-02-28', 3, '2027-02-28', '2028-02-28'],
    [board('2024-02-29', null, 'year', 1), '2028-02-29', 4, '2028-02-29', '2029-02-27'],
    [board('2020-07-01', null, 'year', 2), '2023-06-30', 1, '2022-07-01', '2024-06-30'],
  ])('%o puts %s in run %s (%s..%s)', (b, date, index, start, end) => {
    expect(runContaining(b, date)).toEqual({ index, start, end });
    expect(runByIndex(b, index)).toEqual({ index, start, end });
  });

  it('returns null for dates before start or after end', () => {
    const b = board('2024-01-31', '2024-06-30', 'month', 1);
    expect(runContaining(b, '2024-01-30')).toBeNull();
    expect(runContaining(b, '2024-07-01')).toBeNull();
  });

  it('has no runs past the board end', () => {
    const b = board('2024-01-01', '2024-02-15', 'day', 7);
    expect(runByIndex(b, 6)).toEqual({ index: 6, start: '2024-02-12', end: '2024-02-15' });
    expect(runByIndex(b, 7)).toBeNull();
    expect(runByIndex(b, 1.5)).toBeNull();
  });

  it('rejects a run interval below 1', () => {
    expect(() => runContaining(board('2024-01-01', null, 'day', 0), '2024-01-02')).toThrow(RangeError);
  });
});

const boardArb = fc
  .record({
    start: fc.integer({ min: dayIndex('1990-01-01'), max: dayIndex('2060-12-31') }),
    length: fc.option(fc.integer({ min: 0, max: 3000 }), { nil: null }),
    runUnit: fc.constantFrom<RunUnit | null>(null, 'day', 'month', 'year'),
    runInterval: fc.integer({ min: 1, max: 40 }),
  })
  .map(
    (r): BoardTiming => ({
      start: dateOfDay(r.start),
      end: r.length === null ? null : dateOfDay(r.start + r.length),
      runUnit: r.runUnit,
      runInterval: r.runInterval,
    }),
  );

describe('runs at the last date', () => {
  it.each([
    [board('9999-12-20', null, 'day', 7), '9999-12-31', 1, '9999-12-27', '9999-12-31'],
    [board('9999-11-15', null, 'month', 1), '9999-12-20', 1, '9999-12-15', '9999-12-31'],
    [board('9999-12-31', null, 'day', 1), '9999-12-31', 0, '9999-12-31', '9999-12-31'],
  ])('%o on %s is run %i, %s to %s (the next would start in year 10000)', (b, date, index, start, end) => {
    expect(runContaining(b, date)).toEqual({ index, start, end });
    expect(runByIndex(b, index + 1)).toBeNull();
  });
});

describe('run properties', () => {
  it('tiles the board with contiguous, non-overlapping runs', () => {
    fc.assert(
      fc.property(boardArb, fc.integer({ min: 0, max: 60 }), (b, index) => {
        const run = runByIndex(b, index);
        if (run === null) {
          expect(index === 0 && b.runUnit === null).toBe(false);
          return;
        }
        expect(run.index).toBe(index);
        if (run.end !== null) expect(run.start <= run.end).toBe(true);
        const next = runByIndex(b, index + 1);
        if (next !== null) expect(next.start).toBe(addDays(run.end!, 1));
        else if (b.end !== null) expect(run.end).toBe(b.end);
        if (index === 0) expect(run.start).toBe(b.start);
      }),
      { numRuns: 500 },
    );
  });

  it('finds the run whose dates contain the date', () => {
    fc.assert(
      fc.property(boardArb, fc.integer({ min: -5, max: 4000 }), (b, offset) => {
        const date = addDays(b.start, offset);
        const run = runContaining(b, date);
        if (offset < 0 || (b.end !== null && date > b.end)) {
          expect(run).toBeNull();
          return;
        }
        expect(run).not.toBeNull();
        expect(run!.start <= date).toBe(true);
        if (run!.end !== null) expect(date <= run!.end).toBe(true);
        expect(runByIndex(b, run!.index)).toEqual(run);
      }),
      { numRuns: 1000 },
    );
  });

  it('matches stepping months from the original start with clamping', () => {
    fc.assert(
      fc.property(boardArb, fc.integer({ min: 0, max: 30 }), (b, index) => {
        if (b.runUnit !== 'month' && b.runUnit !== 'year') return;
        const run = runByIndex({ ...b, end: null }, index);
        const [y, m, d] = b.start.split('-').map(Number) as [number, number, number];
        const months = y * 12 + m - 1 + index * b.runInterval * (b.runUnit === 'year' ? 12 : 1);
        const year = Math.floor(months / 12);
        const month = (months % 12) + 1;
        const lastDay = new Date(Date.UTC(year, month, 0)).getUTCDate();
        const expected = `${year}-${String(month).padStart(2, '0')}-${String(Math.min(d, lastDay)).padStart(2, '0')}`;
        expect(run!.start).toBe(expected);
      }),
      { numRuns: 500 },
    );
  });
});

describe('runFinalizationMs', () => {
  it.each([
    ['2024-01-31', '2024-02-01T12:00:00.000Z'],
    ['2024-02-28', '2024-02-29T12:00:00.000Z'],
    ['2024-12-31', '2025-01-01T12:00:00.000Z'],
  ])('finalises a run ending %s at %s', (end, iso) => {
    expect(new Date(runFinalizationMs(end)).toISOString()).toBe(iso);
  });
});
