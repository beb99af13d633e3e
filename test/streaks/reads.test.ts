import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { adminCreate, createTestServer, type TestServer } from '../helpers/server';

// Streak reads (application-api §6.7 #14, #19, #20, §7.7; semantics §4.4, §4.5, §4.11): lengths are
// shown as of now even when no event has resolved the missed periods yet.

let t: TestServer;
let metric: { id: string };

async function event(instant: string, user: Record<string, unknown> | string) {
  t.clock.set(instant);
  const res = await t.api('POST', '/v1/metrics/steps/event', {
    user: typeof user === 'string' ? { id: user } : user,
    value: 1,
  });
  expect(res.status).toBe(201);
  // Streak rankings are maintained by the history writer from the outbox: let it catch up.
  await t.settle();
}

async function configure(s: Record<string, unknown>) {
  const res = await t.admin('PATCH', '/streaks/settings', {
    enabled: true,
    frequency: 'daily',
    conditions: [{ metricId: metric.id, threshold: 1 }],
    freezesEnabled: false,
    ...s,
  });
  expect(res.status).toBe(200);
}

const streakOf = async (user: string, query = '') => {
  const res = await t.api('GET', `/v1/users/${user}/streak${query}`);
  expect(res.status).toBe(200);
  return res.body;
};
const rankings = async (query = '') =>
  (await t.api('GET', `/v1/streaks/rankings${query}`)).body.map((r: any) => [r.userId, r.streakLength]);
const day = (date: string, length: number, usedPause = false) => ({
  periodStart: date,
  periodEnd: date,
  length,
  usedPause,
});

beforeAll(async () => {
  t = await createTestServer({ now: '2025-03-08T00:00:00Z' });
  [metric] = await adminCreate(t, '/metrics', [{ key: 'steps', name: 'Steps' }]);
});
afterAll(async () => t.close());

describe('while streaks are disabled', () => {
  it('reports length 0 without period, history or rank', async () => {
    await t.api('POST', '/v1/users', { id: 'early' });
    expect(await streakOf('early')).toEqual({
      length: 0,
      frequency: 'daily',
      started: null,
      periodStart: null,
      periodEnd: null,
      expires: null,
      rank: null,
      streakHistory: [],
      pauses: [],
    });
  });
});

