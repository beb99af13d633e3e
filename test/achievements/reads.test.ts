import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { adminCreate, createTestServer, type TestServer } from '../helpers/server';

// Achievements (application-api §6.3 #1, #2, §6.6 #13; semantics §3).

let t: TestServer;
let n = 0;
const uid = () => `ach-${++n}`;
const NOW = '2025-03-10T12:00:00.000Z';
let plan: { id: string };
let metric: { id: string };

async function achievements(items: Array<Record<string, unknown>>, on: TestServer = t) {
  return (await adminCreate(
    on,
    '/achievements',
    items.map((a) => ({ status: 'active', name: `Achievement ${a.key}`, ...a })),
  )) as Array<{ id: string; key: string }>;
}

const complete = (key: string, user: Record<string, unknown> | string, on: TestServer = t) =>
  on.api('POST', `/v1/achievements/${key}/complete`, {
    user: typeof user === 'string' ? { id: user } : user,
  });

beforeAll(async () => {
  t = await createTestServer({ now: NOW });
  [plan] = await adminCreate(t, '/attributes', [
    { key: 'plan', name: 'Plan', type: 'user' },
    { key: 'region', name: 'Region', type: 'user' },
  ]);
  [metric] = await adminCreate(t, '/metrics', [{ key: 'lessons', name: 'Lessons' }]);
});
afterAll(async () => t.close());
beforeEach(() => t.clock.set(NOW));

