import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { adminCreate, createTestServer, type TestServer } from '../helpers/server';

// Users (application-api §6.4 #4–#9, §7.3; semantics §1).

let t: TestServer;
let n = 0;
const uid = () => `user-${++n}`;
const NOW = '2025-03-10T12:00:00.000Z';

beforeAll(async () => {
  t = await createTestServer({ now: NOW });
  await adminCreate(t, '/attributes', [
    { key: 'plan', name: 'Plan', type: 'user' },
    { key: 'country', name: 'Country', type: 'user' },
    { key: 'source', name: 'Source', type: 'event' },
  ]);
});
afterAll(async () => t.close());
beforeEach(() => t.clock.set(NOW));

const blank = (id: string, created = NOW, updated = NOW) => ({
  id,
  email: null,
  name: null,
  tz: null,
  deviceTokens: [],
  subscribeToEmails: true,
  attributes: {},
  control: false,
  created,
  updated,
});

describe('POST /v1/users', () => {
  it('creates a user with defaults (201), then updates only the provided fields (200)', async () => {
    const id = uid();
    const created = await t.api('POST', '/v1/users', { id });
    expect(created.status).toBe(201);
    expect(created.body).toEqual(blank(id));

    t.clock.set('2025-03-11T08:00:00.000Z');
    const full = await t.api('POST', '/v1/users', {
      id,
      email: 'ada@example.com',
      name: 'Ada',
      tz: 'Europe/London',
      deviceTokens: ['tok-1', 'tok-2', 'tok-1'],
      subscribeToEmails: false,
      attributes: { plan: 'pro' },
    });
    expect(full.status).toBe(200);
    expect(full.body).toEqual({
      ...blank(id, NOW, '2025-03-11T08:00:00.000Z'),
      email: 'ada@example.com',
      name: 'Ada',
      tz: 'Europe/London',
      deviceTokens: ['tok-1', 'tok-2'],
      subscribeToEmails: false,
      attributes: { plan: 'pro' },
    });

    // null and absent mean "not provided"; attributes merge per key; deviceTokens replace the list.
    const merged = await t.api('POST', '/v1/users', {
      id,
      email: null,
      name: null,
      deviceTokens: ['tok-3'],
      attributes: { country: 'fr' },
    });
    expect(merged.status).toBe(200);
    expect(merged.body).toMatchObject({
      email: 'ada@example.com',
      name: 'Ada',
      deviceTokens: ['tok-3'],
      subscribeToEmails: false,
      attributes: { plan: 'pro', country: 'fr' },
    });
    expect((await t.api('GET', `/v1/users/${id}`)).body).toEqual(merged.body);
  });

  it('keeps `updated` when nothing changed', async () => {
    const id = uid();
    await t.api('POST', '/v1/users', { id, name: 'Same' });
    t.clock.set('2025-03-12T00:00:00.000Z');
    const res = await t.api('POST', '/v1/users', { id, name: 'Same' });
    expect(res.body.updated).toBe(NOW);
  });

  it.each([
    ['an empty body', undefined, 400],
    ['invalid JSON', '{"id":', 400],
    ['a body that is not an object', '[1]', 400],
    ['a missing id', {}, 400],
    ['a null id', { id: null }, 400],
    ['a numeric id', { id: 5 }, 400],
    ['an attribute value that is not a string', { id: 'x', attributes: { plan: 1 } }, 400],
    ['deviceTokens that are not an array', { id: 'x', deviceTokens: 'tok' }, 400],
    ['a non-boolean subscribeToEmails', { id: 'x', subscribeToEmails: 'yes' }, 400],
    ['an empty id', { id: '' }, 422],
    ['an id of 256 characters', { id: 'a'.repeat(256) }, 422],
    ['an unknown time zone', { id: 'x', tz: 'Mars/Olympus' }, 422],
    ['an offset instead of a zone', { id: 'x', tz: '+02:00' }, 422],
    ['an e-mail without @', { id: 'x', email: 'nope' }, 422],
    ['an empty name', { id: 'x', name: '' }, 422],
    ['an empty device token', { id: 'x', deviceTokens: [''] }, 422],
    ['101 device tokens', { id: 'x', deviceTokens: Array.from({ length: 101 }, (_, i) => `t${i}`) }, 422],
    ['an attribute value over 255 characters', { id: 'x', attributes: { plan: 'p'.repeat(256) } }, 422],
  ])('rejects %s', async (_label, body, status) => {
    const res = await t.api('POST', '/v1/users', body);
    expect(res.status).toBe(status);
    expect(Object.keys(res.body)).toEqual(['error']);
    expect((await t.api('GET', '/v1/users/x')).status).toBe(404);
  });

  it('rejects unknown and event attribute keys with the exact message, in the order given', async () => {
    const res = await t.api('POST', '/v1/users', {
      id: uid(),
      attributes: { device: 'ios', plan: 'pro', source: 'web' },
    });
    expect(res.status).toBe(422);
    expect(res.body).toEqual({ error: 'Invalid attribute keys: device, source.' });
  });

  it('shows only configured attributes', async () => {
    const [tmp] = await adminCreate(t, '/attributes', [{ key: 'temp', name: 'Temp', type: 'user' }]);
    const id = uid();
    await t.api('POST', '/v1/users', { id, attributes: { temp: 'x', plan: 'free' } });
    await t.admin('DELETE', `/attributes?ids=${tmp.id}`);
    expect((await t.api('GET', `/v1/users/${id}`)).body.attributes).toEqual({ plan: 'free' });
  });
});

