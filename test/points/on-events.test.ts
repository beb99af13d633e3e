import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { verifyState } from '../../src/rebuild/verify';
import { adminCreate, createTestServer, type TestServer } from '../helpers/server';

// Points awarded by POST /v1/metrics/{key}/event (semantics §5.1–§5.7, §5.9; application-api §7.8).

let t: TestServer;
let n = 0;
const uid = () => `points-user-${++n}`;
let plan: { id: string };
let source: { id: string };
const NOW = '2025-03-10T12:00:00.000Z';

const send = (
  key: string,
  user: Record<string, unknown> | string,
  value: number,
  attributes?: Record<string, string>,
) =>
  t.api('POST', `/v1/metrics/${key}/event`, {
    user: typeof user === 'string' ? { id: user } : user,
    value,
    ...(attributes ? { attributes } : {}),
  });

async function metric(key: string) {
  const [m] = await adminCreate(t, '/metrics', [{ key, name: `Metric ${key}` }]);
  return m as { id: string; key: string };
}

async function system(key: string, extra: Record<string, unknown> = {}) {
  const [s] = await adminCreate(t, '/points', [{ key, name: `System ${key}`, ...extra }]);
  return s as { id: string; key: string };
}

async function triggers(systemId: string, items: Array<Record<string, unknown>>) {
  return (await adminCreate(
    t,
    `/points/${systemId}/triggers`,
    items.map((i) => ({ status: 'active', ...i })),
  )) as Array<{ id: string }>;
}

/** The awards of one system in a response, reduced to [awarded, total, triggerId]. */
const awards = (res: { body: any }, key: string) =>
  (res.body.points[key]?.awards ?? []).map((a: any) => [a.awarded, a.total, a.trigger.id]);

beforeAll(async () => {
  t = await createTestServer();
  [plan, source] = await adminCreate(t, '/attributes', [
    { key: 'plan', name: 'Plan', type: 'user' },
    { key: 'source', name: 'Source', type: 'event' },
  ]);
});
afterAll(async () => t.close());

