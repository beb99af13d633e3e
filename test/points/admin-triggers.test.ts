import { eq } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { achievements, pointsTriggers } from '../../src/db/schema';
import { adminCreate, createTestServer, type TestServer } from '../helpers/server';

let t: TestServer;
let sys: string;
let other: string;
let metricId: string;
let achievementId: string;
let userAttr: any;
let eventAttr: any;
const UNKNOWN = '00000000-0000-4000-8000-000000000000';
const NOW = '2025-03-10T12:00:00.000Z';

beforeAll(async () => {
  t = await createTestServer();
  [{ id: sys }, { id: other }] = await adminCreate(t, '/points', [
    { key: 'xp', name: 'XP' },
    { key: 'other', name: 'Other' },
  ]);
  [{ id: metricId }] = await adminCreate(t, '/metrics', [{ key: 'lessons', name: 'Lessons' }]);
  [userAttr, eventAttr] = await adminCreate(t, '/attributes', [
    { key: 'plan', name: 'Plan', type: 'user' },
    { key: 'device', name: 'Device', type: 'event' },
  ]);
  const [ach] = await t.deps.db
    .insert(achievements)
    .values({ key: 'first', name: 'First', trigger: 'api' })
    .returning();
  achievementId = ach!.id;
  await t.deps.catalog.reload();
});
afterAll(async () => t.close());

const path = () => `/points/${sys}/triggers`;
const listAll = async () => (await t.admin('GET', `${path()}?limit=100`)).body as any[];
const dbRow = async (id: string) =>
  (await t.deps.db.select().from(pointsTriggers).where(eq(pointsTriggers.id, id)))[0]!;
const userFilter = () => [{ attributeId: userAttr.id, attributeValue: 'pro' }];
const eventFilter = () => [{ attributeId: eventAttr.id, attributeValue: 'ios' }];

