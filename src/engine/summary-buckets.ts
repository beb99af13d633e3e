// Buckets of metric and points event summaries (semantics §7.1).
import { addDays, daysInMonth, formatDate, isoWeekStart, monthStart, parseDate } from './periods';

export type SummaryAggregation = 'daily' | 'weekly' | 'monthly';

export interface SummaryBucket {
  date: string;
  from: string;
  to: string;
}

/** Every bucket intersecting [startDate, endDate], oldest first; from/to are the bucket clipped to the window. O(buckets). */
export function summaryBuckets(
  aggregation: SummaryAggregation,
  startDate: string,
  endDate: string,
): SummaryBucket[] {
  parseDate(startDate);
  parseDate(endDate);
  const buckets: SummaryBucket[] = [];
  let date =
    aggregation === 'weekly'
      ? isoWeekStart(startDate)
      : aggregation === 'monthly'
        ? monthStart(startDate)
        : startDate;
  while (date <= endDate) {
    let last: string;
    let next: string;
    if (aggregation === 'daily') {
      last = date;
      next = addDays(date, 1);
    } else if (aggregation === 'weekly') {
      last = addDays(date, 6);
      next = addDays(date, 7);
    } else {
      const { year, month } = parseDate(date);
      last = formatDate(year, month, daysInMonth(year, month));
      next = month === 12 ? formatDate(year + 1, 1, 1) : formatDate(year, month + 1, 1);
    }
    buckets.push({
      date,
      from: date < startDate ? startDate : date,
      to: last > endDate ? endDate : last,
    });
    date = next;
  }
  return buckets;
}
