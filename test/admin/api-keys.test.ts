import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestServer, type TestServer } from '../helpers/server';

let t: TestServer;
beforeAll(async () => {
  t = await createTestServer();
});
afterAll(async () => t.close());

const list = async () => (await t.admin('GET', '/api-keys?limit=100')).body as any[];
/** The keys without `lastUsed`, which requests record by themselves a moment later (not a change). */
const configured = async () => (await list()).map(({ lastUsed: _, ...k }) => k);
const callWith = (key: string, path = '/admin/v1/metrics', method = 'GET') =>
  t.app.request(path, { method, headers: { 'X-API-KEY': key } });

describe('admin API keys', () => {
  it('lists the harness keys by prefix only', async () => {
    // Both harness keys share one insert (same created, random ids), so their order is not fixed.
    const keys = (await list()).sort((a, b) => a.kind.localeCompare(b.kind));
    expect(keys.map((k) => k.kind)).toEqual(['admin', 'application']);
    expect(keys[0]).toEqual({
      id: expect.any(String),
      name: 'test admin',
      kind: 'admin',
      prefix: t.adminKey.slice(0, 8),
      status: 'active',
      rateLimitPerSecond: null,
      created: expect.stringMatching(/Z$/),
      lastUsed: null,
      revoked: null,
    });
    expect(JSON.stringify(keys)).not.toContain(t.adminKey.slice(9));
    expect(JSON.stringify(keys)).not.toContain('secretHash');
  });

  it('lists created keys in creation order', async () => {
    const res = await t.admin(
      'POST',
      '/api-keys',
      [1, 2, 3, 4, 5].map((i) => ({ name: `order ${i}`, kind: 'application' })),
    );
    const names = (await list()).map((k) => k.name).filter((n) => n.startsWith('order '));
    expect(names).toEqual(res.body.created.map((k: any) => k.name));
    // The harness keys carry the database's wall-clock time, the created ones the test clock.
    expect((await t.admin('GET', '/api-keys?limit=2&skip=1')).body.map((k: any) => k.name)).toEqual([
      'order 2',
      'order 3',
    ]);
  });

  it('creates keys that work at once and shows the full key only in the create response', async () => {
    const res = await t.admin('POST', '/api-keys', [
      { name: 'ci', kind: 'application', rateLimitPerSecond: 50 },
      { name: 'ops', kind: 'admin' },
    ]);
    expect(res.status).toBe(201);
    expect(res.body.issues).toEqual([]);
    const [app, adm] = res.body.created;
    expect(app).toMatchObject({ name: 'ci', kind: 'application', status: 'active', rateLimitPerSecond: 50 });
    expect(app.created).toBe('2025-03-10T12:00:00.000Z');
    expect(app.key).toMatch(/^[a-z0-9]{8}\.[A-Za-z0-9_-]{43}$/);
    expect(app.key.slice(0, 8)).toBe(app.prefix);
    expect((await callWith(adm.key)).status).toBe(200);
    // An application key is refused by the admin API.
    expect((await callWith(app.key)).status).toBe(401);

    const got = await t.admin('GET', `/api-keys/${app.id}`);
    expect(got.body).not.toHaveProperty('key');
    expect(got.body.prefix).toBe(app.prefix);
    expect((await list()).every((k) => !('key' in k))).toBe(true);
  });

  it('updates the name and rate limit, and null resets the rate limit', async () => {
    const [k] = (
      await t.admin('POST', '/api-keys', [{ name: 'tmp', kind: 'application', rateLimitPerSecond: 5 }])
    ).body.created;
    const upd = await t.admin('PATCH', '/api-keys', [{ id: k.id, name: 'renamed' }]);
    expect(upd.body.updated[0]).toMatchObject({ name: 'renamed', rateLimitPerSecond: 5 });
    const reset = await t.admin('PATCH', '/api-keys', [{ id: k.id, rateLimitPerSecond: null }]);
    expect(reset.body.updated[0].rateLimitPerSecond).toBeNull();
  });

  it.each([
    [{ kind: 'admin' }, 'name is required'],
    [{ name: 'x' }, 'kind is required'],
    [{ name: 'x', kind: 'root' }, 'kind'],
    [{ name: '', kind: 'admin' }, 'name'],
    [{ name: 'x', kind: 'admin', rateLimitPerSecond: 0 }, 'rateLimitPerSecond'],
    [{ name: 'x', kind: 'admin', rateLimitPerSecond: 1_000_001 }, 'rateLimitPerSecond'],
    [{ name: 'x', kind: 'admin', rateLimitPerSecond: 1.5 }, 'rateLimitPerSecond'],
    [{ name: 'x', kind: 'admin', rateLimitPerSecond: '10' }, 'rateLimitPerSecond'],
    ['not an object', 'item'],
  ])('reports an item error for create item %j and creates nothing', async (item, fragment) => {
    const before = await configured();
    const res = await t.admin('POST', '/api-keys', [item]);
    expect(res.status).toBe(200);
    expect(res.body.created).toEqual([]);
    expect(res.body.issues[0]).toMatchObject({ severity: 'error', index: 0 });
    expect(res.body.issues[0].message).toContain(fragment);
    expect(await configured()).toEqual(before);
  });

  it.each([
    [{ name: null }, 'name cannot be null'],
    [{ kind: 'admin' }, 'kind cannot be changed'],
    [{ rateLimitPerSecond: -1 }, 'rateLimitPerSecond'],
    [{ name: 'x'.repeat(256) }, 'name'],
  ])('reports an item error for update %j and changes nothing', async (patch, fragment) => {
    const target = (await list()).find((k) => k.kind === 'application')!;
    const before = await configured();
    const res = await t.admin('PATCH', '/api-keys', [{ id: target.id, ...patch }]);
    expect(res.body.updated).toEqual([]);
    expect(res.body.issues[0]).toMatchObject({ severity: 'error', index: 0, id: target.id });
    expect(res.body.issues[0].message).toContain(fragment);
    expect(await configured()).toEqual(before);
  });

  it('reports unknown ids on update and revoke', async () => {
    const unknown = '00000000-0000-4000-8000-000000000000';
    const upd = await t.admin('PATCH', '/api-keys', [{ id: unknown, name: 'x' }]);
    expect(upd.body.issues).toEqual([
      { severity: 'error', message: 'API key not found', index: 0, id: unknown },
    ]);
    const del = await t.admin('DELETE', `/api-keys?ids=${unknown},nope`);
    expect(del.body.deleted).toEqual([]);
    expect(del.body.issues.map((i: any) => [i.severity, i.id])).toEqual([
      ['error', unknown],
      ['error', 'nope'],
    ]);
  });

  it('revokes a key: 401 right after the response, still listed, a second revoke warns', async () => {
    const [k] = (await t.admin('POST', '/api-keys', [{ name: 'gone', kind: 'admin' }])).body.created;
    expect((await callWith(k.key)).status).toBe(200);
    t.clock.advance(1000);
    const del = await t.admin('DELETE', `/api-keys?ids=${k.id}`);
    expect(del.body).toEqual({ deleted: [{ id: k.id }], issues: [] });
    expect((await callWith(k.key)).status).toBe(401);
    const shown = (await t.admin('GET', `/api-keys/${k.id}`)).body;
    expect(shown).toMatchObject({ status: 'revoked', revoked: '2025-03-10T12:00:01.000Z' });
    const again = await t.admin('DELETE', `/api-keys?ids=${k.id}`);
    expect(again.body).toEqual({
      deleted: [],
      issues: [{ severity: 'warning', message: 'API key is already revoked', id: k.id }],
    });
  });

  it('revokes application keys for the application API at once', async () => {
    const [k] = (await t.admin('POST', '/api-keys', [{ name: 'app', kind: 'application' }])).body.created;
    const before = await callWith(k.key, '/v1/no-such-route');
    expect(before.status).not.toBe(401);
    await t.admin('DELETE', `/api-keys?ids=${k.id}`);
    expect((await callWith(k.key, '/v1/no-such-route')).status).toBe(401);
  });

  it('answers bad bodies and ids with request-level errors', async () => {
    expect((await t.admin('POST', '/api-keys', { name: 'x', kind: 'admin' })).status).toBe(400);
    expect((await t.admin('POST', '/api-keys', [])).status).toBe(422);
    expect((await t.admin('DELETE', '/api-keys')).status).toBe(422);
    expect((await t.admin('GET', '/api-keys/not-a-uuid')).status).toBe(404);
    expect((await t.admin('GET', '/api-keys?limit=101')).status).toBe(422);
  });

  it('rejects missing, malformed and application keys with 401', async () => {
    for (const key of [undefined, 'nope', t.appKey]) {
      const res = await t.app.request('/admin/v1/api-keys', { headers: key ? { 'X-API-KEY': key } : {} });
      expect(res.status).toBe(401);
    }
  });
});

