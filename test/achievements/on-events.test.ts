import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { adminCreate, createTestServer, type TestServer } from '../helpers/server';

// Achievements completed by POST /v1/metrics/{key}/event (semantics §3, §2.2 step 6).

let t: TestServer;
let n = 0;
const uid = () => `ach-user-${++n}`;
let plan: { id: string };
let source: { id: string };
const NOW = '2025-03-10T12:00:00.000Z';

const send = (
  key: string,
  user: Record<string, unknown> | string,
  value: number,
  attributes?: Record<string, string>,
) =>
  t.api('POST', `/v1/metrics/${key}/event`, {
    user: typeof user === 'string' ? { id: user } : user,
    value,
    ...(attributes ? { attributes } : {}),
  });

async function metric(key: string) {
  const [m] = await adminCreate(t, '/metrics', [{ key, name: `Metric ${key}` }]);
  return m as { id: string; key: string; name: string };
}

async function achievements(items: Array<Record<string, unknown>>) {
  return (await adminCreate(
    t,
    '/achievements',
    items.map((a) => ({ status: 'active', name: `Achievement ${a.key}`, ...a })),
  )) as Array<{ id: string; key: string; name: string }>;
}

const keysOf = (res: { body: { achievements: Array<{ key: string }> } }) =>
  res.body.achievements.map((a) => a.key);

beforeAll(async () => {
  t = await createTestServer();
  [plan, source] = await adminCreate(t, '/attributes', [
    { key: 'plan', name: 'Plan', type: 'user' },
    { key: 'source', name: 'Source', type: 'event' },
  ]);
});
afterAll(async () => t.close());

