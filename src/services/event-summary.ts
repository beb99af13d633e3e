// Metric and points event summaries (semantics §7.1) from the Postgres history. Each request runs
// two indexed queries: the net change per local date inside the window, and the total before it.
import type { Deps } from '../deps';
import { fromMicros } from '../engine/decimal';
import { type SummaryAggregation, summaryBuckets } from '../engine/summary-buckets';

export interface SummaryItem {
  date: string;
  total: number;
  change: number;
}

interface DayRow {
  d: string;
  s: string;
}

/** The SQL of a metric summary (exported for EXPLAIN in tests and reports). */
export function metricSummaryQueries(
  deps: Deps,
  userId: string,
  metricId: string,
  start: string,
  end: string,
) {
  return {
    days: deps.sql<DayRow[]>`
      select local_date::text as d, sum(value_micros)::text as s
      from events
      where user_id = ${userId} and metric_id = ${metricId} and local_date between ${start} and ${end}
      group by local_date`,
    before: deps.sql<Array<{ s: string }>>`
      select coalesce(sum(value_micros), 0)::text as s
      from events
      where user_id = ${userId} and metric_id = ${metricId} and local_date < ${start}`,
  };
}

/** The SQL of a points summary: sums of `awarded` (the exact change each award made). */
export function pointsSummaryQueries(
  deps: Deps,
  userId: string,
  systemId: string,
  start: string,
  end: string,
) {
  return {
    days: deps.sql<DayRow[]>`
      select local_date::text as d, sum(awarded)::text as s
      from points_awards
      where user_id = ${userId} and system_id = ${systemId} and local_date between ${start} and ${end}
      group by local_date`,
    before: deps.sql<Array<{ s: string }>>`
      select coalesce(sum(awarded), 0)::text as s
      from points_awards
      where user_id = ${userId} and system_id = ${systemId} and local_date < ${start}`,
  };
}

/**
 * Buckets per semantics §7.1: every bucket intersecting the window (zero-change ones included),
 * `change` = net change on the bucket's dates inside the window, `total` = running total at the end
 * of the bucket's last date inside the window. Dates after today have no rows, so they carry the
 * current total. O(days in window + rows).
 */
function bucketize(
  aggregation: SummaryAggregation,
  start: string,
  end: string,
  before: number,
  rows: DayRow[],
  conv: (n: number) => number,
): SummaryItem[] {
  const days = rows.map((r) => ({ d: r.d, s: Number(r.s) })).sort((a, b) => (a.d < b.d ? -1 : 1));
  let i = 0;
  let total = before;
  return summaryBuckets(aggregation, start, end).map((b) => {
    let change = 0;
    while (i < days.length && days[i]!.d <= b.to) {
      if (days[i]!.d >= b.from) change += days[i]!.s;
      i++;
    }
    total += change;
    return { date: b.date, total: conv(total), change: conv(change) };
  });
}

export async function metricEventSummary(
  deps: Deps,
  userId: string,
  metricId: string,
  aggregation: SummaryAggregation,
  start: string,
  end: string,
): Promise<SummaryItem[]> {
  const q = metricSummaryQueries(deps, userId, metricId, start, end);
  const [rows, before] = await Promise.all([q.days, q.before]);
  return bucketize(aggregation, start, end, Number(before[0]?.s ?? 0), rows, fromMicros);
}

export async function pointsEventSummary(
  deps: Deps,
  userId: string,
  systemId: string,
  aggregation: SummaryAggregation,
  start: string,
  end: string,
): Promise<SummaryItem[]> {
  const q = pointsSummaryQueries(deps, userId, systemId, start, end);
  const [rows, before] = await Promise.all([q.days, q.before]);
  return bucketize(aggregation, start, end, Number(before[0]?.s ?? 0), rows, (n) => n);
}