describe('daily streaks', () => {
  beforeAll(async () => {
    await configure({});
    await event('2025-03-08T09:00:00Z', { id: 'alice', name: 'Alice' });
    await event('2025-03-09T09:00:00Z', 'alice');
    await event('2025-03-09T09:00:00Z', 'bob');
    await event('2025-03-10T09:00:00Z', 'alice');
    await event('2025-03-10T10:00:00Z', 'dave');
    await event('2025-03-10T11:00:00Z', 'zed');
    await event('2025-03-10T11:00:00Z', 'amy');
    t.clock.set('2025-03-10T12:00:00Z');
  });

  it("reports the current streak, its rank and the history ending with today's period", async () => {
    expect(await streakOf('alice', '?historyPeriods=4')).toEqual({
      length: 3,
      frequency: 'daily',
      started: '2025-03-08',
      periodStart: '2025-03-10',
      periodEnd: '2025-03-10',
      expires: '2025-03-11',
      rank: 1,
      streakHistory: [day('2025-03-07', 0), day('2025-03-08', 1), day('2025-03-09', 2), day('2025-03-10', 3)],
      pauses: [],
    });
  });

  it('shows a streak whose current period is not met yet, expiring at the end of today', async () => {
    const bob = await streakOf('bob');
    expect(bob).toMatchObject({ length: 1, started: '2025-03-09', expires: '2025-03-10', rank: 2 });
    expect(bob.streakHistory).toHaveLength(7);
    expect(bob.streakHistory.slice(-2)).toEqual([day('2025-03-09', 1), day('2025-03-10', 1)]);
    expect((await streakOf('dave')).rank).toBe(2);
  });

  it('reports length 0 and rank null for a user without a streak', async () => {
    await t.api('POST', '/v1/users', { id: 'nobody-active' });
    expect(await streakOf('nobody-active', '?historyPeriods=1')).toMatchObject({
      length: 0,
      started: null,
      expires: null,
      rank: null,
      periodStart: '2025-03-10',
      streakHistory: [day('2025-03-10', 0)],
    });
  });

  it('uses the user time zone for the current period', async () => {
    await event('2025-03-10T11:30:00Z', { id: 'kiwi', tz: 'Pacific/Auckland' });
    // 11:30Z is 00:30 on 11 March in Auckland.
    expect(await streakOf('kiwi', '?historyPeriods=1')).toMatchObject({
      length: 1,
      started: '2025-03-11',
      periodStart: '2025-03-11',
      expires: '2025-03-12',
    });
  });

  it('ranks current streaks: length, then who reached it first, then user id', async () => {
    expect(await rankings()).toEqual([
      ['alice', 3],
      ['bob', 1],
      ['dave', 1],
      ['amy', 1],
      ['zed', 1],
      ['kiwi', 1],
    ]);
    expect(await rankings('?limit=2&type=active')).toEqual([
      ['alice', 3],
      ['bob', 1],
    ]);
    const res = await t.api('GET', '/v1/streaks/rankings?limit=1');
    expect(res.body).toEqual([{ userId: 'alice', name: 'Alice', streakLength: 3 }]);
  });

  it('lists the streaks of the requested existing users, longest first, then by id', async () => {
    const res = await t.api(
      'GET',
      '/v1/streaks?userIds=zed%2Cghost&userIds=alice&userIds=bob,alice,,nobody-active',
    );
    expect(res.status).toBe(200);
    expect(res.body).toEqual([
      { userId: 'alice', streakLength: 3, extended: '2025-03-10T09:00:00.000Z' },
      { userId: 'bob', streakLength: 1, extended: '2025-03-09T09:00:00.000Z' },
      { userId: 'zed', streakLength: 1, extended: '2025-03-10T11:00:00.000Z' },
      { userId: 'nobody-active', streakLength: 0, extended: null },
    ]);
  });

  describe('a day later, without new events', () => {
    beforeAll(() => t.clock.set('2025-03-11T12:00:00Z'));

    it('shows a missed period as a break before any event resolved it', async () => {
      expect(await streakOf('bob', '?historyPeriods=3')).toMatchObject({
        length: 0,
        started: null,
        expires: null,
        rank: null,
        streakHistory: [day('2025-03-09', 1), day('2025-03-10', 0), day('2025-03-11', 0)],
      });
      expect(await streakOf('alice')).toMatchObject({ length: 3, expires: '2025-03-11', rank: 1 });
    });

    it('drops lapsed streaks from the bulk list and the active rankings, not from the longest', async () => {
      const list = await t.api('GET', '/v1/streaks?userIds=bob,alice');
      expect(list.body).toEqual([
        { userId: 'alice', streakLength: 3, extended: '2025-03-10T09:00:00.000Z' },
        { userId: 'bob', streakLength: 0, extended: null },
      ]);
      // bob missed 10 March; the others met it and are alive until the end of today.
      expect(await rankings()).toEqual([
        ['alice', 3],
        ['dave', 1],
        ['amy', 1],
        ['zed', 1],
        ['kiwi', 1],
      ]);
      expect(await rankings('?type=longest&limit=3')).toEqual([
        ['alice', 3],
        ['bob', 1],
        ['dave', 1],
      ]);
    });
  });
  describe('two days later', () => {
    it('does not count lapsed longer streaks in a rank', async () => {
      await event('2025-03-12T12:00:00Z', 'late');
      expect(await streakOf('late')).toMatchObject({ length: 1, rank: 1 });
      expect(await rankings()).toEqual([['late', 1]]);
      expect((await rankings('?type=longest'))[0]).toEqual(['alice', 3]);
    });
  });
});

