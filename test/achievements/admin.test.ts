import { randomUUID } from 'node:crypto';
import { eq } from 'drizzle-orm';
import { afterAll, beforeAll, beforeEach, describe, expect, it, vi } from 'vitest';
import { pointsSystems, pointsTriggers } from '../../src/db/schema';
import { adminCreate, createTestServer, type TestServer } from '../helpers/server';

const backdate = vi.hoisted(() => vi.fn(async (_deps: unknown, _id: string) => {}));
vi.mock('../../src/services/backdate', () => ({ backdateAchievement: backdate }));

let t: TestServer;
let metric: any;
let userAttr: any;
let eventAttr: any;
beforeAll(async () => {
  t = await createTestServer();
  [metric] = await adminCreate(t, '/metrics', [{ key: 'lessons', name: 'Lessons' }]);
  [userAttr, eventAttr] = await adminCreate(t, '/attributes', [
    { key: 'plan', name: 'Plan', type: 'user' },
    { key: 'source', name: 'Source', type: 'event' },
  ]);
});
afterAll(async () => t.close());
beforeEach(() => backdate.mockClear());

const list = async () => (await t.admin('GET', '/achievements?limit=100')).body as any[];
let seq = 0;
const k = (p = 'a') => `${p}${++seq}`;
const create = async (items: unknown[]) => adminCreate(t, '/achievements', items);
const backdated = () => backdate.mock.calls.map((c) => c[1]);

