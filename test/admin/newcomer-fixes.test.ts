import { eq } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { generateApiKey } from '../../src/api-keys';
import { apiKeys, webhookDeliveries } from '../../src/db/schema';
import { HistoryWriter } from '../../src/workers/history-writer';
import { addStaleOutboxRecord } from '../helpers/outbox';
import { adminCreate, createTestServer, type TestServer } from '../helpers/server';
import { csrfOf, dashboardBrowser } from '../helpers/dashboard';

/** Issue 18: what a new user and an operator stumble on (bugs and messages; the dashboard's pages). */
let t: TestServer;
let systemId: string;
beforeAll(async () => {
  t = await createTestServer();
  const [m] = await adminCreate(t, '/metrics', [{ key: 'lessons', name: 'Lessons' }]);
  const [p] = await adminCreate(t, '/points', [{ key: 'xp', name: 'XP' }]);
  systemId = p.id;
  await adminCreate(t, `/points/${p.id}/triggers`, [
    { type: 'metric', metricId: m.id, metricThreshold: 1, points: 10, status: 'active' },
  ]);
});
afterAll(async () => t.close());

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** The application key's row as the admin API shows it. */
async function appKeyShown() {
  const prefix = t.appKey.split('.')[0];
  const res = await t.admin('GET', '/api-keys?limit=100');
  return res.body.find((k: { prefix: string }) => k.prefix === prefix);
}

async function waitFor<T>(read: () => Promise<T>, ok: (v: T) => boolean, ms = 3000): Promise<T> {
  const until = Date.now() + ms;
  let v = await read();
  while (!ok(v) && Date.now() < until) {
    await sleep(50);
    v = await read();
  }
  return v;
}

/** A tiny browser over app.request, signed in with the admin key. */
async function dashboard() {
  const { request } = dashboardBrowser(t);
  const login = await request('GET', '/dashboard/login');
  await request('POST', '/dashboard/login', {
    _csrf: csrfOf(login.text),
    key: t.adminKey,
    next: '/dashboard',
  });
  return (path: string) => request('GET', path);
}

describe('API keys', () => {
  it('records lastUsed off the request path, at most once a minute per key', async () => {
    expect((await appKeyShown()).lastUsed).toBeNull();
    const first = t.clock.now();
    expect((await t.api('GET', '/v1/achievements')).status).toBe(200);
    const shown = await waitFor(appKeyShown, (k) => k.lastUsed !== null);
    expect(shown.lastUsed).toBe(new Date(first).toISOString());

    // Within the minute: not written again.
    t.clock.advance(30_000);
    await t.api('GET', '/v1/achievements');
    await sleep(500);
    expect((await appKeyShown()).lastUsed).toBe(new Date(first).toISOString());

    // A minute after the recorded use: written again.
    t.clock.advance(31_000);
    await t.api('GET', '/v1/achievements');
    const later = await waitFor(appKeyShown, (k) => k.lastUsed !== new Date(first).toISOString());
    expect(later.lastUsed).toBe(new Date(first + 61_000).toISOString());
  });

  it('says when a key is of the wrong kind or revoked, and only "Invalid API key" for an unknown key', async () => {
    const appOnAdmin = await t.app.request('/admin/v1/metrics', { headers: { 'X-API-KEY': t.appKey } });
    expect([appOnAdmin.status, await appOnAdmin.json()]).toEqual([
      401,
      { error: 'This is an application key; the admin API (/admin/v1) needs an admin key' },
    ]);
    const adminOnApp = await t.app.request('/v1/achievements', { headers: { 'X-API-KEY': t.adminKey } });
    expect([adminOnApp.status, await adminOnApp.json()]).toEqual([
      401,
      { error: 'This is an admin key; the application API (/v1, /api) needs an application key' },
    ]);
    const r = generateApiKey();
    await t.deps.db.insert(apiKeys).values({
      name: 'old',
      kind: 'application',
      prefix: r.prefix,
      secretHash: r.secretHash,
      status: 'revoked',
    });
    await t.deps.catalog.reload();
    const revoked = await t.app.request('/v1/achievements', { headers: { 'X-API-KEY': r.key } });
    expect([revoked.status, await revoked.json()]).toEqual([401, { error: 'This API key was revoked' }]);
    // A wrong secret for a known prefix says nothing about that key.
    const guessed = `${r.prefix}.${'A'.repeat(43)}`;
    const wrong = await t.app.request('/v1/achievements', { headers: { 'X-API-KEY': guessed } });
    expect([wrong.status, await wrong.json()]).toEqual([401, { error: 'Invalid API key' }]);
  });
});

