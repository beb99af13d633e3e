import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  addDays,
  dateOfDay,
  dayIndex,
  type Frequency,
  instantOfLocalMidnight,
  isoWeekStart,
  isValidTimeZone,
  localDate,
  monthStart,
  periodBounds,
  periodIndex,
} from '../../src/engine/periods';

const DAY_MS = 86_400_000;
const utc = (iso: string) => Date.parse(iso);
// Day indexes of 1000-01-01 .. 9999-11-30 (periods stay within 4-digit years), where Date's own UTC arithmetic is a trustworthy oracle.
const dayIndexArb = fc.integer({ min: -354_285, max: 2_932_865 });
const dateArb = dayIndexArb.map((i) => new Date(i * DAY_MS).toISOString().slice(0, 10));
const freqArb = fc.constantFrom<Frequency>('daily', 'weekly', 'monthly');

describe('isValidTimeZone', () => {
  it.each(['UTC', 'Europe/London', 'America/New_York', 'Asia/Kolkata', 'Pacific/Auckland', 'Etc/GMT+5'])(
    'accepts %s',
    (tz) => {
      expect(isValidTimeZone(tz)).toBe(true);
    },
  );

  it.each(['', 'Mars/Olympus', '+05:00', '-08:00', 'UTC+1', 'Europe/', ' UTC', 'America/New York'])(
    'rejects %j',
    (tz) => {
      expect(isValidTimeZone(tz)).toBe(false);
    },
  );
});

describe('localDate', () => {
  it.each([
    ['2023-12-31T10:59:59.999Z', 'Pacific/Auckland', '2023-12-31'],
    ['2023-12-31T11:00:00.000Z', 'Pacific/Auckland', '2024-01-01'],
    ['2024-06-30T11:59:59.999Z', 'Pacific/Auckland', '2024-06-30'],
    ['2024-06-30T12:00:00.000Z', 'Pacific/Auckland', '2024-07-01'],
    ['2024-01-02T07:59:59.999Z', 'America/Los_Angeles', '2024-01-01'],
    ['2024-01-02T08:00:00.000Z', 'America/Los_Angeles', '2024-01-02'],
    ['2024-07-02T06:59:59.999Z', 'America/Los_Angeles', '2024-07-01'],
    ['2024-07-02T07:00:00.000Z', 'America/Los_Angeles', '2024-07-02'],
    ['2024-03-14T18:29:59.999Z', 'Asia/Kolkata', '2024-03-14'],
    ['2024-03-14T18:30:00.000Z', 'Asia/Kolkata', '2024-03-15'],
    ['2024-03-30T23:59:59.999Z', 'Europe/London', '2024-03-30'],
    ['2024-03-31T23:00:00.000Z', 'Europe/London', '2024-04-01'],
    ['2024-10-27T23:59:59.999Z', 'Europe/London', '2024-10-27'],
    ['2024-03-10T04:59:59.999Z', 'America/New_York', '2024-03-09'],
    ['2024-03-11T04:00:00.000Z', 'America/New_York', '2024-03-11'],
    ['2024-11-04T04:59:59.999Z', 'America/New_York', '2024-11-03'],
    ['2024-11-04T05:00:00.000Z', 'America/New_York', '2024-11-04'],
    ['2024-02-29T23:59:59.999Z', 'UTC', '2024-02-29'],
  ])('at %s in %s is %s', (iso, tz, date) => {
    expect(localDate(utc(iso), tz)).toBe(date);
  });

  it('throws RangeError for an unknown zone', () => {
    expect(() => localDate(0, 'Mars/Olympus')).toThrow(RangeError);
  });

  it('agrees with the UTC date of the instant in UTC', () => {
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 4_102_444_800_000 }), (ms) => {
        expect(localDate(ms, 'UTC')).toBe(new Date(ms).toISOString().slice(0, 10));
      }),
    );
  });
});

describe('day arithmetic', () => {
  it.each([
    ['1970-01-01', 0],
    ['1969-12-31', -1],
    ['2000-02-29', 11_016],
    ['2024-02-29', 19_782],
    ['2024-03-01', 19_783],
    ['0001-01-01', -719_162],
    ['9999-12-31', 2_932_896],
  ])('%s is day %s', (date, index) => {
    expect(dayIndex(date)).toBe(index);
    expect(dateOfDay(index)).toBe(date);
  });

  it.each(['2023-02-29', '2100-02-29', '2024-13-01', '2024-00-10', '2024-04-31', '24-01-01', '2024-1-1', ''])(
    'rejects the invalid date %j',
    (date) => {
      expect(() => dayIndex(date)).toThrow(RangeError);
    },
  );

  it.each([
    ['2024-02-28', 1, '2024-02-29'],
    ['2023-02-28', 1, '2023-03-01'],
    ['2020-12-31', 1, '2021-01-01'],
    ['2021-01-01', -1, '2020-12-31'],
    ['2024-01-01', 366, '2025-01-01'],
  ])('%s plus %s days is %s', (date, n, expected) => {
    expect(addDays(date, n)).toBe(expected);
  });

  it('round-trips dates through day indexes', () => {
    fc.assert(
      fc.property(dateArb, (date) => {
        expect(dateOfDay(dayIndex(date))).toBe(date);
      }),
    );
  });

  it('matches the UTC calendar of Date', () => {
    fc.assert(
      fc.property(dayIndexArb, (index) => {
        expect(dateOfDay(index)).toBe(new Date(index * DAY_MS).toISOString().slice(0, 10));
      }),
    );
  });
});