describe('admin achievements', () => {
  it('creates each trigger kind with its own fields only', async () => {
    const [m, s, a] = await create([
      {
        key: k(),
        name: 'Ten lessons',
        trigger: 'metric',
        metricId: metric.id,
        metricValue: 10.5,
        eventAttributes: [{ attributeId: eventAttr.id, attributeValue: 'web' }],
        userAttributes: [{ attributeId: userAttr.id, attributeValue: 'pro' }],
        description: 'Do ten',
        badge: { url: 'https://cdn.example.com/b.png' },
      },
      { key: k(), name: 'Week streak', trigger: 'streak', streakLength: 7 },
      { key: k(), name: 'Manual', trigger: 'api' },
    ]);
    expect(m).toEqual({
      id: expect.any(String),
      key: m.key,
      name: 'Ten lessons',
      description: 'Do ten',
      badge: { url: 'https://cdn.example.com/b.png' },
      trigger: 'metric',
      status: 'inactive',
      metricId: metric.id,
      metricValue: 10.5,
      eventAttributes: [{ attributeId: eventAttr.id, attributeKey: 'source', attributeValue: 'web' }],
      userAttributes: [{ attributeId: userAttr.id, attributeKey: 'plan', attributeValue: 'pro' }],
      completions: 0,
      created: '2025-03-10T12:00:00.000Z',
      updated: '2025-03-10T12:00:00.000Z',
    });
    expect(Object.keys(s)).not.toContain('metricId');
    expect(s).toMatchObject({
      trigger: 'streak',
      streakLength: 7,
      userAttributes: [],
      description: null,
      badge: null,
    });
    expect(a).not.toHaveProperty('streakLength');
    expect(a).not.toHaveProperty('achievementIds');

    const [c] = await create([
      { key: k(), name: 'Both', trigger: 'achievement', achievementIds: [s.id, a.id] },
    ]);
    expect(c.achievementIds).toEqual([s.id, a.id]);
    expect((await t.admin('GET', `/achievements/${c.id}`)).body).toEqual(c);
    expect(backdated()).toEqual([]);
  });

  it('shows completions from the global counter', async () => {
    const [a] = await create([{ key: k(), name: 'Counted', trigger: 'api' }]);
    await t.deps.redis.hset(t.deps.keys.global.achievementCompletions, a.id, '42');
    expect((await t.admin('GET', `/achievements/${a.id}`)).body.completions).toBe(42);
    expect((await list()).find((x) => x.id === a.id).completions).toBe(42);
  });

  it('lists oldest first with paging', async () => {
    const all = await list();
    const page = (await t.admin('GET', '/achievements?limit=2&skip=1')).body;
    expect(page).toEqual(all.slice(1, 3));
  });

  it('rejects a duplicate key, including one repeated within a request and one of a deleted achievement', async () => {
    const key = k('dup');
    const res = await t.admin('POST', '/achievements', [
      { key, name: 'One', trigger: 'api' },
      { key, name: 'Two', trigger: 'api' },
    ]);
    expect(res.status).toBe(201);
    expect(res.body.created).toHaveLength(1);
    expect(res.body.issues).toEqual([
      { severity: 'error', message: 'A achievement with this key already exists', index: 1 },
    ]);
    await t.admin('DELETE', `/achievements?ids=${res.body.created[0].id}`);
    const again = await t.admin('POST', '/achievements', [{ key, name: 'Three', trigger: 'api' }]);
    expect(again.body.issues[0].message).toContain('already exists');
  });

  const badCreates: Array<[string, () => Record<string, unknown>, string]> = [
    ['no key', () => ({ name: 'x', trigger: 'api' }), 'key is required'],
    ['no name', () => ({ key: k(), trigger: 'api' }), 'name is required'],
    ['no trigger', () => ({ key: k(), name: 'x' }), 'trigger is required'],
    ['a bad trigger', () => ({ key: k(), name: 'x', trigger: 'time' }), 'trigger'],
    ['a bad key', () => ({ key: 'no spaces', name: 'x', trigger: 'api' }), 'key'],
    ['a long name', () => ({ key: k(), name: 'n'.repeat(256), trigger: 'api' }), 'name'],
    ['a locked status', () => ({ key: k(), name: 'x', trigger: 'api', status: 'locked' }), 'status'],
    ['a bad badge', () => ({ key: k(), name: 'x', trigger: 'api', badge: { url: 'nope' } }), 'badge'],
    [
      'metric without metricId',
      () => ({ key: k(), name: 'x', trigger: 'metric', metricValue: 1 }),
      'metricId',
    ],
    [
      'metric without metricValue',
      () => ({ key: k(), name: 'x', trigger: 'metric', metricId: metric.id }),
      'metricValue',
    ],
    [
      'an unknown metric',
      () => ({ key: k(), name: 'x', trigger: 'metric', metricId: randomUUID(), metricValue: 1 }),
      'Metric not found',
    ],
    [
      'a zero metricValue',
      () => ({ key: k(), name: 'x', trigger: 'metric', metricId: metric.id, metricValue: 0 }),
      'metricValue',
    ],
    [
      'a string metricValue',
      () => ({ key: k(), name: 'x', trigger: 'metric', metricId: metric.id, metricValue: '5' }),
      'metricValue',
    ],
    [
      'a user attribute as event filter',
      () => ({
        key: k(),
        name: 'x',
        trigger: 'metric',
        metricId: metric.id,
        metricValue: 1,
        eventAttributes: [{ attributeId: userAttr.id, attributeValue: 'v' }],
      }),
      'not a event attribute',
    ],
    [
      'an unknown user attribute',
      () => ({
        key: k(),
        name: 'x',
        trigger: 'api',
        userAttributes: [{ attributeId: randomUUID(), attributeValue: 'v' }],
      }),
      'does not exist',
    ],
    [
      'a repeated user attribute',
      () => ({
        key: k(),
        name: 'x',
        trigger: 'api',
        userAttributes: [
          { attributeId: userAttr.id, attributeValue: 'a' },
          { attributeId: userAttr.id, attributeValue: 'b' },
        ],
      }),
      'given twice',
    ],
    ['streak without length', () => ({ key: k(), name: 'x', trigger: 'streak' }), 'streakLength'],
    [
      'a zero streak length',
      () => ({ key: k(), name: 'x', trigger: 'streak', streakLength: 0 }),
      'streakLength',
    ],
    [
      'a fractional streak length',
      () => ({ key: k(), name: 'x', trigger: 'streak', streakLength: 1.5 }),
      'streakLength',
    ],
    [
      'streakLength on api',
      () => ({ key: k(), name: 'x', trigger: 'api', streakLength: 3 }),
      'only allowed with trigger streak',
    ],
    [
      'metricId on streak',
      () => ({ key: k(), name: 'x', trigger: 'streak', streakLength: 3, metricId: metric.id }),
      'metricId',
    ],
    ['composite without ids', () => ({ key: k(), name: 'x', trigger: 'achievement' }), 'achievementIds'],
    [
      'composite with no ids',
      () => ({ key: k(), name: 'x', trigger: 'achievement', achievementIds: [] }),
      'achievementIds',
    ],
    [
      'composite with an unknown id',
      () => ({ key: k(), name: 'x', trigger: 'achievement', achievementIds: [randomUUID()] }),
      'does not exist',
    ],
    [
      'composite with 101 ids',
      () => ({
        key: k(),
        name: 'x',
        trigger: 'achievement',
        achievementIds: Array.from({ length: 101 }, randomUUID),
      }),
      'achievementIds',
    ],
  ];

  it.each(badCreates)('reports an item error for %s and creates nothing', async (_label, make, fragment) => {
    const before = await list();
    const res = await t.admin('POST', '/achievements', [make()]);
    expect(res.status).toBe(200);
    expect(res.body.created).toEqual([]);
    expect(res.body.issues[0]).toMatchObject({ severity: 'error', index: 0 });
    expect(res.body.issues[0].message).toContain(fragment);
    expect(await list()).toEqual(before);
  });

  it('reports repeated prerequisites', async () => {
    const [a] = await create([{ key: k(), name: 'P', trigger: 'api' }]);
    const res = await t.admin('POST', '/achievements', [
      { key: k(), name: 'x', trigger: 'achievement', achievementIds: [a.id, a.id] },
    ]);
    expect(res.body.issues[0].message).toContain('must not repeat');
  });

  it('answers bad bodies with request-level errors', async () => {
    expect((await t.admin('POST', '/achievements', { key: 'x' })).status).toBe(400);
    expect((await t.admin('POST', '/achievements', [])).status).toBe(422);
    expect((await t.admin('GET', '/achievements/nope')).status).toBe(404);
    expect((await t.admin('GET', `/achievements/${randomUUID()}`)).status).toBe(404);
    expect((await t.admin('GET', '/achievements?skip=x')).status).toBe(422);
    expect((await t.api('GET', '/admin/v1/achievements')).status).toBe(401);
  });
});

