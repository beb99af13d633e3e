import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { adminCreate, createTestServer, type TestServer } from '../helpers/server';
import { createBoard, getBoard, getUserBoard, send } from '../helpers/leaderboards';

// Query validation and visibility of GET /v1/leaderboards, GET /v1/leaderboards/{key} and
// GET /v1/users/{id}/leaderboards/{key} (application-api §5, §6.1, §6.9).

const NOW = '2025-03-10T12:00:00Z';
let t: TestServer;
let m: { id: string; key: string };
let city: { id: string };
let plain: any;
let byCity: any;
let inactive: any;
let scheduled: any;
let finished: any;

beforeAll(async () => {
  t = await createTestServer({ now: '2025-03-01T12:00:00Z' });
  [m] = await adminCreate(t, '/metrics', [{ key: 'q-lessons', name: 'Lessons' }]);
  [city] = await adminCreate(t, '/attributes', [
    { key: 'city', name: 'City', type: 'user' },
    { key: 'plan', name: 'Plan', type: 'user' },
  ]);
  finished = await createBoard(t, { key: 'q-finished', rankBy: 'metric', metricId: m.id, end: '2025-03-05' });
  t.clock.set(NOW);
  plain = await createBoard(t, {
    key: 'q-plain',
    rankBy: 'metric',
    metricId: m.id,
    start: '2025-03-03',
    runUnit: 'day',
    runInterval: 7,
  });
  byCity = await createBoard(t, {
    key: 'q-city',
    rankBy: 'metric',
    metricId: m.id,
    breakdownAttributes: [city.id],
  });
  inactive = await createBoard(t, {
    key: 'q-inactive',
    rankBy: 'metric',
    metricId: m.id,
    status: 'inactive',
  });
  scheduled = await createBoard(t, {
    key: 'q-scheduled',
    rankBy: 'metric',
    metricId: m.id,
    start: '2025-04-01',
  });
  await send(t, m.key, { id: 'q-user', attributes: { city: 'paris' } }, 3);
});
afterAll(async () => t.close());

const expect422 = async (p: Promise<{ status: number; body: any }>, message?: string) => {
  const res = await p;
  expect(res.status).toBe(422);
  expect(Object.keys(res.body)).toEqual(['error']);
  if (message !== undefined) expect(res.body.error).toBe(message);
};

describe('GET /v1/leaderboards', () => {
  it('lists active and scheduled boards in creation order; finished only with includeFinished=true', async () => {
    const keys = async (q: string) => {
      const res = await t.api('GET', `/v1/leaderboards${q}`);
      expect(res.status).toBe(200);
      return res.body.map((b: any) => [b.key, b.status]);
    };
    const open = [
      ['q-plain', 'active'],
      ['q-city', 'active'],
      ['q-scheduled', 'scheduled'],
    ];
    expect(await keys('')).toEqual(open);
    expect(await keys('?includeFinished=false')).toEqual(open);
    expect(await keys('?includeFinished=true')).toEqual([['q-finished', 'finished'], ...open]);
    for (const bad of ['yes', 'TRUE', '1', ''])
      await expect422(t.api('GET', `/v1/leaderboards?includeFinished=${bad}`));
    await expect422(t.api('GET', '/v1/leaderboards?includeFinished=true&includeFinished=false'));
    const res = await t.api('GET', '/v1/leaderboards');
    expect(res.body[0]).toEqual({
      id: plain.id,
      name: 'Board',
      key: 'q-plain',
      rankBy: 'metric',
      description: null,
      breakdownAttribute: null,
      breakdownAttributes: [],
      metricKey: 'q-lessons',
      metricName: 'Lessons',
      pointsSystemKey: null,
      pointsSystemName: null,
      start: '2025-03-03', // configured dates, not the run's
      end: null,
      maxParticipants: 1000,
      runUnit: 'day',
      runInterval: 7,
      status: 'active',
    });
    expect(res.body[1]).toMatchObject({ breakdownAttribute: 'city', breakdownAttributes: ['city'] });
    expect(res.body.some((b: any) => b.key === inactive.key)).toBe(false);
  });
});

