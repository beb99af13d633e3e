import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { adminCreate, createTestServer, type TestServer } from '../helpers/server';

let t: TestServer;
let sys: string;
let other: string;
const UNKNOWN = '00000000-0000-4000-8000-000000000000';
const NOW = '2025-03-10T12:00:00.000Z';

beforeAll(async () => {
  t = await createTestServer();
  [{ id: sys }, { id: other }] = await adminCreate(t, '/points', [
    { key: 'xp', name: 'XP' },
    { key: 'other', name: 'Other' },
  ]);
});
afterAll(async () => t.close());

const path = (systemId = sys) => `/points/${systemId}/levels`;
const listAll = async (systemId = sys) => (await t.admin('GET', `${path(systemId)}?limit=100`)).body as any[];

describe('admin points levels', () => {
  it('creates, lists, gets, updates and deletes levels', async () => {
    const res = await t.admin('POST', path(), [
      {
        key: 'gold',
        name: 'Gold',
        points: 1000,
        badge: { url: 'https://x.test/gold.png' },
        description: 'Top',
      },
      { key: 'bronze', name: 'Bronze', points: 0 },
    ]);
    expect(res.status).toBe(201);
    expect(res.body.issues).toEqual([]);
    const [gold, bronze] = res.body.created;
    expect(bronze).toEqual({
      id: expect.any(String),
      key: 'bronze',
      name: 'Bronze',
      description: null,
      badge: null,
      points: 0,
      created: NOW,
      updated: NOW,
    });
    expect(gold).toMatchObject({
      badge: { url: 'https://x.test/gold.png' },
      description: 'Top',
      points: 1000,
    });
    expect(await listAll()).toEqual([gold, bronze]);
    expect((await t.admin('GET', `${path()}/${gold.id}`)).body).toEqual(gold);
    expect((await t.admin('GET', `${path(other)}/${gold.id}`)).status).toBe(404);

    t.clock.advance(5000);
    const upd = await t.admin('PATCH', path(), [
      { id: gold.id, key: 'gold', points: 500, badge: null, description: null, name: 'Golden' },
    ]);
    expect(upd.body).toEqual({
      updated: [
        {
          ...gold,
          name: 'Golden',
          points: 500,
          badge: null,
          description: null,
          updated: '2025-03-10T12:00:05.000Z',
        },
      ],
      issues: [],
    });
    // Thresholds of a swapped pair: the first item frees 1000 for the second.
    const swap = await t.admin('PATCH', path(), [
      { id: gold.id, points: 2000 },
      { id: bronze.id, points: 1000 },
    ]);
    expect(swap.body.issues).toEqual([]);

    const del = await t.admin('DELETE', `${path()}?ids=${gold.id}`);
    expect(del.body).toEqual({ deleted: [{ id: gold.id }], issues: [] });
    expect((await t.admin('GET', `${path()}/${gold.id}`)).status).toBe(404);
    // A deleted level frees its threshold, but its key stays reserved.
    const again = await t.admin('POST', path(), [
      { key: 'gold', name: 'Gold again', points: 3000 },
      { key: 'platinum', name: 'Platinum', points: 2000 },
    ]);
    expect(again.body.issues).toEqual([
      { severity: 'error', index: 0, message: 'A level with this key already exists in this points system' },
    ]);
    expect(again.body.created.map((l: any) => l.key)).toEqual(['platinum']);
    await t.admin('DELETE', `${path()}?ids=${bronze.id},${again.body.created[0].id}`);
    expect(await listAll()).toEqual([]);
  });

  it('scopes key and threshold uniqueness to the system', async () => {
    const [a] = await adminCreate(t, path(), [{ key: 'shared', name: 'Shared', points: 10 }]);
    const [b] = await adminCreate(t, path(other), [{ key: 'shared', name: 'Shared', points: 10 }]);
    expect(a.id).not.toBe(b.id);
    const dup = await t.admin('POST', path(), [
      { key: 'shared', name: 'Again', points: 20 },
      { key: 'fresh', name: 'Fresh', points: 10 },
      { key: 'newer', name: 'Newer', points: 30 },
      { key: 'newer', name: 'Newer 2', points: 40 },
    ]);
    expect(dup.status).toBe(201);
    expect(dup.body.created.map((l: any) => l.name)).toEqual(['Newer']);
    expect(dup.body.issues).toEqual([
      { severity: 'error', index: 0, message: 'A level with this key already exists in this points system' },
      {
        severity: 'error',
        index: 1,
        message: 'A level with these points already exists in this points system',
      },
      { severity: 'error', index: 3, message: 'A level with this key already exists in this points system' },
    ]);
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
        ? [{ key: 'k', name: 'n', points: 1 }]
        : method === 'PATCH'
          ? [{ id: UNKNOWN }]
          : undefined;
    const res = await t.admin(method, `/points/${UNKNOWN}/levels${suffix}`, body);
    expect(res.status).toBe(404);
    expect(res.body).toEqual({ error: `Points system not found: ${UNKNOWN}` });
  });

  it.each([
    [{ name: 'x', points: 1 }, 'key is required'],
    [{ key: 'l1', points: 1 }, 'name is required'],
    [{ key: 'l1', name: 'x' }, 'points is required'],
    [{ key: 'l 1', name: 'x', points: 1 }, 'key'],
    [{ key: 'l1', name: 'x', points: -1 }, 'points'],
    [{ key: 'l1', name: 'x', points: 2.5 }, 'points'],
    [{ key: 'l1', name: 'x', points: '5' }, 'points'],
    [{ key: 'l1', name: 'x', points: 1, badge: { url: 'nope' } }, 'badge.url'],
    [{ key: 'l1', name: 'x', points: 1, description: 'd'.repeat(1001) }, 'description'],
  ])('reports an item error for %j and writes nothing', async (item, fragment) => {
    const before = await listAll();
    const res = await t.admin('POST', path(), [item]);
    expect(res.status).toBe(200);
    expect(res.body.created).toEqual([]);
    expect(res.body.issues[0]).toMatchObject({ severity: 'error', index: 0 });
    expect(res.body.issues[0].message).toContain(fragment);
    expect(await listAll()).toEqual(before);
  });

  describe('update errors', () => {
    let level: any;
    beforeAll(async () => {
      [level] = await adminCreate(t, path(), [{ key: 'target', name: 'Target', points: 50 }]);
    });

    it.each([
      ['a taken threshold', () => ({ id: level.id, points: 10 }), 'A level with these points already exists'],
      ['a new key', () => ({ id: level.id, key: 'renamed' }), 'key cannot be changed'],
      ['null points', () => ({ id: level.id, points: null }), 'points cannot be null'],
      ['null name', () => ({ id: level.id, name: null }), 'name cannot be null'],
      ['negative points', () => ({ id: level.id, points: -3 }), 'points'],
      ['an unknown id', () => ({ id: UNKNOWN, name: 'x' }), 'Level not found'],
    ])('reports %s and changes nothing', async (_label, make, fragment) => {
      const before = await listAll();
      const res = await t.admin('PATCH', path(), [make()]);
      expect(res.body.updated).toEqual([]);
      expect(res.body.issues[0].message).toContain(fragment);
      expect(await listAll()).toEqual(before);
    });

    it('does not touch a level through another system', async () => {
      const res = await t.admin('PATCH', path(other), [{ id: level.id, name: 'Hijack' }]);
      expect(res.body.issues).toEqual([
        { severity: 'error', index: 0, id: level.id, message: 'Level not found' },
      ]);
      const del = await t.admin('DELETE', `${path(other)}?ids=${level.id}`);
      expect(del.body.deleted).toEqual([]);
      expect((await t.admin('GET', `${path()}/${level.id}`)).body.name).toBe('Target');
    });
  });
});
