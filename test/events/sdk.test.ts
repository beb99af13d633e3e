import { TrophyApi, TrophyApiClient, TrophyApiError } from '@trophyso/node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { adminCreate, createTestServer, type TestServer } from '../helpers/server';

// The Trophy Node SDK (@trophyso/node 1.0.42) calling metrics.event against a live Laurel: every
// response must pass the SDK's strict parsing (application-api §1.1, §3).

let t: TestServer;
let client: TrophyApiClient;
let ids: Record<string, string> = {};

beforeAll(async () => {
  t = await createTestServer();
  const origin = await t.listen();
  client = new TrophyApiClient({
    apiKey: t.appKey,
    environment: { api: `${origin}/v1`, admin: `${origin}/admin/v1` },
  });

  const [words, other] = await adminCreate(t, '/metrics', [
    { key: 'words', name: 'Words' },
    { key: 'other', name: 'Other' },
  ]);
  const [dept, category] = await adminCreate(t, '/attributes', [
    { key: 'department', name: 'Department', type: 'user' },
    { key: 'category', name: 'Category', type: 'event' },
  ]);
  const [first, filtered] = await adminCreate(t, '/achievements', [
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
      metricValue: 10,
      status: 'active',
      eventAttributes: [{ attributeId: category.id, attributeValue: 'writing' }],
      userAttributes: [{ attributeId: dept.id, attributeValue: 'engineering' }],
    },
  ]);
  const [streak2] = await adminCreate(t, '/achievements', [
    { key: 'streak-2', name: 'Two days', trigger: 'streak', streakLength: 2, status: 'active' },
  ]);
  const [combo] = await adminCreate(t, '/achievements', [
    {
      key: 'combo',
      name: 'Combo',
      trigger: 'achievement',
      achievementIds: [first.id, filtered.id],
      status: 'active',
    },
  ]);
  const [xp] = await adminCreate(t, '/points', [
    { key: 'xp', name: 'XP', description: 'Experience', maxPoints: 1000 },
  ]);
  const [mt, at, st, uc] = await adminCreate(t, `/points/${xp.id}/triggers`, [
    {
      type: 'metric',
      points: 5,
      metricId: words.id,
      metricThreshold: 10,
      status: 'active',
      eventAttributes: [{ attributeId: category.id, attributeValue: 'writing' }],
    },
    { type: 'achievement', points: 50, achievementId: combo.id, status: 'active' },
    { type: 'streak', points: 20, streakLength: 2, status: 'active' },
    {
      type: 'user_creation',
      points: 1,
      status: 'active',
      userAttributes: [{ attributeId: dept.id, attributeValue: 'engineering' }],
    },
  ]);
  await adminCreate(t, `/points/${xp.id}/levels`, [
    { key: 'novice', name: 'Novice', points: 0 },
    { key: 'adept', name: 'Adept', points: 50, badge: { url: 'https://cdn.example.com/adept.png' } },
  ]);
  const [boost] = await adminCreate(t, `/points/${xp.id}/boosts`, [
    { name: 'Launch week', start: '2025-03-10', end: '2025-03-16', multiplier: 1.5, rounding: 'nearest' },
  ]);
  const settings = await t.admin('PATCH', '/streaks/settings', {
    enabled: true,
    frequency: 'daily',
    conditions: [{ metricId: words.id, threshold: 5 }],
    freezesEnabled: true,
    maxFreezes: 2,
    initialFreezes: 1,
    freezeAutoEarnAmount: 1,
    freezeAutoEarnInterval: 7,
  });
  expect(settings.status).toBe(200);
  ids = {
    words: words.id,
    other: other.id,
    first: first.id,
    filtered: filtered.id,
    streak2: streak2.id,
    combo: combo.id,
    xp: xp.id,
    mt: mt.id,
    at: at.id,
    st: st.id,
    uc: uc.id,
    boost: boost.id,
  };
});
afterAll(async () => t.close());

