/**
 * The report of a simulation: current vs draft over the sampled users (distributions, levels,
 * achievements, streaks, leaderboards, awards per day, the users who change most) and the self-check
 * of the current replay against live state. Pure: built from summaries and replay tallies.
 */
import type { Snapshot } from '../catalog/snapshot';
import { histogramRanges, rarity } from '../engine/stats';
import type { ReplayOutcome } from './replay';
import { differences, type UserSummary } from './summary';

type Side<T> = { current: T | null; draft: T | null };

export interface Distribution {
  users: number;
  mean: number;
  min: number;
  max: number;
  percentiles: { p10: number; p25: number; p50: number; p75: number; p90: number; p99: number };
}

export interface SimulationReport {
  window: { from: string | null; to: string };
  users: number;
  events: number;
  completions: number;
  replay: {
    current: { ops: number; durationMs: number; opsPerSecond: number; eventsPerSecond: number };
    draft: { ops: number; durationMs: number; opsPerSecond: number; eventsPerSecond: number };
  };
  selfCheck: {
    users: number;
    matched: number;
    /** False when the window does not start at the beginning of the history or ends before now. */
    applicable: boolean;
    mismatches: Array<{ userId: string; what: string; live: unknown; replay: unknown }>;
  };
  changedUsers: number;
  draft: { create: number; update: number; delete: number; warnings: string[] };
  points: Array<{
    key: string;
    name: string;
    distribution: Side<Distribution>;
    histogram: Array<{ from: number; to: number; current: number; draft: number }>;
    levels: Array<{
      key: string;
      name: string;
      points: number;
      current: number | null;
      draft: number | null;
    }>;
    triggers: Array<{
      id: string;
      type: string;
      points: Side<number>;
      awards: Side<{ count: number; points: number }>;
    }>;
    awardsPerDay: Array<{ date: string; current: number; draft: number }>;
  }>;
  achievements: Array<{
    key: string;
    name: string;
    completions: Side<number>;
    rarity: Side<number>;
  }>;
  streaks: {
    distribution: Side<Distribution>;
    histogram: Array<{ from: number; to: number | null; current: number; draft: number }>;
  };
  leaderboards: Array<{
    key: string;
    name: string;
    run: Side<string>;
    top: Side<Array<{ rank: number; userId: string; value: number }>>;
    /** Users ranked on either side whose rank differs (entering or leaving included). */
    rankChanges: number;
  }>;
  topChanges: Array<{
    userId: string;
    points: Record<string, { current: number | null; draft: number | null }>;
    levels: Record<string, { current: string | null; draft: string | null }>;
    achievementsGained: string[];
    achievementsLost: string[];
    streak: { current: number; draft: number };
  }>;
  /** Effects the replay cannot reproduce exactly, and counts of what it refused or skipped. */
  notReproduced: string[];
}

const pct = (sorted: number[], p: number) =>
  sorted.length
    ? sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))]!
    : 0;

export function distribution(values: number[]): Distribution {
  const s = [...values].sort((a, b) => a - b);
  const sum = s.reduce((n, v) => n + v, 0);
  return {
    users: s.length,
    mean: s.length ? Math.round((sum / s.length) * 100) / 100 : 0,
    min: s[0] ?? 0,
    max: s[s.length - 1] ?? 0,
    percentiles: {
      p10: pct(s, 10),
      p25: pct(s, 25),
      p50: pct(s, 50),
      p75: pct(s, 75),
      p90: pct(s, 90),
      p99: pct(s, 99),
    },
  };
}

const STREAK_BUCKETS: Array<[number, number | null]> = [
  [0, 0],
  [1, 1],
  [2, 3],
  [4, 6],
  [7, 13],
  [14, 29],
  [30, 59],
  [60, 99],
  [100, null],
];

