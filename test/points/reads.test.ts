import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { RECENT_AWARDS } from '../../src/services/points-reads';
import { adminCreate, createTestServer, type TestServer } from '../helpers/server';

// Points reads (application-api §6.8 #15, #21, #22, E1–E4, §7.8; semantics §5.8, §5.10, §5.11, §7.2, §7.3).

let t: TestServer;
const NOW = '2025-03-10T12:00:00.000Z';
let plan: { id: string };
let lessons: { id: string };
let xp: { id: string };
let coins: { id: string };
let xpTrigger: { id: string; created: string; updated: string };
let levels: Array<{ id: string; key: string }>;

async function send(user: Record<string, unknown> | string, value: number, at?: string) {
  if (at) t.clock.set(at);
  const res = await t.api('POST', '/v1/metrics/lessons/event', {
    user: typeof user === 'string' ? { id: user } : user,
    value,
  });
  expect(res.status).toBe(201);
  // Points summaries read totals the history writer indexes from the outbox: let it catch up.
  await t.settle();
}

beforeAll(async () => {
  // Configured before the earliest event the tests send (09:00): a trigger counts from its activation.
  t = await createTestServer({ now: '2025-03-10T08:00:00.000Z' });
  [plan] = await adminCreate(t, '/attributes', [{ key: 'plan', name: 'Plan', type: 'user' }]);
  [lessons] = await adminCreate(t, '/metrics', [{ key: 'lessons', name: 'Lessons' }]);
  [xp, coins] = await adminCreate(t, '/points', [
    { key: 'xp', name: 'XP', description: 'Experience', maxPoints: 1000 },
    { key: 'coins', name: 'Coins' },
  ]);
  await adminCreate(t, '/points', [{ key: 'flat', name: 'Flat' }]);
  [xpTrigger] = await adminCreate(t, `/points/${xp.id}/triggers`, [
    { type: 'metric', metricId: lessons.id, metricThreshold: 1, points: 10, status: 'active' },
    { type: 'user_creation', points: 5 },
  ]);
  levels = await adminCreate(t, `/points/${xp.id}/levels`, [
    { key: 'silver', name: 'Silver', points: 50, description: 'Second' },
    { key: 'bronze', name: 'Bronze', points: 0 },
    { key: 'gold', name: 'Gold', points: 200 },
  ]);
});
afterAll(async () => t.close());
beforeEach(() => t.clock.set(NOW));