describe('SDK metrics.event', () => {
  it('parses a response with achievements, streak, points, boosts and levels', async () => {
    t.clock.set('2025-03-10T12:00:00Z');
    const res = await client.metrics.event('words', {
      idempotencyKey: 'sdk-1',
      user: {
        id: 'sdk-user',
        email: 'user@example.com',
        name: 'SDK User',
        tz: 'Europe/London',
        subscribeToEmails: true,
        attributes: { department: 'engineering' },
      },
      value: 12,
      attributes: { category: 'writing' },
    });
    expect(res.eventId).toMatch(/^[0-9a-f-]{36}$/);
    expect(res.metricId).toBe(ids.words);
    expect(res.total).toBe(12);
    expect(res.idempotencyKey).toBe('sdk-1');
    expect(res.idempotentReplayed).toBe(false);
    expect(res.achievements.map((a) => a.key)).toEqual(['first-words', 'writer', 'combo']);
    const first = res.achievements[0]!;
    expect(first).toMatchObject({
      id: ids.first,
      name: 'First words',
      trigger: 'metric',
      description: 'Write 10 words',
      badgeUrl: 'https://cdn.example.com/b.png',
      metricId: ids.words,
      metricName: 'Words',
      metricValue: 10,
      achievedAt: new Date('2025-03-10T12:00:00.000Z'),
    });
    expect(res.achievements[1]!.eventAttribute).toEqual({ key: 'category', value: 'writing' });
    expect(res.achievements[1]!.userAttributes).toEqual([{ key: 'department', value: 'engineering' }]);
    expect((res.achievements[2] as unknown as { achievementIds: string[] }).achievementIds).toEqual([
      ids.first,
      ids.filtered,
    ]);

    expect(res.currentStreak).toMatchObject({
      length: 1,
      frequency: 'daily',
      started: '2025-03-10',
      periodStart: '2025-03-10',
      periodEnd: '2025-03-10',
      expires: '2025-03-11',
      extended: true,
      freezes: 1,
      maxFreezes: 2,
      freezeAutoEarnInterval: 7,
      freezeAutoEarnAmount: 1,
    });

    const xp = res.points.xp!;
    // Newest first: achievement (50 × 1.5 = 75), metric (5 × 1.5 = 7.5 → 8), user_creation (1 × 1.5 → 2).
    expect(xp.awards.map((a) => [a.awarded, a.total, a.trigger?.id])).toEqual([
      [75, 85, ids.at],
      [8, 10, ids.mt],
      [2, 2, ids.uc],
    ]);
    expect(xp).toMatchObject({
      id: ids.xp,
      key: 'xp',
      name: 'XP',
      description: 'Experience',
      maxPoints: 1000,
      total: 85,
      added: 85,
    });
    expect(xp.awards[0]!.date).toBe('2025-03-10T12:00:00.000Z');
    expect(xp.awards[1]!.trigger).toMatchObject({
      type: 'metric',
      metricName: 'Words',
      metricThreshold: 10,
      eventAttribute: { key: 'category', value: 'writing' },
    });
    // Keys the SDK does not know pass through.
    const raw = xp as unknown as {
      level: Record<string, unknown>;
      awards: Array<{ boosts: Array<Record<string, unknown>> }>;
    };
    expect(raw.level).toMatchObject({
      key: 'adept',
      points: 50,
      badgeUrl: 'https://cdn.example.com/adept.png',
    });
    expect(raw.awards[0]!.boosts).toEqual([
      {
        id: ids.boost,
        name: 'Launch week',
        status: 'active',
        start: '2025-03-10',
        end: '2025-03-16',
        multiplier: 1.5,
        rounding: 'nearest',
      },
    ]);
    expect(res.leaderboards).toEqual({});
  });

  it('parses a replay (202) and a streak extension', async () => {
    const replay = await client.metrics.event('words', {
      idempotencyKey: 'sdk-1',
      user: { id: 'sdk-user' },
      value: 12,
    });
    expect(replay).toMatchObject({ total: 12, idempotentReplayed: true, achievements: [], points: {} });
    expect(replay.currentStreak.extended).toBe(false);

    t.clock.set('2025-03-11T09:00:00Z');
    const next = await client.metrics.event('words', { user: { id: 'sdk-user' }, value: 5.5 });
    expect(next.total).toBe(17.5);
    expect(next.idempotencyKey).toBeUndefined();
    expect(next.currentStreak).toMatchObject({
      length: 2,
      extended: true,
      started: '2025-03-10',
      expires: '2025-03-12',
    });
    expect(next.achievements.map((a) => [a.key, a.streakLength])).toEqual([['streak-2', 2]]);
    // Streak trigger 20 × 1.5 = 30.
    expect(next.points.xp?.awards.map((a) => a.awarded)).toEqual([30]);
    expect(next.points.xp?.total).toBe(115);
  });

  it('parses a response without any change (other metric, decimals, negative value)', async () => {
    const res = await client.metrics.event('other', { user: { id: 'sdk-user-2' }, value: -0.25 });
    expect(res).toMatchObject({ total: -0.25, achievements: [], points: {}, leaderboards: {} });
    expect(res.currentStreak).toMatchObject({ length: 0, extended: false, freezes: 1 });
    expect(res.currentStreak.started ?? null).toBeNull();
  });

  it('surfaces errors as the SDK’s typed errors', async () => {
    await expect(
      client.metrics.event('words', { user: { id: 'x', tz: 'Mars/Base' }, value: 1 }),
    ).rejects.toBeInstanceOf(TrophyApi.UnprocessableEntityError);
    await expect(
      client.metrics.event('words', { user: { id: 'x' }, value: Number.NaN }),
    ).rejects.toBeInstanceOf(TrophyApi.BadRequestError);
    const unknownMetric = await client.metrics
      .event('nope', { user: { id: 'x' }, value: 1 })
      .catch((e: unknown) => e);
    expect(unknownMetric).toBeInstanceOf(TrophyApiError);
    expect((unknownMetric as TrophyApiError).statusCode).toBe(404);
    expect((unknownMetric as TrophyApiError).body).toEqual({ error: 'Metric not found' });
    const badKey = new TrophyApiClient({
      apiKey: 'nope.nope',
      environment: { api: `${await t.listen()}/v1`, admin: 'x' },
    });
    await expect(badKey.metrics.event('words', { user: { id: 'x' }, value: 1 })).rejects.toBeInstanceOf(
      TrophyApi.UnauthorizedError,
    );
    const attr = await client.metrics
      .event('words', { user: { id: 'x', attributes: { device: 'ios' } }, value: 1 })
      .catch((e: unknown) => e);
    expect(attr).toBeInstanceOf(TrophyApi.UnprocessableEntityError);
    expect((attr as TrophyApiError).body).toEqual({ error: 'Invalid attribute keys: device.' });
  });
});