describe('GET /v1/users/{id}', () => {
  it('answers 404 `User not found` for an unknown user', async () => {
    const res = await t.api('GET', '/v1/users/nobody');
    expect(res.status).toBe(404);
    expect(res.body).toEqual({ error: 'User not found' });
  });

  it('answers 422 for an id longer than 255 characters', async () => {
    expect((await t.api('GET', `/v1/users/${'a'.repeat(256)}`)).status).toBe(422);
  });

  it('decodes each path segment once', async () => {
    await t.api('POST', '/v1/users', { id: 'a/b+c%' });
    const res = await t.api('GET', `/v1/users/${encodeURIComponent('a/b+c%')}`);
    expect(res.status).toBe(200);
    expect(res.body.id).toBe('a/b+c%');
    expect((await t.api('GET', '/v1/users/a+b')).status).toBe(404);
  });
});

describe('PUT /v1/users/{id}', () => {
  it('creates or updates the user of the path, always 200', async () => {
    const id = uid();
    const first = await t.api('PUT', `/v1/users/${id}`, { name: 'New' });
    expect(first.status).toBe(200);
    expect(first.body).toEqual({ ...blank(id), name: 'New' });
    const second = await t.api('PUT', `/v1/users/${id}`, { id: 'ignored', tz: 'UTC' });
    expect(second.status).toBe(200);
    expect(second.body).toEqual({ ...blank(id), name: 'New', tz: 'UTC' });
    expect((await t.api('GET', '/v1/users/ignored')).status).toBe(404);
  });

  it('validates the body: 400 structure, 422 values', async () => {
    expect((await t.api('PUT', `/v1/users/${uid()}`, { name: 3 })).status).toBe(400);
    expect((await t.api('PUT', `/v1/users/${uid()}`, { tz: 'Nowhere/City' })).status).toBe(422);
    expect((await t.api('PUT', `/v1/users/${'a'.repeat(256)}`, {})).status).toBe(422);
    expect((await t.api('PUT', `/v1/users/${uid()}`, { attributes: { nope: '1' } })).body).toEqual({
      error: 'Invalid attribute keys: nope.',
    });
  });
});

describe('PATCH /v1/users/{id}', () => {
  it('updates an existing user', async () => {
    const id = uid();
    await t.api('POST', '/v1/users', { id, name: 'Before', attributes: { plan: 'free' } });
    t.clock.set('2025-03-10T13:00:00.000Z');
    const res = await t.api('PATCH', `/v1/users/${id}`, { name: 'After', attributes: { country: 'de' } });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      ...blank(id, NOW, '2025-03-10T13:00:00.000Z'),
      name: 'After',
      attributes: { plan: 'free', country: 'de' },
    });
  });

  it('answers 404 for an unknown user and creates nothing', async () => {
    const id = uid();
    const res = await t.api('PATCH', `/v1/users/${id}`, { name: 'Ghost' });
    expect(res.status).toBe(404);
    expect(res.body).toEqual({ error: 'User not found' });
    expect((await t.api('GET', `/v1/users/${id}`)).status).toBe(404);
  });

  it('orders errors: 400 structure, then 422 values, then 404 user, then 422 attribute keys', async () => {
    const ghost = uid();
    expect((await t.api('PATCH', `/v1/users/${ghost}`, { name: 1, tz: 'Bad/Zone' })).status).toBe(400);
    expect((await t.api('PATCH', `/v1/users/${ghost}`, { tz: 'Bad/Zone' })).status).toBe(422);
    expect((await t.api('PATCH', `/v1/users/${ghost}`, { attributes: { nope: 'x' } })).status).toBe(404);
    const id = uid();
    await t.api('POST', '/v1/users', { id });
    expect((await t.api('PATCH', `/v1/users/${id}`, { attributes: { nope: 'x' } })).body).toEqual({
      error: 'Invalid attribute keys: nope.',
    });
  });
});