describe('GET /v1/users/{id}/points/{key}', () => {
  it('returns the total, the current level and the most recent awards, newest first', async () => {
    await send('learner', 1, '2025-03-10T09:00:00Z');
    await send('learner', 1, '2025-03-10T10:00:00Z');
    await send('learner', 1, '2025-03-10T11:00:00Z');
    t.clock.set(NOW);
    const res = await t.api('GET', '/v1/users/learner/points/xp');
    expect(res.status).toBe(200);
    const trigger = {
      id: xpTrigger.id,
      type: 'metric',
      points: 10,
      status: 'active',
      created: xpTrigger.created,
      updated: xpTrigger.updated,
      userAttributes: [],
      metricId: lessons.id,
      metricName: 'Lessons',
      metricThreshold: 1,
      eventAttributes: [],
    };
    const award = (total: number, date: string) => ({
      id: expect.any(String),
      awarded: 10,
      date,
      total,
      trigger,
      boosts: [],
    });
    expect(res.body).toEqual({
      id: xp.id,
      key: 'xp',
      name: 'XP',
      description: 'Experience',
      badgeUrl: null,
      maxPoints: 1000,
      total: 30,
      level: {
        id: levels[1]!.id,
        key: 'bronze',
        name: 'Bronze',
        description: null,
        badgeUrl: null,
        points: 0,
      },
      awards: [
        award(30, '2025-03-10T11:00:00.000Z'),
        award(20, '2025-03-10T10:00:00.000Z'),
        award(10, '2025-03-10T09:00:00.000Z'),
      ],
    });
    const two = await t.api('GET', '/v1/users/learner/points/xp?awards=2');
    expect(two.body.awards.map((a: any) => a.total)).toEqual([30, 20]);

    await send('learner', 2);
    expect((await t.api('GET', '/v1/users/learner/points/xp')).body.level).toMatchObject({ key: 'silver' });
  });

  it('serves awards beyond the RECENT_AWARDS (10) kept in Redis from the history, in the same order and shape', async () => {
    for (let i = 0; i < 30; i++)
      await send('collector', 1, `2025-03-11T${String(i % 24).padStart(2, '0')}:00:00Z`);
    const xp = t.deps.catalog.snapshot.systemsByKey.get('xp')!;
    expect(await t.deps.redis.llen(t.deps.keys.user('collector').awards(xp.id))).toBe(RECENT_AWARDS);
    const all = await t.api('GET', '/v1/users/collector/points/xp?awards=30');
    expect(all.status).toBe(200);
    expect(all.body.awards.map((a: any) => a.total)).toEqual(
      Array.from({ length: 30 }, (_, i) => 300 - 10 * i),
    );
    const recent = await t.api('GET', '/v1/users/collector/points/xp?awards=20');
    expect(all.body.awards.slice(0, 20)).toEqual(recent.body.awards);
    // An award read from the history has every field an award read from Redis has.
    expect(Object.keys(all.body.awards[25]).sort()).toEqual(Object.keys(all.body.awards[0]).sort());
    expect(all.body.awards[25].trigger).toEqual(all.body.awards[0].trigger);
  });

  it('shows 0, level null and no awards for a system without levels where the user has nothing', async () => {
    await t.api('POST', '/v1/users', { id: 'newcomer' });
    const res = await t.api('GET', '/v1/users/newcomer/points/coins');
    expect(res.body).toMatchObject({ key: 'coins', total: 0, level: null, awards: [] });
  });

  it('shows a deleted trigger of an award as archived', async () => {
    const [sys] = await adminCreate(t, '/points', [{ key: 'temp', name: 'Temp' }]);
    const [tr] = await adminCreate(t, `/points/${sys.id}/triggers`, [
      { type: 'metric', metricId: lessons.id, metricThreshold: 1, points: 3, status: 'active' },
    ]);
    await send('archivist', 1);
    await t.admin('DELETE', `/points/${sys.id}/triggers?ids=${tr.id}`);
    const res = await t.api('GET', '/v1/users/archivist/points/temp');
    expect(res.body.awards[0].trigger).toMatchObject({ id: tr.id, type: 'metric', status: 'archived' });
  });

  it('answers 404 for an unknown user or system, after validating awards', async () => {
    expect((await t.api('GET', '/v1/users/ghost/points/xp')).body).toEqual({ error: 'User not found' });
    const res = await t.api('GET', '/v1/users/learner/points/nope');
    expect(res.status).toBe(404);
    expect(res.body).toEqual({ error: 'Points system not found' });
    expect((await t.api('GET', '/v1/users/ghost/points/nope?awards=0')).status).toBe(422);
  });

  it.each(['0', '101', '1.5', 'ten', ''])('answers 422 for awards=%s', async (v) => {
    expect((await t.api('GET', `/v1/users/learner/points/xp?awards=${v}`)).status).toBe(422);
  });
});

describe('GET /v1/points/{key} and its levels', () => {
  it('returns the system with its active triggers only', async () => {
    const res = await t.api('GET', '/v1/points/xp');
    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      id: xp.id,
      key: 'xp',
      name: 'XP',
      description: 'Experience',
      badgeUrl: null,
      maxPoints: 1000,
      triggers: [expect.objectContaining({ id: xpTrigger.id, type: 'metric', status: 'active' })],
    });
  });

  it('lists levels ascending by threshold', async () => {
    const res = await t.api('GET', '/v1/points/xp/levels');
    expect(res.body.map((l: any) => [l.key, l.points])).toEqual([
      ['bronze', 0],
      ['silver', 50],
      ['gold', 200],
    ]);
    expect(res.body[1]).toEqual({
      id: levels[0]!.id,
      key: 'silver',
      name: 'Silver',
      description: 'Second',
      badgeUrl: null,
      points: 50,
    });
    expect((await t.api('GET', '/v1/points/coins/levels')).body).toEqual([]);
  });

  it('answers 404 `Points system not found` on every system path', async () => {
    for (const path of [
      '/v1/points/nope',
      '/v1/points/nope/levels',
      '/v1/points/nope/level-summary',
      '/v1/points/nope/summary',
      '/v1/points/nope/boosts',
      '/v1/users/learner/points/nope/boosts',
    ]) {
      const res = await t.api('GET', path);
      expect(res.status).toBe(404);
      expect(res.body).toEqual({ error: 'Points system not found' });
    }
  });
});

