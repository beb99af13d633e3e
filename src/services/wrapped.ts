// Year in review (semantics §7.4). Activity figures come from the Postgres history (events, awards,
// streak periods); completions from the user's achievements hash; best leaderboard ranks from the
// per-run rank history lists in Redis.
import { and, asc, eq, inArray } from 'drizzle-orm';
import { leaderboardRankChanges } from '../db/schema';
import type { AchievementRow, LeaderboardRow } from '../catalog/snapshot';
import { decodeCompletion, splitUserHash } from '../redis/user-hash';
import type { Deps } from '../deps';
import { fromMicros } from '../engine/decimal';
import { boardValue } from './leaderboards';
import { leaderboardStatus } from '../engine/leaderboard-status';
import {
  addDays,
  daysInMonth,
  formatDate,
  instantOfLocalMidnight,
  isoWeekStart,
  localDate,
  parseDate,
} from '../engine/periods';
import { runByIndex, runContaining } from '../engine/runs';

export interface WrappedFigures {
  name: string;
  units?: string | null;
  description?: string | null;
  currentTotal: number;
  changeThisPeriod: number;
  percentChange: number;
  percentileThisPeriod?: number;
}

export interface WrappedMetricFigures extends WrappedFigures {
  byAttribute: Record<string, Record<string, WrappedFigures>>;
}

export interface WrappedPeriodData {
  metrics: Record<string, WrappedMetricFigures>;
  points: Record<string, WrappedFigures>;
  achievements: Array<{ row: AchievementRow; at: number }>;
  leaderboards: Array<{ board: LeaderboardRow; rank: number; value: number | null }>;
}

export interface WrappedStreakData {
  length: number;
  started: string | null;
  periodStart: string | null;
  periodEnd: string | null;
}

export interface WrappedData {
  daysActive: number;
  weeksActive: number;
  monthsActive: number;
  mostActiveDay: { date: string; data: WrappedPeriodData };
  mostActiveWeek: { start: string; end: string; data: WrappedPeriodData };
  mostActiveMonth: { month: number; data: WrappedPeriodData };
  entireYear: { longestStreak: WrappedStreakData; data: WrappedPeriodData };
}

/** round(100 × num / den, 2), halves away from zero, exact on integers. */
export function percent2(num: bigint, den: bigint): number {
  if (den === 0n) return 0;
  const scaled = num * 10000n;
  let q = scaled / den;
  const r = scaled % den;
  const absR = r < 0n ? -r : r;
  const absD = den < 0n ? -den : den;
  if (2n * absR >= absD) q += scaled < 0n !== den < 0n ? -1n : 1n;
  return Number(q) / 100;
}

/** One history fact: `d` null = before the scanned range. `k` = metric id or "metric\0attr\0value". */
interface Fact {
  d: string | null;
  k: string;
  n: number;
  s: bigint;
}

interface Range {
  a: string;
  b: string;
}

const SEP = '\u0000';

/** start total, change and event count per key over [a, b]. O(facts). */
function figuresOver(facts: Fact[], r: Range) {
  const out = new Map<string, { start: bigint; change: bigint; n: number }>();
  for (const f of facts) {
    let e = out.get(f.k);
    if (!e) {
      e = { start: 0n, change: 0n, n: 0 };
      out.set(f.k, e);
    }
    if (f.d === null || f.d < r.a) e.start += f.s;
    else if (f.d <= r.b) {
      e.change += f.s;
      e.n += f.n;
    }
  }
  return out;
}

type Percentiles = Map<string, { lower: number; n: number }>;

