import { TrophyApiClient, TrophyApiError } from '@trophyso/node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { adminCreate, createTestServer, type TestServer } from '../helpers/server';

// The Trophy Node SDK (@trophyso/node 1.0.42) calling every user, achievement, metric, streak and
// points operation against a live Laurel: each response must pass the SDK's strict parsing
// (application-api §1.1, §3), with data rich enough to exercise optional and conditional keys.

let t: TestServer;
let client: TrophyApiClient;

beforeAll(async () => {
  t = await createTestServer({ now: '2025-03-08T09:00:00Z' });
  const origin = await t.listen();
  client = new TrophyApiClient({
    apiKey: t.appKey,
    environment: { api: `${origin}/v1`, admin: `${origin}/admin/v1` },
  });

  const [words] = await adminCreate(t, '/metrics', [{ key: 'words', name: 'Words' }]);
  const [dept, category] = await adminCreate(t, '/attributes', [
    { key: 'department', name: 'Department', type: 'user' },
    { key: 'category', name: 'Category', type: 'event' },
  ]);
  const [first, , apiAch] = await adminCreate(t, '/achievements', [
    {
      key: 'first-words',
      name: 'First words',
      trigger: 'metric',
      metricId: words.id,
      metricValue: 10,
      status: 'active',
      badge: { url: 'https://cdn.example.com/b.png' },
      description: 'Write 10 words',
    },
    {
      key: 'writer',
      name: 'Writer',
      trigger: 'metric',
      metricId: words.id,
      metricValue: 5,
      status: 'active',
      eventAttributes: [{ attributeId: category.id, attributeValue: 'writing' }],
      userAttributes: [{ attributeId: dept.id, attributeValue: 'engineering' }],
    },
    { key: 'onboarded', name: 'Onboarded', trigger: 'api', status: 'active' },
    { key: 'streak-2', name: 'Two days', trigger: 'streak', streakLength: 2, status: 'active' },
  ]);
  await adminCreate(t, '/achievements', [
    {
      key: 'both',
      name: 'Both',
      trigger: 'achievement',
      achievementIds: [first.id, apiAch.id],
      status: 'active',
    },
  ]);
  const [xp] = await adminCreate(t, '/points', [
    {
      key: 'xp',
      name: 'XP',
      description: 'Experience',
      badge: { url: 'https://cdn.example.com/xp.png' },
      maxPoints: 10_000,
    },
  ]);
  await adminCreate(t, `/points/${xp.id}/triggers`, [
    {
      type: 'metric',
      metricId: words.id,
      metricThreshold: 1,
      points: 2,
      status: 'active',
      eventAttributes: [{ attributeId: category.id, attributeValue: 'writing' }],
    },
    { type: 'metric', metricId: words.id, metricThreshold: 5, points: 1, status: 'active' },
    { type: 'achievement', achievementId: apiAch.id, points: 50, status: 'active' },
    { type: 'streak', streakLength: 2, points: 20, status: 'active' },
    { type: 'time', timeUnit: 'days', timeInterval: 1, points: 1, status: 'active' },
    {
      type: 'user_creation',
      points: 5,
      status: 'active',
      userAttributes: [{ attributeId: dept.id, attributeValue: 'engineering' }],
    },
  ]);
  await adminCreate(t, `/points/${xp.id}/levels`, [
    { key: 'novice', name: 'Novice', points: 0 },
    {
      key: 'pro',
      name: 'Pro',
      points: 100,
      badge: { url: 'https://cdn.example.com/pro.png' },
      description: 'Pro',
    },
  ]);
  await adminCreate(t, `/points/${xp.id}/boosts`, [{ name: 'Double', start: '2025-03-01', multiplier: 2 }]);
  const s = await t.admin('PATCH', '/streaks/settings', {
    enabled: true,
    frequency: 'daily',
    conditions: [{ metricId: words.id, threshold: 1 }],
    freezesEnabled: true,
    maxFreezes: 3,
    initialFreezes: 1,
    freezeAutoEarnAmount: 1,
    freezeAutoEarnInterval: 7,
  });
  expect(s.status).toBe(200);

  const user = {
    id: 'sdk-user',
    name: 'Sam',
    email: 'sam@example.com',
    tz: 'Europe/Paris',
    attributes: { department: 'engineering' },
  };
  for (const at of ['2025-03-08T09:00:00Z', '2025-03-09T09:00:00Z', '2025-03-10T09:00:00Z']) {
    t.clock.set(at);
    const res = await t.api('POST', '/v1/metrics/words/event', {
      user,
      value: 12,
      attributes: { category: 'writing' },
    });
    expect(res.status).toBe(201);
  }
  t.clock.set('2025-03-10T12:00:00Z');
  await t.admin('POST', '/streaks/pauses', {
    pauses: [{ userId: 'sdk-user', start: '2025-03-20', end: '2025-03-22' }],
  });
});
afterAll(async () => t.close());

