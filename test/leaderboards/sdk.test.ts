import { TrophyApi, TrophyApiClient } from '@trophyso/node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { adminCreate, createTestServer, type TestServer } from '../helpers/server';
import { createBoard, send } from '../helpers/leaderboards';

// The Trophy Node SDK (@trophyso/node 1.0.42) parses Laurel's leaderboard responses with its own
// strict schemas: leaderboards.all, leaderboards.get, users.leaderboard and metrics.event.

let t: TestServer;
let sdk: TrophyApiClient;
let m: { id: string; key: string };
let city: { id: string };
let sys: { id: string; key: string };
const boards: Record<string, any> = {};

beforeAll(async () => {
  t = await createTestServer({ now: '2025-03-01T12:00:00Z' });
  const origin = await t.listen();
  sdk = new TrophyApiClient({
    apiKey: t.appKey,
    environment: { api: `${origin}/v1`, admin: `${origin}/admin/v1` },
  });
  [m] = await adminCreate(t, '/metrics', [{ key: 'sdk-minutes', name: 'Minutes' }]);
  [city] = await adminCreate(t, '/attributes', [{ key: 'city', name: 'City', type: 'user' }]);
  [sys] = await adminCreate(t, '/points', [{ key: 'sdk-xp', name: 'XP' }]);
  await adminCreate(t, `/points/${sys.id}/triggers`, [
    { type: 'metric', metricId: m.id, metricThreshold: 1, points: 5, status: 'active' },
  ]);
  await t.admin('PATCH', '/streaks/settings', {
    enabled: true,
    conditions: [{ metricId: m.id, threshold: 1 }],
  });
  boards.finished = await createBoard(t, {
    key: 'sdk-finished',
    rankBy: 'metric',
    metricId: m.id,
    end: '2025-03-02',
  });
  await send(t, m.key, 'sdk-old', 2);
  t.clock.set('2025-03-10T12:00:00Z');
  boards.metric = await createBoard(t, {
    key: 'sdk-metric',
    rankBy: 'metric',
    metricId: m.id,
    description: 'Minutes by city',
    breakdownAttributes: [city.id],
    maxParticipants: 50,
  });
  boards.points = await createBoard(t, {
    key: 'sdk-points',
    rankBy: 'points',
    pointsSystemId: sys.id,
    start: '2025-03-01',
    runUnit: 'day',
    runInterval: 1,
  });
  boards.streak = await createBoard(t, { key: 'sdk-streak', rankBy: 'streak' });
  boards.scheduled = await createBoard(t, {
    key: 'sdk-scheduled',
    rankBy: 'metric',
    metricId: m.id,
    start: '2025-06-01',
    end: '2025-12-31',
    runUnit: 'month',
    runInterval: 1,
  });
  await send(t, m.key, { id: 'sdk-a', name: 'Ann', attributes: { city: 'oslo' } }, 2.5);
  t.clock.advance(1000);
  await send(t, m.key, { id: 'sdk-b', attributes: { city: 'oslo' } }, 4);
  t.clock.advance(1000);
  await send(t, m.key, { id: 'sdk-a', name: 'Ann', attributes: { city: 'oslo' } }, 0.25);
});
afterAll(async () => t.close());