describe('points on events', () => {
  it('metric trigger: one award per crossing of multiples of the threshold (N=3, P=10)', async () => {
    const m = await metric('mt');
    const s = await system('mt-xp', { description: 'Experience' });
    const [tr] = await triggers(s.id, [{ type: 'metric', points: 10, metricId: m.id, metricThreshold: 3 }]);
    const u = uid();
    expect((await send('mt', u, 1)).body.points).toEqual({});
    expect((await send('mt', u, 1)).body.points).toEqual({});
    const third = await send('mt', u, 1);
    expect(third.body.points).toEqual({
      'mt-xp': {
        id: s.id,
        key: 'mt-xp',
        name: 'System mt-xp',
        description: 'Experience',
        badgeUrl: null,
        maxPoints: null,
        total: 10,
        added: 10,
        awards: [
          {
            id: expect.any(String),
            awarded: 10,
            date: NOW,
            total: 10,
            trigger: {
              id: tr!.id,
              type: 'metric',
              points: 10,
              status: 'active',
              created: NOW,
              updated: NOW,
              userAttributes: [],
              metricId: m.id,
              metricName: 'Metric mt',
              metricThreshold: 3,
              eventAttributes: [],
            },
            boosts: [],
          },
        ],
      },
    });
    // 7 from 0: one award of 20 (k = 2), never two awards.
    const v = uid();
    const seven = await send('mt', v, 7);
    expect(awards(seven, 'mt-xp')).toEqual([[20, 20, tr!.id]]);
    expect(seven.body.points['mt-xp'].added).toBe(20);
    expect(awards(await send('mt', v, 2), 'mt-xp')).toEqual([[10, 30, tr!.id]]);
  });

  it('metric trigger: decimal thresholds are exact (N=0.8 reached by 0.7 + 0.1)', async () => {
    const m = await metric('mt-dec');
    const s = await system('mt-dec-xp');
    await triggers(s.id, [{ type: 'metric', points: 1, metricId: m.id, metricThreshold: 0.8 }]);
    const u = uid();
    expect((await send('mt-dec', u, 0.7)).body.points).toEqual({});
    // A binary floating-point sum would give 0.7999999999999999.
    expect((await send('mt-dec', u, 0.1)).body.points['mt-dec-xp'].total).toBe(1);
    expect((await send('mt-dec', u, 0.79)).body.points).toEqual({});
    expect((await send('mt-dec', u, 0.01)).body.points['mt-dec-xp'].total).toBe(2);
  });

  it('metric trigger: decreases never claw back and re-crossing awards nothing (high-water mark)', async () => {
    const m = await metric('hwm');
    const s = await system('hwm-xp');
    await triggers(s.id, [{ type: 'metric', points: 10, metricId: m.id, metricThreshold: 3 }]);
    const u = uid();
    expect((await send('hwm', u, 3)).body.points['hwm-xp'].total).toBe(10);
    expect((await send('hwm', u, -3)).body.points).toEqual({});
    expect((await send('hwm', u, 3)).body.points).toEqual({});
    expect((await send('hwm', u, 3)).body.points['hwm-xp']).toMatchObject({ total: 20, added: 10 });
    expect((await send('hwm', u, -100)).body.points).toEqual({});
    expect((await send('hwm', u, 99)).body.points).toEqual({});
    // T = 6 - 100 + 99 + 6 = 11 → floor(11 / 3) - floor(6 / 3) = 1.
    const res = await send('hwm', u, 6);
    expect(res.body.total).toBe(11);
    expect(res.body.points['hwm-xp']).toMatchObject({ total: 30, added: 10 });
  });

  it('metric trigger with an event-attribute filter counts only matching events', async () => {
    const m = await metric('mt-ef');
    const s = await system('mt-ef-xp');
    await triggers(s.id, [
      {
        type: 'metric',
        points: 5,
        metricId: m.id,
        metricThreshold: 2,
        eventAttributes: [{ attributeId: source.id, attributeValue: 'web' }],
      },
    ]);
    const u = uid();
    expect((await send('mt-ef', u, 2, { source: 'app' })).body.points).toEqual({});
    expect((await send('mt-ef', u, 5)).body.points).toEqual({});
    expect((await send('mt-ef', u, 1, { source: 'web' })).body.points).toEqual({});
    const hit = await send('mt-ef', u, 1, { source: 'web' });
    expect(hit.body.points['mt-ef-xp'].total).toBe(5);
    expect(hit.body.points['mt-ef-xp'].awards[0].trigger).toMatchObject({
      eventAttributes: [{ key: 'source', value: 'web' }],
      eventAttribute: { key: 'source', value: 'web' },
    });
  });

  it('metric trigger with a user-attribute filter: no award while ineligible, but the high-water mark advances', async () => {
    const m = await metric('mt-uf');
    const s = await system('mt-uf-xp');
    await triggers(s.id, [
      {
        type: 'metric',
        points: 10,
        metricId: m.id,
        metricThreshold: 3,
        userAttributes: [{ attributeId: plan.id, attributeValue: 'pro' }],
      },
    ]);
    const u = uid();
    expect((await send('mt-uf', u, 3)).body.points).toEqual({});
    // Now eligible: T = 4, but H = 3 already counted the first multiple.
    expect((await send('mt-uf', { id: u, attributes: { plan: 'pro' } }, 1)).body.points).toEqual({});
    const res = await send('mt-uf', u, 2);
    expect(res.body.points['mt-uf-xp']).toMatchObject({ total: 10, added: 10 });
    expect(res.body.points['mt-uf-xp'].awards[0].trigger.userAttributes).toEqual([
      { key: 'plan', value: 'pro' },
    ]);
  });

  it('metric trigger counts from its activation; inactive triggers never fire', async () => {
    const m = await metric('mt-act');
    const s = await system('mt-act-xp');
    const [tr] = await triggers(s.id, [
      { type: 'metric', points: 10, metricId: m.id, metricThreshold: 3, status: 'inactive' },
    ]);
    const u = uid();
    expect((await send('mt-act', u, 5)).body.points).toEqual({});
    const act = await t.admin('PATCH', `/points/${s.id}/triggers`, [{ id: tr!.id, status: 'active' }]);
    expect(act.body.issues).toEqual([]);
    expect((await send('mt-act', u, 2)).body.points).toEqual({});
    expect((await send('mt-act', u, 1)).body.points['mt-act-xp'].total).toBe(10);
  });

  it('metric trigger ignores an event whose clock reads before its activation, and verify-state agrees', async () => {
    const m = await metric('mt-skew');
    const s = await system('mt-skew-xp');
    const activated = t.clock.now();
    await triggers(s.id, [{ type: 'metric', points: 10, metricId: m.id, metricThreshold: 3 }]);
    const u = uid();
    // An API process whose clock is a minute behind the one that activated the trigger: its event
    // happened before the activation, so it does not count (semantics §5.3), as rebuild's replay of
    // the events has it.
    t.clock.set(activated - 60_000);
    expect((await send('mt-skew', u, 5)).body.points).toEqual({});
    t.clock.set(activated);
    expect((await send('mt-skew', u, 2)).body.points).toEqual({});
    expect((await send('mt-skew', u, 1)).body.points['mt-skew-xp'].total).toBe(10);
    await t.settle();
    const diffs = (await verifyState(t.deps)).differences;
    expect(diffs.filter((d) => d.userId === u)).toEqual([]);
  });

  it('achievement trigger fires when the achievement is completed by the event', async () => {
    const m = await metric('at');
    const s = await system('at-xp');
    const [ach] = await adminCreate(t, '/achievements', [
      { key: 'at-5', name: 'Five', trigger: 'metric', metricId: m.id, metricValue: 5, status: 'active' },
    ]);
    const [mt, at] = await triggers(s.id, [
      { type: 'metric', points: 1, metricId: m.id, metricThreshold: 1 },
      { type: 'achievement', points: 7, achievementId: ach.id },
    ]);
    const u = uid();
    expect(awards(await send('at', u, 4), 'at-xp')).toEqual([[4, 4, mt!.id]]);
    const res = await send('at', u, 1);
    expect(res.body.achievements.map((a: any) => a.key)).toEqual(['at-5']);
    // Metric triggers before achievement triggers; newest first in the response.
    expect(awards(res, 'at-xp')).toEqual([
      [7, 12, at!.id],
      [1, 5, mt!.id],
    ]);
    expect(res.body.points['at-xp'].added).toBe(8);
    expect(res.body.points['at-xp'].awards[0].trigger).toEqual({
      id: at!.id,
      type: 'achievement',
      points: 7,
      status: 'active',
      created: NOW,
      updated: NOW,
      userAttributes: [],
      achievementId: ach.id,
      achievementName: 'Five',
    });
    expect(awards(await send('at', u, 1), 'at-xp')).toEqual([[1, 13, mt!.id]]);
  });

  it('user_creation trigger fires once, in the request that creates the user', async () => {
    const m = await metric('uc');
    const s = await system('uc-xp');
    const [uc, mt] = await triggers(s.id, [
      { type: 'user_creation', points: 5 },
      { type: 'metric', points: 10, metricId: m.id, metricThreshold: 1 },
    ]);
    try {
      const u = uid();
      const first = await send('uc', u, 2);
      expect(awards(first, 'uc-xp')).toEqual([
        [20, 25, mt!.id],
        [5, 5, uc!.id],
      ]);
      expect(first.body.points['uc-xp'].added).toBe(25);
      expect(first.body.points['uc-xp'].awards[1].trigger).toEqual({
        id: uc!.id,
        type: 'user_creation',
        points: 5,
        status: 'active',
        created: NOW,
        updated: NOW,
        userAttributes: [],
      });
      expect(awards(await send('uc', u, 0), 'uc-xp')).toEqual([]);
      expect(awards(await send('uc', u, 1), 'uc-xp')).toEqual([[10, 35, mt!.id]]);
      // A user created with a value of 0 still receives it.
      expect(awards(await send('uc', uid(), 0), 'uc-xp')).toEqual([[5, 5, uc!.id]]);
    } finally {
      await t.admin('PATCH', `/points/${s.id}/triggers`, [{ id: uc!.id, status: 'inactive' }]);
    }
    // Users created while it is inactive never receive it.
    const late = uid();
    expect(awards(await send('uc', late, 0), 'uc-xp')).toEqual([]);
    await t.admin('PATCH', `/points/${s.id}/triggers`, [{ id: uc!.id, status: 'active' }]);
    try {
      expect(awards(await send('uc', late, 0), 'uc-xp')).toEqual([]);
    } finally {
      await t.admin('PATCH', `/points/${s.id}/triggers`, [{ id: uc!.id, status: 'inactive' }]);
    }
  });

  it('maxPoints caps positive awards: the award is clipped and a 0 award is not recorded', async () => {
    const m = await metric('cap');
    const s = await system('cap-xp', { maxPoints: 25 });
    const [tr] = await triggers(s.id, [{ type: 'metric', points: 10, metricId: m.id, metricThreshold: 1 }]);
    const u = uid();
    expect(awards(await send('cap', u, 1), 'cap-xp')).toEqual([[10, 10, tr!.id]]);
    expect(awards(await send('cap', u, 1), 'cap-xp')).toEqual([[10, 20, tr!.id]]);
    const clipped = await send('cap', u, 1);
    expect(clipped.body.points['cap-xp']).toMatchObject({ total: 25, added: 5, maxPoints: 25 });
    expect(awards(clipped, 'cap-xp')).toEqual([[5, 25, tr!.id]]);
    expect((await send('cap', u, 5)).body.points).toEqual({});
    // One big award from 0 is clipped too.
    expect(awards(await send('cap', uid(), 100), 'cap-xp')).toEqual([[25, 25, tr!.id]]);
  });

  it('negative points never take the total below 0; a 0 deduction is not recorded', async () => {
    const earn = await metric('earn');
    const spend = await metric('spend');
    const s = await system('coins');
    const [plus, minus] = await triggers(s.id, [
      { type: 'metric', points: 10, metricId: earn.id, metricThreshold: 1 },
      { type: 'metric', points: -15, metricId: spend.id, metricThreshold: 1 },
    ]);
    const u = uid();
    expect((await send('spend', u, 1)).body.points).toEqual({});
    expect(awards(await send('earn', u, 2), 'coins')).toEqual([[20, 20, plus!.id]]);
    const res = await send('spend', u, 1);
    expect(res.body.points.coins).toMatchObject({ total: 5, added: -15 });
    expect(awards(res, 'coins')).toEqual([[-15, 5, minus!.id]]);
    expect(res.body.points.coins.awards[0].trigger.points).toBe(-15);
    const floor = await send('spend', u, 1);
    expect(awards(floor, 'coins')).toEqual([[-5, 0, minus!.id]]);
    expect(floor.body.points.coins.added).toBe(-5);
    expect((await send('spend', u, 1)).body.points).toEqual({});
  });

  it('added is the sum of the awards, newest first, across triggers in creation order', async () => {
    const m = await metric('multi');
    const s = await system('multi-xp');
    const other = await system('multi-other');
    const [a, b] = await triggers(s.id, [
      { type: 'metric', points: 10, metricId: m.id, metricThreshold: 1 },
      { type: 'metric', points: 3, metricId: m.id, metricThreshold: 2 },
    ]);
    const [c] = await triggers(other.id, [
      { type: 'metric', points: -1, metricId: m.id, metricThreshold: 1 },
    ]);
    const u = uid();
    const res = await send('multi', u, 2);
    expect(awards(res, 'multi-xp')).toEqual([
      [3, 23, b!.id],
      [20, 20, a!.id],
    ]);
    expect(res.body.points['multi-xp']).toMatchObject({ total: 23, added: 23 });
    // The other system's deduction from 0 has an applied change of 0: not recorded, not listed.
    expect(Object.keys(res.body.points)).toEqual(['multi-xp']);
    expect(c).toBeDefined();
    const ids = res.body.points['multi-xp'].awards.map((x: any) => x.id);
    expect(new Set(ids).size).toBe(2);
  });

  it('streak trigger fires every N lengths reached through events', async () => {
    const m = await metric('st');
    const s = await system('st-xp');
    const set = await t.admin('PATCH', '/streaks/settings', {
      enabled: true,
      frequency: 'daily',
      conditions: [{ metricId: m.id, threshold: 1 }],
      freezesEnabled: true,
      maxFreezes: 1,
      initialFreezes: 1,
    });
    expect(set.status).toBe(200);
    const [tr] = await triggers(s.id, [{ type: 'streak', points: 5, streakLength: 2 }]);
    try {
      const u = uid();
      const day = async (date: string, value = 1) => {
        t.clock.set(`${date}T12:00:00Z`);
        const res = await send('st', u, value);
        return [res.body.currentStreak.length, awards(res, 'st-xp')];
      };
      expect(await day('2025-03-10')).toEqual([1, []]);
      expect(await day('2025-03-11')).toEqual([2, [[5, 5, tr!.id]]]);
      expect(await day('2025-03-12')).toEqual([3, []]);
      // 13 March missed: the freeze bridges it (no award), then 14 March reaches 4.
      expect(await day('2025-03-14')).toEqual([4, [[5, 10, tr!.id]]]);
      expect(await day('2025-03-14')).toEqual([4, []]);
      // Broken, then rebuilt to 2: fires again.
      expect(await day('2025-03-17')).toEqual([1, []]);
      expect(await day('2025-03-18')).toEqual([2, [[5, 15, tr!.id]]]);
    } finally {
      t.clock.set(NOW);
      await t.admin('PATCH', `/points/${s.id}/triggers`, [{ id: tr!.id, status: 'inactive' }]);
      await t.admin('PATCH', '/streaks/settings', { enabled: false });
    }
  });
});
