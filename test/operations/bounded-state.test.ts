import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { userPart } from '../helpers/user-hash';
import { verifyState } from '../../src/rebuild/verify';
import { migrateLayout } from '../../src/redis/layout';
import { adminCreate, createTestServer, type TestServer } from '../helpers/server';
import { drain } from '../helpers/rebuild';

// Bounded per-user state (ARCHITECTURE.md "Bounded per-user state"; application-api §4 window): a user
// active every day for more than a year keeps a fixed-size working set in Redis, the period history
// beyond the last 100 periods lives only in Postgres, and idempotency keys are forgotten after
// IDEMPOTENCY_WINDOW_DAYS.

const DAY = 86_400_000;
/**
 * The documented bound of one veteran's own keys (README, Consistency and state; issue 16's 6 KiB): the
 * 10 newest awards per points system (compact entries), one to two windows of idempotency keys (compact
 * entries: 16 hex digits and the first use's ms), 100 periods of streak history (1.1 KiB) and the user
 * hash. Measured: 4.9 KiB (it was 11.8 KiB with JSON awards, 20 of them, and keyed idempotency fields).
 */
const MAX_USER_BYTES = 6 * 1024;

let t: TestServer;
let board: { id: string };

const send = (user: string, value: number, key?: string) =>
  t.api(
    'POST',
    '/v1/metrics/visits/event',
    { user: { id: user }, value },
    key === undefined ? {} : { 'Idempotency-Key': key },
  );

/**
 * The user's own keys (not boards, outbox or cross-user indexes) and their MEMORY USAGE in bytes. The
 * reply markers of single ops (`:op:<id>`, kept 10 s by Redis's clock for a retried call) are left out:
 * the test's clock moves 400 days in a second.
 */
async function userFootprint(user: string) {
  const keys = (await t.redisKeys()).filter((k) => k.includes(`:user:${user}`) && !k.includes(':op:'));
  let bytes = 0;
  // SAMPLES 0: every field counted (the default samples 5 and extrapolates).
  for (const k of keys) bytes += (await t.deps.redis.memory('USAGE', k, 'SAMPLES', 0)) ?? 0;
  return { keys, bytes };
}

beforeAll(async () => {
  t = await createTestServer({ now: '2024-01-01T12:00:00Z' });
  const [m] = await adminCreate(t, '/metrics', [{ key: 'visits', name: 'Visits' }]);
  const res = await t.admin('PATCH', '/streaks/settings', {
    enabled: true,
    frequency: 'daily',
    mode: 'all',
    conditions: [{ metricId: m.id, threshold: 1 }],
  });
  expect(res.status).toBe(200);
  const [s] = await adminCreate(t, '/points', [{ key: 'xp', name: 'XP' }]);
  await adminCreate(t, `/points/${s.id}/triggers`, [
    { type: 'metric', points: 5, metricId: m.id, metricThreshold: 1, status: 'active' },
  ]);
  [board] = await adminCreate(t, '/leaderboards', [
    {
      key: 'monthly',
      name: 'Monthly',
      rankBy: 'metric',
      metricId: m.id,
      start: '2024-01-01',
      runUnit: 'month',
      runInterval: 1,
      status: 'active',
    },
  ]);
  await t.deps.catalog.reload();
});
afterAll(async () => t.close());

