import { describe, expect, it } from 'vitest';
import { Snapshot } from '../../src/catalog/snapshot';
import { buildReport, distribution } from '../../src/simulations/report';
import type { ReplayOutcome } from '../../src/simulations/replay';
import type { UserSummary } from '../../src/simulations/summary';

const run = (awards: Array<[string, string, number]> = []): ReplayOutcome => {
  const m = new Map<string, Map<string, { points: number; awards: number }>>();
  for (const [trigger, day, points] of awards) {
    const byDay = m.get(trigger) ?? new Map();
    byDay.set(day, { points, awards: 1 });
    m.set(trigger, byDay);
  }
  return { ops: 10, events: 10, refused: 0, skipped: 0, awards: m, durationMs: 1000 };
};

const user = (points: number, achievements: string[] = [], streak = 0, board?: number): UserSummary => ({
  points: { xp: points },
  levels: { xp: points >= 100 ? 'silver' : null },
  achievements,
  streak,
  boards: board === undefined ? {} : { top: { run: '2025-01-01', value: board } },
});

function snapshot(levels: Array<[string, number]>): Snapshot {
  const snap = new Snapshot(1);
  const sys = {
    id: 's1',
    key: 'xp',
    name: 'XP',
    triggers: [{ id: 't1', systemId: 's1', type: 'metric', points: 10 }],
    levels: levels.map(([key, points]) => ({ key, name: key, points })),
    boosts: [],
  } as never;
  snap.systems.push(sys);
  snap.systemsByKey.set('xp', sys);
  snap.triggersById.set('t1', (sys as { triggers: never[] }).triggers[0]!);
  const board = { id: 'b1', key: 'top', name: 'Top', rankBy: 'points' } as never;
  snap.leaderboards.push(board);
  snap.leaderboardsByKey.set('top', board);
  return snap;
}

describe('simulation report', () => {
  it('computes nearest-rank percentiles, mean, min and max', () => {
    const d = distribution([5, 1, 4, 2, 3, 10, 9, 8, 7, 6]);
    expect(d).toMatchObject({ users: 10, mean: 5.5, min: 1, max: 10 });
    expect(d.percentiles).toEqual({ p10: 1, p25: 3, p50: 5, p75: 8, p90: 9, p99: 10 });
    expect(distribution([])).toMatchObject({ users: 0, mean: 0, max: 0 });
  });

  it('counts changed users, levels per side, rank changes and the users who change most', () => {
    const cs = snapshot([['silver', 100]]);
    const ds = snapshot([
      ['silver', 100],
      ['gold', 150],
    ]);
    const current = new Map([
      ['a', user(200, [], 3, 200)],
      ['b', user(120, [], 0, 120)],
      ['c', user(50, [], 0, 50)],
    ]);
    // The draft: a gains 100, c stays; gold is a level only the draft has (levels read from summaries).
    const draft = new Map([
      ['a', { ...user(300, [], 3, 300), levels: { xp: 'gold' } }],
      ['b', user(120, [], 0, 120)],
      ['c', user(50, [], 0, 50)],
    ]);
    const r = buildReport({
      window: { from: null, to: Date.parse('2025-01-10T00:00:00Z') },
      userIds: ['a', 'b', 'c'],
      events: 10,
      completions: 0,
      currentSnap: cs,
      draftSnap: ds,
      current,
      draft,
      live: current,
      currentRun: run([['t1', '2025-01-02', 10]]),
      draftRun: run([['t1', '2025-01-02', 20]]),
      selfCheckApplicable: true,
      draftInfo: { create: 1, update: 0, delete: 0, warnings: [] },
    });
    expect(r.selfCheck).toMatchObject({ users: 3, matched: 3, mismatches: [] });
    expect(r.changedUsers).toBe(1);
    expect(r.topChanges.map((u) => u.userId)).toEqual(['a']);
    const xp = r.points[0]!;
    expect(xp.levels).toEqual([
      { key: 'silver', name: 'silver', points: 100, current: 2, draft: 1 },
      { key: 'gold', name: 'gold', points: 150, current: null, draft: 1 },
    ]);
    expect(xp.triggers[0]!.awards).toEqual({
      current: { count: 1, points: 10 },
      draft: { count: 1, points: 20 },
    });
    expect(xp.awardsPerDay).toEqual([{ date: '2025-01-02', current: 10, draft: 20 }]);
    expect(xp.histogram.reduce((n, h) => n + h.current, 0)).toBe(3);
    expect(r.leaderboards[0]!.top.current!.map((e) => e.userId)).toEqual(['a', 'b', 'c']);
    expect(r.leaderboards[0]!.rankChanges).toBe(0);
  });
});
