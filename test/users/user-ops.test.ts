import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { userField } from '../../src/redis/user-hash';
import { periodIndex } from '../../src/engine/periods';
import { runUserOp } from '../../src/services/user-op';
import { adminCreate, createTestServer, type TestServer } from '../helpers/server';

let t: TestServer;
let systemId: string;
let timeTrigger: string;
let apiAch: string;

const DAY = 86_400_000;

beforeAll(async () => {
  t = await createTestServer({ now: '2025-03-10T12:00:00Z' });
  const [m] = await adminCreate(t, '/metrics', [{ key: 'lessons', name: 'Lessons' }]);
  const [p] = await adminCreate(t, '/points', [{ key: 'xp', name: 'XP', maxPoints: 25 }]);
  systemId = p.id;
  const [tt] = await adminCreate(t, `/points/${p.id}/triggers`, [
    { type: 'time', points: 10, timeUnit: 'hours', timeInterval: 3, status: 'active' },
  ]);
  timeTrigger = tt.id;
  const [a] = await adminCreate(t, '/achievements', [
    { key: 'big', name: 'Big', trigger: 'metric', metricId: m.id, metricValue: 100 },
  ]);
  apiAch = a.id;
  const s = await t.admin('PATCH', '/streaks/settings', {
    enabled: true,
    conditions: [{ metricId: m.id, threshold: 1 }],
    freezesEnabled: true,
    maxFreezes: 2,
  });
  expect(s.status).toBe(200);
});
afterAll(async () => t.close());

const event = (user: string, value = 1) =>
  t.api('POST', '/v1/metrics/lessons/event', { user: { id: user }, value }).then((r) => {
    expect(r.status).toBe(201);
    return r.body;
  });

describe('background and admin user ops', () => {
  it('grants a time trigger award dated at its slot, capped at maxPoints, and refuses unknown users', async () => {
    await event('g1');
    const slot = t.clock.now() - 3_600_000;
    const r = await runUserOp(t.deps, {
      kind: 'grant',
      user: { id: 'g1' },
      triggerIds: [timeTrigger],
      at: slot,
    });
    expect(r.points).toHaveLength(1);
    expect(r.points[0]!.sys).toBe(systemId);
    expect(r.points[0]!.awards[0]).toMatchObject({
      awarded: 10,
      total: 10,
      trigger: timeTrigger,
      date: slot,
    });
    await runUserOp(t.deps, { kind: 'grant', user: { id: 'g1' }, triggerIds: [timeTrigger], at: slot + 1 });
    const third = await runUserOp(t.deps, {
      kind: 'grant',
      user: { id: 'g1' },
      triggerIds: [timeTrigger],
      at: slot + 2,
    });
    expect(third.points[0]!.awards[0]).toMatchObject({ awarded: 5, total: 25 });
    await expect(
      runUserOp(t.deps, { kind: 'grant', user: { id: 'nobody' }, triggerIds: [timeTrigger], at: slot }),
    ).rejects.toThrow('User not found');
    expect(await t.deps.redis.exists(t.deps.keys.user('nobody').hash)).toBe(0);
  });

  it('backdates an achievement once, without errors for users who do not qualify', async () => {
    await event('b1');
    const r1 = await runUserOp(t.deps, { kind: 'backdate', achievementId: apiAch, user: { id: 'b1' } });
    expect(r1.completions.map((c) => c.id)).toEqual([apiAch]);
    const r2 = await runUserOp(t.deps, { kind: 'backdate', achievementId: apiAch, user: { id: 'b1' } });
    expect(r2.completions).toEqual([]);
  });

  it('grants freezes up to the maximum', async () => {
    await event('f1');
    const a = await runUserOp(t.deps, { kind: 'freeze', user: { id: 'f1' }, count: 1 });
    const b = await runUserOp(t.deps, { kind: 'freeze', user: { id: 'f1' }, count: 5 });
    expect([a.granted, b.granted]).toEqual([1, 1]);
    expect(b.streak.freezes).toBe(2);
  });

  it('restores a broken streak to its best length and continues from it', async () => {
    for (let d = 0; d < 3; d++) {
      await event('r1');
      t.clock.advance(DAY);
    }
    t.clock.advance(3 * DAY); // miss three days: two freezes are not granted to r1, so it breaks
    const broken = await event('r1');
    expect(broken.currentStreak.length).toBe(1);
    const today = new Date(t.clock.now()).toISOString().slice(0, 10);
    const r = await runUserOp(t.deps, {
      kind: 'restore',
      user: { id: 'r1' },
      fromIdx: periodIndex('daily', today) - 90,
    });
    expect(r.restore).toEqual({ from: 1, to: 3 });
    expect(r.streak.length).toBe(4); // today was already met, so it counts on top of the restored 3
    const again = await runUserOp(t.deps, {
      kind: 'restore',
      user: { id: 'r1' },
      fromIdx: periodIndex('daily', today) - 90,
    });
    expect(again.restore).toEqual({ issue: 'max' });
  });

  it('writes no outbox entry for an op of a replay (deps.history false), and applies it all the same', async () => {
    const metricId = t.deps.catalog.snapshot.metricsByKey.get('lessons')!.id;
    const outbox = t.deps.keys.user('replayed').outbox;
    const before = await t.deps.redis.xlen(outbox);
    const r = await runUserOp(
      { ...t.deps, history: false },
      { kind: 'event', metricId, user: { id: 'replayed' }, valueMicros: 3_000_000 },
    );
    expect(r.totalMicros).toBe(3_000_000);
    expect(r.streak.length).toBe(1);
    expect(await t.deps.redis.xlen(outbox)).toBe(before);
    expect(await t.deps.redis.hget(t.deps.keys.user('replayed').hash, userField('metrics', metricId))).toBe(
      '3000000',
    );
    // The same op through live deps is recorded.
    await runUserOp(t.deps, { kind: 'event', metricId, user: { id: 'replayed' }, valueMicros: 1_000_000 });
    expect(await t.deps.redis.xlen(outbox)).toBe(before + 1);
  });
});