describe('summaries', () => {
  // A server of its own: histograms count every user.
  let s: TestServer;
  beforeAll(async () => {
    s = await createTestServer({ now: NOW });
    await adminCreate(s, '/attributes', [{ key: 'plan', name: 'Plan', type: 'user' }]);
    await s.api('POST', '/v1/users', { id: 'before-system' });
    // In the pro cohort from before the system existed: its total is 0 (semantics §7.2).
    await s.api('POST', '/v1/users', { id: 'early-pro', attributes: { plan: 'pro' } });
    await s.settle();
    const [m] = await adminCreate(s, '/metrics', [{ key: 'lessons', name: 'Lessons' }]);
    const [sys] = await adminCreate(s, '/points', [{ key: 'xp', name: 'XP' }]);
    await adminCreate(s, '/points', [{ key: 'plain', name: 'Plain' }]);
    await adminCreate(s, `/points/${sys.id}/triggers`, [
      { type: 'metric', metricId: m.id, metricThreshold: 1, points: 10, status: 'active' },
    ]);
    await adminCreate(s, `/points/${sys.id}/levels`, [
      { key: 'bronze', name: 'Bronze', points: 0 },
      { key: 'silver', name: 'Silver', points: 50 },
      { key: 'gold', name: 'Gold', points: 200 },
    ]);
    const ev = (id: string, value: number, attributes?: Record<string, string>) =>
      s.api('POST', '/v1/metrics/lessons/event', {
        user: { id, ...(attributes ? { attributes } : {}) },
        value,
      });
    await ev('fifty', 5, { plan: 'pro' });
    await ev('ten', 1, { plan: 'free' });
    await s.api('POST', '/v1/users', { id: 'zero', attributes: { plan: 'pro' } });
    await ev('big', 73.4, { plan: 'pro' });
    // Histograms read the totals the history writer indexes from the outbox: let it catch up.
    await s.settle();
  });
  afterAll(async () => s.close());

  const ranges = (width: number) => [
    { from: 0, to: 0 },
    ...Array.from({ length: 10 }, (_, i) => ({ from: i * width + 1, to: (i + 1) * width })),
  ];

  it('splits all users into exactly 11 ranges up to the power of 10 above the highest total', async () => {
    const res = await s.api('GET', '/v1/points/xp/summary');
    expect(res.status).toBe(200);
    const expected = ranges(100).map((r) => ({ ...r, users: 0 }));
    expected[0]!.users = 3; // zero, and two users created before the system existed
    expected[1]!.users = 2; // ten (10), fifty (50)
    expected[8]!.users = 1; // big (730)
    expect(res.body).toEqual(expected);
  });

  it('counts every user with 0 in a system without awards', async () => {
    const res = await s.api('GET', '/v1/points/plain/summary');
    expect(res.body.map((r: any) => r.users)).toEqual([6, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0]);
    expect(res.body[10]).toEqual({ from: 10, to: 10, users: 0 });
  });

  it('restricts the population with a userAttributes filter, counting cohort users from before the system', async () => {
    const pro = await s.api('GET', '/v1/points/xp/summary?userAttributes=plan%3Apro');
    expect(pro.body.map((r: any) => r.users)).toEqual([2, 1, 0, 0, 0, 0, 0, 0, 1, 0, 0]);
    const free = await s.api('GET', '/v1/points/xp/summary?userAttributes=plan:free');
    expect(free.body[10]).toEqual({ from: 10, to: 10, users: 1 });
    expect(free.body.reduce((sum: number, r: any) => sum + r.users, 0)).toBe(1);
  });

  it.each([
    ['userAttributes=plan', 'userAttributes must be key:value pairs'],
    ['userAttributes=tier%3Agold', 'Invalid attribute keys: tier.'],
  ])('answers 422 for %s', async (q, error) => {
    const res = await s.api('GET', `/v1/points/xp/summary?${q}`);
    expect(res.status).toBe(422);
    expect(res.body).toEqual({ error });
  });

  it('counts users at each level, users without points at the level of threshold 0', async () => {
    const res = await s.api('GET', '/v1/points/xp/level-summary');
    expect(res.status).toBe(200);
    expect(res.body.map((x: any) => [x.level.key, x.users])).toEqual([
      ['bronze', 4],
      ['silver', 1],
      ['gold', 1],
    ]);
    expect(res.body[0].level).toEqual({
      id: expect.any(String),
      key: 'bronze',
      name: 'Bronze',
      description: null,
      badgeUrl: null,
      points: 0,
    });
  });

  it('answers 422 for a level summary of a system without levels', async () => {
    const res = await s.api('GET', '/v1/points/plain/level-summary');
    expect(res.status).toBe(422);
    expect(res.body).toEqual({ error: 'No levels configured on the points system' });
  });
});

