import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { adminCreate, createTestServer, type TestServer } from '../helpers/server';

/** Every limit of the README's "Limits" table, at its boundary: the last allowed value and the first refused one. */
let t: TestServer;
beforeAll(async () => {
  t = await createTestServer({ env: { BODY_LIMIT_BYTES: '4096', ADMIN_BODY_LIMIT_BYTES: '8192' } });
  await adminCreate(t, '/metrics', [{ key: 'm', name: 'M' }]);
  for (const from of [0, 60]) {
    await adminCreate(
      t,
      '/attributes',
      Array.from({ length: from ? 41 : 60 }, (_, j) => from + j).map((i) => ({
        key: `a${i}`,
        name: `A${i}`,
        type: i % 2 ? 'event' : 'user',
      })),
    );
  }
});
afterAll(async () => t.close());

const event = (body: unknown, headers?: Record<string, string>) =>
  t.api('POST', '/v1/metrics/m/event', body, headers);
const exists = async (user: string) => (await t.deps.redis.exists(t.deps.keys.user(user).hash)) === 1;

/** A request body sent as a stream, so no Content-Length tells its size in advance. */
function streamed(path: string, key: string, bytes: number) {
  const chunk = new TextEncoder().encode('x'.repeat(1024));
  let sent = 0;
  const body = new ReadableStream<Uint8Array>({
    pull(ctl) {
      if (sent >= bytes) return ctl.close();
      sent += chunk.length;
      ctl.enqueue(chunk);
    },
  });
  return t.app.request(path, {
    method: 'POST',
    headers: { 'X-API-KEY': key, 'Content-Type': 'application/json' },
    body,
    duplex: 'half',
  } as RequestInit);
}

