import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { users } from '../../src/db/schema';
import { adminCreate, createTestServer, type TestServer } from '../helpers/server';

let t: TestServer;
let sys: string;
let other: string;
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
  [userAttr, eventAttr] = await adminCreate(t, '/attributes', [
    { key: 'plan', name: 'Plan', type: 'user' },
    { key: 'device', name: 'Device', type: 'event' },
  ]);
  // One user known only to Redis (not yet written to history), one only to Postgres.
  await t.deps.redis.hset(t.deps.keys.user('redis-user').hash, 'tz', 'UTC');
  await t.deps.db.insert(users).values({ id: 'pg-user' });
});
afterAll(async () => t.close());

const path = (systemId = sys) => `/points/${systemId}/boosts`;
const listAll = async () => (await t.admin('GET', `${path()}?limit=100`)).body as any[];
const cohort = () => [{ attributeId: userAttr.id, attributeValue: 'pro' }];

describe('admin points boosts', () => {
  it('creates boosts with a status derived from the UTC date', async () => {
    const res = await t.admin('POST', path(), [
      { name: 'Past', start: '2025-03-01', end: '2025-03-09', multiplier: 2 },
      { name: 'Today', start: '2025-03-10', end: '2025-03-10', multiplier: 1.5, rounding: 'nearest' },
      {
        name: 'Open',
        start: '2025-01-01',
        end: null,
        multiplier: 0.5,
        rounding: 'up',
        userAttributes: cohort(),
      },
      { name: 'Future', start: '2025-03-11', multiplier: 3 },
    ]);
    expect(res.status).toBe(201);
    expect(res.body.issues).toEqual([]);
    const [past, today, open, future] = res.body.created;
    expect(today).toEqual({
      id: expect.any(String),
      name: 'Today',
      status: 'active',
      start: '2025-03-10',
      end: '2025-03-10',
      multiplier: 1.5,
      rounding: 'nearest',
      userId: null,
      userAttributes: [],
      created: NOW,
      updated: NOW,
    });
    expect(past).toMatchObject({ status: 'finished', rounding: 'down' });
    expect(open).toMatchObject({
      status: 'active',
      end: null,
      userAttributes: [{ attributeId: userAttr.id, attributeKey: 'plan', attributeValue: 'pro' }],
    });
    expect(future).toMatchObject({ status: 'scheduled', end: null });
    expect(await listAll()).toEqual([past, today, open, future]);

    // The status follows the clock.
    t.clock.set('2025-03-11T00:00:00Z');
    expect((await listAll()).map((b) => b.status)).toEqual(['finished', 'finished', 'active', 'active']);
    expect((await t.admin('GET', `${path()}/${future.id}`)).body.status).toBe('active');
    expect((await t.admin('GET', `${path(other)}/${future.id}`)).status).toBe(404);
    t.clock.set(NOW);

    await t.admin('DELETE', `${path()}?ids=${[past, today, open, future].map((b) => b.id).join(',')}`);
    expect(await listAll()).toEqual([]);
  });

  it('creates user-specific boosts for users known to Redis or Postgres and lists them by user', async () => {
    const res = await t.admin('POST', path(), [
      { name: 'R', start: '2025-03-01', multiplier: 2, userId: 'redis-user' },
      { name: 'P', start: '2025-03-01', multiplier: 2, userId: 'pg-user', userAttributes: null },
      { name: 'G', start: '2025-03-01', multiplier: 2 },
      { name: 'X', start: '2025-03-01', multiplier: 2, userId: 'ghost' },
    ]);
    expect(res.status).toBe(201);
    expect(res.body.issues).toEqual([{ severity: 'error', index: 3, message: 'User does not exist' }]);
    const [r, p, g] = res.body.created;
    expect(r).toMatchObject({ userId: 'redis-user', userAttributes: [] });
    expect(p.userId).toBe('pg-user');
    expect(g.userId).toBeNull();
    expect((await t.admin('GET', `${path()}?userId=redis-user`)).body).toEqual([r]);
    expect((await t.admin('GET', `${path()}?userId=pg-user`)).body).toEqual([p]);
    expect((await t.admin('GET', `${path()}?userId=ghost`)).body).toEqual([]);
    expect((await t.admin('GET', `${path()}?userId=a&userId=b`)).status).toBe(422);
    expect(await listAll()).toEqual([r, p, g]);
    await t.admin('DELETE', `${path()}?ids=${[r, p, g].map((b) => b.id).join(',')}`);
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
        ? [{ name: 'B', start: '2025-03-01', multiplier: 2 }]
        : method === 'PATCH'
          ? [{ id: UNKNOWN }]
          : undefined;
    const res = await t.admin(method, `/points/${UNKNOWN}/boosts${suffix}`, body);
    expect(res.status).toBe(404);
    expect(res.body).toEqual({ error: `Points system not found: ${UNKNOWN}` });
  });

  it.each([
    [{ start: '2025-03-01', multiplier: 2 }, 'name is required'],
    [{ name: 'B', multiplier: 2 }, 'start is required'],
    [{ name: 'B', start: '2025-03-01' }, 'multiplier is required'],
    [{ name: 'B', start: '2025-02-30', multiplier: 2 }, 'start'],
    [{ name: 'B', start: '03/01/2025', multiplier: 2 }, 'start'],
    [{ name: 'B', start: '2025-03-02', end: '2025-03-01', multiplier: 2 }, 'end must not be before start'],
    [{ name: 'B', start: '2025-03-01', multiplier: 0 }, 'multiplier'],
    [{ name: 'B', start: '2025-03-01', multiplier: -2 }, 'multiplier'],
    [{ name: 'B', start: '2025-03-01', multiplier: 1 }, 'multiplier'],
    [{ name: 'B', start: '2025-03-01', multiplier: 100 }, 'multiplier'],
    [{ name: 'B', start: '2025-03-01', multiplier: '2' }, 'multiplier'],
    [{ name: 'B', start: '2025-03-01', multiplier: 2, rounding: 'banker' }, 'rounding'],
    [{ name: 'B', start: '2025-03-01', multiplier: 2, userId: '' }, 'userId'],
    [{ name: 'B', start: '2025-03-01', multiplier: 2, userId: 7 }, 'userId'],
    [{ name: 'B', start: '2025-03-01', multiplier: 2, userId: 'ghost' }, 'User does not exist'],
  ])('reports an item error for %j and writes nothing', async (item, fragment) => {
    const res = await t.admin('POST', path(), [item]);
    expect(res.status).toBe(200);
    expect(res.body.created).toEqual([]);
    expect(res.body.issues[0]).toMatchObject({ severity: 'error', index: 0 });
    expect(res.body.issues[0].message).toContain(fragment);
    expect(await listAll()).toEqual([]);
  });

  it.each([
    ['userId with filters', () => ({ userId: 'pg-user', userAttributes: cohort() }), 'cannot be combined'],
    [
      'an event attribute filter',
      () => ({ userAttributes: [{ attributeId: eventAttr.id, attributeValue: 'ios' }] }),
      'not a user attribute',
    ],
    [
      'an unknown filter attribute',
      () => ({ userAttributes: [{ attributeId: UNKNOWN, attributeValue: 'x' }] }),
      'does not exist',
    ],
  ])('reports a boost with %s and writes nothing', async (_label, make, fragment) => {
    const res = await t.admin('POST', path(), [{ name: 'B', start: '2025-03-01', multiplier: 2, ...make() }]);
    expect(res.body.created).toEqual([]);
    expect(res.body.issues[0].message).toContain(fragment);
    expect(await listAll()).toEqual([]);
  });

  describe('updates', () => {
    let global: any;
    let personal: any;
    beforeAll(async () => {
      [global, personal] = await adminCreate(t, path(), [
        { name: 'Global', start: '2025-03-01', end: '2025-03-31', multiplier: 2 },
        { name: 'Personal', start: '2025-03-01', multiplier: 3, userId: 'redis-user' },
      ]);
    });

    it('changes window, multiplier, rounding and filters', async () => {
      t.clock.advance(1000);
      const res = await t.admin('PATCH', path(), [
        {
          id: global.id,
          start: '2025-03-20',
          end: null,
          multiplier: 0.25,
          rounding: 'up',
          userAttributes: cohort(),
        },
        { id: personal.id, name: 'Mine', userId: 'redis-user', userAttributes: null },
      ]);
      expect(res.body.issues).toEqual([]);
      expect(res.body.updated).toEqual([
        {
          ...global,
          start: '2025-03-20',
          end: null,
          status: 'scheduled',
          multiplier: 0.25,
          rounding: 'up',
          userAttributes: [{ attributeId: userAttr.id, attributeKey: 'plan', attributeValue: 'pro' }],
          updated: '2025-03-10T12:00:01.000Z',
        },
        { ...personal, name: 'Mine', updated: '2025-03-10T12:00:01.000Z' },
      ]);
      [global, personal] = res.body.updated;
    });

    it.each([
      ['a new userId', () => ({ id: personal.id, userId: 'pg-user' }), 'userId cannot be changed'],
      [
        'a userId on a global boost',
        () => ({ id: global.id, userId: 'pg-user' }),
        'userId cannot be changed',
      ],
      ['filters on a user boost', () => ({ id: personal.id, userAttributes: cohort() }), 'user-specific'],
      ['end before start', () => ({ id: global.id, end: '2025-03-19' }), 'end must not be before start'],
      ['start after end', () => ({ id: global.id, start: '2025-04-01', end: '2025-03-25' }), 'end must not'],
      ['multiplier 1', () => ({ id: global.id, multiplier: 1 }), 'multiplier'],
      ['a null multiplier', () => ({ id: global.id, multiplier: null }), 'multiplier cannot be null'],
      ['a null start', () => ({ id: global.id, start: null }), 'start cannot be null'],
      ['an unknown id', () => ({ id: UNKNOWN, name: 'x' }), 'Boost not found'],
    ])('reports %s and changes nothing', async (_label, make, fragment) => {
      const before = await listAll();
      const res = await t.admin('PATCH', path(), [make()]);
      expect(res.status).toBe(200);
      expect(res.body.updated).toEqual([]);
      expect(res.body.issues[0]).toMatchObject({ severity: 'error', index: 0 });
      expect(res.body.issues[0].message).toContain(fragment);
      expect(await listAll()).toEqual(before);
    });

    it('deletes boosts and reports unknown ones', async () => {
      const res = await t.admin('DELETE', `${path()}?ids=${global.id},${UNKNOWN}`);
      expect(res.body).toEqual({
        deleted: [{ id: global.id }],
        issues: [{ severity: 'error', id: UNKNOWN, message: 'Boost not found' }],
      });
      expect(await listAll()).toEqual([personal]);
      expect((await t.admin('DELETE', `${path(other)}?ids=${personal.id}`)).body.deleted).toEqual([]);
    });
  });
});
