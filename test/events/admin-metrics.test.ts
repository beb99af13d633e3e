import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestServer, type TestServer } from '../helpers/server';

let t: TestServer;
beforeAll(async () => {
  t = await createTestServer();
});
afterAll(async () => t.close());

describe('admin metrics', () => {
  it('creates, lists, gets, updates and deletes a metric', async () => {
    const created = await t.admin('POST', '/metrics', [{ key: 'lessons', name: 'Lessons' }]);
    expect(created.status).toBe(201);
    expect(created.body.issues).toEqual([]);
    const m = created.body.created[0];
    expect(m).toMatchObject({ key: 'lessons', name: 'Lessons', unitType: 'number', units: null });

    expect((await t.admin('GET', `/metrics/${m.id}`)).body).toEqual(m);
    expect((await t.admin('GET', '/metrics')).body).toEqual([m]);

    const upd = await t.admin('PATCH', '/metrics', [
      { id: m.id, name: 'Lessons done', unitType: 'currency', units: 'USD' },
    ]);
    expect(upd.status).toBe(200);
    expect(upd.body.updated[0]).toMatchObject({ name: 'Lessons done', unitType: 'currency', units: 'USD' });

    const del = await t.admin('DELETE', `/metrics?ids=${m.id}`);
    expect(del.body).toEqual({ deleted: [{ id: m.id }], issues: [] });
    expect((await t.admin('GET', `/metrics/${m.id}`)).status).toBe(404);
    // Keys of deleted metrics stay reserved.
    const again = await t.admin('POST', '/metrics', [{ key: 'lessons', name: 'Again' }]);
    expect(again.status).toBe(200);
    expect(again.body.issues[0]).toMatchObject({ severity: 'error', index: 0 });
  });

  it.each([
    ['not JSON', '{', 400],
    ['an object instead of an array', { key: 'a', name: 'b' }, 400],
    ['an empty array', [], 422],
    ['more than 100 items', Array.from({ length: 101 }, (_, i) => ({ key: `k${i}`, name: 'n' })), 422],
  ])('answers %s with the right status and creates nothing', async (_label, body, status) => {
    const before = (await t.admin('GET', '/metrics?limit=100')).body.length;
    const res = await t.admin('POST', '/metrics', body);
    expect(res.status).toBe(status);
    expect(typeof res.body.error).toBe('string');
    expect(Object.keys(res.body)).toEqual(['error']);
    expect((await t.admin('GET', '/metrics?limit=100')).body.length).toBe(before);
  });

  it.each([
    [{ name: 'No key' }, 'key is required'],
    [{ key: 'bad key!', name: 'x' }, 'key'],
    [{ key: 'ok', name: '' }, 'name'],
    [{ key: 'ok', name: 7 }, 'name'],
    [{ key: 'cur', name: 'x', unitType: 'currency', units: 'dollars' }, 'currency'],
  ])('reports an item error for %j and writes nothing', async (item, fragment) => {
    const res = await t.admin('POST', '/metrics', [item]);
    expect(res.status).toBe(200);
    expect(res.body.created).toEqual([]);
    expect(res.body.issues[0].message).toContain(fragment);
    const all = (await t.admin('GET', '/metrics?limit=100')).body as Array<{ key: string }>;
    expect(all.some((m) => m.key === 'ok' || m.key === 'cur')).toBe(false);
  });

  it('rejects missing, malformed and application keys with 401', async () => {
    for (const key of [undefined, 'nope', t.appKey, `${t.adminKey.slice(0, 9)}${'x'.repeat(43)}`]) {
      const res = await t.app.request('/admin/v1/metrics', { headers: key ? { 'X-API-KEY': key } : {} });
      expect(res.status).toBe(401);
      expect(await res.json()).toHaveProperty('error');
    }
  });

  it('answers bad list paging with 422', async () => {
    expect((await t.admin('GET', '/metrics?limit=0')).status).toBe(422);
    expect((await t.admin('GET', '/metrics?limit=1.5')).status).toBe(422);
    expect((await t.admin('GET', '/metrics?skip=-1')).status).toBe(422);
  });
});
