import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { webhookDeliveries } from '../../src/db/schema';
import { createTestServer, type TestServer } from '../helpers/server';

let t: TestServer;
beforeAll(async () => {
  t = await createTestServer();
});
afterAll(async () => t.close());

const list = async () => (await t.admin('GET', '/webhooks?limit=100')).body as any[];
const valid = { url: 'https://example.com/hook', eventTypes: ['achievement.completed'] };
const ALL_TYPES = [
  'achievement.completed',
  'streak.started',
  'streak.extended',
  'streak.lost',
  'streak.freeze_consumed',
  'streak.freeze_earned',
  'points.changed',
  'points.level_changed',
  'points.boost_started',
  'points.boost_finished',
  'leaderboard.started',
  'leaderboard.changed',
  'leaderboard.finished',
  'leaderboard.rank_changed',
];

describe('admin webhook endpoints', () => {
  it('creates with a generated secret shown once, lists, gets, updates and deletes', async () => {
    const res = await t.admin('POST', '/webhooks', [{ ...valid, description: 'main' }]);
    expect(res.status).toBe(201);
    const w = res.body.created[0];
    expect(w).toEqual({
      id: expect.any(String),
      url: 'https://example.com/hook',
      description: 'main',
      eventTypes: ['achievement.completed'],
      enabled: true,
      secret: expect.stringMatching(/^whsec_[A-Za-z0-9_-]{43}$/),
      created: '2025-03-10T12:00:00.000Z',
      updated: '2025-03-10T12:00:00.000Z',
    });
    const { secret: _s, ...shown } = w;
    expect((await t.admin('GET', `/webhooks/${w.id}`)).body).toEqual(shown);
    expect(await list()).toEqual([shown]);

    t.clock.advance(60_000);
    const upd = await t.admin('PATCH', '/webhooks', [
      { id: w.id, enabled: false, eventTypes: ALL_TYPES, description: null },
    ]);
    expect(upd.body.issues).toEqual([]);
    expect(upd.body.updated[0]).toEqual({
      ...shown,
      enabled: false,
      eventTypes: ALL_TYPES,
      description: null,
      updated: '2025-03-10T12:01:00.000Z',
    });

    expect((await t.admin('DELETE', `/webhooks?ids=${w.id}`)).body).toEqual({
      deleted: [{ id: w.id }],
      issues: [],
    });
    expect((await t.admin('GET', `/webhooks/${w.id}`)).status).toBe(404);
    expect(await list()).toEqual([]);
  });

  it('keeps a given secret and shows secrets only when set or rotated', async () => {
    const secret = 'a secret with spaces ~!';
    const [w] = (await t.admin('POST', '/webhooks', [{ ...valid, secret }])).body.created;
    expect(w.secret).toBe(secret);
    const plain = await t.admin('PATCH', '/webhooks', [{ id: w.id, url: 'http://example.org/x' }]);
    expect(plain.body.updated[0]).not.toHaveProperty('secret');
    const rotated = await t.admin('PATCH', '/webhooks', [{ id: w.id, rotateSecret: true }]);
    expect(rotated.body.updated[0].secret).toMatch(/^whsec_[A-Za-z0-9_-]{43}$/);
    const set = await t.admin('PATCH', '/webhooks', [{ id: w.id, secret: 'x'.repeat(16) }]);
    expect(set.body.updated[0].secret).toBe('x'.repeat(16));
    const noRotate = await t.admin('PATCH', '/webhooks', [{ id: w.id, rotateSecret: false }]);
    expect(noRotate.body.updated[0]).not.toHaveProperty('secret');
    await t.admin('DELETE', `/webhooks?ids=${w.id}`);
  });

  it.each([
    [{ eventTypes: ['achievement.completed'] }, 'url is required'],
    [{ url: 'https://example.com' }, 'eventTypes is required'],
    [{ ...valid, url: 'ftp://example.com' }, 'url'],
    [{ ...valid, url: '/relative' }, 'url'],
    [{ ...valid, url: `https://example.com/${'a'.repeat(2048)}` }, 'url'],
    [{ ...valid, url: 7 }, 'url'],
    [{ ...valid, eventTypes: [] }, 'eventTypes'],
    [{ ...valid, eventTypes: ['points.changed', 'points.changed'] }, 'eventTypes'],
    [{ ...valid, eventTypes: ['user.created'] }, 'eventTypes'],
    [{ ...valid, eventTypes: 'points.changed' }, 'eventTypes'],
    [{ ...valid, eventTypes: [...ALL_TYPES, 'points.changed'] }, 'eventTypes'],
    [{ ...valid, secret: 'short' }, 'secret'],
    [{ ...valid, secret: 'x'.repeat(257) }, 'secret'],
    [{ ...valid, secret: `tab\there-and-more-chars` }, 'secret'],
    [{ ...valid, secret: 'ünïcödé-secret-value' }, 'secret'],
    [{ ...valid, description: 'd'.repeat(1001) }, 'description'],
    [{ ...valid, enabled: 'yes' }, 'enabled'],
  ])('reports an item error for create item %j and creates nothing', async (item, fragment) => {
    const res = await t.admin('POST', '/webhooks', [item]);
    expect(res.status).toBe(200);
    expect(res.body.created).toEqual([]);
    expect(res.body.issues[0]).toMatchObject({ severity: 'error', index: 0 });
    expect(res.body.issues[0].message).toContain(fragment);
    expect(await list()).toEqual([]);
  });

  it('processes the other items of a request when one is invalid', async () => {
    const res = await t.admin('POST', '/webhooks', [valid, { url: 'nope', eventTypes: [] }, valid]);
    expect(res.status).toBe(201);
    expect(res.body.created).toHaveLength(2);
    expect(res.body.issues).toEqual([expect.objectContaining({ severity: 'error', index: 1 })]);
    await t.admin('DELETE', `/webhooks?ids=${res.body.created.map((w: any) => w.id).join(',')}`);
  });

  it.each([
    [{ secret: 'y'.repeat(20), rotateSecret: true }, 'secret and rotateSecret'],
    [{ url: null }, 'url cannot be null'],
    [{ eventTypes: null }, 'eventTypes cannot be null'],
    [{ enabled: null }, 'enabled cannot be null'],
    [{ eventTypes: ['nope'] }, 'eventTypes'],
    [{ rotateSecret: 'yes' }, 'rotateSecret'],
  ])('reports an item error for update %j and changes nothing', async (patch, fragment) => {
    const [w] = (await t.admin('POST', '/webhooks', [valid])).body.created;
    const before = await list();
    const res = await t.admin('PATCH', '/webhooks', [{ id: w.id, ...patch }]);
    expect(res.body.updated).toEqual([]);
    expect(res.body.issues[0]).toMatchObject({ severity: 'error', id: w.id });
    expect(res.body.issues[0].message).toContain(fragment);
    expect(await list()).toEqual(before);
    await t.admin('DELETE', `/webhooks?ids=${w.id}`);
  });

  it('reports unknown endpoints on update and delete', async () => {
    const unknown = '00000000-0000-4000-8000-000000000000';
    expect(
      (await t.admin('PATCH', '/webhooks', [{ id: unknown, enabled: false }])).body.issues[0].message,
    ).toBe('Webhook endpoint not found');
    expect((await t.admin('DELETE', `/webhooks?ids=${unknown}`)).body.issues[0]).toMatchObject({
      severity: 'error',
      id: unknown,
    });
  });

  it('answers bad bodies with request-level errors', async () => {
    expect((await t.admin('POST', '/webhooks', valid)).status).toBe(400);
    expect((await t.admin('POST', '/webhooks', '{')).status).toBe(400);
    expect((await t.admin('POST', '/webhooks', [])).status).toBe(422);
    expect((await t.admin('PATCH', '/webhooks', [])).status).toBe(422);
    expect(await list()).toEqual([]);
  });
});

