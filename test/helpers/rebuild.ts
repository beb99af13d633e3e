// Shared helpers of rebuild.test.ts and durability.test.ts (not a test file itself).
import { expect } from 'vitest';
import { HistoryWriter } from '../../src/workers/history-writer';
import { keyContents } from './redis-state';
import { adminCreate, type TestServer } from './server';

export interface MixedSetup {
  metric: { id: string; key: string };
  minutes: { id: string; key: string };
  systemId: string;
  boardKeys: string[];
}

/**
 * Configuration for a mixed load: two metrics, a user attribute (breakdown) and an event attribute
 * (filters), a points system with a cap, levels, a boost and every event-driven trigger kind,
 * metric/filtered/streak/composite achievements, a daily streak with freezes, and metric, points and
 * streak leaderboards (one with a breakdown, one repeating daily).
 */
export async function mixedSetup(t: TestServer): Promise<MixedSetup> {
  const [region, kind] = await adminCreate(t, '/attributes', [
    { key: 'region', name: 'Region', type: 'user' },
    { key: 'kind', name: 'Kind', type: 'event' },
  ]);
  const [lessons, minutes] = await adminCreate(t, '/metrics', [
    { key: 'lessons', name: 'Lessons' },
    { key: 'minutes', name: 'Minutes' },
  ]);
  const achs = await adminCreate(t, '/achievements', [
    {
      key: 'three',
      name: 'Three',
      trigger: 'metric',
      metricId: lessons.id,
      metricValue: 3,
      status: 'active',
    },
    {
      key: 'quizzes',
      name: 'Quizzes',
      trigger: 'metric',
      metricId: lessons.id,
      metricValue: 2,
      eventAttributes: [{ attributeId: kind.id, attributeValue: 'quiz' }],
      status: 'active',
    },
    { key: 'two-days', name: 'Two days', trigger: 'streak', streakLength: 2, status: 'active' },
  ]);
  await adminCreate(t, '/achievements', [
    {
      key: 'both',
      name: 'Both',
      trigger: 'achievement',
      achievementIds: [achs[0].id, achs[1].id],
      status: 'active',
    },
  ]);
  const [xp] = await adminCreate(t, '/points', [{ key: 'xp', name: 'XP', maxPoints: 400 }]);
  await adminCreate(t, `/points/${xp.id}/triggers`, [
    { type: 'metric', points: 10, metricId: lessons.id, metricThreshold: 2, status: 'active' },
    {
      type: 'metric',
      points: 7,
      metricId: minutes.id,
      metricThreshold: 2.5,
      eventAttributes: [{ attributeId: kind.id, attributeValue: 'quiz' }],
      status: 'active',
    },
    { type: 'user_creation', points: 3, status: 'active' },
    { type: 'achievement', points: 25, achievementId: achs[0].id, status: 'active' },
    { type: 'streak', points: 15, streakLength: 2, status: 'active' },
  ]);
  await adminCreate(t, `/points/${xp.id}/levels`, [
    { key: 'bronze', name: 'Bronze', points: 20 },
    { key: 'silver', name: 'Silver', points: 100 },
  ]);
  await adminCreate(t, `/points/${xp.id}/boosts`, [
    { name: 'Launch', start: '2025-03-11', end: '2025-03-12', multiplier: 1.5, rounding: 'up' },
  ]);
  const s = await t.admin('PATCH', '/streaks/settings', {
    enabled: true,
    frequency: 'daily',
    conditions: [{ metricId: lessons.id, threshold: 1 }],
    freezesEnabled: true,
    maxFreezes: 2,
    initialFreezes: 1,
  });
  expect(s.status).toBe(200);
  const boards = await adminCreate(t, '/leaderboards', [
    {
      key: 'lessons-by-region',
      name: 'Lessons by region',
      rankBy: 'metric',
      metricId: lessons.id,
      breakdownAttributes: [region.id],
      start: '2025-03-01',
      status: 'active',
    },
    {
      key: 'daily-minutes',
      name: 'Daily minutes',
      rankBy: 'metric',
      metricId: minutes.id,
      start: '2025-03-01',
      runUnit: 'day',
      runInterval: 1,
      maxParticipants: 3,
      status: 'active',
    },
    {
      key: 'xp-board',
      name: 'XP',
      rankBy: 'points',
      pointsSystemId: xp.id,
      start: '2025-03-01',
      status: 'active',
    },
    { key: 'streaks', name: 'Streaks', rankBy: 'streak', start: '2025-03-01', status: 'active' },
  ]);
  return {
    metric: { id: lessons.id, key: 'lessons' },
    minutes: { id: minutes.id, key: 'minutes' },
    systemId: xp.id,
    boardKeys: boards.map((b) => b.key),
  };
}

const ZONES = ['UTC', 'America/Los_Angeles', 'Pacific/Auckland', 'Asia/Kolkata'];
const REGIONS = ['eu', 'us', 'apac'];