describe('limits', () => {
  it('answers 413 to a body over BODY_LIMIT_BYTES (application) or ADMIN_BODY_LIMIT_BYTES (admin), with or without Content-Length', async () => {
    const pad = (n: number, id = 'big') => JSON.stringify({ user: { id }, value: 1, pad: 'x'.repeat(n) });
    const under = pad(4096 - pad(0, 'big-ok').length, 'big-ok');
    expect(under.length).toBe(4096);
    expect((await event(under)).status).toBe(201);
    const over = await event(pad(4097 - pad(0).length));
    expect([over.status, over.body]).toEqual([413, { error: 'Request body is larger than 4096 bytes' }]);
    expect(await exists('big')).toBe(false);
    const chunked = await streamed('/v1/metrics/m/event', t.appKey, 10_000);
    expect(chunked.status).toBe(413);
    expect(await chunked.json()).toEqual({ error: 'Request body is larger than 4096 bytes' });

    const items = (n: number) => JSON.stringify([{ key: 'padded', name: 'P', description: 'x'.repeat(n) }]);
    expect((await t.admin('POST', '/metrics', items(6000))).status).not.toBe(413);
    expect((await t.admin('POST', '/metrics', items(8192))).status).toBe(413);
    expect((await streamed('/admin/v1/metrics', t.adminKey, 20_000)).status).toBe(413);
  });

  it('limits user ids to 255 characters, in bodies and paths (422)', async () => {
    const ok = 'u'.repeat(255);
    expect((await event({ user: { id: ok }, value: 1 })).status).toBe(201);
    const long = 'u'.repeat(256);
    expect((await event({ user: { id: long }, value: 1 })).status).toBe(422);
    expect((await t.api('GET', `/v1/users/${ok}`)).status).toBe(200);
    for (const path of [`/v1/users/${long}`, `/v1/users/${long}/metrics`, `/v1/users/${long}/streak`]) {
      const r = await t.api('GET', path);
      expect([path.slice(0, 20), r.status, r.body]).toEqual([
        path.slice(0, 20),
        422,
        { error: 'User id must be 1 to 255 characters' },
      ]);
    }
    expect(await exists(long)).toBe(false);
  });

  it('limits attribute maps of users and events to 100 keys of at most 100 characters and values of at most 255 (422)', async () => {
    const userAttrs = (n: number) =>
      Object.fromEntries(Array.from({ length: n }, (_, i) => [`a${2 * i}`, 'v']));
    const eventAttrs = (n: number) =>
      Object.fromEntries(Array.from({ length: n }, (_, i) => [`a${2 * i + 1}`, 'v']));
    expect((await event({ user: { id: 'attrs', attributes: userAttrs(51) }, value: 1 })).status).toBe(201);
    expect((await event({ user: { id: 'attrs' }, value: 1, attributes: eventAttrs(50) })).status).toBe(201);

    const many = Object.fromEntries(Array.from({ length: 101 }, (_, i) => [`a${i}`, 'v']));
    const tooMany = await event({ user: { id: 'attrs-many', attributes: many }, value: 1 });
    expect([tooMany.status, tooMany.body]).toEqual([
      422,
      { error: 'user.attributes: must have at most 100 attributes' },
    ]);
    expect((await event({ user: { id: 'attrs-many' }, value: 1, attributes: many })).status).toBe(422);
    const longKey = await event({
      user: { id: 'attrs-many' },
      value: 1,
      attributes: { ['k'.repeat(101)]: 'v' },
    });
    expect([longKey.status, longKey.body]).toEqual([
      422,
      { error: 'attributes: attribute keys must be at most 100 characters' },
    ]);
    // 100 characters is not refused for its length (it is unknown: the configuration check answers).
    const key100 = await event({
      user: { id: 'attrs-many' },
      value: 1,
      attributes: { ['k'.repeat(100)]: 'v' },
    });
    expect(key100.body.error).toBe(`Invalid attribute keys: ${'k'.repeat(100)}.`);
    const longValue = await event({
      user: { id: 'attrs-many', attributes: { a0: 'v'.repeat(256) } },
      value: 1,
    });
    expect(longValue.status).toBe(422);
    expect(
      (await event({ user: { id: 'attrs-many', attributes: { a0: 'v'.repeat(255) } }, value: 1 })).status,
    ).toBe(201);
    const put = await t.api('PUT', '/v1/users/attrs', { attributes: many });
    expect(put.status).toBe(422);
  });

  it('limits e-mail (320), name (255), device tokens (100 of 1024) and Idempotency-Key (255)', async () => {
    const at = (n: number) => `${'e'.repeat(n - '@example.com'.length)}@example.com`;
    expect((await t.api('PUT', '/v1/users/lim', { email: at(320) })).status).toBe(200);
    expect((await t.api('PUT', '/v1/users/lim', { email: at(321) })).status).toBe(422);
    expect((await t.api('PUT', '/v1/users/lim', { name: 'n'.repeat(256) })).status).toBe(422);
    expect((await t.api('PUT', '/v1/users/lim', { deviceTokens: Array(101).fill('t') })).status).toBe(422);
    expect((await t.api('PUT', '/v1/users/lim', { deviceTokens: ['t'.repeat(1025)] })).status).toBe(422);
    expect(
      (await t.api('PUT', '/v1/users/lim', { deviceTokens: Array(100).fill('t'.repeat(1024)) })).status,
    ).toBe(413); // (over this server's 4 KiB body limit)
    const idem = (k: string) => event({ user: { id: 'idem-lim' }, value: 1 }, { 'Idempotency-Key': k });
    expect((await idem('k'.repeat(255))).status).toBe(201);
    expect((await idem('k'.repeat(256))).status).toBe(422);
  });

  it('refuses the NUL character in bodies, user ids and query values (422), which Postgres cannot store', async () => {
    const r = await event({ user: { id: 'nul\u0000user' }, value: 1 });
    expect([r.status, r.body]).toEqual([
      422,
      { error: 'Strings must not contain the NUL character (\\u0000)' },
    ]);
    expect(await exists('nul\u0000user')).toBe(false);
    expect((await t.admin('POST', '/metrics', [{ key: 'nul', name: 'a\u0000b' }])).status).toBe(422);
    expect((await t.api('GET', '/v1/users/a%00b')).status).toBe(422);
    expect((await t.admin('GET', '/points?limit=1%00')).status).toBe(422);
    // An escaped backslash followed by "u0000" is not a NUL character.
    expect((await event({ user: { id: 'not\\u0000nul' }, value: 1 })).status).toBe(201);
  });

  it('bounds query values: summary ranges (400 days), leaderboard limit and offset, award and history counts', async () => {
    await event({ user: { id: 'q' }, value: 1 });
    const summary = (start: string, end: string) =>
      t.api('GET', `/v1/users/q/metrics/m/event-summary?aggregation=daily&startDate=${start}&endDate=${end}`);
    expect((await summary('2024-01-01', '2025-02-04')).status).toBe(200); // 400 days
    expect((await summary('2024-01-01', '2025-02-05')).status).toBe(422);
    expect((await summary('2025-01-02', '2025-01-01')).status).toBe(422);
    await adminCreate(t, '/leaderboards', [
      {
        key: 'qb',
        name: 'Q',
        rankBy: 'metric',
        metricId: t.deps.catalog.snapshot.metricsByKey.get('m')!.id,
        status: 'active',
      },
    ]);
    expect((await t.api('GET', '/v1/leaderboards/qb?limit=1000')).status).toBe(200);
    expect((await t.api('GET', '/v1/leaderboards/qb?limit=1001')).status).toBe(422);
    expect((await t.api('GET', '/v1/leaderboards/qb?offset=1000001')).status).toBe(422);
    expect((await t.api('GET', '/v1/leaderboards/qb?limit=1.5')).status).toBe(422);
    expect((await t.api('GET', '/v1/users/q/leaderboards/qb?numEvents=101')).status).toBe(422);
    expect((await t.api('GET', '/v1/users/q/streak?historyPeriods=101')).status).toBe(422);
    expect((await t.api('GET', '/v1/users/q/streak?historyPeriods=100')).status).toBe(200);
    await adminCreate(t, '/points', [{ key: 'qp', name: 'QP' }]);
    expect((await t.api('GET', '/v1/users/q/points/qp?awards=100')).status).toBe(200);
    expect((await t.api('GET', '/v1/users/q/points/qp?awards=101')).status).toBe(422);
    expect((await t.api('GET', '/v1/users/q/points/qp?awards=0')).status).toBe(422);
  });

  it('limits bulk bodies, id lists and pages', async () => {
    const metrics = (n: number) => Array.from({ length: n }, (_, i) => ({ key: `bulk${i}`, name: 'B' }));
    const big = await createTestServer();
    try {
      expect((await big.admin('POST', '/metrics', metrics(101))).status).toBe(422);
      expect((await big.admin('POST', '/metrics', metrics(100))).status).toBe(201);
      expect((await big.admin('PATCH', '/metrics', Array(101).fill({ id: 'x' }))).status).toBe(422);
      const ids = Array.from(
        { length: 101 },
        (_, i) => `00000000-0000-4000-8000-${String(i).padStart(12, '0')}`,
      );
      expect((await big.admin('DELETE', `/metrics?ids=${ids.join(',')}`)).status).toBe(422);
      expect((await big.admin('DELETE', `/metrics?ids=${ids.slice(1).join(',')}`)).status).toBe(200);
      expect((await big.admin('GET', '/metrics?limit=100')).status).toBe(200);
      expect((await big.admin('GET', '/metrics?limit=101')).status).toBe(422);
      expect((await big.admin('GET', '/metrics?limit=0')).status).toBe(422);
      expect((await big.admin('GET', '/metrics?skip=-1')).status).toBe(422);
      const users = Array.from({ length: 101 }, (_, i) => `u${i}`);
      expect((await big.api('GET', `/v1/streaks?userIds=${users.join(',')}`)).status).toBe(422);
      expect((await big.api('GET', `/v1/streaks?userIds=${users.slice(1).join(',')}`)).status).toBe(200);
      expect((await big.api('GET', '/v1/streaks/rankings?limit=101')).status).toBe(422);
      expect(
        (await big.admin('POST', '/streaks/freezes', { freezes: Array(1001).fill({ userId: 'u' }) })).status,
      ).toBe(422);
      expect(
        (await big.admin('POST', '/streaks/restore', { users: Array(101).fill({ id: 'u' }) })).status,
      ).toBe(422);
      const pause = await big.admin('POST', '/streaks/pauses', {
        pauses: [{ userId: 'p'.repeat(256), start: '2025-03-10', end: '2025-03-11' }],
      });
      expect([pause.status, pause.body.created, pause.body.issues.length]).toEqual([200, [], 1]);
      expect(pause.body.issues[0].message).toMatch(/userId/);
    } finally {
      await big.close();
    }
  });
});
