import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { updateStreakSettings } from '../../src/admin/streak-settings';
import { periodIndex } from '../../src/engine/periods';
import { verifyState } from '../../src/rebuild/verify';
import { computeStreak, STREAK_EPOCH_LEASE_MS } from '../../src/services/streak-recompute';
import { Scheduler } from '../../src/workers/scheduler';
import { adminCreate, createTestServer, type TestServer } from '../helpers/server';
import { createBoard, send, standings } from '../helpers/leaderboards';

// Streak settings changes (semantics §4.10): a frequency change recomputes every streak from recorded
// activity; rankings and streak leaderboards follow recomputed lengths, disabling and enabling
// (§4.1, §4.11, §6.4).

let t: TestServer;
let m: { id: string; key: string };
const day = (d: number, time = '12:00:00') => `2025-03-${String(d).padStart(2, '0')}T${time}Z`;
const streakOf = async (u: string) => (await t.api('GET', `/v1/users/${u}/streak`)).body;
const active = async () =>
  (await t.api('GET', '/v1/streaks/rankings?type=active')).body.map((r: any) => [r.userId, r.streakLength]);
const settings = async (patch: Record<string, unknown>) => {
  const r = await t.admin('PATCH', '/streaks/settings', patch);
  expect(r.status).toBe(200);
};

beforeAll(async () => {
  // Monday 10 March 2025.
  t = await createTestServer({ now: day(10, '06:00:00') });
  [m] = await adminCreate(t, '/metrics', [{ key: 'rc-lessons', name: 'Lessons' }]);
  await settings({ enabled: true, frequency: 'daily', conditions: [{ metricId: m.id, threshold: 1 }] });
});
afterAll(async () => t.close());

describe('computeStreak', () => {
  const ev = (date: string, v = 1) => ({ metricId: 'm', valueMicros: v * 1e6, localDate: date, at: 0 });
  const conds = [{ metricId: 'm', threshold: 1 }];
  it('chains consecutive met periods and breaks on a gap before the previous period', () => {
    const days = ['2025-03-03', '2025-03-04', '2025-03-06', '2025-03-07'].map((d) => ev(d));
    const daily = computeStreak('daily', 'all', conds, days, 20155); // 2025-03-08 is day 20155
    expect([daily.length, daily.started, daily.longest]).toEqual([2, '2025-03-06', 2]);
    expect(computeStreak('daily', 'all', conds, days, 20157).length).toBe(0);
    const weekly = computeStreak('weekly', 'all', conds, days, daily.curIdx);
    expect(weekly.periods).toHaveLength(1);
  });
});

describe('streak settings changes', () => {
  it('recomputes every streak from recorded activity when the frequency changes, and back', async () => {
    const board = await createBoard(t, { rankBy: 'streak' });
    for (const d of [10, 11, 12]) {
      t.clock.set(day(d));
      await send(t, m.key, 'rc-a', 1);
    }
    await send(t, m.key, 'rc-b', 1);
    await t.settle();
    expect((await streakOf('rc-a')).length).toBe(3);

    await settings({ frequency: 'weekly' });
    // One ISO week (10-16 March) met by both.
    expect(await streakOf('rc-a')).toMatchObject({ length: 1, started: '2025-03-10' });
    // The recomputed period history is the streak history key's, not a field of the user hash (which
    // would leave the hash's compact encoding), and has the new frequency's periods only.
    const k = t.deps.keys.user('rc-a');
    expect(await t.deps.redis.hexists(k.hash, 's:hist')).toBe(0);
    expect(await t.deps.redis.get(k.streakHistory)).toBe(`${periodIndex('weekly', '2025-03-10')}:1`);
    expect((await streakOf('rc-b')).length).toBe(1);
    await t.settle();
    expect(await active()).toEqual(
      expect.arrayContaining([
        ['rc-a', 1],
        ['rc-b', 1],
      ]),
    );
    expect((await standings(t, board.key)).map(([, v]) => v)).toEqual([1, 1]);

    await settings({ frequency: 'daily' });
    expect(await streakOf('rc-a')).toMatchObject({ length: 3, started: '2025-03-10' });
    const d10 = periodIndex('daily', '2025-03-10');
    expect(await t.deps.redis.get(k.streakHistory)).toBe(`${d10}:1,${d10 + 1}:2,${d10 + 2}:3`);
    // Meeting today again keeps counting on the recomputed streak.
    t.clock.set(day(13));
    expect((await send(t, m.key, 'rc-a', 1)).currentStreak.length).toBe(4);
    await t.settle();
    expect((await active())[0]).toEqual(['rc-a', 4]);
    expect((await standings(t, board.key))[0]).toEqual(['rc-a', 4]);
    expect(await t.deps.redis.get(k.streakHistory)).toBe(`${d10}:1,${d10 + 1}:2,${d10 + 2}:3,${d10 + 3}:4`);
    expect(await t.deps.redis.object('ENCODING', k.hash)).toBe('listpack');
    expect((await verifyState(t.deps)).differences).toEqual([]);
  });

  it('disabling empties rankings and streak leaderboards; after enabling old lengths push nobody down', async () => {
    const board = (await t.admin('GET', '/leaderboards?limit=100')).body.find(
      (b: any) => b.rankBy === 'streak',
    );
    await settings({ enabled: false });
    expect((await streakOf('rc-a')).length).toBe(0);
    expect(await active()).toEqual([]);
    expect(await standings(t, board.key)).toEqual([]);

    await settings({ enabled: true });
    t.clock.set(day(14));
    const r = await send(t, m.key, 'rc-new', 1);
    expect(r.currentStreak.length).toBe(1);
    await t.settle();
    expect((await streakOf('rc-new')).rank).toBe(1);
    expect(await active()).toEqual([['rc-new', 1]]);
    expect(await standings(t, board.key)).toEqual([['rc-new', 1]]);
  });
});