/** POST an event (`extra.idempotencyKey` as its Idempotency-Key header); every one must be accepted. */
export async function sendEvent(
  t: TestServer,
  metric: string,
  user: Record<string, unknown>,
  value: number,
  extra: Record<string, unknown> = {},
) {
  const { idempotencyKey, ...body } = extra;
  const headers: Record<string, string> =
    typeof idempotencyKey === 'string' ? { 'Idempotency-Key': idempotencyKey } : {};
  const res = await t.api('POST', `/v1/metrics/${metric}/event`, { user, value, ...body }, headers);
  if (res.status !== 201 && res.status !== 202) {
    throw new Error(`event failed: ${res.status} ${JSON.stringify(res.body)}`);
  }
  return res;
}

/**
 * A mixed load over `days` days (the clock moves 1 day + a few hours each): several users in several
 * zones, decimal and negative values, filtered events, idempotent retries, profile updates.
 */
export async function mixedLoad(t: TestServer, opts: { users: number; days: number; prefix: string }) {
  for (let day = 0; day < opts.days; day++) {
    for (let i = 0; i < opts.users; i++) {
      const id = `${opts.prefix}-${i}`;
      // User 0 skips day 2 (a freeze bridges it); user 1 skips days 1 and 2 (a break after the freeze).
      if ((i === 0 && day === 2) || (i === 1 && (day === 1 || day === 2))) continue;
      const user = {
        id,
        tz: ZONES[i % ZONES.length],
        name: `User ${i}`,
        attributes: { region: REGIONS[i % REGIONS.length] },
      };
      await sendEvent(t, 'lessons', user, 1 + ((i + day) % 3) * 0.5, {
        attributes: { kind: (i + day) % 2 ? 'quiz' : 'video' },
        idempotencyKey: `${id}-d${day}`,
      });
      await sendEvent(t, 'minutes', { id }, ((i * 7 + day * 3) % 11) * 0.75 - 1.3, {
        attributes: { kind: 'quiz' },
      });
      if ((i + day) % 4 === 0) await sendEvent(t, 'lessons', { id }, -0.4);
      // An idempotent retry (202) changes nothing.
      if (i % 3 === 0) await sendEvent(t, 'lessons', user, 1, { idempotencyKey: `${id}-d${day}` });
    }
    t.clock.advance(26 * 3600_000);
  }
  // Profile-only ops (upserts) and API users without events.
  await t.api('PUT', `/v1/users/${opts.prefix}-0`, { email: 'zero@example.com', deviceTokens: ['a', 'b'] });
  await t.api('POST', '/v1/users', { id: `${opts.prefix}-lurker`, tz: 'Europe/Paris' });
}

/** Drains every outbox until empty with a fresh writer. */
export async function drain(t: TestServer, consumer = 'drain'): Promise<number> {
  const w = new HistoryWriter(t.deps, { consumer, claimIdleMs: 0 });
  let n = 0;
  for (let k = await w.drainOnce(); k > 0; k = await w.drainOnce()) n += k;
  expect(await w.lag()).toBe(0);
  return n;
}

/** Every key under the test prefix with a type-aware dump of its content (streams left out). */
export async function snapshotKeys(t: TestServer): Promise<Record<string, unknown>> {
  const out: Record<string, unknown> = {};
  for (const key of await t.redisKeys()) {
    // Per-op reply markers (KEYS[10] of applyUserOp: a retried call returns the same reply) expire
    // after 10 s; they are not state and are not rebuilt.
    if (/:user:[^:]+:op:/.test(key)) continue;
    // A board's ranking version validates cached reads; rebuilt boards get a new one on purpose.
    if (/:\{lb:[^}]+\}:ver$/.test(key)) continue;
    // The history writer's ordering guard (lib/globals.lua K[7]): live, the seq of each user's newest
    // record that moved an index; rebuilt, the user's seq (no lower; rebuild.test.ts checks it).
    if (key.endsWith(':{global}:applied-seq')) continue;
    const type = await t.deps.redis.type(key);
    // Outbox streams and their consumer groups: not state.
    if (type === 'stream') continue;
    const contents = await keyContents(t.deps.redis, key);
    // In a user hash, which board moves the API applied (r:<boardId>): a hint for the writer's
    // repair pass, not state.
    out[key] =
      type === 'hash' && /:user:[^:]+$/.test(key)
        ? (contents as Array<[string, string]>).filter(([f]) => !f.startsWith('r:'))
        : contents;
  }
  return out;
}

/** Deletes every key under the test prefix, one UNLINK per key (never FLUSHDB/FLUSHALL). */
export async function wipePrefix(t: TestServer): Promise<number> {
  const keys = await t.redisKeys();
  for (const k of keys) await t.deps.redis.unlink(k);
  expect(await t.redisKeys()).toEqual([]);
  return keys.length;
}
