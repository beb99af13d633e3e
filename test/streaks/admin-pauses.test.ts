import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { users } from '../../src/db/schema';
import { createTestServer, type TestServer } from '../helpers/server';

// 10:30 UTC on 2025-03-10: 2025-03-09 23:30 in Pago Pago (−11), 2025-03-11 00:30 in Kiritimati (+14).
const NOW = '2025-03-10T10:30:00Z';
let t: TestServer;
beforeAll(async () => {
  t = await createTestServer({ now: NOW });
  await t.deps.db
    .insert(users)
    .values([
      { id: 'utc-user' },
      { id: 'behind', tz: 'Pacific/Pago_Pago' },
      { id: 'ahead', tz: 'Pacific/Kiritimati' },
    ]);
  // A user known only to Redis (not yet copied to Postgres by the history writer).
  await t.deps.redis.hset(t.deps.keys.user('redis-only').hash, 'tz', 'Pacific/Pago_Pago');
});
afterAll(async () => t.close());
beforeEach(() => t.clock.set(NOW));

const list = async (query = '') => (await t.admin('GET', `/streaks/pauses?limit=100${query}`)).body as any[];
const create = (pauses: unknown) => t.admin('POST', '/streaks/pauses', { pauses });

describe('admin streak pauses', () => {
  it('creates pauses, lists them oldest first, and deletes them', async () => {
    const res = await create([
      { userId: 'utc-user', start: '2025-03-10', end: '2025-03-12' },
      { userId: 'behind', start: '2025-03-09', end: '2025-03-09' },
      { userId: 'redis-only', start: '2025-03-09', end: '2026-03-09' },
    ]);
    expect(res.status).toBe(201);
    expect(res.body.issues).toEqual([]);
    expect(res.body.created[0]).toEqual({
      id: expect.any(String),
      userId: 'utc-user',
      start: '2025-03-10',
      end: '2025-03-12',
      created: '2025-03-10T10:30:00.000Z',
    });
    expect(await list()).toEqual(res.body.created);
    expect(await list('&userId=behind')).toEqual([res.body.created[1]]);
    expect((await t.admin('GET', '/streaks/pauses?limit=1&skip=1')).body).toEqual([res.body.created[1]]);

    const ids = res.body.created.map((p: any) => p.id);
    const del = await t.admin('DELETE', `/streaks/pauses?ids=${ids.join(',')}`);
    expect(del.body).toEqual({ deleted: ids.map((id: string) => ({ id })), issues: [] });
    expect(await list()).toEqual([]);
    const again = await t.admin('DELETE', `/streaks/pauses?ids=${ids[0]}`);
    expect(again.body).toEqual({
      deleted: [],
      issues: [{ severity: 'error', message: 'Pause not found', id: ids[0] }],
    });
  });

  it('lists only pauses that have not ended in the user’s time zone', async () => {
    const res = await create([
      { userId: 'behind', start: '2025-03-09', end: '2025-03-09' },
      { userId: 'utc-user', start: '2025-03-10', end: '2025-03-10' },
    ]);
    const [behind, utc] = res.body.created;
    expect(await list()).toEqual([behind, utc]);
    // 11:00 UTC: 2025-03-10 00:00 in Pago Pago, so its pause of the 9th has ended.
    t.clock.set('2025-03-10T11:00:00Z');
    expect(await list()).toEqual([utc]);
    t.clock.set('2025-03-11T00:00:00Z');
    expect(await list()).toEqual([]);
    await t.admin('DELETE', `/streaks/pauses?ids=${behind.id},${utc.id}`);
  });

  it.each([
    ['an unknown user', { userId: 'nobody', start: '2025-03-10', end: '2025-03-10' }, 'User does not exist'],
    [
      'a start before the UTC user’s today',
      { userId: 'utc-user', start: '2025-03-09', end: '2025-03-10' },
      'Start date is in the past',
    ],
    [
      'a start before the user’s local today',
      { userId: 'ahead', start: '2025-03-10', end: '2025-03-12' },
      'Start date is in the past',
    ],
    [
      'an end before start',
      { userId: 'utc-user', start: '2025-03-12', end: '2025-03-11' },
      'end must not be before start',
    ],
    ['367 days', { userId: 'utc-user', start: '2025-03-10', end: '2026-03-11' }, 'at most 366 days'],
    ['a bad date', { userId: 'utc-user', start: '2025-02-29', end: '2025-03-01' }, 'start'],
    ['a missing end', { userId: 'utc-user', start: '2025-03-10' }, 'end is required'],
    ['a numeric userId', { userId: 7, start: '2025-03-10', end: '2025-03-10' }, 'userId'],
    ['an empty userId', { userId: '', start: '2025-03-10', end: '2025-03-10' }, 'userId'],
  ])('reports an item error for %s and creates nothing', async (_label, item, message) => {
    const res = await create([item]);
    expect(res.status).toBe(200);
    expect(res.body.created).toEqual([]);
    expect(res.body.issues[0]).toMatchObject({ severity: 'error', index: 0 });
    expect(res.body.issues[0].message).toContain(message);
    if (typeof item.userId === 'string' && item.userId) expect(res.body.issues[0].userId).toBe(item.userId);
    expect(await list()).toEqual([]);
  });

  it('accepts exactly 366 days and overlapping pauses, and reports bad items alongside good ones', async () => {
    const res = await create([
      { userId: 'ahead', start: '2025-03-11', end: '2026-03-11' },
      { userId: 'nobody', start: '2025-03-11', end: '2025-03-11' },
      { userId: 'ahead', start: '2025-03-12', end: '2025-03-13' },
    ]);
    expect(res.status).toBe(201);
    expect(res.body.created).toHaveLength(2);
    expect(res.body.issues).toEqual([
      { severity: 'error', message: 'User does not exist', index: 1, userId: 'nobody' },
    ]);
    await t.admin('DELETE', `/streaks/pauses?ids=${res.body.created.map((p: any) => p.id).join(',')}`);
  });

  it.each([
    ['not JSON', '{', 400],
    ['an array', [], 400],
    ['no pauses', {}, 400],
    ['pauses as an object', { pauses: {} }, 400],
    ['no items', { pauses: [] }, 422],
    [
      '101 items',
      {
        pauses: Array.from({ length: 101 }, () => ({
          userId: 'utc-user',
          start: '2025-03-10',
          end: '2025-03-10',
        })),
      },
      422,
    ],
  ])('answers a body with %s (%j) with %i and creates nothing', async (_label, body, status) => {
    const res = await t.admin('POST', '/streaks/pauses', body);
    expect(res.status).toBe(status);
    expect(Object.keys(res.body)).toEqual(['error']);
    expect(await list()).toEqual([]);
  });

  it('answers bad list and delete queries with 422', async () => {
    expect((await t.admin('GET', '/streaks/pauses?limit=0')).status).toBe(422);
    expect((await t.admin('GET', '/streaks/pauses?skip=-1')).status).toBe(422);
    expect((await t.admin('GET', '/streaks/pauses?userId=a&userId=b')).status).toBe(422);
    expect((await t.admin('DELETE', '/streaks/pauses')).status).toBe(422);
    const many = Array.from({ length: 101 }, () => randomUUID()).join(',');
    expect((await t.admin('DELETE', `/streaks/pauses?ids=${many}`)).status).toBe(422);
    const odd = await t.admin('DELETE', '/streaks/pauses?ids=nope');
    expect(odd.body).toEqual({
      deleted: [],
      issues: [{ severity: 'error', message: 'Pause not found', id: 'nope' }],
    });
  });

  it('requires an admin key', async () => {
    expect((await t.api('GET', '/admin/v1/streaks/pauses')).status).toBe(401);
  });
});