/** Percentile figures of the user against every user with activity on the same key in each range. */
async function metricPercentiles(
  deps: Deps,
  userId: string,
  metricIds: string[],
  ranges: Range[],
): Promise<Percentiles[]> {
  const out = ranges.map(() => new Map() as Percentiles);
  if (metricIds.length === 0) return out;
  const lo = ranges.reduce((m, r) => (r.a < m ? r.a : m), ranges[0]!.a);
  const hi = ranges.reduce((m, r) => (r.b > m ? r.b : m), ranges[0]!.b);
  const sql = deps.sql;
  const [w, m, y] = ranges as [Range, Range, Range];
  const rows = await sql<Array<Record<string, string | number>>>`
    with x as (
      select metric_id::text as m, '' as k, '' as v, user_id, local_date, value_micros
      from events
      where metric_id = any(${sql.array(metricIds)}::uuid[]) and local_date between ${lo} and ${hi}
      union all
      select e.metric_id::text, a.key, a.value, e.user_id, e.local_date, e.value_micros
      from events e cross join lateral jsonb_each_text(e.attributes) a
      where e.metric_id = any(${sql.array(metricIds)}::uuid[]) and e.local_date between ${lo} and ${hi}
        and e.attributes <> '{}'::jsonb
    ), per as (
      select m, k, v, user_id,
        count(*) filter (where local_date between ${w.a} and ${w.b}) as n0,
        coalesce(sum(value_micros) filter (where local_date between ${w.a} and ${w.b}), 0) as s0,
        count(*) filter (where local_date between ${m.a} and ${m.b}) as n1,
        coalesce(sum(value_micros) filter (where local_date between ${m.a} and ${m.b}), 0) as s1,
        count(*) filter (where local_date between ${y.a} and ${y.b}) as n2,
        coalesce(sum(value_micros) filter (where local_date between ${y.a} and ${y.b}), 0) as s2
      from x group by m, k, v, user_id
    )
    select p.m, p.k, p.v,
      count(*) filter (where p.n0 > 0 and p.s0 < me.s0)::int as l0, count(*) filter (where p.n0 > 0)::int as c0,
      count(*) filter (where p.n1 > 0 and p.s1 < me.s1)::int as l1, count(*) filter (where p.n1 > 0)::int as c1,
      count(*) filter (where p.n2 > 0 and p.s2 < me.s2)::int as l2, count(*) filter (where p.n2 > 0)::int as c2
    from per p join per me on me.m = p.m and me.k = p.k and me.v = p.v and me.user_id = ${userId}
    group by p.m, p.k, p.v`;
  for (const row of rows) {
    const key = row.k === '' ? String(row.m) : [row.m, row.k, row.v].join(SEP);
    out.forEach((map, i) => {
      map.set(key, { lower: Number(row[`l${i}`]), n: Number(row[`c${i}`]) });
    });
  }
  return out;
}

async function pointsPercentiles(
  deps: Deps,
  userId: string,
  systemIds: string[],
  ranges: Range[],
): Promise<Percentiles[]> {
  const out = ranges.map(() => new Map() as Percentiles);
  if (systemIds.length === 0) return out;
  const lo = ranges.reduce((m, r) => (r.a < m ? r.a : m), ranges[0]!.a);
  const hi = ranges.reduce((m, r) => (r.b > m ? r.b : m), ranges[0]!.b);
  const sql = deps.sql;
  const [w, m, y] = ranges as [Range, Range, Range];
  const rows = await sql<Array<Record<string, string | number>>>`
    with per as (
      select system_id::text as k, user_id,
        count(*) filter (where local_date between ${w.a} and ${w.b}) as n0,
        coalesce(sum(awarded) filter (where local_date between ${w.a} and ${w.b}), 0) as s0,
        count(*) filter (where local_date between ${m.a} and ${m.b}) as n1,
        coalesce(sum(awarded) filter (where local_date between ${m.a} and ${m.b}), 0) as s1,
        count(*) filter (where local_date between ${y.a} and ${y.b}) as n2,
        coalesce(sum(awarded) filter (where local_date between ${y.a} and ${y.b}), 0) as s2
      from points_awards
      where system_id = any(${sql.array(systemIds)}::uuid[]) and local_date between ${lo} and ${hi}
      group by system_id, user_id
    )
    select p.k,
      count(*) filter (where p.n0 > 0 and p.s0 < me.s0)::int as l0, count(*) filter (where p.n0 > 0)::int as c0,
      count(*) filter (where p.n1 > 0 and p.s1 < me.s1)::int as l1, count(*) filter (where p.n1 > 0)::int as c1,
      count(*) filter (where p.n2 > 0 and p.s2 < me.s2)::int as l2, count(*) filter (where p.n2 > 0)::int as c2
    from per p join per me on me.k = p.k and me.user_id = ${userId}
    group by p.k`;
  for (const row of rows) {
    out.forEach((map, i) => {
      map.set(String(row.k), { lower: Number(row[`l${i}`]), n: Number(row[`c${i}`]) });
    });
  }
  return out;
}