describe('admin points triggers', () => {
  it('creates one trigger of every type and shows only its own fields', async () => {
    const res = await t.admin('POST', path(), [
      {
        type: 'metric',
        points: 10,
        metricId,
        metricThreshold: 2.5,
        userAttributes: userFilter(),
        eventAttributes: eventFilter(),
      },
      { type: 'achievement', points: -5, achievementId, status: 'active' },
      { type: 'streak', points: 3, streakLength: 7 },
      { type: 'time', points: 1, timeUnit: 'hour', timeInterval: 12 },
      { type: 'time', points: 1, timeUnit: 'day', timeInterval: 1 },
      { type: 'user_creation', points: 1_000_000_000, userAttributes: null },
    ]);
    expect(res.status).toBe(201);
    expect(res.body.issues).toEqual([]);
    const common = {
      id: expect.any(String),
      status: 'inactive',
      userAttributes: [],
      created: NOW,
      updated: NOW,
    };
    expect(res.body.created).toEqual([
      {
        ...common,
        type: 'metric',
        points: 10,
        metricId,
        metricThreshold: 2.5,
        userAttributes: [{ attributeId: userAttr.id, attributeKey: 'plan', attributeValue: 'pro' }],
        eventAttributes: [{ attributeId: eventAttr.id, attributeKey: 'device', attributeValue: 'ios' }],
      },
      { ...common, type: 'achievement', points: -5, achievementId, status: 'active' },
      { ...common, type: 'streak', points: 3, streakLength: 7 },
      { ...common, type: 'time', points: 1, timeUnit: 'hours', timeInterval: 12 },
      { ...common, type: 'time', points: 1, timeUnit: 'days', timeInterval: 1 },
      { ...common, type: 'user_creation', points: 1_000_000_000 },
    ]);
    const created = res.body.created;
    expect(await listAll()).toEqual(created);
    expect((await t.admin('GET', `${path()}/${created[0].id}`)).body).toEqual(created[0]);
    // Activation time is recorded for triggers created active only.
    expect((await dbRow(created[1].id)).activatedAt).toEqual(new Date(NOW));
    expect((await dbRow(created[0].id)).activatedAt).toBeNull();
    // Visible in the other system? No: triggers are scoped to their system.
    expect((await t.admin('GET', `/points/${other}/triggers/${created[0].id}`)).status).toBe(404);
    expect((await t.admin('GET', `/points/${other}/triggers`)).body).toEqual([]);
    await t.admin('DELETE', `${path()}?ids=${created.map((c: any) => c.id).join(',')}`);
  });

  it.each([
    ['GET list', 'GET', ''],
    ['GET one', 'GET', `/${UNKNOWN}`],
    ['POST', 'POST', ''],
    ['PATCH', 'PATCH', ''],
    ['DELETE', 'DELETE', `?ids=${UNKNOWN}`],
  ])('answers %s under an unknown points system with 404', async (_label, method, suffix) => {
    const body =
      method === 'POST'
        ? [{ type: 'user_creation', points: 1 }]
        : method === 'PATCH'
          ? [{ id: UNKNOWN }]
          : undefined;
    for (const systemId of [UNKNOWN, 'not-a-uuid']) {
      const res = await t.admin(method, `/points/${systemId}/triggers${suffix}`, body);
      expect(res.status).toBe(404);
      expect(res.body).toEqual({ error: `Points system not found: ${systemId}` });
    }
  });

  it('answers 404 under a deleted points system', async () => {
    const [p] = await adminCreate(t, '/points', [{ key: 'gone', name: 'Gone' }]);
    await t.admin('DELETE', `/points?ids=${p.id}`);
    const res = await t.admin('POST', `/points/${p.id}/triggers`, [{ type: 'user_creation', points: 1 }]);
    expect(res.status).toBe(404);
    expect(
      (await t.deps.db.select().from(pointsTriggers).where(eq(pointsTriggers.systemId, p.id))).length,
    ).toBe(0);
  });

  it.each([
    ['not JSON', '{', 400],
    ['an object', { type: 'user_creation', points: 1 }, 400],
    ['an empty array', [], 422],
  ])('answers %s with the right status', async (_label, body, status) => {
    const res = await t.admin('POST', path(), body);
    expect(res.status).toBe(status);
    expect(await listAll()).toEqual([]);
  });

  it.each([
    ['no type', () => ({ points: 1 }), 'type is required'],
    ['an unknown type', () => ({ type: 'login', points: 1 }), 'type'],
    ['no points', () => ({ type: 'user_creation' }), 'points is required'],
    ['zero points', () => ({ type: 'user_creation', points: 0 }), 'points'],
    ['fractional points', () => ({ type: 'user_creation', points: 1.5 }), 'points'],
    ['too many points', () => ({ type: 'user_creation', points: 1_000_000_001 }), 'points'],
    ['too few points', () => ({ type: 'user_creation', points: -1_000_000_001 }), 'points'],
    ['points as a string', () => ({ type: 'user_creation', points: '5' }), 'points'],
    ['a bad status', () => ({ type: 'user_creation', points: 1, status: 'archived' }), 'status'],
    [
      'a metric trigger without metricId',
      () => ({ type: 'metric', points: 1, metricThreshold: 1 }),
      'metricId is required',
    ],
    [
      'a metric trigger without threshold',
      () => ({ type: 'metric', points: 1, metricId }),
      'metricThreshold is required',
    ],
    [
      'an unknown metric',
      () => ({ type: 'metric', points: 1, metricId: UNKNOWN, metricThreshold: 1 }),
      'Metric not found',
    ],
    [
      'a malformed metricId',
      () => ({ type: 'metric', points: 1, metricId: 'x', metricThreshold: 1 }),
      'metricId',
    ],
    ['threshold 0', () => ({ type: 'metric', points: 1, metricId, metricThreshold: 0 }), 'metricThreshold'],
    [
      'a negative threshold',
      () => ({ type: 'metric', points: 1, metricId, metricThreshold: -2 }),
      'metricThreshold',
    ],
    [
      'an unknown achievement',
      () => ({ type: 'achievement', points: 1, achievementId: UNKNOWN }),
      'Achievement not found',
    ],
    [
      'an achievement trigger without id',
      () => ({ type: 'achievement', points: 1 }),
      'achievementId is required',
    ],
    ['streakLength 0', () => ({ type: 'streak', points: 1, streakLength: 0 }), 'streakLength'],
    ['fractional streakLength', () => ({ type: 'streak', points: 1, streakLength: 1.5 }), 'streakLength'],
    ['a bad time unit', () => ({ type: 'time', points: 1, timeUnit: 'weeks', timeInterval: 1 }), 'timeUnit'],
    [
      'timeInterval 0',
      () => ({ type: 'time', points: 1, timeUnit: 'days', timeInterval: 0 }),
      'timeInterval',
    ],
    [
      'a time trigger without interval',
      () => ({ type: 'time', points: 1, timeUnit: 'days' }),
      'timeInterval is required',
    ],
    [
      'a field of another type',
      () => ({ type: 'streak', points: 1, streakLength: 2, metricThreshold: 3 }),
      'metricThreshold is not allowed for streak triggers',
    ],
    [
      'user_creation with a time field',
      () => ({ type: 'user_creation', points: 1, timeUnit: 'days' }),
      'timeUnit is not allowed for user_creation triggers',
    ],
    [
      'event filters on a non-metric trigger',
      () => ({ type: 'streak', points: 1, streakLength: 2, eventAttributes: eventFilter() }),
      'eventAttributes is not allowed',
    ],
    [
      'an event attribute as a user filter',
      () => ({ type: 'user_creation', points: 1, userAttributes: eventFilter() }),
      'userAttributes: attribute device is not a user attribute',
    ],
    [
      'a user attribute as an event filter',
      () => ({ type: 'metric', points: 1, metricId, metricThreshold: 1, eventAttributes: userFilter() }),
      'eventAttributes: attribute plan is not',
    ],
    [
      'an unknown filter attribute',
      () => ({
        type: 'user_creation',
        points: 1,
        userAttributes: [{ attributeId: UNKNOWN, attributeValue: 'x' }],
      }),
      'does not exist',
    ],
    [
      'a duplicated filter attribute',
      () => ({ type: 'user_creation', points: 1, userAttributes: [...userFilter(), ...userFilter()] }),
      'given twice',
    ],
    [
      'an empty filter value',
      () => ({
        type: 'user_creation',
        points: 1,
        userAttributes: [{ attributeId: userAttr.id, attributeValue: '' }],
      }),
      'userAttributes.0.attributeValue',
    ],
    [
      'more than 20 filters',
      () => ({
        type: 'user_creation',
        points: 1,
        userAttributes: Array.from({ length: 21 }, () => userFilter()[0]),
      }),
      'userAttributes',
    ],
  ])('reports an item error for %s and writes nothing', async (_label, make, fragment) => {
    const res = await t.admin('POST', path(), [make()]);
    expect(res.status).toBe(200);
    expect(res.body.created).toEqual([]);
    expect(res.body.issues).toHaveLength(1);
    expect(res.body.issues[0]).toMatchObject({ severity: 'error', index: 0 });
    expect(res.body.issues[0].message).toContain(fragment);
    expect(await listAll()).toEqual([]);
  });

  describe('updates', () => {
    let metricTrigger: any;
    let streakTrigger: any;
    beforeAll(async () => {
      [metricTrigger, streakTrigger] = await adminCreate(t, path(), [
        { type: 'metric', points: 10, metricId, metricThreshold: 5, eventAttributes: eventFilter() },
        { type: 'streak', points: 2, streakLength: 3 },
      ]);
    });

    it('changes points, threshold and filters and keeps the rest', async () => {
      t.clock.advance(1000);
      const res = await t.admin('PATCH', path(), [
        {
          id: metricTrigger.id,
          points: -3,
          metricThreshold: 0.5,
          userAttributes: userFilter(),
          eventAttributes: null,
        },
      ]);
      expect(res.body.issues).toEqual([]);
      metricTrigger = res.body.updated[0];
      expect(metricTrigger).toMatchObject({
        points: -3,
        metricThreshold: 0.5,
        metricId,
        eventAttributes: [],
        userAttributes: [{ attributeId: userAttr.id, attributeKey: 'plan', attributeValue: 'pro' }],
        updated: '2025-03-10T12:00:01.000Z',
      });
      expect((await t.admin('GET', `${path()}/${metricTrigger.id}`)).body).toEqual(metricTrigger);
    });

    it('changes the type of an inactive trigger when the new fields are given', async () => {
      const res = await t.admin('PATCH', path(), [
        { id: streakTrigger.id, type: 'time', timeUnit: 'hours', timeInterval: 6 },
      ]);
      expect(res.body.issues).toEqual([]);
      const before = streakTrigger;
      streakTrigger = res.body.updated[0];
      const { streakLength: _dropped, ...rest } = before;
      expect(streakTrigger).toEqual({
        ...rest,
        type: 'time',
        timeUnit: 'hours',
        timeInterval: 6,
        updated: '2025-03-10T12:00:01.000Z',
      });
      expect(streakTrigger).not.toHaveProperty('streakLength');
      expect((await dbRow(streakTrigger.id)).streakLength).toBeNull();
    });

    it('records an activation when a trigger becomes active, not when it stays active', async () => {
      t.clock.set('2025-03-11T08:00:00Z');
      const res = await t.admin('PATCH', path(), [{ id: streakTrigger.id, status: 'active' }]);
      expect(res.body.updated[0].status).toBe('active');
      expect((await dbRow(streakTrigger.id)).activatedAt).toEqual(new Date('2025-03-11T08:00:00Z'));

      t.clock.set('2025-03-12T08:00:00Z');
      await t.admin('PATCH', path(), [{ id: streakTrigger.id, status: 'active', points: 4 }]);
      expect((await dbRow(streakTrigger.id)).activatedAt).toEqual(new Date('2025-03-11T08:00:00Z'));

      await t.admin('PATCH', path(), [{ id: streakTrigger.id, status: 'inactive' }]);
      t.clock.set('2025-03-13T08:00:00Z');
      await t.admin('PATCH', path(), [{ id: streakTrigger.id, status: 'active' }]);
      expect((await dbRow(streakTrigger.id)).activatedAt).toEqual(new Date('2025-03-13T08:00:00Z'));
      streakTrigger = (await t.admin('GET', `${path()}/${streakTrigger.id}`)).body;
    });

    it.each([
      [
        'a type change while active',
        () => ({ id: streakTrigger.id, type: 'streak', streakLength: 2 }),
        'inactive',
      ],
      [
        'a metric change while active',
        () => ({ id: streakTrigger.id, metricId }),
        'can only be changed while the trigger is inactive',
      ],
      [
        'a type change without the new fields',
        () => ({ id: metricTrigger.id, type: 'streak' }),
        'streakLength is required',
      ],
      [
        'a field of another type',
        () => ({ id: metricTrigger.id, streakLength: 4 }),
        'streakLength is not allowed for metric triggers',
      ],
      ['null points', () => ({ id: metricTrigger.id, points: null }), 'points cannot be null'],
      [
        'null metricThreshold',
        () => ({ id: metricTrigger.id, metricThreshold: null }),
        'metricThreshold cannot be null',
      ],
      ['zero points', () => ({ id: metricTrigger.id, points: 0 }), 'points'],
      ['an unknown metric', () => ({ id: metricTrigger.id, metricId: UNKNOWN }), 'Metric not found'],
      ['a bad status', () => ({ id: metricTrigger.id, status: 'archived' }), 'status'],
      [
        'a wrong-type filter',
        () => ({ id: metricTrigger.id, userAttributes: eventFilter() }),
        'not a user attribute',
      ],
      ['an unknown id', () => ({ id: UNKNOWN, points: 3 }), 'Trigger not found'],
    ])('reports %s and changes nothing', async (_label, make, fragment) => {
      const before = await listAll();
      const res = await t.admin('PATCH', path(), [make()]);
      expect(res.status).toBe(200);
      expect(res.body.updated).toEqual([]);
      expect(res.body.issues[0]).toMatchObject({ severity: 'error', index: 0 });
      expect(res.body.issues[0].message).toContain(fragment);
      expect(await listAll()).toEqual(before);
    });

    it('refuses to change the metric of an active metric trigger', async () => {
      const [m2] = await adminCreate(t, '/metrics', [{ key: 'm2', name: 'M2' }]);
      const [active] = await adminCreate(t, path(), [
        { type: 'metric', points: 1, metricId, metricThreshold: 1, status: 'active' },
      ]);
      const res = await t.admin('PATCH', path(), [{ id: active.id, metricId: m2.id }]);
      expect(res.body.issues[0].message).toBe(
        'type, metricId and achievementId can only be changed while the trigger is inactive',
      );
      expect((await t.admin('GET', `${path()}/${active.id}`)).body).toEqual(active);
      await t.admin('DELETE', `${path()}?ids=${active.id}`);
    });

    it('does not update a trigger through another system', async () => {
      const res = await t.admin('PATCH', `/points/${other}/triggers`, [{ id: metricTrigger.id, points: 99 }]);
      expect(res.body.issues[0].message).toBe('Trigger not found');
      expect((await t.admin('GET', `${path()}/${metricTrigger.id}`)).body.points).toBe(-3);
    });

    it('deletes triggers softly and reports unknown ids', async () => {
      const res = await t.admin('DELETE', `${path()}?ids=${metricTrigger.id},${UNKNOWN}`);
      expect(res.body).toEqual({
        deleted: [{ id: metricTrigger.id }],
        issues: [{ severity: 'error', id: UNKNOWN, message: 'Trigger not found' }],
      });
      expect((await t.admin('GET', `${path()}/${metricTrigger.id}`)).status).toBe(404);
      expect((await dbRow(metricTrigger.id)).deletedAt).not.toBeNull();
      // The snapshot keeps deleted triggers for archived awards.
      expect(t.deps.catalog.snapshot.triggersById.get(metricTrigger.id)?.deletedAt).not.toBeNull();
      expect((await listAll()).map((x) => x.id)).toEqual([streakTrigger.id]);
    });
  });
});