describe('revoking the last admin key', () => {
  it('refuses to revoke the last active admin key, also within one request', async () => {
    const s = await createTestServer();
    try {
      const own = (await s.admin('GET', '/api-keys')).body.find((k: any) => k.kind === 'admin');
      const alone = await s.admin('DELETE', `/api-keys?ids=${own.id}`);
      expect(alone.body).toEqual({
        deleted: [],
        issues: [{ severity: 'error', message: 'Cannot revoke the last active admin key', id: own.id }],
      });
      const [other] = (await s.admin('POST', '/api-keys', [{ name: 'second', kind: 'admin' }])).body.created;
      const res = await s.app.request(`/admin/v1/api-keys?ids=${own.id},${other.id}`, {
        method: 'DELETE',
        headers: { 'X-API-KEY': other.key },
      });
      expect(await res.json()).toEqual({
        deleted: [{ id: own.id }],
        issues: [{ severity: 'error', message: 'Cannot revoke the last active admin key', id: other.id }],
      });
      expect((await s.admin('GET', '/api-keys')).status).toBe(401);
      expect((await callWithServer(s, other.key)).status).toBe(200);
    } finally {
      await s.close();
    }
  });
});

const callWithServer = (s: TestServer, key: string) =>
  s.app.request('/admin/v1/api-keys', { headers: { 'X-API-KEY': key } });
