import { and, asc, eq } from 'drizzle-orm';
import { userPart } from '../helpers/user-hash';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { streakPeriods, webhookDeliveries } from '../../src/db/schema';
import { HistoryWriter } from '../../src/workers/history-writer';
import { historyHooks } from '../../src/workers/index';
import { Scheduler } from '../../src/workers/scheduler';
import { adminCreate, createTestServer, type TestServer } from '../helpers/server';

const DAY = 86_400_000;

let t: TestServer;
let writer: HistoryWriter;
let a: Scheduler;
let b: Scheduler;
let boardId: string;

async function tick() {
  await Promise.all([a.runOnce(), b.runOnce()]);
  await writer.drainOnce();
}

async function hooks(type?: string) {
  const rows = await t.deps.db
    .select()
    .from(webhookDeliveries)
    .where(type ? eq(webhookDeliveries.type, type) : undefined)
    .orderBy(asc(webhookDeliveries.created));
  return rows.map((r) => ({ type: r.type, payload: r.payload as any, eventId: r.eventId }));
}

const streakHash = (user: string) => userPart(t.deps.redis, t.deps.keys, user, 'streak');

async function ranked(user: string) {
  const keys = (await t.redisKeys()).filter((k) => k.includes(`{lb:${boardId}}`) && k.includes(':g:'));
  for (const k of keys) {
    const members = await t.deps.redis.zrange(k, 0, -1);
    if (members.some((m) => m.endsWith(`|${user}`))) return true;
  }
  return false;
}

beforeAll(async () => {
  // 2025-03-10 10:00 in Tokyo (UTC+9).
  t = await createTestServer({ now: '2025-03-10T01:00:00Z' });
  writer = new HistoryWriter(t.deps, { hooks: historyHooks, claimIdleMs: 0 });
  a = new Scheduler(t.deps);
  b = new Scheduler(t.deps);
  const [m] = await adminCreate(t, '/metrics', [
    { key: 'lessons', name: 'Lessons' },
    { key: 'visits', name: 'Visits' },
  ]);
  const s = await t.admin('PATCH', '/streaks/settings', {
    enabled: true,
    frequency: 'daily',
    conditions: [{ metricId: m.id, threshold: 1 }],
    freezesEnabled: true,
    maxFreezes: 2,
    initialFreezes: 1,
    freezeAutoEarnAmount: 1,
    freezeAutoEarnInterval: 7,
  });
  expect(s.status).toBe(200);
  const [board] = await adminCreate(t, '/leaderboards', [
    { key: 'streaks', name: 'Streaks', rankBy: 'streak', status: 'active', start: '2025-03-01' },
  ]);
  boardId = board.id;
  await adminCreate(t, '/webhooks', [
    {
      url: 'http://127.0.0.1:9/never',
      eventTypes: [
        'streak.started',
        'streak.extended',
        'streak.lost',
        'streak.freeze_consumed',
        'streak.freeze_earned',
      ],
    },
  ]);
});
afterAll(async () => t?.close());

describe('streak rollover and freezes by the scheduler (semantics §4.5, §4.6)', () => {
  it('a daily streak is saved by a freeze at one missed local midnight, then broken at the next', async () => {
    const ev = async () => {
      const r = await t.api('POST', '/v1/metrics/lessons/event', {
        user: { id: 'kenji', tz: 'Asia/Tokyo' },
        value: 1,
      });
      expect(r.status).toBe(201);
      await writer.drainOnce();
    };
    await ev(); // 03-10 local: length 1
    t.clock.advance(DAY);
    await ev(); // 03-11 local: length 2
    expect(await ranked('kenji')).toBe(true);
    expect((await hooks()).map((h) => h.type)).toEqual(['streak.started', 'streak.extended']);

    // 03-12 is missed. Tokyo midnight ending it: 2025-03-12T15:00Z. Nothing happens a moment before.
    t.clock.set('2025-03-12T14:59:59.999Z');
    await tick();
    expect((await streakHash('kenji')).freezes).toBe('1');
    t.clock.set('2025-03-12T15:00:00Z');
    await tick();
    let st = await streakHash('kenji');
    expect(st).toMatchObject({ length: '2', freezes: '0' });
    const consumed = await hooks('streak.freeze_consumed');
    expect(consumed).toHaveLength(1);
    expect(consumed[0]!.payload).toMatchObject({ user: { id: 'kenji' }, consumed: 1, freezes: 0 });
    const [period] = await t.deps.db
      .select()
      .from(streakPeriods)
      .where(and(eq(streakPeriods.userId, 'kenji'), eq(streakPeriods.periodStart, '2025-03-12')));
    expect(period).toMatchObject({ length: 2, usedFreeze: true });
    expect(await ranked('kenji')).toBe(true);

    // 03-13 is missed too, with no freeze left: broken at 2025-03-13T15:00Z.
    t.clock.set('2025-03-13T14:59:00Z');
    await tick();
    expect((await streakHash('kenji')).length).toBe('2');
    t.clock.set('2025-03-13T15:00:00Z');
    await tick();
    await tick();
    st = await streakHash('kenji');
    expect(st.length).toBe('0');
    const lost = await hooks('streak.lost');
    expect(lost).toHaveLength(1);
    expect(lost[0]!.payload).toMatchObject({ type: 'streak.lost', user: { id: 'kenji' }, length: 2 });
    // Dropped from the streak leaderboard, and no further rollover is due.
    expect(await ranked('kenji')).toBe(false);
    expect(await t.deps.redis.zscore(t.deps.keys.sched.streaks, 'kenji')).toBeNull();
    t.clock.advance(3 * DAY);
    await tick();
    expect(await hooks('streak.lost')).toHaveLength(1);
    expect(await hooks('streak.freeze_consumed')).toHaveLength(1);
  });

  it('auto-earns freezes every interval from creation, capped at the maximum, once per slot', async () => {
    const created = t.clock.now();
    // No streak activity (another metric): the freezes only grow.
    const r = await t.api('POST', '/v1/metrics/visits/event', { user: { id: 'ana' }, value: 1 });
    expect(r.status).toBe(201);
    await writer.drainOnce();
    expect((await streakHash('ana')).freezes).toBe('1'); // initial
    t.clock.set(created + 7 * DAY - 1);
    await tick();
    expect((await streakHash('ana')).freezes).toBe('1');
    t.clock.set(created + 7 * DAY);
    await tick();
    expect((await streakHash('ana')).freezes).toBe('2');
    const earned = (await hooks('streak.freeze_earned')).filter((h) => h.payload.user.id === 'ana');
    expect(earned).toHaveLength(1);
    expect(earned[0]!.payload).toMatchObject({ earned: 1, freezes: 2 });
    // The next slot adds nothing (at the maximum): no webhook.
    t.clock.set(created + 14 * DAY + 1000);
    await tick();
    expect((await streakHash('ana')).freezes).toBe('2');
    expect((await hooks('streak.freeze_earned')).filter((h) => h.payload.user.id === 'ana')).toHaveLength(1);
  });
});
