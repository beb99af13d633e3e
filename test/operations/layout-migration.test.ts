import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { isCluster } from '../../src/redis/client';
import { Keys } from '../../src/redis/keys';
import { verifyState } from '../../src/rebuild/verify';
import { idempotencyField } from '../../src/engine/idempotency';
import { LAYOUT_VERSION, migrateLayout } from '../../src/redis/layout';
import {
  decodeCompletion,
  STREAK_PACKS,
  splitUserHash,
  USER_PARTS,
  type UserPart,
} from '../../src/redis/user-hash';
import { refreshStreakExpiry } from '../../src/services/streak-recompute';
import { drain } from '../helpers/rebuild';
import { adminCreate, createTestServer, type TestServer } from '../helpers/server';

// Layout 1 kept one hash per part of a user's state; layout 2 keeps one user hash
// (src/redis/user-hash.ts). The start-up migration (src/redis/layout.ts, lua/migrateUser.lua) moves
// every layout-1 user in place. The layout-1 keys below are written by hand because no code path
// writes them any more: they are what the previous version left in Redis.

const DAY = 86_400_000;
let t: TestServer;

const send = (user: string, value: number) =>
  t.api('POST', '/v1/metrics/visits/event', { user: { id: user }, value });

/** Rewrites a layout-2 user as the previous version stored it (optionally with per-period streak fields). */
async function toLayout1(user: string, legacyPeriods?: Record<string, string>) {
  const k = t.deps.keys.user(user);
  const parts = splitUserHash(await t.deps.redis.hgetall(k.hash));
  const legacy = k.legacy();
  await t.deps.redis.del(k.hash);
  await t.deps.redis.hset(k.hash, parts.profile);
  // Layout 1 stored completions as JSON.
  const completions = Object.fromEntries(
    Object.entries(parts.achievements).map(([id, raw]) => {
      const c = decodeCompletion(raw)!;
      return [id, `{"at":${c.at},"cid":"${c.cid}"}`];
    }),
  );
  for (const part of Object.keys(USER_PARTS) as UserPart[]) {
    const fields = {
      ...(part === 'achievements' ? completions : parts[part]),
      ...(part === 'streak' ? legacyPeriods : {}),
    };
    if (Object.keys(fields).length) await t.deps.redis.hset(legacy[part], fields);
  }
  return parts;
}

const reads = async (user: string) =>
  Promise.all(
    [
      `/v1/users/${user}`,
      `/v1/users/${user}/metrics`,
      `/v1/users/${user}/streak?historyPeriods=5`,
      `/v1/users/${user}/points/xp`,
      `/v1/users/${user}/achievements?includeIncomplete=true`,
    ].map(async (path) => {
      const r = await t.api('GET', path);
      expect(r.status).toBe(200);
      return r.body;
    }),
  );

beforeAll(async () => {
  t = await createTestServer({ now: '2025-09-01T12:00:00Z' });
  const [m] = await adminCreate(t, '/metrics', [{ key: 'visits', name: 'Visits' }]);
  expect(
    (
      await t.admin('PATCH', '/streaks/settings', {
        enabled: true,
        frequency: 'daily',
        mode: 'all',
        conditions: [{ metricId: m.id, threshold: 1 }],
      })
    ).status,
  ).toBe(200);
  const [s] = await adminCreate(t, '/points', [{ key: 'xp', name: 'XP' }]);
  await adminCreate(t, `/points/${s.id}/triggers`, [
    { type: 'metric', points: 5, metricId: m.id, metricThreshold: 1, status: 'active' },
  ]);
  await adminCreate(t, '/achievements', [
    { key: 'first', name: 'First', trigger: 'metric', metricId: m.id, metricValue: 1, status: 'active' },
  ]);
  await adminCreate(t, '/leaderboards', [
    {
      key: 'all-time',
      name: 'All time',
      rankBy: 'metric',
      metricId: m.id,
      start: '2025-01-01',
      status: 'active',
    },
  ]);
  await t.deps.catalog.reload();
});
afterAll(async () => t.close());

