import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { userField } from '../../src/redis/user-hash';
import { redisContents } from '../helpers/redis-state';
import { adminCreate, createTestServer, type TestServer } from '../helpers/server';

// Metric totals of POST /v1/metrics/{key}/event: exact fixed-point decimals (semantics §2.1).

let t: TestServer;
let steps: { id: string; key: string };
let n = 0;
const uid = () => `metrics-user-${++n}`;

const send = (key: string, userId: string, value: unknown) =>
  t.api('POST', `/v1/metrics/${key}/event`, { user: { id: userId }, value });

async function dumpRedis(): Promise<Record<string, unknown>> {
  // Reply markers of committed ops (`:op:<id>`) expire 10 s after their op by Redis's clock: not state.
  const keys = (await t.redisKeys()).filter((key) => !key.includes(':op:'));
  return redisContents(t.deps.redis, keys);
}

beforeAll(async () => {
  t = await createTestServer();
  [steps] = await adminCreate(t, '/metrics', [{ key: 'steps', name: 'Steps' }]);
});
afterAll(async () => t.close());

describe('event metric totals', () => {
  it('answers 201 with the documented shape (streaks disabled)', async () => {
    const res = await send('steps', uid(), 5);
    expect(res.status).toBe(201);
    expect(res.headers.get('content-type')).toMatch(/^application\/json/);
    expect(res.body).toEqual({
      eventId: expect.stringMatching(/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/),
      metricId: steps.id,
      total: 5,
      achievements: [],
      currentStreak: {
        length: 0,
        frequency: 'daily',
        started: null,
        periodStart: null,
        periodEnd: null,
        expires: null,
        extended: false,
      },
      points: {},
      leaderboards: {},
    });
  });

  it('gives every event its own id', async () => {
    const u = uid();
    const a = await send('steps', u, 1);
    const b = await send('steps', u, 1);
    expect(a.body.eventId).not.toBe(b.body.eventId);
  });

  it('sums decimals exactly: 0.1 + 0.2 = 0.3', async () => {
    const u = uid();
    expect((await send('steps', u, 0.1)).body.total).toBe(0.1);
    const res = await send('steps', u, 0.2);
    expect(res.body.total).toBe(0.3);
    // Stored as integer millionths, never as a binary floating-point sum.
    expect(await t.deps.redis.hget(t.deps.keys.user(u).hash, userField('metrics', steps.id))).toBe('300000');
  });

  it('sums ten times 0.1 to exactly 1, and back to exactly 0', async () => {
    const u = uid();
    let last: any;
    for (let i = 0; i < 10; i++) last = await send('steps', u, 0.1);
    expect(last.body.total).toBe(1);
    for (let i = 0; i < 10; i++) last = await send('steps', u, -0.1);
    expect(last.body.total).toBe(0);
  });

  it('accepts negative values: totals may become negative', async () => {
    const u = uid();
    expect((await send('steps', u, 5)).body.total).toBe(5);
    const res = await send('steps', u, -8.25);
    expect(res.status).toBe(201);
    expect(res.body.total).toBe(-3.25);
  });

  it('accepts zero: recorded, total unchanged', async () => {
    const u = uid();
    const first = await send('steps', u, 0);
    expect(first.status).toBe(201);
    expect(first.body.total).toBe(0);
    await send('steps', u, 2);
    const res = await send('steps', u, 0);
    expect(res.status).toBe(201);
    expect(res.body.total).toBe(2);
  });

  it.each([
    [0.0000005, 0.000001],
    [-0.0000005, -0.000001],
    [0.00000049, 0],
    [-0.00000049, 0],
    [1e-7, 0],
    [1.2345675, 1.234568],
    [-1.2345675, -1.234568],
    [0.1234565, 0.123457],
    [2.0000015, 2.000002],
    [1.0000004, 1],
    [123456.654321, 123456.654321],
    [-0.000001, -0.000001],
    [1e-6, 0.000001],
    [12, 12],
  ])('rounds %d to 6 decimals (halves away from zero) → %d', async (value, expected) => {
    const res = await send('steps', uid(), value);
    expect(res.status).toBe(201);
    expect(res.body.total).toBe(expected);
  });

  it('keeps totals per user and per metric', async () => {
    const [other] = await adminCreate(t, '/metrics', [{ key: 'other-metric', name: 'Other' }]);
    const a = uid();
    const b = uid();
    await send('steps', a, 1.5);
    await send('other-metric', a, 10);
    await send('steps', b, 100);
    const res = await send('steps', a, 1.5);
    expect(res.body).toMatchObject({ metricId: steps.id, total: 3 });
    expect((await send('other-metric', a, 0)).body).toMatchObject({ metricId: other.id, total: 10 });
    expect((await send('steps', b, 0)).body.total).toBe(100);
  });

  it('reaches 9007199254 but refuses an event that would pass it, changing nothing', async () => {
    const u = uid();
    const max = await send('steps', u, 9007199254);
    expect(max.status).toBe(201);
    expect(max.body.total).toBe(9007199254);
    const before = await dumpRedis();
    for (const value of [1, 0.5, 9007199254]) {
      const res = await send('steps', u, value);
      expect(res.status).toBe(422);
      expect(Object.keys(res.body)).toEqual(['error']);
    }
    expect(await dumpRedis()).toEqual(before);
    // Moving back into range is fine.
    const back = await send('steps', u, -9007199254);
    expect(back.status).toBe(201);
    expect(back.body.total).toBe(0);
  });

  it('refuses an event that would carry a negative total beyond -9007199254', async () => {
    const u = uid();
    expect((await send('steps', u, -9007199254)).body.total).toBe(-9007199254);
    const before = await dumpRedis();
    const res = await send('steps', u, -1);
    expect(res.status).toBe(422);
    expect(await dumpRedis()).toEqual(before);
  });

  it('refuses a single value beyond the range (422) without creating the user', async () => {
    const u = uid();
    const before = await dumpRedis();
    for (const value of [9007199255, -9007199255, 1e20]) {
      const res = await send('steps', u, value);
      expect(res.status).toBe(422);
    }
    expect(await dumpRedis()).toEqual(before);
  });

  it('answers 404 for a deleted metric', async () => {
    const [gone] = await adminCreate(t, '/metrics', [{ key: 'gone', name: 'Gone' }]);
    expect((await send('gone', uid(), 1)).status).toBe(201);
    const del = await t.admin('DELETE', `/metrics?ids=${gone.id}`);
    expect(del.body.issues).toEqual([]);
    const res = await send('gone', uid(), 1);
    expect(res.status).toBe(404);
    expect(res.body).toEqual({ error: 'Metric not found' });
  });
});