describe('POST /v1/achievements/{key}/complete', () => {
  it('completes once (201), then answers 200 with the original completion and no points', async () => {
    const [a] = await achievements([{ key: 'onboarded', trigger: 'api', description: 'Done onboarding' }]);
    const [composite] = await achievements([
      { key: 'all-done', trigger: 'achievement', achievementIds: [a!.id] },
    ]);
    const [sys] = await adminCreate(t, '/points', [{ key: 'ach-xp', name: 'Achievement XP' }]);
    const [trigger] = await adminCreate(t, `/points/${sys.id}/triggers`, [
      { type: 'achievement', achievementId: a!.id, points: 25, status: 'active' },
    ]);
    const u = uid();
    const first = await complete('onboarded', { id: u, name: 'Una' });
    expect(first.status).toBe(201);
    const achievement = {
      id: a!.id,
      name: 'Achievement onboarded',
      trigger: 'api',
      key: 'onboarded',
      description: 'Done onboarding',
      badgeUrl: null,
      userAttributes: [],
      achievedAt: NOW,
    };
    expect(first.body).toEqual({
      completionId: expect.any(String),
      achievement,
      points: {
        'ach-xp': {
          id: sys.id,
          key: 'ach-xp',
          name: 'Achievement XP',
          description: null,
          badgeUrl: null,
          maxPoints: null,
          total: 25,
          added: 25,
          awards: [
            {
              id: expect.any(String),
              awarded: 25,
              date: NOW,
              total: 25,
              trigger: expect.objectContaining({
                id: trigger.id,
                type: 'achievement',
                points: 25,
                achievementId: a!.id,
                achievementName: 'Achievement onboarded',
              }),
              boosts: [],
            },
          ],
        },
      },
      achievements: [
        achievement,
        expect.objectContaining({ id: composite!.id, trigger: 'achievement', achievedAt: NOW }),
      ],
    });
    // The user was created by the completion.
    expect((await t.api('GET', `/v1/users/${u}`)).body.name).toBe('Una');

    t.clock.set('2025-03-11T00:00:00.000Z');
    const again = await complete('onboarded', { id: u, name: 'Renamed' });
    expect(again.status).toBe(200);
    expect(again.body).toEqual({
      completionId: first.body.completionId,
      achievement,
      points: {},
      achievements: [],
    });
    // The upsert still applies; nothing else changes.
    expect((await t.api('GET', `/v1/users/${u}`)).body.name).toBe('Renamed');
    expect((await t.api('GET', `/v1/users/${u}/points/ach-xp`)).body.total).toBe(25);
  });

  it('moves points leaderboards with the awards of a completion', async () => {
    const [a] = await achievements([{ key: 'board-api', trigger: 'api' }]);
    const [sys] = await adminCreate(t, '/points', [{ key: 'board-xp', name: 'Board XP' }]);
    await adminCreate(t, `/points/${sys.id}/triggers`, [
      { type: 'achievement', achievementId: a!.id, points: 7, status: 'active' },
    ]);
    await adminCreate(t, '/leaderboards', [
      {
        key: 'xp-board',
        name: 'XP',
        rankBy: 'points',
        pointsSystemId: sys.id,
        status: 'active',
        start: '2025-03-01',
      },
    ]);
    const u = uid();
    expect((await complete('board-api', u)).status).toBe(201);
    const board = await t.api('GET', '/v1/leaderboards/xp-board');
    expect(board.body.rankings).toEqual([{ userId: u, userName: null, rank: 1, value: 7 }]);
  });

  it('answers 404 for unknown, inactive and deleted achievements', async () => {
    const [inactive, deleted] = (await adminCreate(t, '/achievements', [
      { key: 'not-yet', name: 'Not yet', trigger: 'api' },
      { key: 'gone', name: 'Gone', trigger: 'api', status: 'active' },
    ])) as Array<{ id: string }>;
    expect(inactive).toBeDefined();
    await t.admin('DELETE', `/achievements?ids=${deleted!.id}`);
    for (const key of ['nope', 'not-yet', 'gone']) {
      const res = await complete(key, uid());
      expect(res.status).toBe(404);
      expect(res.body).toEqual({ error: 'Achievement not found' });
    }
  });

  it('answers 422 for an achievement that is not an api achievement', async () => {
    await achievements([{ key: 'by-metric', trigger: 'metric', metricId: metric.id, metricValue: 5 }]);
    const res = await complete('by-metric', uid());
    expect(res.status).toBe(422);
  });

  it('answers 422 for an ineligible user and completes nothing', async () => {
    await achievements([
      { key: 'pro-only', trigger: 'api', userAttributes: [{ attributeId: plan.id, attributeValue: 'pro' }] },
    ]);
    const u = uid();
    expect((await complete('pro-only', { id: u, attributes: { plan: 'free' } })).status).toBe(422);
    const ok = await complete('pro-only', { id: u, attributes: { plan: 'pro' } });
    expect(ok.status).toBe(201);
  });

  it('refuses a locked achievement unless the user already completed it', async () => {
    const [a] = await achievements([{ key: 'lockable', trigger: 'api' }]);
    const early = uid();
    const first = await complete('lockable', early);
    await t.admin('PATCH', '/achievements', [{ id: a!.id, status: 'locked' }]);
    expect((await complete('lockable', uid())).status).toBe(422);
    const again = await complete('lockable', early);
    expect(again.status).toBe(200);
    expect(again.body.completionId).toBe(first.body.completionId);
  });

  it('validates the body before looking the achievement up', async () => {
    await achievements([{ key: 'valid-api', trigger: 'api' }]);
    expect((await t.api('POST', '/v1/achievements/valid-api/complete', {})).status).toBe(400);
    expect((await t.api('POST', '/v1/achievements/nope/complete', {})).status).toBe(400);
    expect((await t.api('POST', '/v1/achievements/nope/complete', { user: { id: 3 } })).status).toBe(400);
    expect((await complete('nope', { id: 'x', tz: 'Bad/Zone' })).status).toBe(422);
    const keys = await complete('valid-api', { id: uid(), attributes: { shoe: '42' } });
    expect(keys.status).toBe(422);
    expect(keys.body).toEqual({ error: 'Invalid attribute keys: shoe.' });
  });
});