describe('achievement status and backdating', () => {
  it('backdates when created active', async () => {
    const [a] = await create([{ key: k(), name: 'Live', trigger: 'api', status: 'active' }]);
    expect(a.status).toBe('active');
    expect(backdated()).toEqual([a.id]);
  });

  it.each([
    ['inactive', 'active', 'active', true],
    ['inactive', 'locked', 'error', false],
    ['inactive', 'inactive', 'inactive', false],
    ['active', 'locked', 'locked', false],
    ['active', 'inactive', 'error', false],
    ['active', 'active', 'active', false],
    ['locked', 'active', 'active', true],
    ['locked', 'inactive', 'error', false],
    ['locked', 'locked', 'locked', false],
  ])('from %s, requesting %s gives %s (backdates: %s)', async (from, to, result, backdates) => {
    const [a] = await create([{ key: k(), name: 'S', trigger: 'api' }]);
    if (from !== 'inactive') await t.admin('PATCH', '/achievements', [{ id: a.id, status: 'active' }]);
    if (from === 'locked') await t.admin('PATCH', '/achievements', [{ id: a.id, status: 'locked' }]);
    backdate.mockClear();
    const res = await t.admin('PATCH', '/achievements', [{ id: a.id, status: to }]);
    if (result === 'error') {
      expect(res.body.updated).toEqual([]);
      expect(res.body.issues[0]).toMatchObject({ severity: 'error', id: a.id });
      expect(res.body.issues[0].message).toContain('Invalid status transition');
      expect((await t.admin('GET', `/achievements/${a.id}`)).body.status).toBe(from);
    } else {
      expect(res.body.issues).toEqual([]);
      expect(res.body.updated[0].status).toBe(result);
    }
    expect(backdated()).toEqual(backdates ? [a.id] : []);
  });

  it('backdates on a requirement change of an active achievement, not on a rename', async () => {
    const [a] = await create([
      { key: k(), name: 'M', trigger: 'metric', metricId: metric.id, metricValue: 5, status: 'active' },
    ]);
    backdate.mockClear();
    await t.admin('PATCH', '/achievements', [{ id: a.id, name: 'Renamed', description: 'd' }]);
    await t.admin('PATCH', '/achievements', [{ id: a.id, metricValue: 5 }]);
    expect(backdated()).toEqual([]);
    const res = await t.admin('PATCH', '/achievements', [{ id: a.id, metricValue: 3 }]);
    expect(res.body.updated[0].metricValue).toBe(3);
    await t.admin('PATCH', '/achievements', [
      { id: a.id, userAttributes: [{ attributeId: userAttr.id, attributeValue: 'x' }] },
    ]);
    expect(backdated()).toEqual([a.id, a.id]);
  });

  it('does not backdate requirement changes of an inactive or locked achievement', async () => {
    const [a] = await create([{ key: k(), name: 'L', trigger: 'streak', streakLength: 3 }]);
    await t.admin('PATCH', '/achievements', [{ id: a.id, streakLength: 4 }]);
    await t.admin('PATCH', '/achievements', [{ id: a.id, status: 'active' }]);
    await t.admin('PATCH', '/achievements', [{ id: a.id, status: 'locked' }]);
    backdate.mockClear();
    await t.admin('PATCH', '/achievements', [{ id: a.id, streakLength: 2 }]);
    expect(backdated()).toEqual([]);
  });
});

