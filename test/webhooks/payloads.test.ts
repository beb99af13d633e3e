import { asc } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { webhookDeliveries } from '../../src/db/schema';
import { HistoryWriter } from '../../src/workers/history-writer';
import { historyHooks } from '../../src/workers/index';
import { Scheduler } from '../../src/workers/scheduler';
import { adminCreate, createTestServer, type TestServer } from '../helpers/server';

// Every webhook event type (semantics §8.4), built from real requests and background jobs and checked
// field by field against the contract: the envelope (§8.2), User, UserAchievementResponse,
// BaseStreakResponse, MetricEventPointsResponse (+ level), PointsLevel, the boost object, and the
// leaderboard objects (application-api §7).

const TYPES = [
  'achievement.completed',
  'streak.started',
  'streak.extended',
  'streak.lost',
  'streak.freeze_consumed',
  'streak.freeze_earned',
  'points.changed',
  'points.level_changed',
  'points.boost_started',
  'points.boost_finished',
  'leaderboard.started',
  'leaderboard.changed',
  'leaderboard.finished',
  'leaderboard.rank_changed',
];

let t: TestServer;
let writer: HistoryWriter;
let scheduler: Scheduler;
const ids: Record<string, string> = {};
const T0 = '2025-03-10T12:00:00.000Z';

async function tick() {
  await scheduler.runOnce();
  await writer.drainOnce();
}

/** Every recorded payload of a type, oldest first. */
async function payloads(type: string): Promise<any[]> {
  const rows = await t.deps.db.select().from(webhookDeliveries).orderBy(asc(webhookDeliveries.created));
  return rows.filter((r) => r.type === type).map((r) => r.payload);
}

const envelope = (type: string, timestamp: string) => ({ id: expect.any(String), type, timestamp });

/** User (application-api §7): every field, as Ada was identified. */
const ada = () => ({
  id: 'ada',
  email: 'ada@example.com',
  name: 'Ada',
  tz: 'UTC',
  deviceTokens: [],
  subscribeToEmails: true,
  attributes: { plan: 'pro' },
  control: false,
  created: T0,
  updated: T0,
});

const event = async (value: number) => {
  const r = await t.api('POST', '/v1/metrics/lessons/event', {
    user: { id: 'ada', name: 'Ada', email: 'ada@example.com', tz: 'UTC', attributes: { plan: 'pro' } },
    value,
  });
  expect(r.status).toBe(201);
  await writer.drainOnce();
  return r.body;
};

beforeAll(async () => {
  t = await createTestServer({ now: T0 });
  writer = new HistoryWriter(t.deps, { hooks: historyHooks, claimIdleMs: 0 });
  scheduler = new Scheduler(t.deps);
  const [plan] = await adminCreate(t, '/attributes', [{ key: 'plan', name: 'Plan', type: 'user' }]);
  ids.plan = plan.id;
  const [m] = await adminCreate(t, '/metrics', [{ key: 'lessons', name: 'Lessons' }]);
  ids.metric = m.id;
  const s = await t.admin('PATCH', '/streaks/settings', {
    enabled: true,
    frequency: 'daily',
    conditions: [{ metricId: m.id, threshold: 1 }],
    freezesEnabled: true,
    maxFreezes: 2,
    initialFreezes: 1,
    freezeAutoEarnAmount: 1,
    freezeAutoEarnInterval: 2,
  });
  expect(s.status).toBe(200);
  const [sys] = await adminCreate(t, '/points', [{ key: 'xp', name: 'XP', description: 'Experience' }]);
  ids.sys = sys.id;
  const [trigger] = await adminCreate(t, `/points/${sys.id}/triggers`, [
    { type: 'metric', points: 10, metricId: m.id, metricThreshold: 1, status: 'active' },
  ]);
  ids.trigger = trigger.id;
  const [level] = await adminCreate(t, `/points/${sys.id}/levels`, [
    { key: 'bronze', name: 'Bronze', points: 10, description: 'Ten points' },
  ]);
  ids.level = level.id;
  const [boost] = await adminCreate(t, `/points/${sys.id}/boosts`, [
    { name: 'Tuesday', start: '2025-03-11', end: '2025-03-11', multiplier: 2 },
  ]);
  ids.boost = boost.id;
  const [ach] = await adminCreate(t, '/achievements', [
    {
      key: 'first-lesson',
      name: 'First lesson',
      trigger: 'metric',
      metricId: m.id,
      metricValue: 1,
      status: 'active',
    },
  ]);
  ids.achievement = ach.id;
  await adminCreate(t, '/webhooks', [{ url: 'http://127.0.0.1:9/never', eventTypes: TYPES }]);
  const [board] = await adminCreate(t, '/leaderboards', [
    {
      key: 'daily',
      name: 'Daily lessons',
      rankBy: 'metric',
      metricId: m.id,
      runUnit: 'day',
      runInterval: 1,
      start: '2025-03-10',
      maxParticipants: 10,
      status: 'active',
    },
  ]);
  ids.board = board.id;
});
afterAll(async () => t?.close());