describe('a crash between a streak settings commit and its recompute', () => {
  const epochMarker = () =>
    t.deps.redis.hget(t.deps.keys.sched.done, `sr|${t.deps.catalog.snapshot.streak.epoch}`);
  const expectAllRanked = async (board: { key: string }, users: string[], length: number) => {
    await t.settle();
    expect(await active()).toEqual(expect.arrayContaining(users.map((u) => [u, length])));
    const ranked = await standings(t, board.key);
    expect(ranked).toEqual(expect.arrayContaining(users.map((u) => [u, length])));
    expect(ranked.every(([, v]) => v === length)).toBe(true);
    // Done once: the marker is gone.
    expect(await epochMarker()).toBeNull();
  };
  const streakBoard = async () =>
    (await t.admin('GET', '/leaderboards?limit=100')).body.find((b: any) => b.rankBy === 'streak');

  it('is finished by a scheduler pass once the committing process stops beating its marker', async () => {
    const board = await streakBoard();
    t.clock.set(day(15));
    await send(t, m.key, 'rc-k1', 1);
    await send(t, m.key, 'rc-k2', 1);
    t.clock.set(day(16));
    await send(t, m.key, 'rc-k1', 1);
    await t.settle();
    expect((await streakOf('rc-k1')).length).toBe(2);

    // The process dies in the recompute, after the settings committed: its calls never come back.
    // (Called below the route: a dead process would also have released the admin write lock.)
    const recompute = vi
      .spyOn(t.deps.redis, 'recomputeStreak')
      .mockImplementation(() => new Promise<never>(() => {}));
    void updateStreakSettings(t.deps, { frequency: 'weekly' });
    await vi.waitFor(() => expect(recompute).toHaveBeenCalled());
    recompute.mockRestore();
    expect((await t.admin('GET', '/streaks/settings')).body.frequency).toBe('weekly');
    expect((await streakOf('rc-k1')).length).toBe(0);

    const scheduler = new Scheduler(t.deps);
    // While its heartbeat is fresh, the work is left to the committing process.
    t.clock.advance(STREAK_EPOCH_LEASE_MS - 1000);
    await scheduler.runOnce();
    expect((await streakOf('rc-k1')).length).toBe(0);
    // Then a scheduler pass of any process takes it over.
    t.clock.advance(2000);
    await scheduler.runOnce();
    // One ISO week (10-16 March) met by each.
    expect(await streakOf('rc-k1')).toMatchObject({ length: 1, started: '2025-03-15' });
    expect((await streakOf('rc-k2')).length).toBe(1);
    await expectAllRanked(board, ['rc-k1', 'rc-k2', 'rc-new'], 1);
  });

  it('answers the committed change when the recompute fails, and the next scheduler pass does it', async () => {
    const board = await streakBoard();
    const recompute = vi
      .spyOn(t.deps.redis, 'recomputeStreak')
      .mockRejectedValue(new Error('Connection is closed.'));
    const r = await t.admin('PATCH', '/streaks/settings', { frequency: 'daily' });
    recompute.mockRestore();
    expect(r).toMatchObject({ status: 200, body: { frequency: 'daily' } });
    expect((await streakOf('rc-k1')).length).toBe(0);
    await new Scheduler(t.deps).runOnce();
    expect(await streakOf('rc-k1')).toMatchObject({ length: 2, started: '2025-03-15' });
    expect((await streakOf('rc-k2')).length).toBe(1);
    await t.settle();
    expect((await active()).slice(0, 2)).toEqual([
      ['rc-k1', 2],
      ['rc-k2', 1],
    ]);
    expect((await standings(t, board.key)).slice(0, 2)).toEqual([
      ['rc-k1', 2],
      ['rc-k2', 1],
    ]);
    expect(await epochMarker()).toBeNull();
  });
});