describe('boosts', () => {
  let b: Record<string, { id: string }>;
  beforeAll(async () => {
    await adminCreate(t, `/points/${coins.id}/triggers`, [
      { type: 'metric', metricId: lessons.id, metricThreshold: 1, points: 5, status: 'active' },
    ]);
    await t.api('POST', '/v1/users', { id: 'booster', attributes: { plan: 'free' } });
    await t.api('POST', '/v1/users', { id: 'pro-booster', attributes: { plan: 'pro' } });
    await t.api('POST', '/v1/users', { id: 'islander', tz: 'Pacific/Kiritimati' });
    const created = await adminCreate(t, `/points/${coins.id}/boosts`, [
      { name: 'g-active', start: '2025-03-01', end: '2025-03-31', multiplier: 2 },
      { name: 'g-finished', start: '2025-02-01', end: '2025-02-10', multiplier: 2 },
      { name: 'g-scheduled', start: '2025-04-01', multiplier: 1.5, rounding: 'up' },
      {
        name: 'cohort',
        start: '2025-03-05',
        end: '2025-03-20',
        multiplier: 1.5,
        rounding: 'nearest',
        userAttributes: [{ attributeId: plan.id, attributeValue: 'pro' }],
      },
      { name: 'personal', start: '2025-03-01', multiplier: 3, userId: 'booster' },
    ]);
    b = Object.fromEntries(created.map((x: { name: string; id: string }) => [x.name, x]));
  });

  const names = (body: any[]) => body.map((x) => [x.name, x.status]);

  it('lists global and cohort boosts by start with their UTC status; finished ones on request', async () => {
    const res = await t.api('GET', '/v1/points/coins/boosts');
    expect(res.status).toBe(200);
    expect(names(res.body)).toEqual([
      ['g-active', 'active'],
      ['cohort', 'active'],
      ['g-scheduled', 'scheduled'],
    ]);
    expect(res.body[0]).toEqual({
      id: b['g-active']!.id,
      name: 'g-active',
      status: 'active',
      start: '2025-03-01',
      end: '2025-03-31',
      multiplier: 2,
      rounding: 'down',
    });
    const all = await t.api('GET', '/v1/points/coins/boosts?includeFinished=true');
    expect(names(all.body)).toEqual([
      ['g-finished', 'finished'],
      ['g-active', 'active'],
      ['cohort', 'active'],
      ['g-scheduled', 'scheduled'],
    ]);
    expect(names((await t.api('GET', '/v1/points/coins/boosts?includeFinished=false')).body)).toHaveLength(3);
  });

  it.each(['yes', 'TRUE', '1', ''])('answers 422 for includeFinished=%s', async (v) => {
    expect((await t.api('GET', `/v1/points/coins/boosts?includeFinished=${v}`)).status).toBe(422);
  });

  it("lists the boosts that apply to a user: eligible global and cohort ones and the user's own", async () => {
    expect(names((await t.api('GET', '/v1/users/booster/points/coins/boosts')).body)).toEqual([
      ['g-active', 'active'],
      ['personal', 'active'],
      ['g-scheduled', 'scheduled'],
    ]);
    expect(names((await t.api('GET', '/v1/users/pro-booster/points/coins/boosts')).body)).toEqual([
      ['g-active', 'active'],
      ['cohort', 'active'],
      ['g-scheduled', 'scheduled'],
    ]);
    expect((await t.api('GET', '/v1/users/ghost/points/coins/boosts')).body).toEqual({
      error: 'User not found',
    });
  });

  it("evaluates a user's boosts on the user's local date", async () => {
    t.clock.set('2025-03-31T12:00:00Z'); // already 1 April in Kiritimati (UTC+14)
    expect(names((await t.api('GET', '/v1/users/islander/points/coins/boosts')).body)).toEqual([
      ['g-scheduled', 'active'],
    ]);
    expect(names((await t.api('GET', '/v1/points/coins/boosts')).body)).toEqual([
      ['g-active', 'active'],
      ['g-scheduled', 'scheduled'],
    ]);
  });

  it('shows the boosts applied to each award', async () => {
    await send('booster', 1);
    const res = await t.api('GET', '/v1/users/booster/points/coins?awards=1');
    expect(res.body.total).toBe(30);
    expect(res.body.awards[0]).toMatchObject({ awarded: 30, total: 30 });
    expect(names(res.body.awards[0].boosts)).toEqual([
      ['g-active', 'active'],
      ['personal', 'active'],
    ]);
  });
});