interface BoardHistory {
  board: LeaderboardRow;
  run: { start: string; end: string | null };
  /** Oldest first. */
  entries: Array<{ t: number; r: number | null; v: string | null }>;
}

/** The user's rank history of every visible board's runs that overlap [lo, hi]. One pipeline per board. */
async function boardHistories(deps: Deps, userId: string, lo: string, hi: string): Promise<BoardHistory[]> {
  const now = deps.clock.now();
  const out: BoardHistory[] = [];
  await Promise.all(
    deps.catalog.snapshot.leaderboards.map(async (board) => {
      if (leaderboardStatus(board, now) === 'inactive' || board.start > hi) return;
      if (board.end !== null && board.end < lo) return;
      const first = runContaining(board, board.start > lo ? board.start : lo);
      const runs = [];
      for (let i = first?.index ?? 0; runs.length < 800; i++) {
        const run = runByIndex(board, i);
        if (!run || run.start > hi) break;
        runs.push(run);
      }
      if (runs.length === 0) return;
      // The rank history of those runs (leaderboard_rank_changes), in commit order.
      const c = leaderboardRankChanges;
      const rows = await deps.db
        .select({ run: c.runStart, t: c.created, r: c.rank, v: c.value })
        .from(c)
        .where(
          and(
            eq(c.leaderboardId, board.id),
            eq(c.userId, userId),
            inArray(
              c.runStart,
              runs.map((run) => run.start),
            ),
          ),
        )
        .orderBy(asc(c.streamSeq), asc(c.created));
      const byRun = new Map<string, BoardHistory['entries']>();
      for (const e of rows) {
        const list = byRun.get(e.run) ?? [];
        list.push({ t: e.t.getTime(), r: e.r, v: e.v === null ? null : String(e.v) });
        byRun.set(e.run, list);
      }
      for (const run of runs) {
        const entries = byRun.get(run.start);
        if (entries?.length) out.push({ board, run, entries });
      }
    }),
  );
  return out;
}

/** Best (lowest) rank held during [a, b] per board, with the value at that moment (ties: earliest). */
function bestRanks(histories: BoardHistory[], r: Range, tz: string) {
  const from = instantOfLocalMidnight(r.a, tz);
  const to = instantOfLocalMidnight(addDays(r.b, 1), tz);
  const best = new Map<string, { board: LeaderboardRow; rank: number; value: number | null; t: number }>();
  const consider = (board: LeaderboardRow, rank: number | null, v: string | null, t: number) => {
    if (rank === null) return;
    const cur = best.get(board.id);
    if (!cur || rank < cur.rank || (rank === cur.rank && t < cur.t)) {
      best.set(board.id, { board, rank, value: v === null ? null : boardValue(board, v), t });
    }
  };
  for (const h of histories) {
    if (h.run.start > r.b || (h.run.end !== null && h.run.end < r.a)) continue;
    let carried: (typeof h.entries)[number] | null = null;
    for (const e of h.entries) {
      if (e.t < from) carried = e;
      else if (e.t < to) consider(h.board, e.r, e.v, e.t);
    }
    // Ranked when the period began (the run was already open then).
    if (carried && h.run.start <= r.a) consider(h.board, carried.r, carried.v, from);
  }
  return [...best.values()].map(({ board, rank, value }) => ({ board, rank, value }));
}

/** Longest streak length reached in the year, the period it was reached and when that streak started. */
async function longestStreak(deps: Deps, userId: string, ys: string, ye: string): Promise<WrappedStreakData> {
  const rows = await deps.sql<Array<{ ps: string; pe: string; length: number }>>`
    select period_start::text as ps, period_end::text as pe, length
    from streak_periods
    where user_id = ${userId} and period_start <= ${ye}
    order by period_start`;
  let best = -1;
  for (let i = 0; i < rows.length; i++) {
    const row = rows[i]!;
    if (row.ps < ys || row.length <= 0) continue;
    if (best < 0 || row.length > rows[best]!.length) best = i;
  }
  if (best < 0) return { length: 0, started: null, periodStart: null, periodEnd: null };
  // Walk back through contiguous periods of the same streak to the period that started it.
  let first = best;
  while (first > 0) {
    const prev = rows[first - 1]!;
    const cur = rows[first]!;
    if (prev.length <= 0 || prev.length > cur.length || addDays(prev.pe, 1) !== cur.ps) break;
    first--;
  }
  const b = rows[best]!;
  return { length: b.length, started: rows[first]!.ps, periodStart: b.ps, periodEnd: b.pe };
}

