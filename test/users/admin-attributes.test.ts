import { eq } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { achievements, leaderboards } from '../../src/db/schema';
import { adminCreate, createTestServer, type TestServer } from '../helpers/server';

let t: TestServer;
beforeAll(async () => {
  t = await createTestServer();
});
afterAll(async () => t.close());

const NOW = '2025-03-10T12:00:00.000Z';
let seq = 0;
const listAll = async () => (await t.admin('GET', '/attributes?limit=100')).body as any[];

describe('admin attributes', () => {
  it('creates, lists, gets, updates and deletes attributes', async () => {
    const res = await t.admin('POST', '/attributes', [
      { key: 'plan', name: 'Plan', type: 'user' },
      { key: 'plan', name: 'Plan (event)', type: 'event' },
      { key: 'device', name: 'Device', type: 'event' },
    ]);
    expect(res.status).toBe(201);
    expect(res.body.issues).toEqual([]);
    const [plan, planEvent, device] = res.body.created;
    expect(plan).toEqual({
      id: expect.any(String),
      key: 'plan',
      name: 'Plan',
      type: 'user',
      created: NOW,
      updated: NOW,
    });
    expect(planEvent).toMatchObject({ key: 'plan', type: 'event' });

    expect((await t.admin('GET', `/attributes/${plan.id}`)).body).toEqual(plan);
    expect((await t.admin('GET', '/attributes?limit=2&skip=1')).body).toEqual([planEvent, device]);

    t.clock.advance(60_000);
    const upd = await t.admin('PATCH', '/attributes', [
      { id: device.id, name: 'Device kind', key: 'device', type: 'event' },
    ]);
    expect(upd.body).toEqual({
      updated: [{ ...device, name: 'Device kind', updated: '2025-03-10T12:01:00.000Z' }],
      issues: [],
    });

    const del = await t.admin('DELETE', `/attributes?ids=${device.id},${planEvent.id}`);
    expect(del.body).toEqual({ deleted: [{ id: device.id }, { id: planEvent.id }], issues: [] });
    expect((await t.admin('GET', `/attributes/${device.id}`)).status).toBe(404);
    expect((await listAll()).map((a) => a.id)).toEqual([plan.id]);

    // Keys of deleted attributes stay reserved within their type.
    const again = await t.admin('POST', '/attributes', [{ key: 'device', name: 'Again', type: 'event' }]);
    expect(again.status).toBe(200);
    expect(again.body.issues).toEqual([
      { severity: 'error', index: 0, message: 'An event attribute with this key already exists' },
    ]);
    await t.admin('DELETE', `/attributes?ids=${plan.id}`);
  });

  it.each([
    ['not JSON', '{', 400],
    ['an object instead of an array', { key: 'a', name: 'b', type: 'user' }, 400],
    ['an empty array', [], 422],
    [
      'more than 100 items',
      Array.from({ length: 101 }, (_, i) => ({ key: `k${i}`, name: 'n', type: 'user' })),
      422,
    ],
  ])('answers %s with the right status and creates nothing', async (_label, body, status) => {
    const before = await listAll();
    const res = await t.admin('POST', '/attributes', body);
    expect(res.status).toBe(status);
    expect(Object.keys(res.body)).toEqual(['error']);
    expect(await listAll()).toEqual(before);
  });

  it.each([
    [{ name: 'No key', type: 'user' }, 'key is required'],
    [{ key: 'nokey', type: 'user' }, 'name is required'],
    [{ key: 'notype', name: 'x' }, 'type is required'],
    [{ key: 'bad key!', name: 'x', type: 'user' }, 'key'],
    [{ key: 'k'.repeat(101), name: 'x', type: 'user' }, 'key'],
    [{ key: 'ok', name: '', type: 'user' }, 'name'],
    [{ key: 'ok', name: 'x'.repeat(256), type: 'user' }, 'name'],
    [{ key: 'ok', name: 7, type: 'user' }, 'name'],
    [{ key: 'ok', name: 'x', type: 'session' }, 'type'],
    ['not an object', 'item'],
  ])('reports an item error for %j and writes nothing', async (item, fragment) => {
    const before = await listAll();
    const res = await t.admin('POST', '/attributes', [item]);
    expect(res.status).toBe(200);
    expect(res.body.created).toEqual([]);
    expect(res.body.issues).toHaveLength(1);
    expect(res.body.issues[0]).toMatchObject({ severity: 'error', index: 0 });
    expect(res.body.issues[0].message).toContain(fragment);
    expect(await listAll()).toEqual(before);
  });

  it('keeps the first of duplicate keys in one request and reports the others', async () => {
    const res = await t.admin('POST', '/attributes', [
      { key: 'dup', name: 'First', type: 'user' },
      { key: 'dup', name: 'Second', type: 'user' },
      { key: 'dup', name: 'Event', type: 'event' },
    ]);
    expect(res.status).toBe(201);
    expect(res.body.created.map((a: any) => a.name)).toEqual(['First', 'Event']);
    expect(res.body.issues).toEqual([
      { severity: 'error', index: 1, message: 'A user attribute with this key already exists' },
    ]);
    await t.admin('DELETE', `/attributes?ids=${res.body.created.map((a: any) => a.id).join(',')}`);
  });

  it.each([
    ['a null name', (id: string) => ({ id, name: null }), 'name cannot be null'],
    ['an empty name', (id: string) => ({ id, name: '' }), 'name'],
    ['a new key', (id: string) => ({ id, key: 'other' }), 'key cannot be changed'],
    ['a new type', (id: string) => ({ id, type: 'event' }), 'type cannot be changed'],
    [
      'an unknown id',
      () => ({ id: '00000000-0000-4000-8000-000000000000', name: 'x' }),
      'Attribute not found',
    ],
    ['a malformed id', () => ({ id: 'nope', name: 'x' }), 'id'],
    ['no id', () => ({ name: 'x' }), 'id is required'],
  ])('reports an update with %s and changes nothing', async (_label, make, fragment) => {
    const [a] = await adminCreate(t, '/attributes', [{ key: `upd${++seq}`, name: 'Upd', type: 'user' }]);
    const before = await listAll();
    const res = await t.admin('PATCH', '/attributes', [make(a.id)]);
    expect(res.status).toBe(200);
    expect(res.body.updated).toEqual([]);
    expect(res.body.issues[0].severity).toBe('error');
    expect(res.body.issues[0].message).toContain(fragment);
    expect(await listAll()).toEqual(before);
    await t.admin('DELETE', `/attributes?ids=${a.id}`);
  });

  it('reports unknown and malformed ids on delete', async () => {
    const unknown = '00000000-0000-4000-8000-000000000000';
    const res = await t.admin('DELETE', `/attributes?ids=${unknown},nope`);
    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      deleted: [],
      issues: [
        { severity: 'error', id: unknown, message: 'Attribute not found' },
        { severity: 'error', id: 'nope', message: 'Attribute not found' },
      ],
    });
    expect((await t.admin('DELETE', '/attributes')).status).toBe(422);
  });

  describe('refuses to delete an attribute in use', () => {
    let userAttr: any;
    let eventAttr: any;
    let systemId: string;
    beforeAll(async () => {
      [userAttr, eventAttr] = await adminCreate(t, '/attributes', [
        { key: 'tier', name: 'Tier', type: 'user' },
        { key: 'source', name: 'Source', type: 'event' },
      ]);
      [{ id: systemId }] = await adminCreate(t, '/points', [{ key: 'xp', name: 'XP' }]);
    });

    const expectInUse = async (id: string) => {
      const res = await t.admin('DELETE', `/attributes?ids=${id}`);
      expect(res.body).toEqual({
        deleted: [],
        issues: [{ severity: 'error', id, message: 'Attribute is in use' }],
      });
      expect((await t.admin('GET', `/attributes/${id}`)).status).toBe(200);
    };

    it('by a points trigger filter', async () => {
      const [metric] = await adminCreate(t, '/metrics', [{ key: 'm1', name: 'M1' }]);
      const [trigger] = await adminCreate(t, `/points/${systemId}/triggers`, [
        {
          type: 'metric',
          points: 5,
          metricId: metric.id,
          metricThreshold: 1,
          userAttributes: [{ attributeId: userAttr.id, attributeValue: 'gold' }],
          eventAttributes: [{ attributeId: eventAttr.id, attributeValue: 'web' }],
        },
      ]);
      await expectInUse(userAttr.id);
      await expectInUse(eventAttr.id);
      await t.admin('DELETE', `/points/${systemId}/triggers?ids=${trigger.id}`);
    });

    it('by a boost filter', async () => {
      const [boost] = await adminCreate(t, `/points/${systemId}/boosts`, [
        {
          name: 'B',
          start: '2025-03-01',
          multiplier: 2,
          userAttributes: [{ attributeId: userAttr.id, attributeValue: 'gold' }],
        },
      ]);
      await expectInUse(userAttr.id);
      await t.admin('DELETE', `/points/${systemId}/boosts?ids=${boost.id}`);
    });

    it('by an achievement filter', async () => {
      const [ach] = await t.deps.db
        .insert(achievements)
        .values({
          key: 'a1',
          name: 'A1',
          trigger: 'api',
          userAttributes: [{ attributeId: userAttr.id, attributeValue: 'x' }],
        })
        .returning();
      await t.deps.catalog.reload();
      await expectInUse(userAttr.id);
      await t.deps.db.update(achievements).set({ deletedAt: new Date() }).where(eq(achievements.id, ach!.id));
      await t.deps.catalog.reload();
    });

    it('by a leaderboard breakdown', async () => {
      const [board] = await t.deps.db
        .insert(leaderboards)
        .values({
          key: 'lb1',
          name: 'LB',
          rankBy: 'streak',
          start: '2025-03-01',
          breakdownAttributes: [userAttr.id],
        })
        .returning();
      await t.deps.catalog.reload();
      await expectInUse(userAttr.id);
      await t.deps.db
        .update(leaderboards)
        .set({ deletedAt: new Date() })
        .where(eq(leaderboards.id, board!.id));
      await t.deps.catalog.reload();
    });

    it('and deletes it once nothing references it', async () => {
      const res = await t.admin('DELETE', `/attributes?ids=${userAttr.id},${eventAttr.id}`);
      expect(res.body).toEqual({ deleted: [{ id: userAttr.id }, { id: eventAttr.id }], issues: [] });
    });
  });
});
