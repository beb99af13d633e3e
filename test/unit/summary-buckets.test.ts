import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { addDays, dateOfDay, dayIndex, isoWeekStart, monthStart } from '../../src/engine/periods';
import { type SummaryAggregation, summaryBuckets } from '../../src/engine/summary-buckets';

describe('summaryBuckets', () => {
  it('lists every date for daily aggregation, leap day included', () => {
    expect(summaryBuckets('daily', '2024-02-27', '2024-03-01')).toEqual([
      { date: '2024-02-27', from: '2024-02-27', to: '2024-02-27' },
      { date: '2024-02-28', from: '2024-02-28', to: '2024-02-28' },
      { date: '2024-02-29', from: '2024-02-29', to: '2024-02-29' },
      { date: '2024-03-01', from: '2024-03-01', to: '2024-03-01' },
    ]);
  });

  it('dates weekly buckets by their Monday, which may precede the window, across a year boundary', () => {
    expect(summaryBuckets('weekly', '2021-01-01', '2021-01-20')).toEqual([
      { date: '2020-12-28', from: '2021-01-01', to: '2021-01-03' },
      { date: '2021-01-04', from: '2021-01-04', to: '2021-01-10' },
      { date: '2021-01-11', from: '2021-01-11', to: '2021-01-17' },
      { date: '2021-01-18', from: '2021-01-18', to: '2021-01-20' },
    ]);
  });

  it('includes a whole week when the window starts on Monday and ends on Sunday', () => {
    expect(summaryBuckets('weekly', '2024-12-30', '2025-01-05')).toEqual([
      { date: '2024-12-30', from: '2024-12-30', to: '2025-01-05' },
    ]);
  });

  it('dates monthly buckets by the 1st and clips them to the window', () => {
    expect(summaryBuckets('monthly', '2023-12-20', '2024-03-10')).toEqual([
      { date: '2023-12-01', from: '2023-12-20', to: '2023-12-31' },
      { date: '2024-01-01', from: '2024-01-01', to: '2024-01-31' },
      { date: '2024-02-01', from: '2024-02-01', to: '2024-02-29' },
      { date: '2024-03-01', from: '2024-03-01', to: '2024-03-10' },
    ]);
  });

  it('returns a single clipped bucket when the window lies inside one bucket', () => {
    expect(summaryBuckets('monthly', '2023-02-03', '2023-02-05')).toEqual([
      { date: '2023-02-01', from: '2023-02-03', to: '2023-02-05' },
    ]);
  });

  it('partitions the window into consecutive buckets, oldest first', () => {
    fc.assert(
      fc.property(
        fc.constantFrom<SummaryAggregation>('daily', 'weekly', 'monthly'),
        fc.integer({ min: dayIndex('2000-01-01'), max: dayIndex('2040-12-31') }),
        fc.integer({ min: 1, max: 400 }),
        (aggregation, startIndex, length) => {
          const startDate = dateOfDay(startIndex);
          const endDate = dateOfDay(startIndex + length);
          const buckets = summaryBuckets(aggregation, startDate, endDate);
          expect(buckets[0]!.from).toBe(startDate);
          expect(buckets.at(-1)!.to).toBe(endDate);
          buckets.forEach((bucket, i) => {
            expect(bucket.from <= bucket.to).toBe(true);
            expect(bucket.date <= bucket.from).toBe(true);
            const first = {
              daily: bucket.from,
              weekly: isoWeekStart(bucket.from),
              monthly: monthStart(bucket.from),
            };
            expect(bucket.date).toBe(first[aggregation]);
            if (i > 0) expect(bucket.from).toBe(addDays(buckets[i - 1]!.to, 1));
          });
          if (aggregation === 'daily') expect(buckets).toHaveLength(length + 1);
        },
      ),
    );
  });
});