describe('messages', () => {
  it('answers "user must be an object" (400) to a user that is a string', async () => {
    const res = await t.api('POST', '/v1/metrics/lessons/event', { user: 'u1', value: 1 });
    expect([res.status, res.body]).toEqual([400, { error: 'user must be an object' }]);
  });

  it('names the id in admin not-found answers', async () => {
    const unknown = '00000000-0000-4000-8000-000000000000';
    const res = await t.admin('GET', `/metrics/${unknown}`);
    expect([res.status, res.body]).toEqual([404, { error: `Metric not found: ${unknown}` }]);
    const hooks = await t.admin('GET', `/webhooks/${unknown}/deliveries`);
    expect([hooks.status, hooks.body]).toEqual([404, { error: `Webhook endpoint not found: ${unknown}` }]);
  });

  it('keeps the exact contract forms of the application API (Metric not found, Invalid attribute keys)', async () => {
    const res = await t.api('POST', '/v1/metrics/nope/event', { user: { id: 'u1' }, value: 1 });
    expect([res.status, res.body]).toEqual([404, { error: 'Metric not found' }]);
    const attrs = await t.api('POST', '/v1/metrics/lessons/event', {
      user: { id: 'u1', attributes: { country: 'de' } },
      value: 1,
    });
    expect([attrs.status, attrs.body]).toEqual([422, { error: 'Invalid attribute keys: country.' }]);
  });
});

describe('webhook deliveries in retry', () => {
  it('lists pending deliveries whose last attempt failed with ?status=retrying, and the dashboard marks them', async () => {
    const [w] = await adminCreate(t, '/webhooks', [
      { url: 'https://example.com/hook', eventTypes: ['points.changed'] },
    ]);
    const now = new Date(t.clock.now());
    const base = { endpointId: w.id, type: 'points.changed', payload: {}, created: now };
    await t.deps.db.insert(webhookDeliveries).values([
      {
        ...base,
        eventId: 'e-retry',
        status: 'pending',
        attempts: 2,
        lastAttemptAt: now,
        nextAttemptAt: new Date(t.clock.now() + 120_000),
        lastStatusCode: 500,
        lastError: 'HTTP 500',
      },
      { ...base, eventId: 'e-new', status: 'pending', attempts: 0, nextAttemptAt: now },
      { ...base, eventId: 'e-ok', status: 'succeeded', attempts: 1, lastAttemptAt: now, lastStatusCode: 200 },
    ]);
    const retrying = await t.admin('GET', `/webhooks/${w.id}/deliveries?status=retrying`);
    expect(retrying.status).toBe(200);
    expect(retrying.body.map((d: { eventId: string; status: string }) => [d.eventId, d.status])).toEqual([
      ['e-retry', 'pending'],
    ]);
    expect(retrying.body[0]).toMatchObject({ attempts: 2, lastStatusCode: 500, lastError: 'HTTP 500' });
    const bad = await t.admin('GET', `/webhooks/${w.id}/deliveries?status=broken`);
    expect([bad.status, bad.body]).toEqual([
      422,
      { error: 'status must be pending, retrying, succeeded or failed' },
    ]);

    const get = await dashboard();
    const list = await get('/dashboard/webhooks');
    expect(list.text).toContain('class="badge failing"');
    expect(list.text).toContain('1 retrying');
    const log = await get(`/dashboard/webhooks/${w.id}`);
    expect(log.text).toContain('class="badge retrying"');
    const overview = await get('/dashboard');
    expect(overview.text).toContain('data-warning="webhooks"');
    expect(overview.text).toContain('1 webhook endpoint is failing');
    await t.deps.db.delete(webhookDeliveries).where(eq(webhookDeliveries.endpointId, w.id));
  });
});

