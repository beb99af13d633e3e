import { TrophyApiClient } from '@trophyso/node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { adminCreate, createTestServer, type TestServer } from '../helpers/server';
import { streakField } from '../helpers/user-hash';

// POST /admin/v1/streaks/freezes (#25) and POST /admin/v1/streaks/restore (#26), admin-api §13.

let t: TestServer;
let metricId: string;
const DAY = 86_400_000;

const event = async (id: string) => {
  const r = await t.api('POST', '/v1/metrics/lessons/event', { user: { id }, value: 1 });
  expect(r.status).toBe(201);
  return r.body;
};
const streakLength = async (id: string) =>
  Number((await streakField(t.deps.redis, t.deps.keys, id, 'length')) ?? 0);
const freezes = async (id: string) =>
  Number((await streakField(t.deps.redis, t.deps.keys, id, 'freezes')) ?? 0);

beforeAll(async () => {
  t = await createTestServer({ now: '2025-01-01T12:00:00Z' });
  const [m] = await adminCreate(t, '/metrics', [{ key: 'lessons', name: 'Lessons' }]);
  metricId = m.id;
});
afterAll(async () => t.close());

describe('request-level checks', () => {
  it('answers 422 while streaks or freezes are disabled', async () => {
    await t.api('POST', '/v1/users', { id: 'a' });
    const f = await t.admin('POST', '/streaks/freezes', { freezes: [{ userId: 'a' }] });
    expect(f).toMatchObject({ status: 422, body: { error: 'Streak freezes are not enabled' } });
    const r = await t.admin('POST', '/streaks/restore', { users: [{ id: 'a' }] });
    expect(r).toMatchObject({ status: 422, body: { error: 'Streaks are not enabled' } });
    const s = await t.admin('PATCH', '/streaks/settings', {
      enabled: true,
      conditions: [{ metricId, threshold: 1 }],
      freezesEnabled: true,
      maxFreezes: 2,
    });
    expect(s.status).toBe(200);
  });

  it('answers 400 for structural problems and 422 for item counts', async () => {
    const cases: Array<[string, unknown, number]> = [
      ['/streaks/freezes', 'not json{', 400],
      ['/streaks/freezes', [], 400],
      ['/streaks/freezes', {}, 400],
      ['/streaks/freezes', { freezes: {} }, 400],
      ['/streaks/freezes', { freezes: [null] }, 400],
      ['/streaks/freezes', { freezes: ['a'] }, 400],
      ['/streaks/freezes', { freezes: [{ userId: 'a' }, { userId: 5 }] }, 400],
      ['/streaks/freezes', { freezes: [{ id: 'a' }] }, 400],
      ['/streaks/freezes', { freezes: [] }, 422],
      ['/streaks/freezes', { freezes: Array.from({ length: 1001 }, () => ({ userId: 'a' })) }, 422],
      ['/streaks/restore', { users: [{ userId: 'a' }] }, 400],
      ['/streaks/restore', { users: [[]] }, 400],
      ['/streaks/restore', { users: 'a' }, 400],
      ['/streaks/restore', { users: [] }, 422],
      ['/streaks/restore', { users: Array.from({ length: 101 }, (_, i) => ({ id: `u${i}` })) }, 422],
    ];
    for (const [path, body, status] of cases) {
      const r = await t.admin('POST', path, body);
      expect(r.status, `${path} ${JSON.stringify(body).slice(0, 60)}`).toBe(status);
      expect(Object.keys(r.body)).toEqual(['error']);
    }
    expect(await freezes('a')).toBe(0);
  });
});