describe('notification preferences', () => {
  it('starts empty and merges per type; [] disables a type; duplicates collapse', async () => {
    const id = uid();
    await t.api('POST', '/v1/users', { id });
    expect((await t.api('GET', `/v1/users/${id}/preferences`)).body).toEqual({ notifications: {} });

    const first = await t.api('PATCH', `/v1/users/${id}/preferences`, {
      notifications: { achievement_completed: ['email', 'push', 'email'], recap: ['email'] },
    });
    expect(first.status).toBe(200);
    expect(first.body).toEqual({
      notifications: { achievement_completed: ['email', 'push'], recap: ['email'] },
    });

    const second = await t.api('PATCH', `/v1/users/${id}/preferences`, {
      notifications: { recap: [], streak_reminder: ['push'], achievement_completed: null, unknown: ['x'] },
    });
    expect(second.body).toEqual({
      notifications: { achievement_completed: ['email', 'push'], recap: [], streak_reminder: ['push'] },
    });
    expect((await t.api('PATCH', `/v1/users/${id}/preferences`, {})).body).toEqual(second.body);
    expect((await t.api('GET', `/v1/users/${id}/preferences`)).body).toEqual(second.body);
  });

  it('answers 404 for an unknown user', async () => {
    const id = uid();
    for (const res of [
      await t.api('GET', `/v1/users/${id}/preferences`),
      await t.api('PATCH', `/v1/users/${id}/preferences`, { notifications: { recap: ['email'] } }),
    ]) {
      expect(res.status).toBe(404);
      expect(res.body).toEqual({ error: 'User not found' });
    }
    expect((await t.api('GET', `/v1/users/${id}`)).status).toBe(404);
  });

  it('rejects unknown channels (422) and wrong types (400)', async () => {
    const id = uid();
    await t.api('POST', '/v1/users', { id });
    const path = `/v1/users/${id}/preferences`;
    expect((await t.api('PATCH', path, { notifications: { recap: ['sms'] } })).status).toBe(422);
    expect((await t.api('PATCH', path, { notifications: { recap: 'email' } })).status).toBe(400);
    expect((await t.api('PATCH', path, { notifications: { recap: [1] } })).status).toBe(400);
    expect((await t.api('PATCH', path, { notifications: [] })).status).toBe(400);
    expect((await t.api('PATCH', path)).status).toBe(400);
    expect((await t.api('GET', path)).body).toEqual({ notifications: {} });
  });
});

describe('user creation effects', () => {
  it('fires user_creation triggers once, whichever route creates the user', async () => {
    const [sys] = await adminCreate(t, '/points', [{ key: 'welcome', name: 'Welcome' }]);
    await adminCreate(t, `/points/${sys.id}/triggers`, [
      { type: 'user_creation', points: 50, status: 'active' },
    ]);
    await adminCreate(t, '/leaderboards', [
      { key: 'welcome-board', name: 'Welcome', rankBy: 'points', pointsSystemId: sys.id, status: 'active' },
    ]);
    const a = uid();
    const b = uid();
    await t.api('POST', '/v1/users', { id: a });
    await t.api('POST', '/v1/users', { id: a });
    await t.api('PUT', `/v1/users/${b}`, {});
    await t.api('PUT', `/v1/users/${b}`, { name: 'B' });
    for (const id of [a, b]) {
      const res = await t.api('GET', `/v1/users/${id}/points/welcome`);
      expect(res.body.total).toBe(50);
      expect(res.body.awards).toHaveLength(1);
    }
    const board = await t.api('GET', '/v1/leaderboards/welcome-board');
    expect(board.body.rankings.map((r: any) => [r.userId, r.value])).toEqual([
      [a, 50],
      [b, 50],
    ]);
  });
});
