import { TrophyApiClient } from '@trophyso/node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { percent2 } from '../../src/services/wrapped';
import { HistoryWriter } from '../../src/workers/history-writer';
import { adminCreate, createTestServer, type TestServer } from '../helpers/server';

// GET /v1/users/{id}/wrapped (application-api §6.10, semantics §7.4).

let t: TestServer;

async function event(at: string, id: string, value: number, attributes?: Record<string, string>) {
  t.clock.set(at);
  const r = await t.api('POST', '/v1/metrics/lessons/event', { user: { id }, value, attributes });
  expect(r.status).toBe(201);
}

beforeAll(async () => {
  t = await createTestServer({ now: '2024-12-01T00:00:00Z' });
  const [m] = await adminCreate(t, '/metrics', [{ key: 'lessons', name: 'Lessons', units: 'lessons' }]);
  await adminCreate(t, '/attributes', [{ key: 'device', name: 'Device', type: 'event' }]);
  const [p] = await adminCreate(t, '/points', [{ key: 'xp', name: 'XP' }]);
  await adminCreate(t, `/points/${p.id}/triggers`, [
    { type: 'metric', points: 10, metricId: m.id, metricThreshold: 1, status: 'active' },
  ]);
  await adminCreate(t, '/achievements', [
    { key: 'first', name: 'First', trigger: 'metric', metricId: m.id, metricValue: 1, status: 'active' },
    { key: 'ten', name: 'Ten', trigger: 'metric', metricId: m.id, metricValue: 10, status: 'active' },
  ]);
  const s = await t.admin('PATCH', '/streaks/settings', {
    enabled: true,
    conditions: [{ metricId: m.id, threshold: 1 }],
  });
  expect(s.status).toBe(200);
  await adminCreate(t, '/leaderboards', [
    { key: 'top', name: 'Top', rankBy: 'metric', metricId: m.id, status: 'active', start: '2024-12-01' },
  ]);

  await event('2024-12-30T10:00:00Z', 'w', 5); // ISO week of 2025-01-02, previous year
  await event('2025-01-02T10:00:00Z', 'w', 2, { device: 'ios' });
  await event('2025-01-03T10:00:00Z', 'w', 1, { device: 'web' });
  await event('2025-01-03T11:00:00Z', 'w', 1, { device: 'ios' });
  await event('2025-01-03T12:00:00Z', 'o1', 1, { device: 'ios' });
  await event('2025-01-04T12:00:00Z', 'o2', 10, { device: 'web' });
  await event('2025-03-05T10:00:00Z', 'w', 3);
  t.clock.set('2025-06-15T12:00:00Z');
  await t.api('POST', '/v1/users', { id: 'quiet' });
  const writer = new HistoryWriter(t.deps);
  while ((await writer.drainOnce()) > 0) {}
});
afterAll(async () => t.close());