describe('periods', () => {
  it.each([
    ['weekly', '1969-12-29', 0],
    ['weekly', '1970-01-04', 0],
    ['weekly', '1970-01-05', 1],
    ['weekly', '1969-12-28', -1],
    ['monthly', '2024-02-29', 2024 * 12 + 1],
    ['monthly', '2024-12-31', 2024 * 12 + 11],
    ['daily', '2024-02-29', 19_782],
  ] as const)('%s index of %s is %s', (freq, date, index) => {
    expect(periodIndex(freq, date)).toBe(index);
  });

  it.each([
    ['2020-12-31', '2020-12-28', '2021-01-03'],
    ['2021-01-03', '2020-12-28', '2021-01-03'],
    ['2021-01-04', '2021-01-04', '2021-01-10'],
    ['2024-12-30', '2024-12-30', '2025-01-05'],
    ['2025-01-01', '2024-12-30', '2025-01-05'],
    ['2024-02-29', '2024-02-26', '2024-03-03'],
  ])('the ISO week of %s runs %s..%s', (date, start, end) => {
    expect(isoWeekStart(date)).toBe(start);
    expect(periodBounds('weekly', periodIndex('weekly', date))).toEqual({ start, end });
  });

  it.each([
    ['2024-02-10', '2024-02-01', '2024-02-29'],
    ['2023-02-10', '2023-02-01', '2023-02-28'],
    ['2100-02-01', '2100-02-01', '2100-02-28'],
    ['2000-02-29', '2000-02-01', '2000-02-29'],
    ['2024-12-31', '2024-12-01', '2024-12-31'],
    ['2024-04-15', '2024-04-01', '2024-04-30'],
  ])('the month of %s runs %s..%s', (date, start, end) => {
    expect(monthStart(date)).toBe(start);
    expect(periodBounds('monthly', periodIndex('monthly', date))).toEqual({ start, end });
  });

  it('puts every date inside the bounds of its period, starting on a Monday or the 1st', () => {
    fc.assert(
      fc.property(freqArb, dateArb, (freq, date) => {
        const { start, end } = periodBounds(freq, periodIndex(freq, date));
        expect(start <= date && date <= end).toBe(true);
        expect(periodIndex(freq, start)).toBe(periodIndex(freq, date));
        expect(periodIndex(freq, end)).toBe(periodIndex(freq, date));
        expect(periodIndex(freq, addDays(end, 1))).toBe(periodIndex(freq, date) + 1);
        if (freq === 'weekly') expect(new Date(`${start}T00:00:00Z`).getUTCDay()).toBe(1);
        if (freq === 'monthly') expect(start.endsWith('-01')).toBe(true);
      }),
    );
  });
});

describe('instantOfLocalMidnight', () => {
  it.each([
    ['2024-01-01', 'UTC', '2024-01-01T00:00:00.000Z'],
    ['2024-01-01', 'Pacific/Auckland', '2023-12-31T11:00:00.000Z'],
    ['2024-01-01', 'America/Los_Angeles', '2024-01-01T08:00:00.000Z'],
    ['2024-03-15', 'Asia/Kolkata', '2024-03-14T18:30:00.000Z'],
    // London springs forward at 01:00 and falls back at 02:00, so both midnights exist.
    ['2024-03-31', 'Europe/London', '2024-03-31T00:00:00.000Z'],
    ['2024-04-01', 'Europe/London', '2024-03-31T23:00:00.000Z'],
    ['2024-10-27', 'Europe/London', '2024-10-26T23:00:00.000Z'],
    ['2024-10-28', 'Europe/London', '2024-10-28T00:00:00.000Z'],
    ['2024-03-10', 'America/New_York', '2024-03-10T05:00:00.000Z'],
    ['2024-03-11', 'America/New_York', '2024-03-11T04:00:00.000Z'],
    ['2024-11-03', 'America/New_York', '2024-11-03T04:00:00.000Z'],
    ['2024-11-04', 'America/New_York', '2024-11-04T05:00:00.000Z'],
    // Havana and Santiago skip midnight when DST starts: the date begins at 01:00 daylight time.
    ['2024-03-10', 'America/Havana', '2024-03-10T05:00:00.000Z'],
    ['2024-09-08', 'America/Santiago', '2024-09-08T04:00:00.000Z'],
  ])('%s in %s starts at %s', (date, tz, iso) => {
    expect(new Date(instantOfLocalMidnight(date, tz)).toISOString()).toBe(iso);
  });

  it('is the first instant whose local date is the date', () => {
    const zones = [
      'Pacific/Auckland',
      'America/Los_Angeles',
      'Asia/Kolkata',
      'Europe/London',
      'America/Havana',
    ];
    fc.assert(
      fc.property(
        fc.constantFrom(...zones),
        fc.integer({ min: dayIndex('2000-01-01'), max: dayIndex('2037-12-31') }),
        (tz, index) => {
          const date = dateOfDay(index);
          const ms = instantOfLocalMidnight(date, tz);
          expect(localDate(ms, tz)).toBe(date);
          expect(localDate(ms - 1, tz)).toBe(dateOfDay(index - 1));
        },
      ),
    );
  });
});
