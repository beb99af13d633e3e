import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { adminCreate, createTestServer, type TestServer } from '../helpers/server';
import { createBoard, getBoard, getUserBoard, inBatches, send, standings } from '../helpers/leaderboards';

// Membership: the per-group cap with the strict-beat rule and eviction, breakdown groups, the event
// response's `leaderboards` entries and rank history (semantics §6.4, §6.7, §6.8).

const NOW = '2025-03-10T12:00:00Z';
let t: TestServer;
let city: { id: string; key: string };
let n = 0;
const metric = async () => {
  const [m] = await adminCreate(t, '/metrics', [{ key: `mem-m${++n}`, name: `Metric ${n}` }]);
  return m as { id: string; key: string };
};
const at = (s: number) => new Date(Date.parse(NOW) + s * 1000).toISOString();

beforeAll(async () => {
  t = await createTestServer({ now: NOW });
  [city] = await adminCreate(t, '/attributes', [{ key: 'city', name: 'City', type: 'user' }]);
});
afterAll(async () => t.close());
beforeEach(() => t.clock.set(NOW));

describe('event response leaderboards entries', () => {
  it('reports only boards where the rank or ranked value changed, with run dates and thresholds', async () => {
    const m = await metric();
    const other = await metric();
    const capped = await createBoard(t, { rankBy: 'metric', metricId: m.id, maxParticipants: 2 });
    const weekly = await createBoard(t, {
      rankBy: 'metric',
      metricId: m.id,
      start: '2025-03-03',
      runUnit: 'day',
      runInterval: 7,
      description: 'Weekly',
    });
    const elsewhere = await createBoard(t, { rankBy: 'metric', metricId: other.id });

    const r1 = await send(t, m.key, 'e1', 10);
    expect(Object.keys(r1.leaderboards).sort()).toEqual([capped.key, weekly.key].sort());
    expect(r1.leaderboards[weekly.key]).toEqual({
      id: weekly.id,
      name: 'Board',
      key: weekly.key,
      rankBy: 'metric',
      description: 'Weekly',
      breakdownAttribute: null,
      breakdownAttributes: [],
      metricKey: m.key,
      metricName: `Metric ${n - 1}`,
      pointsSystemKey: null,
      pointsSystemName: null,
      start: '2025-03-10', // the run's dates, not the configured start
      end: '2025-03-16',
      maxParticipants: 1000,
      runUnit: 'day',
      runInterval: 7,
      threshold: 0,
      previousRank: null,
      rank: 1,
    });
    expect(r1.leaderboards[capped.key]).toMatchObject({
      start: '2025-03-10',
      end: null,
      threshold: 0,
      previousRank: null,
      rank: 1,
    });
    expect(r1.leaderboards[capped.key]).not.toHaveProperty('breakdownAttributeValue');
    expect(r1.leaderboards[capped.key]).not.toHaveProperty('breakdownAttributeValues');
    expect(r1.leaderboards[elsewhere.key]).toBeUndefined();

    t.clock.advance(1000);
    const r2 = await send(t, m.key, 'e2', 20);
    // The capped board is now full: threshold = lowest ranked value.
    expect(r2.leaderboards[capped.key]).toMatchObject({ threshold: 10, previousRank: null, rank: 1 });
    expect(r2.leaderboards[weekly.key]).toMatchObject({ threshold: 0, previousRank: null, rank: 1 });

    t.clock.advance(1000);
    const r3 = await send(t, m.key, 'e1', 5); // 15: same rank, new value → reported
    expect(r3.leaderboards[capped.key]).toMatchObject({ threshold: 15, previousRank: 2, rank: 2 });
    expect(r3.leaderboards[weekly.key]).toMatchObject({ previousRank: 2, rank: 2 });

    t.clock.advance(1000);
    const r4 = await send(t, m.key, 'e3', 15); // equal to the lowest of the full board: stays out
    expect(r4.leaderboards[capped.key]).toBeUndefined();
    expect(r4.leaderboards[weekly.key]).toMatchObject({ previousRank: null, rank: 3 });

    t.clock.advance(1000);
    const r5 = await send(t, m.key, 'e3', 1); // 16 beats 15: enters, e1 is evicted
    expect(r5.leaderboards[capped.key]).toMatchObject({ threshold: 16, previousRank: null, rank: 2 });
    expect(r5.leaderboards[weekly.key]).toMatchObject({ threshold: 0, previousRank: 3, rank: 2 });

    // An event on another metric leaves these boards alone.
    const r6 = await send(t, other.key, 'e3', 1);
    expect(Object.keys(r6.leaderboards)).toEqual([elsewhere.key]);
    // A zero value changes nothing anywhere.
    expect((await send(t, m.key, 'e3', 0)).leaderboards).toEqual({});

    expect(await standings(t, capped.key)).toEqual([
      ['e2', 20],
      ['e3', 16],
    ]);
  });
});