export interface ReportInput {
  window: { from: number | null; to: number };
  userIds: string[];
  events: number;
  completions: number;
  currentSnap: Snapshot;
  draftSnap: Snapshot;
  current: Map<string, UserSummary>;
  draft: Map<string, UserSummary>;
  live: Map<string, UserSummary>;
  currentRun: ReplayOutcome;
  draftRun: ReplayOutcome;
  selfCheckApplicable: boolean;
  draftInfo: { create: number; update: number; delete: number; warnings: string[] };
}

const rate = (n: number, ms: number) => (ms > 0 ? Math.round((n / ms) * 1000) : 0);

export function buildReport(inp: ReportInput): SimulationReport {
  const { currentSnap: cs, draftSnap: ds, userIds } = inp;
  // Self-check: the current replay against live state.
  const mismatches: SimulationReport['selfCheck']['mismatches'] = [];
  let matched = 0;
  for (const id of userIds) {
    const d = differences(inp.live.get(id), inp.current.get(id), true);
    if (d.length === 0) matched++;
    for (const x of d)
      if (mismatches.length < 50) mismatches.push({ userId: id, what: x.what, live: x.a, replay: x.b });
  }

  // Changed users and the users who change most.
  let changedUsers = 0;
  const changes: Array<{ score: number; entry: SimulationReport['topChanges'][number] }> = [];
  for (const id of userIds) {
    const a = inp.current.get(id);
    const b = inp.draft.get(id);
    if (differences(a, b, false).length === 0) continue;
    changedUsers++;
    const entry: SimulationReport['topChanges'][number] = {
      userId: id,
      points: {},
      levels: {},
      achievementsGained: (b?.achievements ?? []).filter((k) => !a?.achievements.includes(k)),
      achievementsLost: (a?.achievements ?? []).filter((k) => !b?.achievements.includes(k)),
      streak: { current: a?.streak ?? 0, draft: b?.streak ?? 0 },
    };
    let score = 0;
    for (const k of new Set([...Object.keys(a?.points ?? {}), ...Object.keys(b?.points ?? {})])) {
      const x = a?.points[k] ?? null;
      const y = b?.points[k] ?? null;
      if (x !== y) {
        entry.points[k] = { current: x, draft: y };
        score += Math.abs((y ?? 0) - (x ?? 0));
      }
      const lx = a?.levels[k] ?? null;
      const ly = b?.levels[k] ?? null;
      if (lx !== ly) entry.levels[k] = { current: lx, draft: ly };
    }
    score += 1000 * (entry.achievementsGained.length + entry.achievementsLost.length);
    score += Math.abs(entry.streak.draft - entry.streak.current);
    changes.push({ score, entry });
  }
  changes.sort((x, y) => y.score - x.score || (x.entry.userId < y.entry.userId ? -1 : 1));

  // Points systems, by key.
  const systemKeys = [...new Set([...cs.systems.map((s) => s.key), ...ds.systems.map((s) => s.key)])];
  const totals = (m: Map<string, UserSummary>, key: string) =>
    userIds.map((id) => m.get(id)?.points[key]).filter((v): v is number => v !== undefined);
  const points = systemKeys.map((key) => {
    const c = cs.systemsByKey.get(key);
    const d = ds.systemsByKey.get(key);
    const ct = c ? totals(inp.current, key) : [];
    const dt = d ? totals(inp.draft, key) : [];
    const ranges = histogramRanges(Math.max(0, ...ct, ...dt));
    const inRange = (list: number[], r: { from: number; to: number }, first: boolean) =>
      list.filter((v) => (first ? v <= r.to : v >= r.from && v <= r.to)).length;
    const levelKeys = [...new Set([...(c?.levels ?? []), ...(d?.levels ?? [])].map((l) => l.key))];
    const levelCount = (m: Map<string, UserSummary>, present: boolean, lk: string) =>
      present ? userIds.filter((id) => m.get(id)?.levels[key] === lk).length : null;
    const triggerIds = [...new Set([...(c?.triggers ?? []), ...(d?.triggers ?? [])].map((t) => t.id))];
    const awardsOf = (run: ReplayOutcome, id: string) => {
      const byDay = run.awards.get(id);
      let count = 0;
      let pts = 0;
      for (const t of byDay?.values() ?? []) {
        count += t.awards;
        pts += t.points;
      }
      return { count, points: pts };
    };
    const days = new Map<string, { current: number; draft: number }>();
    const addDays = (run: ReplayOutcome, snap: Snapshot, side: 'current' | 'draft') => {
      const sys = snap.systemsByKey.get(key);
      if (!sys) return;
      for (const [tid, byDay] of run.awards) {
        if (snap.triggersById.get(tid)?.systemId !== sys.id) continue;
        for (const [day, t] of byDay) {
          const e = days.get(day) ?? { current: 0, draft: 0 };
          e[side] += t.points;
          days.set(day, e);
        }
      }
    };
    addDays(inp.currentRun, cs, 'current');
    addDays(inp.draftRun, ds, 'draft');
    return {
      key,
      name: (d ?? c)!.name,
      distribution: { current: c ? distribution(ct) : null, draft: d ? distribution(dt) : null },
      histogram: ranges.map((r, i) => ({
        from: r.from,
        to: r.to,
        current: inRange(ct, r, i === 0),
        draft: inRange(dt, r, i === 0),
      })),
      levels: levelKeys
        .map((lk) => {
          const l = d?.levels.find((x) => x.key === lk) ?? c!.levels.find((x) => x.key === lk)!;
          return {
            key: lk,
            name: l.name,
            points: l.points,
            current: levelCount(inp.current, !!c?.levels.some((x) => x.key === lk), lk),
            draft: levelCount(inp.draft, !!d?.levels.some((x) => x.key === lk), lk),
          };
        })
        .sort((x, y) => x.points - y.points),
      triggers: triggerIds.map((id) => {
        const ct2 = c?.triggers.find((t) => t.id === id);
        const dt2 = d?.triggers.find((t) => t.id === id);
        return {
          id,
          type: (dt2 ?? ct2)!.type,
          points: { current: ct2?.points ?? null, draft: dt2?.points ?? null },
          awards: {
            current: ct2 ? awardsOf(inp.currentRun, id) : null,
            draft: dt2 ? awardsOf(inp.draftRun, id) : null,
          },
        };
      }),
      awardsPerDay: [...days.entries()]
        .sort(([a], [b]) => (a < b ? -1 : 1))
        .map(([date, v]) => ({ date, ...v })),
    };
  });

  // Achievements, by key.
  const achKeys = [...new Set([...cs.achievements.map((a) => a.key), ...ds.achievements.map((a) => a.key)])];
  const completions = (m: Map<string, UserSummary>, key: string) =>
    userIds.filter((id) => m.get(id)?.achievements.includes(key)).length;
  const achievements = achKeys.map((key) => {
    const c = cs.achievementsByKey.get(key);
    const d = ds.achievementsByKey.get(key);
    const cc = c ? completions(inp.current, key) : null;
    const dc = d ? completions(inp.draft, key) : null;
    return {
      key,
      name: (d ?? c)!.name,
      completions: { current: cc, draft: dc },
      rarity: {
        current: cc === null ? null : rarity(cc, userIds.length),
        draft: dc === null ? null : rarity(dc, userIds.length),
      },
    };
  });

  // Streaks.
  const lengths = (m: Map<string, UserSummary>) =>
    userIds.map((id) => m.get(id)?.streak).filter((v): v is number => v !== undefined);
  const cl = lengths(inp.current);
  const dl = lengths(inp.draft);
  const inBucket = (list: number[], [from, to]: [number, number | null]) =>
    list.filter((v) => v >= from && (to === null || v <= to)).length;

  // Leaderboards: each side's newest run, ranked by value (ties by user id).
  const boardKeys = [
    ...new Set([...cs.leaderboards.map((b) => b.key), ...ds.leaderboards.map((b) => b.key)]),
  ];
  const ranking = (m: Map<string, UserSummary>, present: boolean, key: string) => {
    if (!present) return null;
    let run: string | null = null;
    for (const id of userIds) {
      const e = m.get(id)?.boards[key];
      if (e && (run === null || e.run > run)) run = e.run;
    }
    const entries = userIds
      .map((id) => ({ userId: id, e: m.get(id)?.boards[key] }))
      // Only positive values are ranked (lua/lib/board.lua).
      .filter((x) => x.e && x.e.run === run && x.e.value > 0)
      .map((x) => ({ userId: x.userId, value: x.e!.value }))
      .sort((a, b) => b.value - a.value || (a.userId < b.userId ? -1 : 1))
      .map((x, i) => ({ rank: i + 1, ...x }));
    return { run, entries };
  };
  const leaderboards = boardKeys.map((key) => {
    const c = cs.leaderboardsByKey.get(key);
    const d = ds.leaderboardsByKey.get(key);
    const cr = ranking(inp.current, !!c, key);
    const dr = ranking(inp.draft, !!d, key);
    const rankOf = (r: typeof cr) => new Map((r?.entries ?? []).map((e) => [e.userId, e.rank]));
    const a = rankOf(cr);
    const b = rankOf(dr);
    let moved = 0;
    for (const id of new Set([...a.keys(), ...b.keys()])) if (a.get(id) !== b.get(id)) moved++;
    return {
      key,
      name: (d ?? c)!.name,
      run: { current: cr?.run ?? null, draft: dr?.run ?? null },
      top: { current: cr ? cr.entries.slice(0, 10) : null, draft: dr ? dr.entries.slice(0, 10) : null },
      rankChanges: moved,
    };
  });

  const notReproduced = [
    'User attributes are replayed as they are now (their history is not recorded): attribute-filtered rules see today’s values.',
    'Admin streak operations (restores, manual freeze grants) and user-specific boosts added after the fact are not replayed.',
    'Leaderboard ranks are computed from the sampled users’ final values (ties by user id); group capacity evictions across the whole population are not modelled.',
    'Configuration changes made during the window are not replayed: both runs use one configuration for the whole window.',
  ];
  for (const [side, run] of [
    ['current', inp.currentRun],
    ['draft', inp.draftRun],
  ] as const) {
    if (run.refused)
      notReproduced.push(`${run.refused} recorded item(s) refused by the ${side} configuration`);
    if (run.skipped)
      notReproduced.push(
        `${run.skipped} event(s) of metrics the ${side} configuration does not have were skipped`,
      );
  }

  const perf = (run: ReplayOutcome) => ({
    ops: run.ops,
    durationMs: run.durationMs,
    opsPerSecond: rate(run.ops, run.durationMs),
    eventsPerSecond: rate(run.events, run.durationMs),
  });
  return {
    window: {
      from: inp.window.from === null ? null : new Date(inp.window.from).toISOString(),
      to: new Date(inp.window.to).toISOString(),
    },
    users: userIds.length,
    events: inp.events,
    completions: inp.completions,
    replay: { current: perf(inp.currentRun), draft: perf(inp.draftRun) },
    selfCheck: { users: userIds.length, matched, applicable: inp.selfCheckApplicable, mismatches },
    changedUsers,
    draft: inp.draftInfo,
    points,
    achievements,
    streaks: {
      distribution: { current: distribution(cl), draft: distribution(dl) },
      histogram: STREAK_BUCKETS.map((b) => ({
        from: b[0],
        to: b[1],
        current: inBucket(cl, b),
        draft: inBucket(dl, b),
      })),
    },
    leaderboards,
    topChanges: changes.slice(0, 20).map((c) => c.entry),
    notReproduced,
  };
}