describe('achievement updates', () => {
  it('changes key and trigger while inactive; the new trigger needs its own fields', async () => {
    const [a] = await create([
      { key: k(), name: 'T', trigger: 'metric', metricId: metric.id, metricValue: 2 },
    ]);
    const missing = await t.admin('PATCH', '/achievements', [{ id: a.id, trigger: 'streak' }]);
    expect(missing.body.issues[0].message).toContain('streakLength is required');
    const key = k('renamed');
    const res = await t.admin('PATCH', '/achievements', [
      { id: a.id, key, trigger: 'streak', streakLength: 9 },
    ]);
    expect(res.body.issues).toEqual([]);
    expect(res.body.updated[0]).toMatchObject({ key, trigger: 'streak', streakLength: 9 });
    expect(res.body.updated[0]).not.toHaveProperty('metricId');
  });

  it.each([
    [{ key: 'other-key' }, 'key can only be changed while the achievement is inactive'],
    [{ trigger: 'api' }, 'trigger can only be changed while the achievement is inactive'],
    [{ metricId: '00000000-0000-4000-8000-000000000000' }, 'metricId can only be changed'],
    [{ name: null }, 'name cannot be null'],
    [{ metricValue: null }, 'metricValue cannot be null'],
    [{ metricValue: -1 }, 'metricValue'],
    [{ streakLength: 3 }, 'only allowed with trigger streak'],
    [{ badge: { url: 'x' } }, 'badge'],
  ])(
    'reports an item error for %j on an active metric achievement and changes nothing',
    async (patch, fragment) => {
      const [a] = await create([
        {
          key: k(),
          name: 'Active',
          trigger: 'metric',
          metricId: metric.id,
          metricValue: 1,
          status: 'active',
        },
      ]);
      const before = await list();
      backdate.mockClear();
      const res = await t.admin('PATCH', '/achievements', [{ id: a.id, ...patch }]);
      expect(res.body.updated).toEqual([]);
      expect(res.body.issues[0]).toMatchObject({ severity: 'error', index: 0, id: a.id });
      expect(res.body.issues[0].message).toContain(fragment);
      expect(await list()).toEqual(before);
      expect(backdated()).toEqual([]);
    },
  );

  it('accepts the current key, trigger and metric on an active achievement', async () => {
    const [a] = await create([
      { key: k(), name: 'Same', trigger: 'metric', metricId: metric.id, metricValue: 1, status: 'active' },
    ]);
    const res = await t.admin('PATCH', '/achievements', [
      { id: a.id, key: a.key, trigger: 'metric', metricId: metric.id },
    ]);
    expect(res.body.issues).toEqual([]);
  });

  it('clears nullable fields with null', async () => {
    const [a] = await create([
      {
        key: k(),
        name: 'N',
        trigger: 'api',
        description: 'd',
        badge: { url: 'https://x.example/b.png' },
        userAttributes: [{ attributeId: userAttr.id, attributeValue: 'v' }],
      },
    ]);
    const res = await t.admin('PATCH', '/achievements', [
      { id: a.id, description: null, badge: null, userAttributes: null },
    ]);
    expect(res.body.updated[0]).toMatchObject({ description: null, badge: null, userAttributes: [] });
  });

  it('rejects prerequisite cycles, including self-reference', async () => {
    const [a] = await create([{ key: k(), name: 'A', trigger: 'api' }]);
    const [b] = await create([{ key: k(), name: 'B', trigger: 'achievement', achievementIds: [a.id] }]);
    const [c] = await create([{ key: k(), name: 'C', trigger: 'achievement', achievementIds: [b.id] }]);
    const self = await t.admin('PATCH', '/achievements', [{ id: b.id, achievementIds: [b.id] }]);
    expect(self.body.issues[0].message).toContain('cycle');
    // a → c → b → a
    const cycle = await t.admin('PATCH', '/achievements', [
      { id: a.id, trigger: 'achievement', achievementIds: [c.id] },
    ]);
    expect(cycle.body.issues[0].message).toContain('cycle');
    expect((await t.admin('GET', `/achievements/${a.id}`)).body.trigger).toBe('api');
  });

  it('reports unknown ids', async () => {
    const id = randomUUID();
    const res = await t.admin('PATCH', '/achievements', [{ id, name: 'x' }, { name: 'no id' }]);
    expect(res.body.issues).toEqual([
      { severity: 'error', message: 'Achievement not found', index: 0, id },
      { severity: 'error', message: 'id is required', index: 1 },
    ]);
  });
});