describe('webhook delivery log', () => {
  it('lists deliveries newest first, filters by status, pages, and keeps to the retention window', async () => {
    const [w] = (await t.admin('POST', '/webhooks', [valid])).body.created;
    const [other] = (await t.admin('POST', '/webhooks', [valid])).body.created;
    const base = Date.parse('2025-03-10T12:00:00Z');
    const row = (
      n: number,
      status: 'pending' | 'succeeded' | 'failed',
      endpointId = w.id,
      ageMs = n * 60_000,
    ) => ({
      endpointId,
      eventId: `evt-${n}`,
      type: 'achievement.completed',
      payload: { n },
      status,
      attempts: status === 'pending' ? 0 : 1,
      lastAttemptAt: status === 'pending' ? null : new Date(base - ageMs),
      nextAttemptAt: new Date(base + 1000),
      lastStatusCode: status === 'succeeded' ? 200 : status === 'failed' ? 500 : null,
      lastError: status === 'failed' ? 'HTTP 500' : null,
      created: new Date(base - ageMs),
    });
    await t.deps.db
      .insert(webhookDeliveries)
      .values([
        row(3, 'pending'),
        row(2, 'failed'),
        row(1, 'succeeded'),
        row(9, 'succeeded', other.id),
        row(8, 'succeeded', w.id, 8 * 86_400_000),
      ]);

    const all = await t.admin('GET', `/webhooks/${w.id}/deliveries`);
    expect(all.status).toBe(200);
    expect(all.body.map((d: any) => d.eventId)).toEqual(['evt-1', 'evt-2', 'evt-3']);
    expect(all.body[0]).toEqual({
      id: expect.any(String),
      eventId: 'evt-1',
      type: 'achievement.completed',
      status: 'succeeded',
      attempts: 1,
      lastAttemptAt: '2025-03-10T11:59:00.000Z',
      nextAttemptAt: null,
      lastStatusCode: 200,
      lastError: null,
      created: '2025-03-10T11:59:00.000Z',
      payload: { n: 1 },
    });
    expect(all.body[2].nextAttemptAt).toBe('2025-03-10T12:00:01.000Z');
    const failed = await t.admin('GET', `/webhooks/${w.id}/deliveries?status=failed`);
    expect(failed.body.map((d: any) => d.eventId)).toEqual(['evt-2']);
    const paged = await t.admin('GET', `/webhooks/${w.id}/deliveries?limit=1&skip=1`);
    expect(paged.body.map((d: any) => d.eventId)).toEqual(['evt-2']);
  });

  it.each([
    ['/webhooks/00000000-0000-4000-8000-000000000000/deliveries', 404],
    ['/webhooks/not-a-uuid/deliveries', 404],
    ['/webhooks/{id}/deliveries?status=lost', 422],
    ['/webhooks/{id}/deliveries?limit=0', 422],
    ['/webhooks/{id}/deliveries?skip=-1', 422],
  ])('answers GET %s with %i', async (path, status) => {
    const [w] = (await t.admin('POST', '/webhooks', [valid])).body.created;
    const res = await t.admin('GET', path.replace('{id}', w.id));
    expect(res.status).toBe(status);
    expect(Object.keys(res.body)).toEqual(['error']);
  });

  it('answers 404 for a deleted endpoint', async () => {
    const [w] = (await t.admin('POST', '/webhooks', [valid])).body.created;
    await t.admin('DELETE', `/webhooks?ids=${w.id}`);
    expect((await t.admin('GET', `/webhooks/${w.id}/deliveries`)).status).toBe(404);
  });

  it('requires an admin key', async () => {
    const res = await t.api('GET', '/admin/v1/webhooks');
    expect(res.status).toBe(401);
  });
});
