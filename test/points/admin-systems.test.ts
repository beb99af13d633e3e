import { eq } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { leaderboards, pointsBoosts, pointsLevels, pointsTriggers } from '../../src/db/schema';
import { adminCreate, createTestServer, type TestServer } from '../helpers/server';

let t: TestServer;
beforeAll(async () => {
  t = await createTestServer();
});
afterAll(async () => t.close());

const NOW = '2025-03-10T12:00:00.000Z';
let seq = 0;
const listAll = async () => (await t.admin('GET', '/points?limit=100')).body as any[];

describe('admin points systems', () => {
  it('creates, lists, gets, updates and deletes points systems', async () => {
    const res = await t.admin('POST', '/points', [
      { key: 'xp', name: 'XP' },
      {
        key: 'coins',
        name: 'Coins',
        description: 'Spendable',
        badge: { url: 'https://cdn.example.com/coin.png' },
        maxPoints: 1000,
      },
    ]);
    expect(res.status).toBe(201);
    expect(res.body.issues).toEqual([]);
    const [xp, coins] = res.body.created;
    expect(xp).toEqual({
      id: expect.any(String),
      key: 'xp',
      name: 'XP',
      description: null,
      badge: null,
      maxPoints: null,
      created: NOW,
      updated: NOW,
    });
    expect(coins).toMatchObject({
      description: 'Spendable',
      badge: { url: 'https://cdn.example.com/coin.png' },
      maxPoints: 1000,
    });
    expect((await t.admin('GET', `/points/${coins.id}`)).body).toEqual(coins);
    expect(await listAll()).toEqual([xp, coins]);

    t.clock.advance(1000);
    const upd = await t.admin('PATCH', '/points', [
      { id: coins.id, key: 'coins', description: null, badge: null, maxPoints: null },
      { id: xp.id, name: 'Experience', maxPoints: 50, badge: { url: 'http://x.test/b.png' } },
    ]);
    expect(upd.body.issues).toEqual([]);
    expect(upd.body.updated).toEqual([
      { ...coins, description: null, badge: null, maxPoints: null, updated: '2025-03-10T12:00:01.000Z' },
      {
        ...xp,
        name: 'Experience',
        maxPoints: 50,
        badge: { url: 'http://x.test/b.png' },
        updated: '2025-03-10T12:00:01.000Z',
      },
    ]);

    const del = await t.admin('DELETE', `/points?ids=${xp.id}&ids=${coins.id}`);
    expect(del.body).toEqual({ deleted: [{ id: xp.id }, { id: coins.id }], issues: [] });
    expect((await t.admin('GET', `/points/${xp.id}`)).status).toBe(404);
    expect(await listAll()).toEqual([]);
    const again = await t.admin('POST', '/points', [{ key: 'xp', name: 'Again' }]);
    expect(again.body.issues).toEqual([
      { severity: 'error', index: 0, message: 'A points system with this key already exists' },
    ]);
  });

  it.each([
    ['not JSON', '{', 400],
    ['an object instead of an array', { key: 'a', name: 'b' }, 400],
    ['an empty array', [], 422],
  ])('answers %s with the right status and creates nothing', async (_label, body, status) => {
    const before = await listAll();
    const res = await t.admin('POST', '/points', body);
    expect(res.status).toBe(status);
    expect(Object.keys(res.body)).toEqual(['error']);
    expect(await listAll()).toEqual(before);
  });

  it.each([
    [{ name: 'x' }, 'key is required'],
    [{ key: 'p1' }, 'name is required'],
    [{ key: 'bad key', name: 'x' }, 'key'],
    [{ key: 'p1', name: 'x', maxPoints: 0 }, 'maxPoints'],
    [{ key: 'p1', name: 'x', maxPoints: -5 }, 'maxPoints'],
    [{ key: 'p1', name: 'x', maxPoints: 1.5 }, 'maxPoints'],
    [{ key: 'p1', name: 'x', maxPoints: '10' }, 'maxPoints'],
    [{ key: 'p1', name: 'x', badge: 'https://x.test/a.png' }, 'badge'],
    [{ key: 'p1', name: 'x', badge: { url: 'ftp://x.test/a.png' } }, 'badge.url'],
    [{ key: 'p1', name: 'x', badge: { url: 'not a url' } }, 'badge.url'],
    [{ key: 'p1', name: 'x', badge: { url: `https://x.test/${'a'.repeat(2048)}` } }, 'badge.url'],
    [{ key: 'p1', name: 'x', description: 'd'.repeat(1001) }, 'description'],
    [{ key: 'p1', name: 'x', description: 5 }, 'description'],
  ])('reports an item error for %j and writes nothing', async (item, fragment) => {
    const before = await listAll();
    const res = await t.admin('POST', '/points', [item]);
    expect(res.status).toBe(200);
    expect(res.body.created).toEqual([]);
    expect(res.body.issues).toHaveLength(1);
    expect(res.body.issues[0]).toMatchObject({ severity: 'error', index: 0 });
    expect(res.body.issues[0].message).toContain(fragment);
    expect(await listAll()).toEqual(before);
  });

  it('keeps the first of duplicate keys in one request', async () => {
    const res = await t.admin('POST', '/points', [
      { key: 'dupe', name: 'First' },
      { key: 'dupe', name: 'Second' },
    ]);
    expect(res.status).toBe(201);
    expect(res.body.created.map((p: any) => p.name)).toEqual(['First']);
    expect(res.body.issues).toEqual([
      { severity: 'error', index: 1, message: 'A points system with this key already exists' },
    ]);
    await t.admin('DELETE', `/points?ids=${res.body.created[0].id}`);
  });

  it.each([
    ['a null name', (id: string) => ({ id, name: null }), 'name cannot be null'],
    ['a new key', (id: string) => ({ id, key: 'other' }), 'key cannot be changed'],
    ['maxPoints 0', (id: string) => ({ id, maxPoints: 0 }), 'maxPoints'],
    ['a bad badge', (id: string) => ({ id, badge: { url: 'javascript:alert(1)' } }), 'badge.url'],
    [
      'an unknown id',
      () => ({ id: '00000000-0000-4000-8000-000000000000', name: 'x' }),
      'Points system not found',
    ],
  ])('reports an update with %s and changes nothing', async (_label, make, fragment) => {
    const [p] = await adminCreate(t, '/points', [{ key: `upd${++seq}`, name: 'Upd', maxPoints: 10 }]);
    const before = await listAll();
    const res = await t.admin('PATCH', '/points', [make(p.id)]);
    expect(res.status).toBe(200);
    expect(res.body.updated).toEqual([]);
    expect(res.body.issues[0]).toMatchObject({ severity: 'error', index: 0 });
    expect(res.body.issues[0].message).toContain(fragment);
    expect(await listAll()).toEqual(before);
    await t.admin('DELETE', `/points?ids=${p.id}`);
  });

  it('deletes the triggers, levels and boosts of a deleted system', async () => {
    const [p] = await adminCreate(t, '/points', [{ key: 'cascade', name: 'Cascade' }]);
    const [trigger] = await adminCreate(t, `/points/${p.id}/triggers`, [
      { type: 'user_creation', points: 10 },
    ]);
    const [level] = await adminCreate(t, `/points/${p.id}/levels`, [{ key: 'l1', name: 'L1', points: 0 }]);
    const [boost] = await adminCreate(t, `/points/${p.id}/boosts`, [
      { name: 'B', start: '2025-03-01', multiplier: 2 },
    ]);

    t.clock.advance(1000);
    expect((await t.admin('DELETE', `/points?ids=${p.id}`)).body.deleted).toEqual([{ id: p.id }]);
    for (const sub of ['triggers', 'levels', 'boosts']) {
      expect((await t.admin('GET', `/points/${p.id}/${sub}`)).status).toBe(404);
    }
    const deletedAt = new Date(t.clock.now());
    const [tr] = await t.deps.db.select().from(pointsTriggers).where(eq(pointsTriggers.id, trigger.id));
    const [lv] = await t.deps.db.select().from(pointsLevels).where(eq(pointsLevels.id, level.id));
    const [bo] = await t.deps.db.select().from(pointsBoosts).where(eq(pointsBoosts.id, boost.id));
    expect([tr!.deletedAt, lv!.deletedAt, bo!.deletedAt]).toEqual([deletedAt, deletedAt, deletedAt]);
    expect(t.deps.catalog.snapshot.systemsById.has(p.id)).toBe(false);
  });

  it('refuses to delete a system ranked by a leaderboard that is not finished', async () => {
    const [p] = await adminCreate(t, '/points', [{ key: 'ranked', name: 'Ranked' }]);
    const [board] = await t.deps.db
      .insert(leaderboards)
      .values({
        key: 'lb',
        name: 'LB',
        rankBy: 'points',
        pointsSystemId: p.id,
        start: '2025-03-01',
        status: 'active',
      })
      .returning();
    await t.deps.catalog.reload();

    const res = await t.admin('DELETE', `/points?ids=${p.id}`);
    expect(res.body).toEqual({
      deleted: [],
      issues: [{ severity: 'error', id: p.id, message: 'Points system is in use' }],
    });
    expect((await t.admin('GET', `/points/${p.id}`)).body).toEqual(p);

    await t.deps.db.update(leaderboards).set({ status: 'finished' }).where(eq(leaderboards.id, board!.id));
    await t.deps.catalog.reload();
    expect((await t.admin('DELETE', `/points?ids=${p.id}`)).body).toEqual({
      deleted: [{ id: p.id }],
      issues: [],
    });
  });

  it('reports unknown ids on delete', async () => {
    const unknown = '00000000-0000-4000-8000-000000000000';
    const res = await t.admin('DELETE', `/points?ids=${unknown}`);
    expect(res.body).toEqual({
      deleted: [],
      issues: [{ severity: 'error', id: unknown, message: 'Points system not found' }],
    });
  });
});