describe('GET /v1/leaderboards/{key}', () => {
  it('answers 404 for unknown and inactive boards', async () => {
    for (const key of ['nope', inactive.key]) {
      const res = await getBoard(t, key);
      expect(res.status).toBe(404);
      expect(res.body).toEqual({ error: 'Leaderboard not found' });
    }
  });

  it('rejects bad limit, offset and run values with 422', async () => {
    for (const limit of ['1001', '-1', '1.5', '1e2', '', 'ten'])
      await expect422(getBoard(t, plain.key, { limit }));
    expect((await getBoard(t, plain.key, { limit: 1000 })).status).toBe(200);
    expect((await getBoard(t, plain.key, { limit: 0 })).body.rankings).toEqual([]);
    await expect422(getBoard(t, plain.key, { offset: -1 }));
    await expect422(getBoard(t, plain.key, { offset: 'x' }));
    expect((await getBoard(t, plain.key, { offset: -1, userId: 'q-user' })).status).toBe(200);
    for (const run of ['2025-02-30', '2025-3-10', '10-03-2025', 'today', '2025-03-10T00:00:00Z']) {
      await expect422(getBoard(t, plain.key, { run }));
    }
    await expect422(getBoard(t, plain.key, { run: '2025-03-02' })); // before start
    await expect422(getBoard(t, plain.key, { run: '2025-03-17' })); // after the current run
    expect((await getBoard(t, plain.key, { run: '2025-03-16' })).status).toBe(200);
    expect((await getBoard(t, plain.key, { run: '2025-03-03' })).status).toBe(200);
    await expect422(getBoard(t, finished.key, { run: '2025-03-06' })); // after end
    await expect422(t.api('GET', `/v1/leaderboards/${plain.key}?limit=1&limit=2`));
    // Input-domain checks come before the lookup of the board.
    await expect422(getBoard(t, 'nope', { limit: 1001 }));
  });

  it('checks userAttributes against the board and the configured attributes', async () => {
    await expect422(getBoard(t, plain.key, { userAttributes: 'city:paris' })); // no breakdowns on this board
    await expect422(getBoard(t, byCity.key)); // required without userId
    await expect422(getBoard(t, byCity.key, { userAttributes: 'x:1' }), 'Invalid attribute keys: x.');
    await expect422(
      getBoard(t, byCity.key, { userAttributes: 'city:paris,x:1,device:ios' }),
      'Invalid attribute keys: x, device.',
    );
    await expect422(getBoard(t, plain.key, { userAttributes: 'x:1' }), 'Invalid attribute keys: x.');
    await expect422(getBoard(t, byCity.key, { userAttributes: 'plan:pro' })); // not a breakdown of the board
    await expect422(getBoard(t, byCity.key, { userAttributes: 'city:paris,plan:pro' }));
    for (const bad of ['city', 'city:', ':paris', ','])
      await expect422(getBoard(t, byCity.key, { userAttributes: bad }));
    const ok = await getBoard(t, byCity.key, { userAttributes: 'city:paris' });
    expect(ok.status).toBe(200);
    expect(ok.body.rankings).toEqual([{ userId: 'q-user', userName: null, rank: 1, value: 3 }]);
    // Repeated parameters are concatenated; values may contain ':'.
    expect(
      (await t.api('GET', `/v1/leaderboards/${byCity.key}?userAttributes=city%3Aa%3Ab`)).body.rankings,
    ).toEqual([]);
    const withUser = await getBoard(t, byCity.key, { userId: 'q-user' });
    expect(withUser.body.rankings).toHaveLength(1);
    expect((await getBoard(t, byCity.key, { userId: 'nobody' })).body).toMatchObject({
      status: 'active',
      rankings: [],
    });
    // The board lookup (404) comes before checks that need stored configuration.
    expect((await getBoard(t, 'nope', { userAttributes: 'x:1' })).status).toBe(404);
  });

  it('serves a scheduled board with empty rankings', async () => {
    const res = await getBoard(t, scheduled.key);
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({
      key: scheduled.key,
      status: 'scheduled',
      start: '2025-04-01',
      rankings: [],
    });
  });
});

describe('GET /v1/users/{id}/leaderboards/{key}', () => {
  it('answers 404 for an unknown user or an unknown or inactive board', async () => {
    const u = await getUserBoard(t, 'nobody', plain.key);
    expect(u.status).toBe(404);
    expect(u.body).toEqual({ error: 'User not found' });
    for (const key of ['nope', inactive.key]) {
      const res = await getUserBoard(t, 'q-user', key);
      expect(res.status).toBe(404);
      expect(res.body).toEqual({ error: 'Leaderboard not found' });
    }
  });

  it('bounds numEvents to 0..100 and validates run', async () => {
    for (const numEvents of ['101', '-1', '1.0', 'all', '']) {
      await expect422(getUserBoard(t, 'q-user', plain.key, { numEvents }));
    }
    expect((await getUserBoard(t, 'q-user', plain.key, { numEvents: 100 })).status).toBe(200);
    expect((await getUserBoard(t, 'q-user', plain.key, { numEvents: 0 })).body.history).toEqual([]);
    await expect422(getUserBoard(t, 'q-user', plain.key, { run: '2025-02-28' }));
    await expect422(getUserBoard(t, 'q-user', plain.key, { run: '2025-03-17' }));
    await expect422(getUserBoard(t, 'q-user', plain.key, { run: '2025-13-01' }));
  });

  it('returns the board fields, rank, value and history', async () => {
    const res = await getUserBoard(t, 'q-user', plain.key);
    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      id: plain.id,
      name: 'Board',
      key: 'q-plain',
      rankBy: 'metric',
      description: null,
      breakdownAttribute: null,
      breakdownAttributes: [],
      metricKey: 'q-lessons',
      metricName: 'Lessons',
      pointsSystemKey: null,
      pointsSystemName: null,
      start: '2025-03-03',
      end: null,
      maxParticipants: 1000,
      runUnit: 'day',
      runInterval: 7,
      rank: 1,
      value: 3,
      history: [
        { timestamp: '2025-03-10T12:00:00.000Z', previousRank: null, rank: 1, previousValue: null, value: 3 },
      ],
    });
  });

  it('keeps the last 100 history entries, oldest → newest', async () => {
    const [mm] = await adminCreate(t, '/metrics', [{ key: 'q-many', name: 'Many' }]);
    const b = await createBoard(t, { rankBy: 'metric', metricId: mm.id });
    for (let i = 1; i <= 105; i++) {
      t.clock.set(Date.parse(NOW) + i * 1000);
      await send(t, mm.key, 'q-busy', 1);
    }
    t.clock.set(NOW);
    const all = (await getUserBoard(t, 'q-busy', b.key, { numEvents: 100 })).body.history;
    expect(all).toHaveLength(100);
    expect(all[0]).toMatchObject({ previousValue: 5, value: 6 });
    expect(all[99]).toMatchObject({ previousValue: 104, value: 105, previousRank: 1, rank: 1 });
    const ts = all.map((h: any) => Date.parse(h.timestamp));
    expect([...ts].sort((a, b) => a - b)).toEqual(ts);
    const def = (await getUserBoard(t, 'q-busy', b.key)).body.history;
    expect(def).toEqual(all.slice(-10)); // default numEvents = 10
  });
});