/** LeaderboardResponse fields of the daily board, with a run's dates. */
const boardBase = (start: string) => ({
  id: ids.board,
  name: 'Daily lessons',
  key: 'daily',
  rankBy: 'metric',
  description: null,
  breakdownAttribute: null,
  breakdownAttributes: [],
  metricKey: 'lessons',
  metricName: 'Lessons',
  pointsSystemKey: null,
  pointsSystemName: null,
  start,
  end: start,
  maxParticipants: 10,
  runUnit: 'day',
  runInterval: 1,
});

const systemFields = () => ({
  id: ids.sys,
  key: 'xp',
  name: 'XP',
  description: 'Experience',
  badgeUrl: null,
  maxPoints: null,
});

const bronze = () => ({
  id: ids.level,
  key: 'bronze',
  name: 'Bronze',
  description: 'Ten points',
  badgeUrl: null,
  points: 10,
});

describe('webhook payloads (semantics §8.4)', () => {
  // Contract note: the leaderboard objects carry LeaderboardResponse with the run's dates; `status`
  // (and `rankings`) on started/changed/finished, UserLeaderboardResponse + previousRank/previousValue
  // on rank_changed.
  it('leaderboard.started: the run with no rankings, when a run begins or at activation', async () => {
    await tick();
    const [p] = await payloads('leaderboard.started');
    expect(p).toEqual({
      ...envelope('leaderboard.started', T0),
      leaderboard: { ...boardBase('2025-03-10'), status: 'active', rankings: [] },
    });
  });

  it('achievement.completed, streak.started, points.changed, points.level_changed, leaderboard.rank_changed from one event', async () => {
    await event(1);
    expect(await payloads('achievement.completed')).toEqual([
      {
        ...envelope('achievement.completed', T0),
        user: ada(),
        achievement: {
          id: ids.achievement,
          name: 'First lesson',
          trigger: 'metric',
          key: 'first-lesson',
          description: null,
          badgeUrl: null,
          metricId: ids.metric,
          metricName: 'Lessons',
          metricValue: 1,
          userAttributes: [],
          eventAttributes: [],
          achievedAt: T0,
        },
      },
    ]);
    expect(await payloads('streak.started')).toEqual([
      {
        ...envelope('streak.started', T0),
        user: ada(),
        streak: {
          length: 1,
          frequency: 'daily',
          started: '2025-03-10',
          periodStart: '2025-03-10',
          periodEnd: '2025-03-10',
          expires: '2025-03-11',
          freezes: 1,
          maxFreezes: 2,
          freezeAutoEarnInterval: 2,
          freezeAutoEarnAmount: 1,
        },
      },
    ]);
    const trigger = {
      id: ids.trigger,
      type: 'metric',
      points: 10,
      status: 'active',
      created: T0,
      updated: T0,
      userAttributes: [],
      metricId: ids.metric,
      metricName: 'Lessons',
      metricThreshold: 1,
      eventAttributes: [],
    };
    expect(await payloads('points.changed')).toEqual([
      {
        ...envelope('points.changed', T0),
        user: ada(),
        points: {
          ...systemFields(),
          total: 10,
          added: 10,
          level: bronze(),
          awards: [{ id: expect.any(String), awarded: 10, date: T0, total: 10, trigger, boosts: [] }],
        },
      },
    ]);
    expect(await payloads('points.level_changed')).toEqual([
      {
        ...envelope('points.level_changed', T0),
        user: ada(),
        points: { ...systemFields(), total: 10 },
        previousLevel: null,
        newLevel: bronze(),
      },
    ]);
    // Rank changes are read from the board's change stream by the scheduler.
    await tick();
    expect(await payloads('leaderboard.rank_changed')).toEqual([
      {
        ...envelope('leaderboard.rank_changed', T0),
        user: ada(),
        leaderboard: {
          ...boardBase('2025-03-10'),
          rank: 1,
          value: 1,
          previousRank: null,
          previousValue: null,
        },
      },
    ]);
  });

  it('leaderboard.changed: the top 10 of the group, at most one a minute', async () => {
    t.clock.set('2025-03-10T12:01:00.000Z');
    await tick();
    // Sent by the pass after the change (above), nothing new since.
    const [p, ...more] = await payloads('leaderboard.changed');
    expect(more).toEqual([]);
    expect(p).toEqual({
      ...envelope('leaderboard.changed', T0),
      leaderboard: {
        ...boardBase('2025-03-10'),
        status: 'active',
        rankings: [{ userId: 'ada', userName: 'Ada', rank: 1, value: 1 }],
      },
    });
  });

  it('points.boost_started and streak.extended', async () => {
    t.clock.set('2025-03-11T00:00:00.000Z');
    await tick();
    const boost = {
      id: ids.boost,
      name: 'Tuesday',
      userId: null,
      pointsSystemId: ids.sys,
      pointsSystemKey: 'xp',
      pointsSystemName: 'XP',
      start: '2025-03-11',
      end: '2025-03-11',
      multiplier: 2,
      rounding: 'down',
    };
    expect(await payloads('points.boost_started')).toEqual([
      {
        ...envelope('points.boost_started', '2025-03-11T00:00:00.000Z'),
        boost: { ...boost, status: 'active' },
      },
    ]);
    t.clock.set('2025-03-11T10:00:00.000Z');
    await event(1);
    expect(await payloads('streak.extended')).toEqual([
      {
        ...envelope('streak.extended', '2025-03-11T10:00:00.000Z'),
        user: { ...ada(), updated: T0 },
        streak: {
          length: 2,
          frequency: 'daily',
          started: '2025-03-10',
          periodStart: '2025-03-11',
          periodEnd: '2025-03-11',
          expires: '2025-03-12',
          freezes: 1,
          maxFreezes: 2,
          freezeAutoEarnInterval: 2,
          freezeAutoEarnAmount: 1,
        },
      },
    ]);
    t.clock.set('2025-03-12T00:00:00.000Z');
    await tick();
    expect(await payloads('points.boost_finished')).toEqual([
      {
        ...envelope('points.boost_finished', '2025-03-12T00:00:00.000Z'),
        boost: { ...boost, status: 'finished' },
      },
    ]);
  });

  it('leaderboard.finished: the final top 10 of a run, at 12:00 UTC the day after it', async () => {
    t.clock.set('2025-03-11T12:00:00.000Z');
    await tick();
    const finished = (await payloads('leaderboard.finished')).filter(
      (p) => p.leaderboard.start === '2025-03-10',
    );
    expect(finished).toEqual([
      {
        ...envelope('leaderboard.finished', '2025-03-11T12:00:00.000Z'),
        leaderboard: {
          ...boardBase('2025-03-10'),
          status: 'active',
          rankings: [{ userId: 'ada', userName: 'Ada', rank: 1, value: 1 }],
        },
      },
    ]);
  });

  it('streak.freeze_earned, then streak.freeze_consumed and streak.lost from the rollover job', async () => {
    // Auto-earn every 2 days from creation (10 March 12:00): the first slot is 12 March 12:00.
    t.clock.set('2025-03-12T12:00:00.000Z');
    await tick();
    expect(await payloads('streak.freeze_earned')).toEqual([
      {
        ...envelope('streak.freeze_earned', '2025-03-12T12:00:00.000Z'),
        user: ada(),
        earned: 1,
        freezes: 2,
      },
    ]);
    // 12 March is missed: at midnight one freeze bridges it.
    t.clock.set('2025-03-13T00:00:00.000Z');
    await tick();
    expect(await payloads('streak.freeze_consumed')).toEqual([
      {
        ...envelope('streak.freeze_consumed', '2025-03-13T00:00:00.000Z'),
        user: ada(),
        consumed: 1,
        freezes: 1,
      },
    ]);
    // 13 March is bridged by the last freeze, 14 March breaks the streak.
    t.clock.set('2025-03-15T00:00:00.000Z');
    await tick();
    expect((await payloads('streak.freeze_consumed'))[1]).toEqual({
      ...envelope('streak.freeze_consumed', '2025-03-15T00:00:00.000Z'),
      user: ada(),
      consumed: 1,
      freezes: 0,
    });
    expect(await payloads('streak.lost')).toEqual([
      { ...envelope('streak.lost', '2025-03-15T00:00:00.000Z'), user: ada(), length: 2 },
    ]);
  });

  it('covers every event type', async () => {
    for (const type of TYPES) expect((await payloads(type)).length, type).toBeGreaterThan(0);
  });
});