describe('dashboard', () => {
  it("shows the history's points in the overview's Recent events once the outbox is empty", async () => {
    const res = await t.api('POST', '/v1/metrics/lessons/event', { user: { id: 'recent-1' }, value: 3 });
    expect(res.status).toBe(201);
    const writer = new HistoryWriter(t.deps, { consumer: 'fixes' });
    while ((await writer.drainOnce()) > 0) {}
    expect(await writer.lag()).toBe(0);
    const get = await dashboard();
    const { text } = await get('/dashboard');
    const row = /<tr><td>[^<]*<\/td><td><a href="\/dashboard\/users\?id=recent-1">[\s\S]*?<\/tr>/.exec(
      text,
    )?.[0];
    expect(row).toBeDefined();
    expect(row).toContain('+30');
  });

  it('warns on the overview when the history falls behind', async () => {
    const get = await dashboard();
    expect((await get('/dashboard')).text).not.toContain('data-warning="history"');
    // An outbox record written long ago that no writer has stored.
    const { stream: key } = await addStaleOutboxRecord(t.deps, 1000, ['r', JSON.stringify({ op: 'noop' })]);
    try {
      const { text } = await get('/dashboard');
      expect(text).toContain('data-warning="history"');
      expect(text).toMatch(/History is \d+ s behind/);
    } finally {
      await t.deps.redis.xdel(key, '1000-0');
    }
  });

  it('lists users newest first, searches by id, name and e-mail, and pages', async () => {
    for (let i = 0; i < 27; i++) {
      t.clock.advance(1000);
      const user = {
        id: `list-${i}`,
        name: i === 5 ? 'Grace Hopper' : `User ${i}`,
        email: `u${i}@example.com`,
      };
      expect((await t.api('POST', '/v1/metrics/lessons/event', { user, value: 1 })).status).toBe(201);
    }
    const writer = new HistoryWriter(t.deps, { consumer: 'fixes-users' });
    while ((await writer.drainOnce()) > 0) {}
    const get = await dashboard();
    const ids = (html: string) => [...html.matchAll(/<code>(list-\d+)<\/code>/g)].map((m) => m[1]);
    const first = await get('/dashboard/users');
    expect(ids(first.text).slice(0, 3)).toEqual(['list-26', 'list-25', 'list-24']);
    expect(first.text).toContain('rel="next"');
    const second = await get('/dashboard/users?page=1');
    expect(ids(second.text)).toContain('list-0');
    expect(ids((await get('/dashboard/users?q=hopper')).text)).toEqual(['list-5']);
    expect(ids((await get('/dashboard/users?q=u7%40example')).text)).toEqual(['list-7']);
    expect(ids((await get('/dashboard/users?q=list-1')).text).sort()).toEqual([
      'list-1',
      'list-10',
      'list-11',
      'list-12',
      'list-13',
      'list-14',
      'list-15',
      'list-16',
      'list-17',
      'list-18',
      'list-19',
    ]);
    // LIKE wildcards are searched for literally; a NUL is dropped rather than sent to Postgres.
    expect(ids((await get('/dashboard/users?q=%25')).text)).toEqual([]);
    expect((await get('/dashboard/users?q=a%00b')).res.status).toBe(200);
    const user = await get('/dashboard/users?id=list-5');
    expect(user.text).toContain('id="user-events"');
    expect(user.text).toContain('id="user-awards"');
    expect(user.text).toContain('+10');
  });

  it('shows participants per leaderboard and the points trigger as "Every lesson"', async () => {
    const metricId = t.deps.catalog.snapshot.metricsByKey.get('lessons')!.id;
    await adminCreate(t, '/leaderboards', [
      { key: 'all', name: 'All time', rankBy: 'metric', metricId, status: 'active' },
    ]);
    await t.api('POST', '/v1/metrics/lessons/event', { user: { id: 'ranked-1' }, value: 1 });
    await t.api('POST', '/v1/metrics/lessons/event', { user: { id: 'ranked-2' }, value: 1 });
    const get = await dashboard();
    const boards = await get('/dashboard/leaderboards');
    expect(boards.text).toMatch(/data-participants="all"[^>]*>2</);
    const points = await get(`/dashboard/points/${systemId}`);
    expect(points.text).toContain('Every lesson<');
  });
});

describe('entry points', () => {
  it('redirects / to the dashboard, serves /favicon.ico, and sends /docs/ to /docs', async () => {
    const root = await t.app.request('/');
    expect([root.status, root.headers.get('location')]).toEqual([302, '/dashboard']);
    const icon = await t.app.request('/favicon.ico');
    expect([icon.status, icon.headers.get('content-type')]).toEqual([200, 'image/svg+xml']);
    expect(await icon.text()).toContain('<svg');
    const docs = await t.app.request('/docs/');
    expect([docs.status, docs.headers.get('location')]).toEqual([301, '../docs']);
  });
});