describe('grant freezes', () => {
  it('grants one freeze per item up to the maximum, with issues for the rest', async () => {
    const r = await t.admin('POST', '/streaks/freezes', {
      freezes: [{ userId: 'a' }, { userId: 'a' }, { userId: 'a' }, { userId: 'ghost' }],
    });
    expect(r.status).toBe(201);
    expect(r.body).toEqual({
      issues: [
        {
          userId: 'a',
          level: 'warning',
          reason: 'Would exceed maximum freeze limit',
          severity: 'warning',
          message: 'Would exceed maximum freeze limit',
          index: 2,
        },
        {
          userId: 'ghost',
          level: 'error',
          reason: 'User does not exist',
          severity: 'error',
          message: 'User does not exist',
          index: 3,
        },
      ],
    });
    expect(await freezes('a')).toBe(2);
    expect(await t.deps.redis.exists(t.deps.keys.user('ghost').hash)).toBe(0);
    const none = await t.admin('POST', '/streaks/freezes', { freezes: [{ userId: 'a' }] });
    expect(none.status).toBe(200);
    expect(none.body.issues).toHaveLength(1);
  });
});

describe('restore', () => {
  it('restores to the best length of the look-back window; issues for the others; duplicates once', async () => {
    // Days 0..1: old builds 2; days 95..97: r1 builds 3; days 99..100: max builds 2.
    const day = (n: number) => t.clock.set(Date.parse('2025-01-01T12:00:00Z') + n * DAY);
    for (let d = 0; d < 2; d++) {
      day(d);
      await event('old');
    }
    for (let d = 95; d < 98; d++) {
      day(d);
      await event('r1');
    }
    t.clock.set(Date.parse('2025-01-01T12:00:00Z') + 99 * DAY);
    await event('max');
    t.clock.advance(DAY); // day 100 = 2025-04-11
    await event('max');
    await event('r1'); // broken (no freezes): 1
    await event('old'); // broken: 1; its 2 is older than 90 days
    await t.api('POST', '/v1/users', { id: 'none' });
    expect(await streakLength('r1')).toBe(1);

    const r = await t.admin('POST', '/streaks/restore', {
      users: [{ id: 'r1' }, { id: 'ghost' }, { id: 'none' }, { id: 'max' }, { id: 'r1' }, { id: 'old' }],
    });
    expect(r.status).toBe(201);
    expect(r.body.restoredUsers).toEqual(['r1']);
    expect(r.body.issues.map((i: Record<string, unknown>) => [i.userId, i.index, i.level, i.reason])).toEqual(
      [
        ['ghost', 1, 'error', 'User does not exist'],
        ['none', 2, 'warning', 'No streak to restore'],
        ['max', 3, 'warning', 'Streak is already at maximum length'],
        ['old', 5, 'warning', 'Streak is already at maximum length'],
      ],
    );
    for (const i of r.body.issues) {
      expect(i.severity).toBe(i.level);
      expect(i.message).toBe(i.reason);
    }
    // Today was already met, so it counts on top of the restored 3.
    expect(await streakLength('r1')).toBe(4);

    const again = await t.admin('POST', '/streaks/restore', { users: [{ id: 'r1' }] });
    expect(again.status).toBe(200);
    expect(again.body).toEqual({
      restoredUsers: [],
      issues: [
        {
          userId: 'r1',
          level: 'warning',
          reason: 'Streak is already at maximum length',
          severity: 'warning',
          message: 'Streak is already at maximum length',
          index: 0,
        },
      ],
    });
  });
});

describe('through the SDK admin client', () => {
  it('admin.streaks.freezes.create and admin.streaks.restore parse', async () => {
    const origin = await t.listen();
    const client = new TrophyApiClient({
      apiKey: t.adminKey,
      environment: { api: `${origin}/v1`, admin: `${origin}/admin/v1` },
    });
    await t.api('POST', '/v1/users', { id: 'sdk' });
    const f = await client.admin.streaks.freezes.create({
      freezes: [{ userId: 'sdk' }, { userId: 'ghost' }],
    });
    expect(f.issues).toHaveLength(1);
    expect(f.issues[0]).toMatchObject({ userId: 'ghost', level: 'error', reason: 'User does not exist' });
    expect(await freezes('sdk')).toBe(1);
    const r = await client.admin.streaks.restore({ users: [{ id: 'sdk' }, { id: 'ghost' }] });
    expect(r.restoredUsers).toEqual([]);
    expect(r.issues.map((i) => [i.userId, i.level, i.reason])).toEqual([
      ['sdk', 'warning', 'No streak to restore'],
      ['ghost', 'error', 'User does not exist'],
    ]);
  });
});