describe('wrapped', () => {
  it('rounds percentages half away from zero, exactly', () => {
    expect(percent2(2n, 7n)).toBe(28.57);
    expect(percent2(1n, 3n)).toBe(33.33);
    expect(percent2(2n, 3n)).toBe(66.67);
    expect(percent2(-1n, 8n)).toBe(-12.5);
    expect(percent2(1n, 20000n)).toBe(0.01);
    expect(percent2(1n, 200000n)).toBe(0);
    expect(percent2(5n, 0n)).toBe(0);
  });

  it('reports activity counts and the most active day, week and month', async () => {
    const r = await t.api('GET', '/v1/users/w/wrapped?year=2025');
    expect(r.status).toBe(200);
    expect(r.body.user).toMatchObject({ id: 'w' });
    const a = r.body.activity;
    expect([a.daysActive, a.weeksActive, a.monthsActive]).toEqual([3, 2, 2]);
    expect(a.mostActiveDay.date).toBe('2025-01-03');
    expect([a.mostActiveWeek.start, a.mostActiveWeek.end]).toEqual(['2024-12-30', '2025-01-05']);
    expect(a.mostActiveMonth.month).toBe(0);
    expect(a.entireYear.longestStreak).toEqual({
      length: 2,
      frequency: 'daily',
      started: '2025-01-02',
      periodStart: '2025-01-03',
      periodEnd: '2025-01-03',
    });
  });

  it('gives metric figures per period, with percentiles for week, month and year only', async () => {
    const a = (await t.api('GET', '/v1/users/w/wrapped?year=2025')).body.activity;
    expect(a.mostActiveDay.metrics).toEqual({
      lessons: {
        name: 'Lessons',
        units: 'lessons',
        currentTotal: 9,
        changeThisPeriod: 2,
        percentChange: 28.57,
        byAttribute: {
          device: {
            ios: {
              name: 'Lessons',
              units: 'lessons',
              currentTotal: 3,
              changeThisPeriod: 1,
              percentChange: 50,
            },
            web: {
              name: 'Lessons',
              units: 'lessons',
              currentTotal: 1,
              changeThisPeriod: 1,
              percentChange: 0,
            },
          },
        },
      },
    });
    // Week 2024-12-30..2025-01-05: w +9, o1 +1, o2 +10.
    expect(a.mostActiveWeek.metrics.lessons).toMatchObject({
      currentTotal: 9,
      changeThisPeriod: 9,
      percentChange: 0,
      percentileThisPeriod: 33.33,
      byAttribute: {
        device: {
          ios: { currentTotal: 3, changeThisPeriod: 3, percentileThisPeriod: 50 },
          web: { currentTotal: 1, changeThisPeriod: 1, percentileThisPeriod: 0 },
        },
      },
    });
    expect(a.mostActiveMonth.metrics.lessons).toMatchObject({
      currentTotal: 9,
      changeThisPeriod: 4,
      percentChange: 80,
      percentileThisPeriod: 33.33,
    });
    expect(a.entireYear.metrics.lessons).toMatchObject({
      currentTotal: 12,
      changeThisPeriod: 7,
      percentChange: 140,
      percentileThisPeriod: 33.33,
    });
  });

  it('gives points figures, completions and best leaderboard ranks per period', async () => {
    // Best ranks come from the rank history the scheduler records from the boards' change streams.
    await t.settle();
    const a = (await t.api('GET', '/v1/users/w/wrapped?year=2025')).body.activity;
    expect(a.entireYear.points).toEqual({
      xp: {
        name: 'XP',
        description: null,
        currentTotal: 120,
        changeThisPeriod: 70,
        percentChange: 140,
        percentileThisPeriod: 33.33,
      },
    });
    expect(a.mostActiveDay.points.xp).toEqual({
      name: 'XP',
      description: null,
      currentTotal: 90,
      changeThisPeriod: 20,
      percentChange: 28.57,
    });
    expect(a.entireYear.achievements.map((x: { key: string }) => x.key)).toEqual(['ten']);
    expect(a.entireYear.achievements[0].achievedAt).toBe('2025-03-05T10:00:00.000Z');
    expect(a.mostActiveMonth.achievements).toEqual([]);
    expect(a.entireYear.leaderboards.top).toMatchObject({ key: 'top', rankBy: 'metric', rank: 1, value: 5 });
    expect(a.mostActiveDay.leaderboards.top).toMatchObject({ rank: 1, value: 7 });
  });

  it('returns empty periods for a year without activity', async () => {
    const r = await t.api('GET', '/v1/users/quiet/wrapped');
    expect(r.status).toBe(200);
    const a = r.body.activity;
    expect([a.daysActive, a.weeksActive, a.monthsActive]).toEqual([0, 0, 0]);
    expect(a.mostActiveDay).toEqual({
      date: '2025-01-01',
      metrics: {},
      points: {},
      achievements: [],
      leaderboards: {},
    });
    expect([a.mostActiveWeek.start, a.mostActiveWeek.end]).toEqual(['2024-12-30', '2025-01-05']);
    expect(a.mostActiveMonth.month).toBe(0);
    expect(a.entireYear.longestStreak).toEqual({
      length: 0,
      frequency: 'daily',
      started: null,
      periodStart: null,
      periodEnd: null,
    });
  });

  it('answers 404 for an unknown user and 422 for a bad year', async () => {
    const u = await t.api('GET', '/v1/users/nobody/wrapped');
    expect(u.status).toBe(404);
    expect(u.body).toEqual({ error: 'User not found' });
    for (const y of ['0', '-1', '2026', '2025.0', 'abc', '']) {
      const r = await t.api('GET', `/v1/users/w/wrapped?year=${y}`);
      expect(r.status, y).toBe(422);
    }
    expect((await t.api('GET', '/v1/users/w/wrapped?year=2025&year=2024')).status).toBe(422);
    expect((await t.api('GET', '/v1/users/w/wrapped?year=1')).status).toBe(200);
  });

  it('parses through the SDK', async () => {
    const origin = await t.listen();
    const client = new TrophyApiClient({
      apiKey: t.appKey,
      environment: { api: `${origin}/v1`, admin: `${origin}/admin/v1` },
    });
    const w = await client.users.wrapped('w', { year: 2025 });
    expect(w.activity.entireYear.metrics.lessons?.currentTotal).toBe(12);
    expect(w.activity.mostActiveWeek.start).toBe('2024-12-30');
    expect(w.activity.entireYear.longestStreak.length).toBe(2);
    const q = await client.users.wrapped('quiet');
    expect(q.activity.daysActive).toBe(0);
  });
});
