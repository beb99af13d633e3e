import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { adminCreate, createTestServer, type TestServer } from '../helpers/server';
import { createBoard, getBoard, getUserBoard, send, standings } from '../helpers/leaderboards';

// Ordering, ties, unique ranks, value domain, points and decimal boards, userId windows
// (semantics §6.1, §6.4, §6.5, §6.6; application-api §6.9).

const NOW = '2025-03-10T12:00:00Z';
let t: TestServer;
let n = 0;
const metric = async () => {
  const [m] = await adminCreate(t, '/metrics', [{ key: `rank-m${++n}`, name: `Metric ${n}` }]);
  return m as { id: string; key: string };
};

beforeAll(async () => {
  t = await createTestServer({ now: NOW });
});
afterAll(async () => t.close());
beforeEach(() => t.clock.set(NOW));

describe('leaderboard ordering', () => {
  it('orders by value, then earliest change to the current value, then user id in byte order', async () => {
    const m = await metric();
    const b = await createBoard(t, { rankBy: 'metric', metricId: m.id });
    await send(t, m.key, 'u-a', 5);
    t.clock.advance(1000);
    await send(t, m.key, 'u-b', 5);
    t.clock.advance(1000);
    await send(t, m.key, 'u-c', 7);
    t.clock.advance(1000);
    // Same value at the same instant: byte order of the id ('B' < 'a' < 'x'), not arrival order.
    await send(t, m.key, 'x', 4);
    await send(t, m.key, 'a', 4);
    await send(t, m.key, 'B', 4);
    expect(await standings(t, b.key)).toEqual([
      ['u-c', 7],
      ['u-a', 5],
      ['u-b', 5],
      ['B', 4],
      ['a', 4],
      ['x', 4],
    ]);
    t.clock.advance(1000);
    await send(t, m.key, 'u-b', 2); // 7, reached after u-c
    t.clock.advance(1000);
    await send(t, m.key, 'B', 1); // 5, reached after u-a
    t.clock.advance(1000);
    await send(t, m.key, 'B', -1); // back to 4, but changed last: after a and x
    expect(await standings(t, b.key)).toEqual([
      ['u-c', 7],
      ['u-b', 7],
      ['u-a', 5],
      ['a', 4],
      ['x', 4],
      ['B', 4],
    ]);
    const res = await getBoard(t, b.key, { limit: 1000 });
    expect(res.body.rankings.map((r: any) => r.rank)).toEqual([1, 2, 3, 4, 5, 6]);
  });

  it('gives unique ranks 1..n to many equal values', async () => {
    const m = await metric();
    const b = await createBoard(t, { rankBy: 'metric', metricId: m.id });
    const ids = Array.from({ length: 12 }, (_, i) => `tie-${String(i).padStart(2, '0')}`);
    for (const id of [...ids].reverse()) await send(t, m.key, id, 3);
    const res = await getBoard(t, b.key, { limit: 100 });
    expect(res.body.rankings.map((r: any) => [r.rank, r.userId, r.value])).toEqual(
      ids.map((id, i) => [i + 1, id, 3]),
    );
  });

  it('never ranks values ≤ 0, and a ranked user whose value drops to ≤ 0 leaves', async () => {
    const m = await metric();
    const b = await createBoard(t, { rankBy: 'metric', metricId: m.id });
    await send(t, m.key, 'keep', 1);
    const neg = await send(t, m.key, 'neg', -3);
    expect(neg.leaderboards).toEqual({});
    t.clock.advance(1000);
    const enter = await send(t, m.key, 'zero', 2);
    expect(enter.leaderboards[b.key]).toMatchObject({ previousRank: null, rank: 1, threshold: 0 });
    expect(await standings(t, b.key)).toEqual([
      ['zero', 2],
      ['keep', 1],
    ]);
    t.clock.advance(1000);
    const leave = await send(t, m.key, 'zero', -2);
    expect(leave.leaderboards[b.key]).toMatchObject({ previousRank: 1, rank: null, threshold: 0 });
    expect(await standings(t, b.key)).toEqual([['keep', 1]]);
    const still = await send(t, m.key, 'neg', 3); // total 0: still not ranked, no entry
    expect(still.leaderboards).toEqual({});
    t.clock.advance(1000);
    const up = await send(t, m.key, 'neg', 4); // total 4
    expect(up.leaderboards[b.key]).toMatchObject({ previousRank: null, rank: 1 });
    expect(await standings(t, b.key)).toEqual([
      ['neg', 4],
      ['keep', 1],
    ]);
    const zero = await getUserBoard(t, 'zero', b.key);
    expect(zero.status).toBe(200);
    expect(zero.body).toMatchObject({ rank: null, value: null });
    expect(zero.body.history).toEqual([
      { timestamp: '2025-03-10T12:00:01.000Z', previousRank: null, rank: 1, previousValue: null, value: 2 },
      { timestamp: '2025-03-10T12:00:02.000Z', previousRank: 1, rank: null, previousValue: 2, value: null },
    ]);
  });

  it('ranks metric boards by exact decimal sums', async () => {
    const m = await metric();
    const b = await createBoard(t, { rankBy: 'metric', metricId: m.id });
    await send(t, m.key, 'd1', 0.1);
    const r = await send(t, m.key, 'd1', 0.2);
    expect(r.leaderboards[b.key]).toMatchObject({ previousRank: 1, rank: 1 });
    t.clock.advance(1000);
    await send(t, m.key, 'd2', 0.300001);
    await send(t, m.key, 'd3', 1.005);
    await send(t, m.key, 'd4', 0.3);
    expect(await standings(t, b.key)).toEqual([
      ['d3', 1.005],
      ['d2', 0.300001],
      ['d1', 0.3],
      ['d4', 0.3],
    ]);
    const d1 = await getUserBoard(t, 'd1', b.key);
    expect(d1.body).toMatchObject({ rank: 3, value: 0.3 });
    expect(d1.body.history.map((h: any) => [h.previousValue, h.value])).toEqual([
      [null, 0.1],
      [0.1, 0.3],
    ]);
  });

  it('ranks points boards by the points accrued in the run', async () => {
    const m = await metric();
    const [sys] = await adminCreate(t, '/points', [{ key: `xp${n}`, name: 'Experience' }]);
    await adminCreate(t, `/points/${sys.id}/triggers`, [
      { type: 'metric', metricId: m.id, metricThreshold: 1, points: 10, status: 'active' },
    ]);
    // Points earned before the board exists never count on it.
    const early = await send(t, m.key, 'p-early', 5);
    expect(early.points[sys.key].total).toBe(50);
    const b = await createBoard(t, {
      rankBy: 'points',
      pointsSystemId: sys.id,
      runUnit: 'day',
      runInterval: 1,
    });
    const first = await send(t, m.key, 'p-early', 1);
    expect(first.points[sys.key].total).toBe(60);
    expect(first.leaderboards[b.key]).toEqual({
      id: b.id,
      name: 'Board',
      key: b.key,
      rankBy: 'points',
      description: null,
      breakdownAttribute: null,
      breakdownAttributes: [],
      metricKey: null,
      metricName: null,
      pointsSystemKey: sys.key,
      pointsSystemName: 'Experience',
      start: '2025-03-10',
      end: '2025-03-10',
      maxParticipants: 1000,
      runUnit: 'day',
      runInterval: 1,
      threshold: 0,
      previousRank: null,
      rank: 1,
    });
    t.clock.advance(1000);
    await send(t, m.key, 'p-two', 3);
    expect(await standings(t, b.key)).toEqual([
      ['p-two', 30],
      ['p-early', 10],
    ]);
    // Next day: a new run, counted from zero.
    t.clock.set('2025-03-11T09:00:00Z');
    const next = await send(t, m.key, 'p-early', 2);
    expect(next.leaderboards[b.key]).toMatchObject({ start: '2025-03-11', end: '2025-03-11', rank: 1 });
    expect(await standings(t, b.key)).toEqual([['p-early', 20]]);
    expect(await standings(t, b.key, { run: '2025-03-10' })).toEqual([
      ['p-two', 30],
      ['p-early', 10],
    ]);
    const ub = await getUserBoard(t, 'p-early', b.key);
    expect(ub.body).toMatchObject({ rank: 1, value: 20, pointsSystemKey: sys.key, metricKey: null });
    expect(ub.body.history).toEqual([
      { timestamp: '2025-03-11T09:00:00.000Z', previousRank: null, rank: 1, previousValue: null, value: 20 },
    ]);
  });

  it('serves userId windows at the top, middle and bottom', async () => {
    const m = await metric();
    const b = await createBoard(t, { rankBy: 'metric', metricId: m.id });
    // w01 has 10 … w10 has 1: rank i = w<i>.
    for (let i = 1; i <= 10; i++) {
      await send(t, m.key, { id: `w${String(i).padStart(2, '0')}`, name: `User ${i}` }, 11 - i);
    }
    await send(t, m.key, 'w-unranked', -1);
    const win = async (q: Record<string, string | number>) => {
      const res = await getBoard(t, b.key, q);
      expect(res.status).toBe(200);
      return res.body.rankings.map((r: any) => [r.rank, r.userId]);
    };
    // Top: negative offsets clamp at index 0.
    expect(await win({ userId: 'w01', limit: 3 })).toEqual([
      [1, 'w01'],
      [2, 'w02'],
      [3, 'w03'],
    ]);
    expect(await win({ userId: 'w01', offset: -2, limit: 3 })).toEqual([
      [1, 'w01'],
      [2, 'w02'],
      [3, 'w03'],
    ]);
    // Middle.
    expect(await win({ userId: 'w05', offset: -1, limit: 3 })).toEqual([
      [4, 'w04'],
      [5, 'w05'],
      [6, 'w06'],
    ]);
    expect(await win({ userId: 'w05', offset: 2, limit: 2 })).toEqual([
      [7, 'w07'],
      [8, 'w08'],
    ]);
    // Bottom: the window stops at the last ranked user.
    expect(await win({ userId: 'w10', offset: -1, limit: 5 })).toEqual([
      [9, 'w09'],
      [10, 'w10'],
    ]);
    expect(await win({ userId: 'w10', limit: 3 })).toEqual([[10, 'w10']]);
    expect(await win({ userId: 'w10', offset: 1, limit: 3 })).toEqual([]);
    // Unranked or unknown user: empty window.
    expect(await win({ userId: 'w-unranked' })).toEqual([]);
    expect(await win({ userId: 'nobody' })).toEqual([]);
    // Plain offsets.
    expect(await win({ offset: 8, limit: 5 })).toEqual([
      [9, 'w09'],
      [10, 'w10'],
    ]);
    expect(await win({ limit: 0 })).toEqual([]);
    expect((await getBoard(t, b.key)).body.rankings).toHaveLength(10); // default limit 10
    const full = await getBoard(t, b.key, { limit: 2 });
    expect(full.body.rankings).toEqual([
      { userId: 'w01', userName: 'User 1', rank: 1, value: 10 },
      { userId: 'w02', userName: 'User 2', rank: 2, value: 9 },
    ]);
  });
});