describe('cap, strict beat and eviction', () => {
  it('admits a newcomer only with a strictly greater value and evicts the lowest', async () => {
    const m = await metric();
    const b = await createBoard(t, { rankBy: 'metric', metricId: m.id, maxParticipants: 3 });
    await send(t, m.key, 'a', 10); // t+0
    t.clock.set(at(1));
    await send(t, m.key, 'b', 20);
    t.clock.set(at(2));
    await send(t, m.key, 'c', 30);
    t.clock.set(at(3));
    const eq = await send(t, m.key, 'd', 10);
    expect(eq.leaderboards).toEqual({});
    expect(await standings(t, b.key)).toEqual([
      ['c', 30],
      ['b', 20],
      ['a', 10],
    ]);
    t.clock.set(at(4));
    const beat = await send(t, m.key, 'd', 1); // 11 > 10
    expect(beat.leaderboards[b.key]).toMatchObject({ previousRank: null, rank: 3, threshold: 11 });
    expect(await standings(t, b.key)).toEqual([
      ['c', 30],
      ['b', 20],
      ['d', 11],
    ]);
    expect((await getUserBoard(t, 'a', b.key)).body).toMatchObject({ rank: null, value: null });

    // The evicted user keeps accruing and re-enters on a later update (15 > 11), evicting d.
    t.clock.set(at(5));
    const back = await send(t, m.key, 'a', 5);
    expect(back.leaderboards[b.key]).toMatchObject({ previousRank: null, rank: 3, threshold: 15 });

    // A ranked user dropping to 0 leaves; nobody is promoted into the free place.
    t.clock.set(at(6));
    const drop = await send(t, m.key, 'c', -30);
    expect(drop.leaderboards[b.key]).toMatchObject({ previousRank: 1, rank: null, threshold: 0 });
    expect(await standings(t, b.key)).toEqual([
      ['b', 20],
      ['a', 15],
    ]);
    // With the group no longer full, d's next update enters at any positive value.
    t.clock.set(at(7));
    const again = await send(t, m.key, 'd', 1);
    expect(again.leaderboards[b.key]).toMatchObject({ previousRank: null, rank: 3, threshold: 12 });

    // History: own changes and evictions, oldest first; rank shifts by others are not recorded.
    const ha = await getUserBoard(t, 'a', b.key);
    expect(ha.body).toMatchObject({ rank: 2, value: 15 });
    expect(ha.body.history).toEqual([
      { timestamp: at(0), previousRank: null, rank: 1, previousValue: null, value: 10 },
      { timestamp: at(4), previousRank: 3, rank: null, previousValue: 10, value: null },
      { timestamp: at(5), previousRank: null, rank: 3, previousValue: null, value: 15 },
    ]);
    const hd = await getUserBoard(t, 'd', b.key);
    expect(hd.body.history).toEqual([
      { timestamp: at(4), previousRank: null, rank: 3, previousValue: null, value: 11 },
      { timestamp: at(5), previousRank: 3, rank: null, previousValue: 11, value: null },
      { timestamp: at(7), previousRank: null, rank: 3, previousValue: null, value: 12 },
    ]);
    // numEvents keeps the most recent entries, still oldest → newest.
    const last2 = await getUserBoard(t, 'd', b.key, { numEvents: 2 });
    expect(last2.body.history.map((h: any) => h.timestamp)).toEqual([at(5), at(7)]);
    expect((await getUserBoard(t, 'd', b.key, { numEvents: 0 })).body.history).toEqual([]);
  });

  it('caps each breakdown group at 1,000 independently, with the strict-beat rule', async () => {
    const m = await metric();
    const b = await createBoard(t, { rankBy: 'metric', metricId: m.id, breakdownAttributes: [city.id] });
    expect(b.maxParticipants).toBe(1000);
    const paris = Array.from({ length: 1000 }, (_, i) => i + 1); // p<v> has value v
    await inBatches(paris, 50, (v) =>
      send(t, m.key, { id: `p${String(v).padStart(4, '0')}`, attributes: { city: 'paris' } }, v),
    );
    const full = await standings(t, b.key, { userAttributes: 'city:paris' });
    expect(full).toHaveLength(1000);
    expect(full[0]).toEqual(['p1000', 1000]);
    expect(full[999]).toEqual(['p0001', 1]);

    // Equal to the lowest: stays out.
    const eq = await send(t, m.key, { id: 'p-eq', attributes: { city: 'paris' } }, 1);
    expect(eq.leaderboards[b.key]).toBeUndefined();

    // Another group fills independently: not full, threshold 0.
    const rome = await send(t, m.key, { id: 'r1', attributes: { city: 'rome' } }, 1);
    expect(rome.leaderboards[b.key]).toMatchObject({
      breakdownAttribute: 'city',
      breakdownAttributes: ['city'],
      breakdownAttributeValue: 'rome',
      breakdownAttributeValues: [{ key: 'city', value: 'rome' }],
      threshold: 0,
      previousRank: null,
      rank: 1,
    });

    // Strictly above the lowest (1) enters, tied with p0002 but later, and evicts p0001.
    t.clock.advance(1000);
    const beat = await send(t, m.key, { id: 'p-new', attributes: { city: 'paris' } }, 2);
    expect(beat.leaderboards[b.key]).toMatchObject({
      breakdownAttributeValue: 'paris',
      breakdownAttributeValues: [{ key: 'city', value: 'paris' }],
      previousRank: null,
      rank: 1000,
      threshold: 2,
    });
    const after = await standings(t, b.key, { userAttributes: 'city:paris' });
    expect(after).toHaveLength(1000);
    expect(after.slice(-2)).toEqual([
      ['p0002', 2],
      ['p-new', 2],
    ]);
    expect(after.some(([id]) => id === 'p0001')).toBe(false);
    const evicted = await getUserBoard(t, 'p0001', b.key);
    expect(evicted.body).toMatchObject({ rank: null, value: null });
    expect(evicted.body.history.at(-1)).toMatchObject({ previousRank: 1000, rank: null, value: null });

    expect(await standings(t, b.key, { userAttributes: 'city:rome' })).toEqual([['r1', 1]]);
    // userId without userAttributes uses the user's own group.
    expect(await standings(t, b.key, { userId: 'r1' })).toEqual([['r1', 1]]);
    expect((await getBoard(t, b.key, { userId: 'p-new', offset: -1, limit: 3 })).body.rankings).toEqual([
      { userId: 'p0002', userName: null, rank: 999, value: 2 },
      { userId: 'p-new', userName: null, rank: 1000, value: 2 },
    ]);
    // A group nobody is in is empty.
    expect(await standings(t, b.key, { userAttributes: 'city:oslo' })).toEqual([]);
  });

  it('fixes the group at first entry in the run and never enters users without the attribute', async () => {
    const m = await metric();
    const b = await createBoard(t, { rankBy: 'metric', metricId: m.id, breakdownAttributes: [city.id] });
    const none = await send(t, m.key, 'g-none', 5);
    expect(none.leaderboards).toEqual({});
    expect((await getUserBoard(t, 'g-none', b.key)).body).toMatchObject({ rank: null, value: null });

    await send(t, m.key, { id: 'g1', attributes: { city: 'lima' } }, 1);
    const moved = await send(t, m.key, { id: 'g1', attributes: { city: 'quito' } }, 2);
    expect(moved.leaderboards[b.key]).toMatchObject({
      breakdownAttributeValue: 'lima',
      breakdownAttributeValues: [{ key: 'city', value: 'lima' }],
      previousRank: 1,
      rank: 1,
    });
    expect(await standings(t, b.key, { userAttributes: 'city:lima' })).toEqual([['g1', 3]]);
    expect(await standings(t, b.key, { userAttributes: 'city:quito' })).toEqual([]);
    expect((await getUserBoard(t, 'g1', b.key)).body).toMatchObject({ rank: 1, value: 3 });
  });
});