describe('bounded per-user state', () => {
  it('a user active daily for 400 days keeps the last 100 periods and a window of keys, and verifies', async () => {
    const start = t.clock.now();
    for (let d = 0; d < 400; d++) {
      t.clock.set(start + d * DAY);
      const res = await send('veteran', 1, `day-${d}`);
      expect(res.status).toBe(201);
      expect(res.body.currentStreak.length).toBe(d + 1);
    }
    const hash = await userPart(t.deps.redis, t.deps.keys, 'veteran', 'streak');
    expect(Object.keys(hash).filter((f) => f.startsWith('h:') || f === 'hist')).toEqual([]);
    const entries = (await t.deps.redis.get(t.deps.keys.user('veteran').streakHistory))!.split(',');
    expect(entries).toHaveLength(100);
    // The newest 100 days, oldest first, each met with its length.
    const first = Math.floor(start / DAY) + 300;
    expect(entries[0]).toBe(`${first}:301`);
    expect(entries[99]).toBe(`${first + 99}:400`);

    // The longest history a read can ask for is served from Redis alone.
    const read = await t.api('GET', '/v1/users/veteran/streak?historyPeriods=100');
    expect(read.status).toBe(200);
    expect(read.body.length).toBe(400);
    expect(read.body.streakHistory).toHaveLength(100);
    expect(read.body.streakHistory.every((p: { length: number }) => p.length > 300)).toBe(true);

    // Idempotency keys: only the current and the previous 30-day bucket exist, each with at most 30 keys.
    const { keys, bytes } = await userFootprint('veteran');
    const idem = keys.filter((k) => k.includes(':idem'));
    expect(idem.length).toBeLessThanOrEqual(2);
    let remembered = 0;
    for (const k of idem) remembered += await t.deps.redis.hlen(k);
    expect(remembered).toBeLessThanOrEqual(60);
    expect(remembered).toBeGreaterThanOrEqual(30);
    // One value per board: the latest monthly run and the one before it, not one per run.
    expect(Object.keys(await userPart(t.deps.redis, t.deps.keys, 'veteran', 'boards'))).toHaveLength(2);
    expect(bytes).toBeLessThanOrEqual(MAX_USER_BYTES);

    // A user's rank history lives in Postgres (recorded from the board's change stream), not in Redis.
    expect((await t.redisKeys()).filter((k) => k.includes(':hist:'))).toEqual([]);
    await t.settle();
    const changes = await t.deps
      .sql`select count(distinct run_start)::int as runs from leaderboard_rank_changes where user_id = 'veteran'`;
    expect(changes[0]!.runs).toBe(14);
    expect(await t.deps.redis.xlen(t.deps.keys.board(board.id).changes)).toBe(0);

    // Postgres keeps every period; verify-state agrees with what Redis keeps.
    await drain(t);
    const rows = await t.deps.sql`select count(*)::int as n from streak_periods where user_id = 'veteran'`;
    expect(rows[0]!.n).toBe(400);
    expect((await verifyState(t.deps)).differences).toEqual([]);
  });

  it('a key inside the window is a replay; past it the key is forgotten and the event is processed', async () => {
    const base = Date.parse('2025-06-01T12:00:00Z');
    t.clock.set(base);
    const first = await send('window-user', 2, 'order-1');
    expect(first.status).toBe(201);

    t.clock.set(base + 30 * DAY - 1);
    const inside = await send('window-user', 2, 'order-1');
    expect(inside.status).toBe(202);
    expect(inside.body).toMatchObject({ eventId: first.body.eventId, total: 2, idempotentReplayed: true });

    t.clock.set(base + 30 * DAY);
    const after = await send('window-user', 2, 'order-1');
    expect(after.status).toBe(201);
    expect(after.body.eventId).not.toBe(first.body.eventId);
    expect(after.body.total).toBe(4);
    // Remembered again from its new first use.
    t.clock.set(base + 31 * DAY);
    expect((await send('window-user', 2, 'order-1')).status).toBe(202);

    await drain(t);
    expect((await verifyState(t.deps)).differences).toEqual([]);
  });
});

describe('IDEMPOTENCY_WINDOW_DAYS=0', () => {
  let f: TestServer;
  beforeAll(async () => {
    f = await createTestServer({ now: '2024-01-01T12:00:00Z', env: { IDEMPOTENCY_WINDOW_DAYS: '0' } });
    await adminCreate(f, '/metrics', [{ key: 'visits', name: 'Visits' }]);
    await f.deps.catalog.reload();
  });
  afterAll(async () => f.close());

  it('remembers a key forever, in one hash without expiry', async () => {
    const post = () =>
      f.api(
        'POST',
        '/v1/metrics/visits/event',
        { user: { id: 'u' }, value: 1 },
        { 'Idempotency-Key': 'once' },
      );
    expect((await post()).status).toBe(201);
    f.clock.set(Date.parse('2027-01-01T00:00:00Z'));
    expect((await post()).status).toBe(202);
    const key = f.deps.keys.user('u').idempotency;
    expect(await f.deps.redis.pttl(key)).toBe(-1);
  });

  it('a key the previous layout kept forever (the bare event id) is still a replay, and verifies', async () => {
    f.clock.set(Date.parse('2024-02-01T12:00:00Z'));
    // The previous version gave every event a random id: a batch item's id is not derived from its key
    // either, so it stands for such an event.
    const batch = await f.admin('POST', '/metrics/events', [
      { key: 'visits', user: { id: 'old' }, value: 1, idempotencyKey: 'legacy' },
    ]);
    expect(batch.status).toBe(202);
    const metricId = f.deps.catalog.snapshot.metricsByKey.get('visits')!.id;
    const k = f.deps.keys.user('old').idempotency;
    const [eventId] = Object.values(await f.deps.redis.hgetall(k))[0]!.split('|');
    // As the previous version stored it: field "<metricId>|<key>", value the event id.
    await f.deps.redis.del(k);
    await f.deps.redis.hset(k, `${metricId}|legacy`, eventId!);
    await f.deps.redis.del(f.deps.keys.global.layout);
    expect(await migrateLayout(f.deps)).toEqual({ users: 0, idem: 1, longestAt: 0 });
    f.clock.set(Date.parse('2026-02-01T12:00:00Z'));
    const again = await f.api(
      'POST',
      '/v1/metrics/visits/event',
      { user: { id: 'old' }, value: 1 },
      { 'Idempotency-Key': 'legacy' },
    );
    expect(again.status).toBe(202);
    expect(again.body.eventId).toBe(eventId);
    await drain(f);
    expect((await verifyState(f.deps)).differences).toEqual([]);
  });
});