describe('SDK users', () => {
  it('create, get, identify and update parse', async () => {
    const created = await client.users.create({
      id: 'sdk-new',
      deviceTokens: ['tok'],
      attributes: { department: 'sales' },
    });
    expect(created).toMatchObject({
      id: 'sdk-new',
      control: false,
      subscribeToEmails: true,
      deviceTokens: ['tok'],
    });
    expect(created.created).toBeInstanceOf(Date);
    const got = await client.users.get('sdk-user');
    expect(got).toMatchObject({
      id: 'sdk-user',
      name: 'Sam',
      tz: 'Europe/Paris',
      attributes: { department: 'engineering' },
    });
    const identified = await client.users.identify('sdk-identified', {
      name: 'Ida',
      subscribeToEmails: false,
    });
    expect(identified).toMatchObject({ id: 'sdk-identified', name: 'Ida', subscribeToEmails: false });
    const updated = await client.users.update('sdk-identified', { email: 'ida@example.com' });
    expect(updated.email).toBe('ida@example.com');
  });

  it('getPreferences and updatePreferences parse', async () => {
    expect(await client.users.getPreferences('sdk-new')).toEqual({ notifications: {} });
    const prefs = await client.users.updatePreferences('sdk-new', {
      notifications: { achievementCompleted: ['email', 'push'], streakReminder: [] },
    });
    expect(prefs).toEqual({ notifications: { achievementCompleted: ['email', 'push'], streakReminder: [] } });
    expect(await client.users.getPreferences('sdk-new')).toEqual(prefs);
    expect(await client.users.updatePreferences('sdk-new')).toEqual(prefs);
  });

  it('maps 404 and 422 to typed errors', async () => {
    await expect(client.users.get('nobody')).rejects.toMatchObject({ statusCode: 404 });
    await expect(client.users.update('nobody', { name: 'X' })).rejects.toBeInstanceOf(TrophyApiError);
    await expect(client.users.create({ id: 'bad', tz: 'Nowhere/Zone' })).rejects.toMatchObject({
      statusCode: 422,
    });
  });
});

describe('SDK metrics and achievements', () => {
  it('allMetrics and singleMetric parse', async () => {
    const all = await client.users.allMetrics('sdk-user');
    expect(all).toHaveLength(1);
    expect(all[0]).toMatchObject({ key: 'words', current: 36, status: 'active' });
    expect(all[0]!.achievements.map((a) => a.key)).toEqual(['first-words', 'writer']);
    const one = await client.users.singleMetric('sdk-user', 'words');
    expect(one.achievements[0]!.achievedAt).toBeInstanceOf(Date);
  });

  it('achievements.all and users.achievements parse', async () => {
    // Completion counts follow the history writer: let it catch up.
    await t.settle();
    const all = await client.achievements.all();
    expect(all.map((a) => a.key)).toEqual(['first-words', 'writer', 'onboarded', 'streak-2', 'both']);
    // Three users exist by now (two created by the users tests above).
    expect(all[0]).toMatchObject({ completions: 1, rarity: 33.33 });
    expect((await client.achievements.all({ userAttributes: 'department:engineering' })).length).toBe(5);
    const mine = await client.users.achievements('sdk-user', { includeIncomplete: 'true' });
    expect(mine.map((a) => [a.key, a.achievedAt instanceof Date])).toEqual([
      ['first-words', true],
      ['writer', true],
      ['streak-2', true],
      ['onboarded', false],
      ['both', false],
    ]);
    expect((await client.users.achievements('sdk-user')).length).toBe(3);
  });

  it('achievements.complete parses the first and the repeated completion', async () => {
    const first = await client.achievements.complete('onboarded', { user: { id: 'sdk-user' } });
    expect(first.achievement.key).toBe('onboarded');
    expect(first.points.xp?.added).toBe(100);
    const again = await client.achievements.complete('onboarded', { user: { id: 'sdk-user' } });
    expect(again.completionId).toBe(first.completionId);
    expect(again.points).toEqual({});
    await expect(client.achievements.complete('nope', { user: { id: 'sdk-user' } })).rejects.toMatchObject({
      statusCode: 404,
    });
  });
});

describe('SDK streaks', () => {
  it('users.streak parses with freezes, history, rank and pauses', async () => {
    const streak = await client.users.streak('sdk-user', { historyPeriods: 3 });
    expect(streak).toMatchObject({ length: 3, frequency: 'daily', rank: 1, freezes: 1, maxFreezes: 3 });
    expect(streak.streakHistory).toHaveLength(3);
    const none = await client.users.streak('sdk-new');
    expect(none.length).toBe(0);
    expect(none.rank ?? null).toBeNull();
  });

  it('streaks.list and streaks.rankings parse', async () => {
    // Streak rankings follow the history writer: let it catch up.
    await t.settle();
    const list = await client.streaks.list({ userIds: ['sdk-user', 'sdk-new', 'ghost'] });
    expect(list.map((s) => [s.userId, s.streakLength])).toEqual([
      ['sdk-user', 3],
      ['sdk-new', 0],
    ]);
    expect((await client.streaks.list({ userIds: 'sdk-user' })).length).toBe(1);
    expect(await client.streaks.rankings({ type: 'active', limit: 5 })).toEqual([
      { userId: 'sdk-user', name: 'Sam', streakLength: 3 },
    ]);
    expect(await client.streaks.rankings({ type: 'longest' })).toHaveLength(1);
    await expect(client.streaks.rankings({ limit: 0 })).rejects.toMatchObject({ statusCode: 422 });
  });
});

describe('SDK points', () => {
  it('users.points parses with level, awards, triggers and boosts', async () => {
    const points = await client.users.points('sdk-user', 'xp', { awards: 100 });
    expect(points.total).toBeGreaterThan(100);
    expect(points.awards.length).toBeGreaterThan(3);
    expect((points as unknown as { level: { key: string } }).level.key).toBe('pro');
    expect(new Set(points.awards.map((a) => a.trigger?.type))).toEqual(
      new Set(['metric', 'achievement', 'streak', 'user_creation']),
    );
  });

  it('points.system and points.summary parse', async () => {
    const sys = await client.points.system('xp');
    expect(sys.triggers.map((tr) => tr.type)).toEqual([
      'metric',
      'metric',
      'achievement',
      'streak',
      'time',
      'user_creation',
    ]);
    const summary = await client.points.summary('xp');
    expect(summary).toHaveLength(11);
    expect((await client.points.summary('xp', { userAttributes: 'department:engineering' })).length).toBe(11);
    await expect(client.points.system('nope')).rejects.toMatchObject({ statusCode: 404 });
  });
});