describe('achievements on events', () => {
  it('completes a metric achievement once, when the total reaches the threshold', async () => {
    const m = await metric('reach');
    const [a] = await achievements([
      { key: 'reach-10', trigger: 'metric', metricId: m.id, metricValue: 10, description: 'Ten' },
    ]);
    const u = uid();
    expect((await send('reach', u, 4)).body.achievements).toEqual([]);
    const hit = await send('reach', u, 6);
    expect(hit.body.total).toBe(10);
    expect(hit.body.achievements).toEqual([
      {
        id: a!.id,
        name: 'Achievement reach-10',
        trigger: 'metric',
        key: 'reach-10',
        description: 'Ten',
        badgeUrl: null,
        metricId: m.id,
        metricName: 'Metric reach',
        metricValue: 10,
        userAttributes: [],
        eventAttributes: [],
        achievedAt: NOW,
      },
    ]);
    expect((await send('reach', u, 5)).body.achievements).toEqual([]);
    // Dropping below and climbing again does not complete it twice.
    expect((await send('reach', u, -20)).body.achievements).toEqual([]);
    expect((await send('reach', u, 30)).body.achievements).toEqual([]);
  });

  it('compares exact decimal totals with the threshold (0.7 + 0.1 reaches 0.8)', async () => {
    const m = await metric('decimal');
    await achievements([{ key: 'point-eight', trigger: 'metric', metricId: m.id, metricValue: 0.8 }]);
    const u = uid();
    expect((await send('decimal', u, 0.7)).body.achievements).toEqual([]);
    const res = await send('decimal', u, 0.1);
    expect(res.body.total).toBe(0.8);
    expect(keysOf(res)).toEqual(['point-eight']);
  });

  it('completes several achievements of one metric in creation order', async () => {
    const m = await metric('several');
    await achievements([
      { key: 'sev-5', trigger: 'metric', metricId: m.id, metricValue: 5 },
      { key: 'sev-1', trigger: 'metric', metricId: m.id, metricValue: 1 },
      { key: 'sev-50', trigger: 'metric', metricId: m.id, metricValue: 50 },
    ]);
    const u = uid();
    expect(keysOf(await send('several', u, 7))).toEqual(['sev-5', 'sev-1']);
    expect(keysOf(await send('several', u, 100))).toEqual(['sev-50']);
  });

  it('counts only matching events for an event-attribute-filtered achievement', async () => {
    const m = await metric('filtered');
    const [a] = await achievements([
      {
        key: 'web-5',
        trigger: 'metric',
        metricId: m.id,
        metricValue: 5,
        eventAttributes: [{ attributeId: source.id, attributeValue: 'web' }],
      },
    ]);
    const u = uid();
    expect((await send('filtered', u, 4, { source: 'app' })).body.achievements).toEqual([]);
    expect((await send('filtered', u, 3, { source: 'web' })).body.achievements).toEqual([]);
    expect((await send('filtered', u, 1)).body.achievements).toEqual([]);
    const hit = await send('filtered', u, 2, { source: 'web' });
    expect(hit.body.total).toBe(10);
    expect(hit.body.achievements).toEqual([
      expect.objectContaining({
        id: a!.id,
        key: 'web-5',
        eventAttributes: [{ key: 'source', value: 'web' }],
        eventAttribute: { key: 'source', value: 'web' },
        achievedAt: NOW,
      }),
    ]);
    // Another user whose total passes 5 only through non-matching events never completes it.
    const v = uid();
    expect((await send('filtered', v, 100, { source: 'app' })).body.achievements).toEqual([]);
  });

  it('does not complete a user-attribute-filtered achievement for an ineligible user; a later event does', async () => {
    const m = await metric('eligible');
    await achievements([
      {
        key: 'pro-5',
        trigger: 'metric',
        metricId: m.id,
        metricValue: 5,
        userAttributes: [{ attributeId: plan.id, attributeValue: 'pro' }],
      },
    ]);
    const u = uid();
    expect((await send('eligible', u, 6)).body.achievements).toEqual([]);
    expect((await send('eligible', { id: u, attributes: { plan: 'basic' } }, 1)).body.achievements).toEqual(
      [],
    );
    // The attribute set by this very request counts (upsert comes first, semantics §2.2).
    const res = await send('eligible', { id: u, attributes: { plan: 'pro' } }, 0);
    expect(res.body.achievements).toEqual([
      expect.objectContaining({ key: 'pro-5', userAttributes: [{ key: 'plan', value: 'pro' }] }),
    ]);
    // Eligible from the start: completed at the threshold.
    const v = uid();
    expect(keysOf(await send('eligible', { id: v, attributes: { plan: 'pro' } }, 5))).toEqual(['pro-5']);
  });

  it('cascades composite achievements in completion order', async () => {
    const m = await metric('cascade');
    const [a, b] = await achievements([
      { key: 'cas-a', trigger: 'metric', metricId: m.id, metricValue: 1 },
      { key: 'cas-b', trigger: 'metric', metricId: m.id, metricValue: 2 },
    ]);
    // d is created before c and later made to depend on c, so it completes on a second pass.
    const [d] = await achievements([{ key: 'cas-d', trigger: 'achievement', achievementIds: [a!.id] }]);
    const [c] = await achievements([
      { key: 'cas-c', trigger: 'achievement', achievementIds: [a!.id, b!.id] },
    ]);
    const upd = await t.admin('PATCH', '/achievements', [{ id: d!.id, achievementIds: [c!.id] }]);
    expect(upd.body.issues).toEqual([]);
    const [e] = await achievements([
      { key: 'cas-e', trigger: 'achievement', achievementIds: [d!.id, a!.id] },
    ]);

    const u = uid();
    const first = await send('cascade', u, 1);
    expect(keysOf(first)).toEqual(['cas-a']);
    const second = await send('cascade', u, 1);
    expect(keysOf(second)).toEqual(['cas-b', 'cas-c', 'cas-d', 'cas-e']);
    expect(second.body.achievements[1]).toEqual({
      id: c!.id,
      name: 'Achievement cas-c',
      trigger: 'achievement',
      key: 'cas-c',
      description: null,
      badgeUrl: null,
      achievementIds: [a!.id, b!.id],
      userAttributes: [],
      achievedAt: NOW,
    });
    expect(e).toBeDefined();
    expect((await send('cascade', u, 1)).body.achievements).toEqual([]);

    // All at once for a fresh user.
    expect(keysOf(await send('cascade', uid(), 2))).toEqual(['cas-a', 'cas-b', 'cas-c', 'cas-d', 'cas-e']);
  });

  it('does not cascade into a composite the user is not eligible for', async () => {
    const m = await metric('cascade-elig');
    const [a] = await achievements([{ key: 'ce-a', trigger: 'metric', metricId: m.id, metricValue: 1 }]);
    await achievements([
      {
        key: 'ce-pro',
        trigger: 'achievement',
        achievementIds: [a!.id],
        userAttributes: [{ attributeId: plan.id, attributeValue: 'pro' }],
      },
    ]);
    expect(keysOf(await send('cascade-elig', uid(), 1))).toEqual(['ce-a']);
    expect(keysOf(await send('cascade-elig', { id: uid(), attributes: { plan: 'pro' } }, 1))).toEqual([
      'ce-a',
      'ce-pro',
    ]);
  });

  it('never completes inactive or locked achievements; a re-activated one completes again', async () => {
    const m = await metric('status');
    const [inactive] = await achievements([
      { key: 'st-inactive', trigger: 'metric', metricId: m.id, metricValue: 1, status: 'inactive' },
    ]);
    const [locked, prereq] = await achievements([
      { key: 'st-locked', trigger: 'metric', metricId: m.id, metricValue: 1 },
      { key: 'st-pre', trigger: 'metric', metricId: m.id, metricValue: 1 },
    ]);
    await achievements([
      {
        key: 'st-composite-inactive',
        trigger: 'achievement',
        achievementIds: [prereq!.id],
        status: 'inactive',
      },
    ]);
    const lock = await t.admin('PATCH', '/achievements', [{ id: locked!.id, status: 'locked' }]);
    expect(lock.body.issues).toEqual([]);
    expect(inactive).toBeDefined();

    const u = uid();
    expect(keysOf(await send('status', u, 5))).toEqual(['st-pre']);
    expect(keysOf(await send('status', u, 5))).toEqual([]);

    const unlock = await t.admin('PATCH', '/achievements', [{ id: locked!.id, status: 'active' }]);
    expect(unlock.body.issues).toEqual([]);
    // (u is completed by backdating, semantics §3.4; a user reaching it later completes it by event.)
    expect(keysOf(await send('status', uid(), 5))).toEqual(['st-locked', 'st-pre']);
  });

  it('completes a streak achievement when the streak length reaches it', async () => {
    const m = await metric('streaky');
    const s = await t.admin('PATCH', '/streaks/settings', {
      enabled: true,
      frequency: 'daily',
      conditions: [{ metricId: m.id, threshold: 1 }],
    });
    expect(s.status).toBe(200);
    const [streak2] = await achievements([{ key: 'streak-2', trigger: 'streak', streakLength: 2 }]);
    const [after] = await achievements([
      { key: 'after-streak', trigger: 'achievement', achievementIds: [streak2!.id] },
    ]);
    expect(after).toBeDefined();
    try {
      const u = uid();
      t.clock.set('2025-03-10T12:00:00Z');
      expect(keysOf(await send('streaky', u, 1))).toEqual([]);
      t.clock.set('2025-03-11T12:00:00Z');
      const day2 = await send('streaky', u, 1);
      expect(day2.body.currentStreak).toMatchObject({ length: 2, extended: true });
      expect(day2.body.achievements).toEqual([
        {
          id: streak2!.id,
          name: 'Achievement streak-2',
          trigger: 'streak',
          key: 'streak-2',
          description: null,
          badgeUrl: null,
          streakLength: 2,
          userAttributes: [],
          achievedAt: '2025-03-11T12:00:00.000Z',
        },
        expect.objectContaining({ key: 'after-streak' }),
      ]);
      t.clock.set('2025-03-12T12:00:00Z');
      expect(keysOf(await send('streaky', u, 1))).toEqual([]);
    } finally {
      t.clock.set(NOW);
      await t.admin('PATCH', '/streaks/settings', { enabled: false });
    }
  });
});