describe('SDK parsing of leaderboard responses', () => {
  it('leaderboards.all', async () => {
    const all = await sdk.leaderboards.all();
    expect(all.map((b) => [b.key, b.status])).toEqual([
      ['sdk-metric', 'active'],
      ['sdk-points', 'active'],
      ['sdk-streak', 'active'],
      ['sdk-scheduled', 'scheduled'],
    ]);
    expect(all[0]).toMatchObject({
      id: boards.metric.id,
      name: 'Board',
      rankBy: 'metric',
      description: 'Minutes by city',
      breakdownAttribute: 'city',
      metricKey: 'sdk-minutes',
      metricName: 'Minutes',
      start: '2025-03-10',
      maxParticipants: 50,
      runInterval: 0,
    });
    expect(all[1]).toMatchObject({
      pointsSystemKey: 'sdk-xp',
      pointsSystemName: 'XP',
      runUnit: 'day',
      runInterval: 1,
    });
    expect(all[3]).toMatchObject({ start: '2025-06-01', end: '2025-12-31', runUnit: 'month' });
  });

  it('leaderboards.get', async () => {
    const lb = await sdk.leaderboards.get('sdk-metric', {
      userAttributes: 'city:oslo',
      limit: 10,
      offset: 0,
    });
    expect(lb.status).toBe('active');
    // The SDK turns null into undefined.
    expect(lb.rankings).toEqual([
      { userId: 'sdk-b', userName: undefined, rank: 1, value: 4 },
      { userId: 'sdk-a', userName: 'Ann', rank: 2, value: 2.75 },
    ]);
    const around = await sdk.leaderboards.get('sdk-metric', { userId: 'sdk-a', offset: -1, limit: 1 });
    expect(around.rankings.map((r) => r.userId)).toEqual(['sdk-b']);
    const points = await sdk.leaderboards.get('sdk-points', { run: '2025-03-10' });
    expect(points.rankings).toEqual([
      { userId: 'sdk-b', userName: undefined, rank: 1, value: 20 },
      { userId: 'sdk-a', userName: 'Ann', rank: 2, value: 10 },
    ]);
    const streak = await sdk.leaderboards.get('sdk-streak');
    expect(streak.rankings.map((r) => [r.userId, r.value])).toEqual([
      ['sdk-a', 1],
      ['sdk-b', 1],
    ]);
    const scheduled = await sdk.leaderboards.get('sdk-scheduled');
    expect(scheduled).toMatchObject({ status: 'scheduled', rankings: [] });
    const finished = await sdk.leaderboards.get('sdk-finished');
    expect(finished.status).toBe('finished');
    expect(finished.rankings).toEqual([{ userId: 'sdk-old', userName: undefined, rank: 1, value: 2 }]);
  });

  it('users.leaderboard', async () => {
    // The history is the rank history the scheduler records from the boards' change streams.
    await t.settle();
    const me = await sdk.users.leaderboard('sdk-a', 'sdk-metric', { numEvents: 5 });
    expect(me).toMatchObject({ key: 'sdk-metric', rank: 2, value: 2.75, breakdownAttribute: 'city' });
    expect(me.history).toEqual([
      {
        timestamp: new Date('2025-03-10T12:00:00.000Z'),
        previousRank: undefined,
        rank: 1,
        previousValue: undefined,
        value: 2.5,
      },
      {
        timestamp: new Date('2025-03-10T12:00:02.000Z'),
        previousRank: 2, // sdk-b passed sdk-a in between (not recorded in sdk-a's history)
        rank: 2,
        previousValue: 2.5,
        value: 2.75,
      },
    ]);
    const none = await sdk.users.leaderboard('sdk-old', 'sdk-points');
    expect(none.rank ?? null).toBeNull();
    expect(none.value ?? null).toBeNull();
    expect(none.history).toEqual([]);
    const past = await sdk.users.leaderboard('sdk-old', 'sdk-finished', { run: '2025-03-01' });
    expect(past).toMatchObject({ rank: 1, value: 2 });
  });

  it('metrics.event leaderboards entries', async () => {
    const res = await sdk.metrics.event('sdk-minutes', {
      user: { id: 'sdk-c', attributes: { city: 'oslo' } },
      value: 5,
    });
    expect(res.leaderboards?.['sdk-metric']).toMatchObject({
      start: '2025-03-10',
      threshold: 0,
      rank: 1,
      breakdownAttributeValue: 'oslo',
    });
    expect(res.leaderboards?.['sdk-points']).toMatchObject({
      start: '2025-03-10',
      end: '2025-03-10',
      rank: 1,
    });
  });

  it('maps 404 and 422 to the SDK error types', async () => {
    await expect(sdk.leaderboards.get('nope')).rejects.toBeInstanceOf(TrophyApi.NotFoundError);
    await expect(sdk.leaderboards.get('sdk-metric', { limit: 1001 })).rejects.toBeInstanceOf(
      TrophyApi.UnprocessableEntityError,
    );
    await expect(sdk.leaderboards.get('sdk-metric', { userAttributes: 'x:1' })).rejects.toMatchObject({
      statusCode: 422,
      body: { error: 'Invalid attribute keys: x.' },
    });
    await expect(sdk.users.leaderboard('sdk-a', 'sdk-metric', { numEvents: 101 })).rejects.toBeInstanceOf(
      TrophyApi.UnprocessableEntityError,
    );
    await expect(sdk.users.leaderboard('nobody', 'sdk-metric')).rejects.toBeInstanceOf(
      TrophyApi.NotFoundError,
    );
  });
});