describe('Redis layout migration', () => {
  it('moves a layout-1 user into the user hash, reads and later events unchanged', async () => {
    const base = t.clock.now();
    for (const [d, v] of [
      [0, 2],
      [1, 3],
    ] as const) {
      t.clock.set(base + d * DAY);
      expect((await send('old-1', v)).status).toBe(201);
    }
    const hashBefore = await t.deps.redis.hgetall(t.deps.keys.user('old-1').hash);
    const answers = await reads('old-1');

    const parts = await toLayout1('old-1');
    expect(Object.keys(parts.metrics)).toHaveLength(1);
    expect(Object.keys(parts.achievements)).toHaveLength(1);
    expect(parts.streak.length).toBe('2');
    await t.deps.redis.del(t.deps.keys.global.layout);

    expect(await migrateLayout(t.deps)).toEqual({ users: 1, idem: 0, longestAt: 0 });
    expect(await t.deps.redis.get(t.deps.keys.global.layout)).toBe(LAYOUT_VERSION);
    expect(await t.deps.redis.hgetall(t.deps.keys.user('old-1').hash)).toEqual(hashBefore);
    // Compact again: every value within the listpack's 64 bytes.
    expect(await t.deps.redis.object('ENCODING', t.deps.keys.user('old-1').hash)).toBe('listpack');
    const legacy = Object.values(t.deps.keys.user('old-1').legacy());
    expect(await t.deps.redis.exists(...legacy)).toBe(0);
    expect(await reads('old-1')).toEqual(answers);

    // The next event continues the user's state.
    t.clock.set(base + 2 * DAY);
    const next = await send('old-1', 1);
    expect(next.status).toBe(201);
    expect(next.body.total).toBe(6);
    expect(next.body.currentStreak.length).toBe(3);
    expect(next.body.points.xp.total).toBe(30);
    await drain(t);
    expect((await verifyState(t.deps)).differences).toEqual([]);
  });

  it('folds the per-period streak fields of an older layout into the bounded history', async () => {
    const base = Date.parse('2025-10-01T12:00:00Z');
    t.clock.set(base);
    expect((await send('old-2', 1)).status).toBe(201);
    const today = Math.floor(base / DAY);
    const k = t.deps.keys.user('old-2');
    const epoch = splitUserHash(await t.deps.redis.hgetall(k.hash)).streak.epoch!;
    await t.deps.redis.del(k.streakHistory);
    // One field per period; one of an earlier settings epoch, which is discarded.
    await toLayout1('old-2', {
      [`h:${epoch}:${today}`]: '1|0|0',
      [`h:${Number(epoch) - 1}:${today - 5}`]: '9|0|0',
    });
    await t.deps.redis.del(t.deps.keys.global.layout);
    expect(await migrateLayout(t.deps)).toEqual({ users: 1, idem: 0, longestAt: 0 });
    const streak = splitUserHash(await t.deps.redis.hgetall(k.hash)).streak;
    expect(Object.keys(streak).filter((f) => f.startsWith('h:'))).toEqual([]);
    expect(await t.deps.redis.get(k.streakHistory)).toBe(`${today}:1`);
    t.clock.set(base + DAY);
    expect((await send('old-2', 1)).body.currentStreak.length).toBe(2);
    expect(await t.deps.redis.get(k.streakHistory)).toBe(`${today}:1,${today + 1}:2`);
  });

  it('a fresh install records the version without scanning the keyspace', async () => {
    const fresh = { ...t.deps, keys: new Keys(`${t.prefix}-fresh`, t.deps.keys.shards, t.deps.keys.layout) };
    const redis = t.deps.redis;
    const scans = (isCluster(redis) ? redis.nodes('master') : [redis]).map((node) => vi.spyOn(node, 'scan'));
    try {
      expect(await migrateLayout(fresh)).toEqual({ users: 0, idem: 0, longestAt: 0 });
      for (const scan of scans) expect(scan).not.toHaveBeenCalled();
      expect(await t.deps.redis.get(fresh.keys.global.layout)).toBe(LAYOUT_VERSION);
    } finally {
      for (const scan of scans) scan.mockRestore();
      await t.deps.redis.del(fresh.keys.global.layout);
    }
  });

  it('runs once: a recorded version skips the scan; users already in layout 2 are left alone', async () => {
    // A user whose id ends in a layout-1 suffix: its hash looks like another user's streak hash.
    expect((await send('old-3:streak', 1)).status).toBe(201);
    const own = await t.deps.redis.hgetall(t.deps.keys.user('old-3:streak').hash);
    await t.deps.redis.del(t.deps.keys.global.layout);
    expect(await migrateLayout(t.deps)).toEqual({ users: 0, idem: 0, longestAt: 0 });
    expect(await t.deps.redis.hgetall(t.deps.keys.user('old-3:streak').hash)).toEqual(own);
    expect(await t.deps.redis.exists(t.deps.keys.user('old-3').hash)).toBe(0);

    await toLayout1('old-1');
    // Recorded: not scanned again (a layout-1 user written after it stays until the version is cleared).
    expect(await migrateLayout(t.deps)).toEqual({ users: 0, idem: 0, longestAt: 0 });
    await t.deps.redis.del(t.deps.keys.global.layout);
    expect(await migrateLayout(t.deps)).toEqual({ users: 1, idem: 0, longestAt: 0 });
    expect((await t.api('GET', '/v1/users/old-1/metrics')).body[0].current).toBe(6);
  });

  it('rewrites idempotency entries of layout 2 compactly: a key used before is still a replay of the same event', async () => {
    // Layout 2 named a field "<metricId>|<key>" and kept "<event id>|<first use ms>" (a window) or the
    // event id alone (forever): what the previous version left in Redis.
    const base = Date.parse('2025-11-01T12:00:00Z');
    t.clock.set(base);
    const metricId = t.deps.catalog.snapshot.metricsByKey.get('visits')!.id;
    const k = t.deps.keys.user('old-idem');
    expect((await send('old-idem', 1)).status).toBe(201);
    const windowMs = t.deps.config.IDEMPOTENCY_WINDOW_DAYS * DAY;
    const bucket = k.idemBucket(Math.floor(base / windowMs));
    const oldId = '5f0c6c1e-8d1a-4c53-9a51-5b8e2c7d9a10';
    await t.deps.redis.hset(bucket, `${metricId}|order-1`, `${oldId}|${base}`);
    await t.deps.redis.pexpire(bucket, 2 * windowMs);
    const foreverId = '7a1e9b2c-3d4f-4e5a-8b6c-7d8e9f0a1b2c';
    await t.deps.redis.hset(k.idempotency, `${metricId}|order-2`, foreverId);
    const ttl = await t.deps.redis.pttl(bucket);
    await t.deps.redis.del(t.deps.keys.global.layout);

    expect(await migrateLayout(t.deps)).toEqual({ users: 0, idem: 2, longestAt: 0 });
    const fields = Object.keys(await t.deps.redis.hgetall(bucket));
    expect(fields).toEqual([idempotencyField(metricId, 'order-1')]);
    expect(fields[0]).toMatch(/^[0-9a-f]{16}$/);
    expect(await t.deps.redis.hgetall(k.idempotency)).toEqual({
      [idempotencyField(metricId, 'order-2')]: `${foreverId}|0`,
    });
    expect(Math.abs((await t.deps.redis.pttl(bucket)) - ttl)).toBeLessThan(1000);

    const replay = await t.api(
      'POST',
      '/v1/metrics/visits/event',
      { user: { id: 'old-idem' }, value: 1 },
      { 'Idempotency-Key': 'order-1' },
    );
    expect(replay.status).toBe(202);
    expect(replay.body).toMatchObject({ eventId: oldId, idempotentReplayed: true, total: 1 });
    // A second run finds nothing left to rewrite.
    await t.deps.redis.del(t.deps.keys.global.layout);
    expect(await migrateLayout(t.deps)).toEqual({ users: 0, idem: 0, longestAt: 0 });
  });

  it('keeps one "longest reached at" field per user, and layout 3\'s others are removed without a scan', async () => {
    const base = Date.parse('2025-12-01T12:00:00Z');
    const g = t.deps.keys.global;
    const fieldsOf = async (user: string) =>
      Object.keys(await t.deps.redis.hgetall(g.streakLongestAt))
        .filter((f) => f.startsWith(`${user}|`))
        .sort();
    for (let d = 0; d < 4; d++) {
      t.clock.set(base + d * DAY);
      expect((await send('old-long', 1)).body.currentStreak.length).toBe(d + 1);
    }
    await drain(t);
    // Four lengths reached, one field: the longest's (layout 3 kept one per length).
    expect(await fieldsOf('old-long')).toEqual(['old-long|4']);
    const firstAt = await t.deps.redis.hget(g.streakLongestAt, 'old-long|4');
    const ranking = await t.api('GET', '/v1/streaks/rankings?type=longest&limit=100');
    expect(ranking.status).toBe(200);

    // What layout 3 left: the lengths reached before the longest.
    await t.deps.redis.hset(g.streakLongestAt, 'old-long|1', '1', 'old-long|2', '2', 'old-long|3', '3');
    await t.deps.redis.set(g.layout, '3');
    const redis = t.deps.redis;
    const scans = (isCluster(redis) ? redis.nodes('master') : [redis]).map((node) => vi.spyOn(node, 'scan'));
    try {
      expect(await migrateLayout(t.deps)).toEqual({ users: 0, idem: 0, longestAt: 3 });
      for (const scan of scans) expect(scan).not.toHaveBeenCalled();
    } finally {
      for (const scan of scans) scan.mockRestore();
    }
    expect(await fieldsOf('old-long')).toEqual(['old-long|4']);
    expect(await t.deps.redis.hget(g.streakLongestAt, 'old-long|4')).toBe(firstAt);
    expect(await t.deps.redis.get(g.layout)).toBe(LAYOUT_VERSION);
    expect((await t.api('GET', '/v1/streaks/rankings?type=longest&limit=100')).body).toEqual(ranking.body);

    // A break, then a longer streak: its length's field replaces the old one.
    for (let d = 6; d < 11; d++) {
      t.clock.set(base + d * DAY);
      await send('old-long', 1);
    }
    await drain(t);
    expect(await fieldsOf('old-long')).toEqual(['old-long|5']);
    expect((await verifyState(t.deps)).differences).toEqual([]);
  });
});