describe('GET /v1/achievements and GET /v1/users/{id}/achievements', () => {
  let ids: Record<string, string>;
  const users = { a: '', b: '', c: '' };

  // A server of its own: completions and rarity count every user.
  let s: TestServer;
  beforeAll(async () => {
    s = await createTestServer({ now: NOW });
    const [p, region] = await adminCreate(s, '/attributes', [
      { key: 'plan', name: 'Plan', type: 'user' },
      { key: 'region', name: 'Region', type: 'user' },
    ]);
    const created = await achievements(
      [
        { key: 'first', trigger: 'api' },
        { key: 'pro', trigger: 'api', userAttributes: [{ attributeId: p.id, attributeValue: 'pro' }] },
        {
          key: 'pro-eu',
          trigger: 'api',
          userAttributes: [
            { attributeId: p.id, attributeValue: 'pro' },
            { attributeId: region.id, attributeValue: 'eu' },
          ],
        },
        { key: 'later', trigger: 'api' },
      ],
      s,
    );
    await adminCreate(s, '/achievements', [{ key: 'hidden', name: 'Hidden', trigger: 'api' }]);
    ids = Object.fromEntries(created.map((a) => [a.key, a.id]));
    users.a = 'list-a';
    users.b = 'list-b';
    users.c = 'list-c';
    await s.api('POST', '/v1/users', { id: users.a, attributes: { plan: 'pro', region: 'eu' } });
    await s.api('POST', '/v1/users', { id: users.b, attributes: { plan: 'free' } });
    await s.api('POST', '/v1/users', { id: users.c });
    s.clock.set('2025-03-10T12:00:01.000Z');
    await complete('later', users.a, s);
    s.clock.set('2025-03-10T12:00:02.000Z');
    await complete('first', users.a, s);
    await complete('first', users.b, s);
    await complete('pro', users.a, s);
    await s.admin('PATCH', '/achievements', [{ id: ids.later, status: 'locked' }]);
    // Completion counts and the user count follow the history writer: let it catch up.
    await s.settle();
  });
  afterAll(async () => s.close());

  it('lists active achievements in creation order with completions and rarity', async () => {
    const res = await s.api('GET', '/v1/achievements');
    expect(res.status).toBe(200);
    expect(res.body.map((a: any) => [a.key, a.completions, a.rarity])).toEqual([
      ['first', 2, 66.67],
      ['pro', 1, 33.33],
      ['pro-eu', 0, 0],
    ]);
    expect(res.body[1]).toEqual({
      id: ids.pro,
      name: 'Achievement pro',
      trigger: 'api',
      key: 'pro',
      description: null,
      badgeUrl: null,
      userAttributes: [{ key: 'plan', value: 'pro' }],
      completions: 1,
      rarity: 33.33,
    });
  });

  it('filters by userAttributes: every filter of an achievement must be satisfied', async () => {
    const keys = async (q: string) =>
      (await s.api('GET', `/v1/achievements?${q}`)).body.map((a: any) => a.key) as string[];
    expect(await keys('userAttributes=plan%3Afree')).toEqual(['first']);
    expect(await keys('userAttributes=plan%3Apro')).toEqual(['first', 'pro']);
    expect(await keys('userAttributes=plan%3Apro%2Cregion%3Aeu')).toEqual(['first', 'pro', 'pro-eu']);
    expect(await keys('userAttributes=plan:pro&userAttributes=region:eu')).toEqual([
      'first',
      'pro',
      'pro-eu',
    ]);
  });

  it.each([
    ['userAttributes=plan', 'userAttributes must be key:value pairs'],
    ['userAttributes=%3Apro', 'userAttributes must be key:value pairs'],
    ['userAttributes=plan%3A', 'userAttributes must be key:value pairs'],
    ['userAttributes=shoe%3A42%2Cplan%3Apro%2Chat%3Ax', 'Invalid attribute keys: shoe, hat.'],
  ])('answers 422 for %s', async (q, error) => {
    const res = await s.api('GET', `/v1/achievements?${q}`);
    expect(res.status).toBe(422);
    expect(res.body).toEqual({ error });
  });

  it("lists a user's completed achievements by completion time, locked ones included", async () => {
    const res = await s.api('GET', `/v1/users/${users.a}/achievements`);
    expect(res.status).toBe(200);
    expect(res.body.map((a: any) => [a.key, a.achievedAt])).toEqual([
      ['later', '2025-03-10T12:00:01.000Z'],
      ['first', '2025-03-10T12:00:02.000Z'],
      ['pro', '2025-03-10T12:00:02.000Z'],
    ]);
    expect(res.body[0]).toMatchObject({ completions: 1, rarity: 33.33 });
  });

  it('adds eligible incomplete active achievements with includeIncomplete=true', async () => {
    const of = async (id: string, q: string) =>
      (await s.api('GET', `/v1/users/${id}/achievements${q}`)).body.map((a: any) => [a.key, a.achievedAt]);
    expect(await of(users.a, '?includeIncomplete=true')).toEqual([
      ['later', '2025-03-10T12:00:01.000Z'],
      ['first', '2025-03-10T12:00:02.000Z'],
      ['pro', '2025-03-10T12:00:02.000Z'],
      ['pro-eu', null],
    ]);
    expect(await of(users.b, '?includeIncomplete=true')).toEqual([['first', '2025-03-10T12:00:02.000Z']]);
    expect(await of(users.c, '?includeIncomplete=true')).toEqual([['first', null]]);
    expect(await of(users.c, '?includeIncomplete=yes')).toEqual([]);
    expect(await of(users.c, '')).toEqual([]);
  });

  it('answers 404 for an unknown user', async () => {
    const res = await s.api('GET', '/v1/users/nobody/achievements');
    expect(res.status).toBe(404);
    expect(res.body).toEqual({ error: 'User not found' });
  });
});
