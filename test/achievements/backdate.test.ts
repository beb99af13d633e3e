import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { streakField, userPart } from '../helpers/user-hash';
import { userField } from '../../src/redis/user-hash';
import { awaitBackdates, runBackdate } from '../../src/services/backdate';
import { HistoryWriter, parseRecord } from '../../src/workers/history-writer';
import { adminCreate, createTestServer, type TestServer } from '../helpers/server';

// Backdating (semantics §3.4): activating an achievement, or editing an active one's requirement,
// completes every existing user who already satisfies it, in the background.

let t: TestServer;
const ids: Record<string, string> = {};
const DAY = 86_400_000;

const event = async (id: string, value: number, plan?: string) => {
  const user = plan ? { id, attributes: { plan } } : { id };
  const r = await t.api('POST', '/v1/metrics/lessons/event', { user, value });
  expect(r.status).toBe(201);
};
const done = async (user: string) =>
  Object.keys(await userPart(t.deps.redis, t.deps.keys, user, 'achievements')).map(
    (id) => Object.entries(ids).find(([, v]) => v === id)?.[0] ?? id,
  );
const points = async (user: string) =>
  Number((await t.deps.redis.hget(t.deps.keys.user(user).hash, userField('points', ids.xp!))) ?? 0);
const patch = async (item: Record<string, unknown>) => {
  const r = await t.admin('PATCH', '/achievements', [item]);
  expect(r.body.issues).toEqual([]);
  await awaitBackdates(t.deps);
};

beforeAll(async () => {
  t = await createTestServer({ now: '2025-03-01T12:00:00Z' });
  const [m] = await adminCreate(t, '/metrics', [{ key: 'lessons', name: 'Lessons' }]);
  const [plan] = await adminCreate(t, '/attributes', [{ key: 'plan', name: 'Plan', type: 'user' }]);
  const s = await t.admin('PATCH', '/streaks/settings', {
    enabled: true,
    conditions: [{ metricId: m.id, threshold: 1 }],
  });
  expect(s.status).toBe(200);
  const [five, streak2] = await adminCreate(t, '/achievements', [
    {
      key: 'five',
      name: 'Five',
      trigger: 'metric',
      metricId: m.id,
      metricValue: 5,
      userAttributes: [{ attributeId: plan.id, attributeValue: 'pro' }],
    },
    { key: 'streak2', name: 'Two days', trigger: 'streak', streakLength: 2 },
  ]);
  const [combo] = await adminCreate(t, '/achievements', [
    {
      key: 'combo',
      name: 'Combo',
      trigger: 'achievement',
      achievementIds: [five.id, streak2.id],
      status: 'active',
    },
  ]);
  const [xp] = await adminCreate(t, '/points', [{ key: 'xp', name: 'XP' }]);
  await adminCreate(t, `/points/${xp.id}/triggers`, [
    { type: 'achievement', points: 100, achievementId: combo.id, status: 'active' },
  ]);
  Object.assign(ids, { five: five.id, streak2: streak2.id, combo: combo.id, xp: xp.id });

  // Day 0-1: s1 builds a 2-day streak that has lapsed by day 3 (its stored length is still 2).
  await event('s1', 1);
  t.clock.advance(DAY);
  await event('s1', 1);
  // Day 2-3: p1 (pro) builds a live 2-day streak and a total of 6.
  t.clock.advance(DAY);
  await event('p1', 3, 'pro');
  t.clock.advance(DAY);
  await event('p1', 3, 'pro');
  await event('p2', 3, 'pro'); // below 5
  await event('b1', 10, 'basic'); // not eligible for five
});
afterAll(async () => t.close());

describe('backdating', () => {
  it('activating a streak achievement completes users whose current streak qualifies, not lapsed ones', async () => {
    expect(Number((await streakField(t.deps.redis, t.deps.keys, 's1', 'length')) ?? 0)).toBe(2);
    await patch({ id: ids.streak2, status: 'active' });
    expect(await done('p1')).toEqual(['streak2']);
    expect(await done('s1')).toEqual([]);
    expect(Number((await streakField(t.deps.redis, t.deps.keys, 's1', 'length')) ?? 0)).toBe(0);
  });

  it('activating a metric achievement completes eligible qualifying users, cascades and awards points', async () => {
    const seqOfB1 = async () => t.deps.redis.hget(t.deps.keys.user('b1').hash, 'seq');
    const b1Before = await seqOfB1();
    await patch({ id: ids.five, status: 'active' });
    expect((await done('p1')).sort()).toEqual(['combo', 'five', 'streak2']);
    expect(await points('p1')).toBe(100);
    expect(await done('p2')).toEqual([]);
    expect(await done('b1')).toEqual([]);
    // A user outside the achievement's user filter is not touched at all (no op, no outbox record).
    expect(await seqOfB1()).toBe(b1Before);
    // Backdated completions are recorded with op 'backdate' (no webhooks) and dated now.
    const shard = t.deps.keys.user('p1').shard;
    const entries = await t.deps.redis.xrange(t.deps.keys.outbox(shard), '-', '+');
    const records = entries
      .map(([, f]) => parseRecord(f)!)
      .filter((r) => r.user === 'p1' && r.op === 'backdate' && r.completions[0]?.id === ids.five);
    expect(records).toHaveLength(1);
    expect(records[0]!.completions.map((c) => c.id)).toEqual([ids.five, ids.combo]);
    expect(records[0]!.completions[0]!.at).toBe(t.clock.now());
    // Completion counts follow once the history writer has written the records.
    await t.settle();
    const completions = await t.api('GET', '/v1/achievements');
    expect(completions.body.find((a: { key: string }) => a.key === 'five').completions).toBe(1);
  });

  it('raising a requirement un-completes nobody; lowering it completes users found in Postgres only', async () => {
    await patch({ id: ids.five, metricValue: 100 });
    expect(await done('p1')).toContain('five');
    // p2 exists in the Postgres users table but not in its shard's user index (an older user).
    const writer = new HistoryWriter(t.deps);
    while ((await writer.drainOnce()) > 0) {}
    await t.deps.redis.zrem(t.deps.keys.user('p2').users, 'p2');
    await patch({ id: ids.five, metricValue: 3 });
    expect(await done('p2')).toEqual(['five']);
    expect(await done('b1')).toEqual([]);
  });

  it('one failing user does not stop the rest', async () => {
    // 'broken' sorts first in the id index and its state cannot be read.
    await t.deps.redis.zadd(t.deps.keys.user('broken').users, 0, 'broken');
    await t.deps.redis.set(t.deps.keys.user('broken').hash, 'not a hash');
    await patch({ id: ids.five, metricValue: 100 });
    await event('late', 50, 'pro');
    expect(await done('late')).toEqual([]);
    await patch({ id: ids.five, metricValue: 40 }); // the admin path's background run
    expect(await done('late')).toEqual(['five']);
    const stats = await runBackdate(t.deps, ids.five!);
    expect(stats.failed).toBe(1);
    expect(stats.completed).toBe(0);
    await t.deps.redis.zrem(t.deps.keys.user('broken').users, 'broken');
  });

  it('does nothing for an achievement that is not active', async () => {
    await patch({ id: ids.five, status: 'locked' });
    await event('later', 50, 'pro');
    expect(await runBackdate(t.deps, ids.five!)).toEqual({ checked: 0, completed: 0, failed: 0 });
    expect(await done('later')).toEqual([]);
  });
});