export async function wrapped(deps: Deps, userId: string, tz: string, year: number): Promise<WrappedData> {
  const snap = deps.catalog.snapshot;
  const ys = formatDate(year, 1, 1);
  const ye = formatDate(year, 12, 31);
  // Weeks intersecting the year may start up to 6 days before it and end up to 6 days after it.
  const lo = year > 1 ? addDays(ys, -6) : ys;
  const hi = addDays(ye, 6);
  const sql = deps.sql;

  const [evRows, evBefore, awRows, awBefore, achRaw, histories, streak] = await Promise.all([
    sql<Array<{ d: string; m: string; a: Record<string, string>; n: number; s: string }>>`
      select local_date::text as d, metric_id::text as m, attributes as a, count(*)::int as n,
        sum(value_micros)::text as s
      from events
      where user_id = ${userId} and local_date between ${lo} and ${hi}
      group by local_date, metric_id, attributes`,
    sql<Array<{ m: string; a: Record<string, string>; s: string }>>`
      select metric_id::text as m, attributes as a, sum(value_micros)::text as s
      from events
      where user_id = ${userId} and local_date < ${lo}
      group by metric_id, attributes`,
    sql<Array<{ d: string; m: string; n: number; s: string }>>`
      select local_date::text as d, system_id::text as m, count(*)::int as n, sum(awarded)::text as s
      from points_awards
      where user_id = ${userId} and local_date between ${lo} and ${hi}
      group by local_date, system_id`,
    sql<Array<{ m: string; s: string }>>`
      select system_id::text as m, sum(awarded)::text as s
      from points_awards
      where user_id = ${userId} and local_date < ${lo}
      group by system_id`,
    deps.redis.hgetall(deps.keys.user(userId).hash).then((h) => splitUserHash(h).achievements),
    boardHistories(deps, userId, lo, hi),
    longestStreak(deps, userId, ys, ye),
  ]);

  // ---- activity counts (events within the year)
  const perDay = new Map<string, number>();
  for (const r of evRows) if (r.d >= ys && r.d <= ye) perDay.set(r.d, (perDay.get(r.d) ?? 0) + r.n);
  const perWeek = new Map<string, number>();
  const perMonth = new Map<number, number>();
  for (const [d, n] of perDay) {
    const w = isoWeekStart(d);
    perWeek.set(w, (perWeek.get(w) ?? 0) + n);
    const mo = parseDate(d).month - 1;
    perMonth.set(mo, (perMonth.get(mo) ?? 0) + n);
  }
  const argmax = <K>(m: Map<K, number>, fallback: K, less: (a: K, b: K) => boolean): K => {
    let best = fallback;
    let bestN = 0;
    for (const [k, n] of m) {
      if (n > bestN || (n === bestN && n > 0 && less(k, best))) {
        best = k;
        bestN = n;
      }
    }
    return best;
  };
  const day = argmax(perDay, ys, (a, b) => a < b);
  const week = argmax(perWeek, isoWeekStart(ys), (a, b) => a < b);
  const month = argmax(perMonth, 0, (a, b) => a < b);
  const monthRange: Range = {
    a: formatDate(year, month + 1, 1),
    b: formatDate(year, month + 1, daysInMonth(year, month + 1)),
  };
  const weekRange: Range = { a: week, b: addDays(week, 6) };
  const yearRange: Range = { a: ys, b: ye };

  // ---- facts: metric and metric×attribute keys; points keys
  const eventKeys = (m: string, attrs: Record<string, string>) => {
    const keys = [m];
    for (const [k, v] of Object.entries(attrs ?? {})) {
      if (snap.eventAttributesByKey.has(k)) keys.push([m, k, v].join(SEP));
    }
    return keys;
  };
  const metricFacts: Fact[] = [];
  for (const r of evBefore)
    for (const k of eventKeys(r.m, r.a)) metricFacts.push({ d: null, k, n: 0, s: BigInt(r.s) });
  for (const r of evRows)
    for (const k of eventKeys(r.m, r.a)) metricFacts.push({ d: r.d, k, n: r.n, s: BigInt(r.s) });
  const pointsFacts: Fact[] = [
    ...awBefore.map((r) => ({ d: null, k: r.m, n: 0, s: BigInt(r.s) })),
    ...awRows.map((r) => ({ d: r.d, k: r.m, n: r.n, s: BigInt(r.s) })),
  ];

  // Percentiles for week, month, year over the metrics / systems the user was active on.
  const activeKeys = (facts: Fact[], r: Range) =>
    [...figuresOver(facts, r)].filter(([k, f]) => f.n > 0 && !k.includes(SEP)).map(([k]) => k);
  const pRanges = [weekRange, monthRange, yearRange];
  const metricIds = [...new Set(pRanges.flatMap((r) => activeKeys(metricFacts, r)))].filter((id) =>
    snap.metricsById.has(id),
  );
  const systemIds = [...new Set(pRanges.flatMap((r) => activeKeys(pointsFacts, r)))].filter((id) =>
    snap.systemsById.has(id),
  );
  const [mp, pp] = await Promise.all([
    metricPercentiles(deps, userId, metricIds, pRanges),
    pointsPercentiles(deps, userId, systemIds, pRanges),
  ]);

  const completions: Array<{ row: AchievementRow; at: number }> = [];
  for (const [id, raw] of Object.entries(achRaw)) {
    const row = snap.achievementsById.get(id);
    if (!row) continue;
    completions.push({ row, at: decodeCompletion(raw)!.at });
  }
  completions.sort((x, y) => x.at - y.at);

  const period = (r: Range, pct?: [Percentiles, Percentiles]): WrappedPeriodData => {
    const withPct = (f: WrappedFigures, p: { lower: number; n: number } | undefined): WrappedFigures =>
      pct ? { ...f, percentileThisPeriod: p ? percent2(BigInt(p.lower), BigInt(p.n)) : 0 } : f;
    const metrics: Record<string, WrappedMetricFigures> = {};
    const mf = figuresOver(metricFacts, r);
    for (const [k, f] of mf) {
      if (f.n === 0 || k.includes(SEP)) continue;
      const m = snap.metricsById.get(k);
      if (!m) continue;
      const base = (x: { start: bigint; change: bigint }) => ({
        name: m.name,
        units: m.units,
        currentTotal: fromMicros(Number(x.start + x.change)),
        changeThisPeriod: fromMicros(Number(x.change)),
        percentChange: percent2(x.change, x.start < 0n ? -x.start : x.start),
      });
      metrics[m.key] = { ...withPct(base(f), pct?.[0].get(k)), byAttribute: {} };
      for (const [k2, f2] of mf) {
        if (f2.n === 0 || !k2.startsWith(k + SEP)) continue;
        const [, attr, value] = k2.split(SEP) as [string, string, string];
        const by = metrics[m.key]!.byAttribute;
        by[attr] ??= {};
        by[attr][value] = withPct(base(f2), pct?.[0].get(k2));
      }
    }
    const points: Record<string, WrappedFigures> = {};
    for (const [k, f] of figuresOver(pointsFacts, r)) {
      if (f.n === 0) continue;
      const sys = snap.systemsById.get(k);
      if (!sys) continue;
      points[sys.key] = withPct(
        {
          name: sys.name,
          description: sys.description,
          currentTotal: Number(f.start + f.change),
          changeThisPeriod: Number(f.change),
          percentChange: percent2(f.change, f.start < 0n ? -f.start : f.start),
        },
        pct?.[1].get(k),
      );
    }
    const achievements = completions.filter((c) => {
      const d = localDate(c.at, tz);
      return d >= r.a && d <= r.b;
    });
    return { metrics, points, achievements, leaderboards: bestRanks(histories, r, tz) };
  };

  return {
    daysActive: perDay.size,
    weeksActive: perWeek.size,
    monthsActive: perMonth.size,
    mostActiveDay: { date: day, data: period({ a: day, b: day }) },
    mostActiveWeek: { start: weekRange.a, end: weekRange.b, data: period(weekRange, [mp[0]!, pp[0]!]) },
    mostActiveMonth: { month, data: period(monthRange, [mp[1]!, pp[1]!]) },
    entireYear: { longestStreak: streak, data: period(yearRange, [mp[2]!, pp[2]!]) },
  };
}