// The streak's scalar fields are stored packed in two fields of the user hash (s:_ and s:~,
// lua/lib/streak.lua STREAK_PACKS). The previous version stored them as fields of their own: such a
// hash is written by hand below, as no code path writes it any more.
describe('packed streak fields', () => {
  const SCALARS = Object.values(STREAK_PACKS).flat() as string[];

  /** The user's streak fields in the hash (the period sums s:s:<metricId> left out). */
  const streakFieldsOf = async (user: string) =>
    Object.keys(await t.deps.redis.hgetall(t.deps.keys.user(user).hash))
      .filter((f) => f.startsWith('s:') && !f.startsWith('s:s:'))
      .sort();

  /** What verify-state finds for one user (this file's other users have their own clock's past). */
  const differencesOf = async (user: string) =>
    (await verifyState(t.deps)).differences.filter((d) => d.userId === user);

  /** Rewrites the user's packed fields as the previous version stored them; returns the streak part. */
  async function toOwnFields(user: string) {
    const k = t.deps.keys.user(user);
    const streak = splitUserHash(await t.deps.redis.hgetall(k.hash)).streak;
    await t.deps.redis.hdel(k.hash, 's:_', 's:~');
    const own: Record<string, string> = { 's:started': streak.started ?? '' };
    for (const f of SCALARS) if (streak[f] !== undefined) own[`s:${f}`] = streak[f]!;
    await t.deps.redis.hset(k.hash, own);
    expect(await streakFieldsOf(user)).toEqual(Object.keys(own).sort());
    return streak;
  }

  it('keeps the scalar fields in two compact fields', async () => {
    t.clock.set(Date.parse('2025-11-01T12:00:00Z'));
    expect((await send('packed-1', 1)).status).toBe(201);
    const k = t.deps.keys.user('packed-1');
    const hash = await t.deps.redis.hgetall(k.hash);
    expect(await streakFieldsOf('packed-1')).toEqual(['s:_', 's:~']);
    for (const v of Object.values(hash)) expect(v.length).toBeLessThanOrEqual(64);
    expect(await t.deps.redis.object('ENCODING', k.hash)).toBe('listpack');
    expect(splitUserHash(hash).streak).toMatchObject({
      length: '1',
      longest: '1',
      curMet: '1',
      started: '2025-11-01',
      longestAt: String(t.clock.now()),
    });
  });

  it("reads an earlier version's fields as they are, and packs them at the user's next event", async () => {
    const base = Date.parse('2025-11-10T12:00:00Z');
    for (const d of [0, 1]) {
      t.clock.set(base + d * DAY);
      expect((await send('packed-2', 1)).status).toBe(201);
    }
    const answers = await reads('packed-2');
    const before = await toOwnFields('packed-2');
    expect(before).toMatchObject({ length: '2', started: '2025-11-10' });
    expect(await reads('packed-2')).toEqual(answers);

    t.clock.set(base + 2 * DAY);
    const next = await send('packed-2', 1);
    expect(next.body.currentStreak).toMatchObject({ length: 3, started: '2025-11-10' });
    expect(await streakFieldsOf('packed-2')).toEqual(['s:_', 's:~']);
    const after = splitUserHash(await t.deps.redis.hgetall(t.deps.keys.user('packed-2').hash)).streak;
    expect(after).toMatchObject({ length: '3', longest: '3', epoch: before.epoch, started: '2025-11-10' });
    await drain(t);
    expect(await differencesOf('packed-2')).toEqual([]);
  });

  it('reads the packed fields where a process of the earlier version also wrote its own, and removes those', async () => {
    const base = Date.parse('2025-11-15T12:00:00Z');
    for (const d of [0, 1]) {
      t.clock.set(base + d * DAY);
      expect((await send('packed-4', 1)).status).toBe(201);
    }
    const k = t.deps.keys.user('packed-4');
    const packed = splitUserHash(await t.deps.redis.hgetall(k.hash)).streak;
    // An earlier version reads no epoch in a packed hash, so its op starts the streak anew and writes
    // every scalar field of its own.
    const own: Record<string, string> = {};
    for (const f of SCALARS)
      own[`s:${f}`] = f === 'started' ? '2025-11-16' : f === 'epoch' ? packed.epoch! : '1';
    await t.deps.redis.hset(k.hash, own);
    expect(splitUserHash(await t.deps.redis.hgetall(k.hash)).streak).toEqual(packed);
    const next = await send('packed-4', 1);
    expect(next.body.currentStreak).toMatchObject({ length: 2, started: '2025-11-15' });
    expect(await streakFieldsOf('packed-4')).toEqual(['s:_', 's:~']);
  });

  it("removes the period history an earlier version's recompute wrote into the user hash", async () => {
    t.clock.set(Date.parse('2025-11-25T12:00:00Z'));
    expect((await send('packed-5', 1)).status).toBe(201);
    await drain(t);
    const k = t.deps.keys.user('packed-5');
    const history = await t.deps.redis.get(k.streakHistory);
    // Where an earlier version's recompute put the history: the user hash and user_states.streak (the
    // base the user's later changes fold over, src/rebuild/user-states.ts).
    await t.deps.redis.hset(k.hash, 's:hist', '20000:1');
    await t.deps
      .sql`insert into user_states (user_id, seq, streak) values ('packed-5', 0, '{"hist":"20000:1"}')`;
    expect((await send('packed-5', 1)).status).toBe(201);
    expect(await streakFieldsOf('packed-5')).toEqual(['s:_', 's:~']);
    expect(await t.deps.redis.get(k.streakHistory)).toBe(history);
    await drain(t);
    expect(await differencesOf('packed-5')).toEqual([]);
  });

  it("packs an earlier version's fields when its streak is recomputed", async () => {
    t.clock.set(Date.parse('2025-11-20T12:00:00Z'));
    expect((await send('packed-3', 1)).status).toBe(201);
    const before = await toOwnFields('packed-3');
    // What a change of the user's pauses runs: the streak unchanged, its expiry recomputed.
    expect(await refreshStreakExpiry(t.deps, 'packed-3')).toBe(true);
    expect(await streakFieldsOf('packed-3')).toEqual(['s:_', 's:~']);
    const { started, ...rest } = before;
    const after = splitUserHash(await t.deps.redis.hgetall(t.deps.keys.user('packed-3').hash)).streak;
    expect(after).toEqual({ ...rest, started });
    await drain(t);
    expect(await differencesOf('packed-3')).toEqual([]);
  });
});