describe('achievement deletion', () => {
  it('refuses while a prerequisite or referenced by a points trigger, then deletes', async () => {
    const [pre] = await create([{ key: k(), name: 'Pre', trigger: 'api' }]);
    const [comp] = await create([
      { key: k(), name: 'Comp', trigger: 'achievement', achievementIds: [pre.id] },
    ]);
    const [awarded] = await create([{ key: k(), name: 'Awarded', trigger: 'api' }]);
    const now = new Date(t.clock.now());
    const [system] = await t.deps.db
      .insert(pointsSystems)
      .values({ key: k('xp'), name: 'XP', created: now, updated: now })
      .returning();
    const [trigger] = await t.deps.db
      .insert(pointsTriggers)
      .values({
        systemId: system!.id,
        type: 'achievement',
        points: 10,
        achievementId: awarded.id,
        created: now,
        updated: now,
      })
      .returning();
    await t.deps.catalog.changed();

    const res = await t.admin('DELETE', `/achievements?ids=${pre.id},${awarded.id}`);
    expect(res.body).toEqual({
      deleted: [],
      issues: [
        { severity: 'error', message: 'Achievement is in use', id: pre.id },
        { severity: 'error', message: 'Achievement is in use', id: awarded.id },
      ],
    });
    expect((await t.admin('GET', `/achievements/${pre.id}`)).status).toBe(200);

    await t.deps.db.update(pointsTriggers).set({ deletedAt: now }).where(eq(pointsTriggers.id, trigger!.id));
    const ok = await t.admin('DELETE', `/achievements?ids=${comp.id},${pre.id},${awarded.id}`);
    expect(ok.body).toEqual({ deleted: [{ id: comp.id }, { id: pre.id }, { id: awarded.id }], issues: [] });
    expect((await t.admin('GET', `/achievements/${pre.id}`)).status).toBe(404);
    expect((await list()).some((a) => a.id === pre.id)).toBe(false);
    const twice = await t.admin('DELETE', `/achievements?ids=${pre.id}`);
    expect(twice.body.issues[0]).toMatchObject({ severity: 'error', message: 'Achievement not found' });
  });
});