describe('freezes and pauses', () => {
  beforeAll(async () => {
    await configure({ freezesEnabled: true, maxFreezes: 3, initialFreezes: 1 });
    await event('2025-03-20T09:00:00Z', 'carl');
  });

  it('bridges a missed day with a freeze at read time', async () => {
    t.clock.set('2025-03-22T12:00:00Z');
    const carl = await streakOf('carl', '?historyPeriods=3');
    expect(carl).toMatchObject({
      length: 1,
      freezes: 0,
      maxFreezes: 3,
      started: '2025-03-20',
      expires: '2025-03-22',
      rank: 1,
    });
    expect(carl.streakHistory).toEqual([
      { ...day('2025-03-20', 1), usedFreeze: false },
      { ...day('2025-03-21', 1), usedFreeze: true },
      { ...day('2025-03-22', 1), usedFreeze: false },
    ]);
    t.clock.set('2025-03-23T12:00:00Z');
    expect(await streakOf('carl')).toMatchObject({ length: 0, freezes: 0, rank: null });
  });

  it('lists active and upcoming pauses, not ended ones', async () => {
    t.clock.set('2025-03-23T12:00:00Z');
    const created = await t.admin('POST', '/streaks/pauses', {
      pauses: [
        { userId: 'carl', start: '2025-03-24', end: '2025-03-25' },
        { userId: 'carl', start: '2025-03-23', end: '2025-03-23' },
        { userId: 'alice', start: '2025-03-24', end: '2025-03-30' },
      ],
    });
    expect(created.body.issues).toEqual([]);
    const [later, today] = created.body.created;
    expect((await streakOf('carl')).pauses).toEqual([
      { id: today.id, start: '2025-03-23', end: '2025-03-23' },
      { id: later.id, start: '2025-03-24', end: '2025-03-25' },
    ]);
    t.clock.set('2025-03-24T12:00:00Z');
    expect((await streakOf('carl')).pauses).toEqual([
      { id: later.id, start: '2025-03-24', end: '2025-03-25' },
    ]);
  });
});

describe('errors', () => {
  it('answers 404 for an unknown user', async () => {
    const res = await t.api('GET', '/v1/users/ghost/streak');
    expect(res.status).toBe(404);
    expect(res.body).toEqual({ error: 'User not found' });
  });

  it.each([
    '/v1/users/alice/streak?historyPeriods=0',
    '/v1/users/alice/streak?historyPeriods=101',
    '/v1/users/alice/streak?historyPeriods=7.0',
    '/v1/users/alice/streak?historyPeriods=',
    '/v1/users/alice/streak?historyPeriods=1&historyPeriods=2',
    '/v1/users/ghost/streak?historyPeriods=abc',
    '/v1/streaks',
    '/v1/streaks?userIds=',
    '/v1/streaks?userIds=%2C%2C',
    `/v1/streaks?userIds=${Array.from({ length: 101 }, (_, i) => `u${i}`).join(',')}`,
    '/v1/streaks/rankings?limit=0',
    '/v1/streaks/rankings?limit=101',
    '/v1/streaks/rankings?limit=1e1',
    '/v1/streaks/rankings?type=best',
    '/v1/streaks/rankings?type=active&type=longest',
  ])('answers 422 for %s', async (path) => {
    const res = await t.api('GET', path);
    expect(res.status).toBe(422);
    expect(Object.keys(res.body)).toEqual(['error']);
  });

  it('accepts 100 distinct ids after de-duplication', async () => {
    const ids = Array.from({ length: 100 }, (_, i) => `u${i}`);
    const res = await t.api('GET', `/v1/streaks?userIds=${[...ids, ...ids].join(',')}&userIds=alice`);
    expect(res.status).toBe(422);
    const ok = await t.api('GET', `/v1/streaks?userIds=${[...ids, ...ids].join(',')}`);
    expect(ok.status).toBe(200);
    expect(ok.body).toEqual([]);
  });
});
