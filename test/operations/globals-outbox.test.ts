import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { storedStates } from '../../src/rebuild/user-states';
import { HISTORY_GROUP, HistoryWriter, parseRecord, writeBatch } from '../../src/workers/history-writer';
import { verifyState } from '../../src/rebuild/verify';
import { isCluster } from '../../src/redis/client';
import { adminCreate, createTestServer, type TestServer } from '../helpers/server';
import { spyOwnCalls } from '../helpers/spy';

// The cross-user indexes (user count, achievement completion counts, points totals, streak rankings)
// are maintained by the history writer from the outbox (src/workers/globals.ts), not by the event:
// lua/ackWithGlobals.lua on a single Redis (atomically with the acknowledgement), lua/updateGlobals.lua
// a chunk of records a call on Cluster. The shard's user index is the user script's own (live:
// backdating needs it).

let t: TestServer;
let m: { id: string; key: string };
let ach: { id: string };
let xp: { id: string };
let quiet: { id: string };

const NY = 'America/New_York';

beforeAll(async () => {
  // The Saturday before the US clocks went forward (Sunday 2025-03-09): a streak's expiry a few days
  // later is midnight in EDT, an hour off a 24-hour step from today's EST midnight.
  t = await createTestServer({ now: '2025-03-08T12:00:00Z' });
  [m] = await adminCreate(t, '/metrics', [{ key: 'gf-m', name: 'M' }]);
  [ach] = await adminCreate(t, '/achievements', [
    { key: 'gf-first', name: 'First', trigger: 'metric', metricId: m.id, metricValue: 1, status: 'active' },
  ]);
  [xp, quiet] = await adminCreate(t, '/points', [
    { key: 'gf-xp', name: 'XP' },
    { key: 'gf-quiet', name: 'Quiet' },
  ]);
  await adminCreate(t, `/points/${xp.id}/triggers`, [
    { type: 'metric', points: 10, metricId: m.id, metricThreshold: 1, status: 'active' },
  ]);
  await streakSettings(2);
});
afterAll(async () => t.close());

async function streakSettings(freezes: number) {
  const res = await t.admin('PATCH', '/streaks/settings', {
    enabled: true,
    frequency: 'daily',
    conditions: [{ metricId: m.id, threshold: 1 }],
    freezesEnabled: true,
    maxFreezes: freezes,
    initialFreezes: freezes,
  });
  expect(res.status).toBe(200);
  await t.deps.catalog.reload();
}

async function send(id: string) {
  const res = await t.api('POST', `/v1/metrics/${m.key}/event`, { user: { id, tz: NY }, value: 1 });
  expect(res.status).toBe(201);
  return res.body;
}

async function indexesOf(id: string) {
  const g = t.deps.keys.global;
  const r = t.deps.redis;
  return {
    userCount: await r.get(g.userCount),
    created: await r.zscore(t.deps.keys.user(id).users, id),
    completions: await r.hget(g.achievementCompletions, ach.id),
    xp: await r.zscore(g.pointsTotals(xp.id), id),
    quiet: await r.zscore(g.pointsTotals(quiet.id), id),
    active: await r.zscore(g.streakActive, id),
    meta: await r.hget(g.streakActiveMeta, id),
    longest: await r.zscore(g.streakLongest, id),
    longestAt: await r.hget(g.streakLongestAt, `${id}|1`),
  };
}

describe('cross-user indexes of a user op', () => {
  it('are updated by the history writer, not by the event', async () => {
    const globalCalls = spyOwnCalls(t.deps.redis, 'updateGlobals');
    try {
      await send('gf-a');
      expect(globalCalls.calls().length).toBe(0);
    } finally {
      globalCalls.restore();
    }
    const now = String(t.clock.now());
    // Only the shard's user index is written by the event itself.
    expect(await indexesOf('gf-a')).toEqual({
      userCount: null,
      created: now,
      completions: null,
      xp: null,
      quiet: null,
      active: null,
      meta: null,
      longest: null,
      longestAt: null,
    });
    expect(await t.settle()).toBe(1);
    // Met on 03-08 with 2 freezes for 03-09 and 03-10: 03-11 still extends it, so it expires at
    // 03-12 00:00 EDT (a 24-hour step from 03-08's EST midnight would give 05:00Z).
    expect(await indexesOf('gf-a')).toEqual({
      userCount: '1',
      created: now,
      completions: '1',
      xp: '10',
      quiet: '0',
      active: '1',
      meta: `${now}|${Date.parse('2025-03-12T04:00:00Z')}`,
      longest: '1',
      longestAt: now,
    });
  });

  it('change only what the op changed', async () => {
    // Same day again: not a new user, no completion, no streak change; 10 more points.
    t.clock.advance(60_000);
    const before = await indexesOf('gf-a');
    const body = await send('gf-a');
    expect(body.currentStreak.extended).toBe(false);
    await t.settle();
    const after = await indexesOf('gf-a');
    expect(after).toEqual({ ...before, xp: '20' });
  });

  it('follow a streak covered by many freezes to its expiry', async () => {
    // 10 freezes: the streak is covered 11 periods ahead.
    await streakSettings(10);
    await send('gf-b');
    await t.settle();
    const now = String(t.clock.now());
    // Met on 03-08 with 10 freezes: expires at 03-20 00:00 EDT.
    expect(await indexesOf('gf-b')).toEqual({
      userCount: '2',
      created: now,
      completions: '2',
      xp: '10',
      quiet: '0',
      active: '1',
      meta: `${now}|${Date.parse('2025-03-20T04:00:00Z')}`,
      longest: '1',
      longestAt: now,
    });
  });

  it('count a record once when its writer died after writing Postgres and before acknowledging', async () => {
    t.clock.advance(60_000);
    await send('gf-c');
    const shard = t.deps.keys.user('gf-c').shard;
    // A writer reads the record and writes its history, then dies before acknowledging.
    const read = (await t.deps.redis.xreadgroup(
      'GROUP',
      HISTORY_GROUP,
      'dying',
      'COUNT',
      10,
      'STREAMS',
      t.deps.keys.outbox(shard),
      '>',
    )) as Array<[string, Array<[string, string[]]>]>;
    const entries = read[0]![1].map(([entryId, fields]) => ({
      entryId,
      stream: t.deps.keys.outbox(shard),
      record: parseRecord(fields)!,
    }));
    expect(entries).toHaveLength(1);
    await writeBatch(t.deps, entries);
    expect((await indexesOf('gf-c')).xp).toBeNull();
    // Another writer claims it: history is not written twice and the indexes count it once.
    const claimer = new HistoryWriter(t.deps, { consumer: 'claimer', claimIdleMs: 0 });
    expect(await claimer.drainOnce()).toBe(1);
    expect(await claimer.drainOnce()).toBe(0);
    const after = await indexesOf('gf-c');
    expect(after).toMatchObject({ userCount: '3', completions: '3', xp: '10', quiet: '0', active: '1' });
    expect(await t.deps.redis.xlen(t.deps.keys.outbox(shard))).toBe(0);
  });

  it('keep the newest total and streak when an older record is written after newer ones', async () => {
    t.clock.advance(60_000);
    await send('gf-d');
    const stream = t.deps.keys.outbox(t.deps.keys.user('gf-d').shard);
    // A writer reads the first record and stalls (it stays pending to it) ...
    const read = (await t.deps.redis.xreadgroup(
      'GROUP',
      HISTORY_GROUP,
      'stalled',
      'COUNT',
      10,
      'STREAMS',
      stream,
      '>',
    )) as Array<[string, Array<[string, string[]]>]>;
    expect(read[0]![1]).toHaveLength(1);
    // ... while the user's next day is written by another writer (which claims nothing yet) ...
    t.clock.advance(24 * 3600_000);
    await send('gf-d');
    const live = new HistoryWriter(t.deps, { consumer: 'live', claimIdleMs: 3_600_000 });
    expect(await live.drainOnce()).toBe(1);
    expect(await indexesOf('gf-d')).toMatchObject({ xp: '20', active: '2', longest: '2' });
    // ... and the stalled record is claimed and written last: it must not undo the newer one.
    expect(await t.settle()).toBe(1);
    expect(await indexesOf('gf-d')).toMatchObject({ xp: '20', active: '2', longest: '2' });
    // The guard: the newest seq applied to the user's streak and to each total (NUL-separated: never in
    // a user id); a user with one op (gf-b) has none.
    const applied = t.deps.keys.global.appliedSeq;
    expect(await t.deps.redis.hmget(applied, 'gf-d', `gf-d\u0000${xp.id}`, `gf-d\u0000${quiet.id}`)).toEqual([
      '2',
      '2',
      null,
    ]);
    expect(await t.deps.redis.hget(applied, 'gf-b')).toBeNull();
    expect((await verifyState(t.deps)).differences).toEqual([]);
  });

  it('keep what an older record changed when it is written after a newer one that did not change it', async () => {
    t.clock.advance(24 * 3600_000);
    await send('gf-e');
    const stream = t.deps.keys.outbox(t.deps.keys.user('gf-e').shard);
    // The day's first event (its streak starts) stalls with a writer; the second (no streak change)
    // is written first.
    await t.deps.redis.xreadgroup('GROUP', HISTORY_GROUP, 'stalled-e', 'COUNT', 10, 'STREAMS', stream, '>');
    t.clock.advance(60_000);
    await send('gf-e');
    const live = new HistoryWriter(t.deps, { consumer: 'live-e', claimIdleMs: 3_600_000 });
    expect(await live.drainOnce()).toBe(1);
    expect(await indexesOf('gf-e')).toMatchObject({ xp: '20', active: null });
    expect(await t.settle()).toBe(1);
    // The older record's streak is in the ranking (no newer record changed it), its total is not.
    expect(await indexesOf('gf-e')).toMatchObject({ xp: '20', active: '1', longest: '1' });
    const state = (await storedStates(t.deps, ['gf-e'])).get('gf-e');
    expect(state!.indexes).toMatchObject({ active: expect.stringMatching(/^1\|/) });
    expect((await verifyState(t.deps)).differences).toEqual([]);
  });

  it('apply a pass of many records in chunks of calls, not a call per record (single Redis and Cluster)', async () => {
    t.clock.advance(60_000);
    const before = Number(await t.deps.redis.get(t.deps.keys.global.userCount));
    const ids = Array.from({ length: 70 }, (_, i) => `gf-many-${i}`);
    await Promise.all(ids.map((id) => send(id)));
    // On a single Redis the chunks' updates travel with their acknowledgement; on Cluster on their own.
    const method = isCluster(t.deps.redis) ? 'updateGlobals' : 'ackWithGlobals';
    const calls = spyOwnCalls(t.deps.redis, method);
    try {
      expect(await t.settle()).toBe(70);
      // 70 records: two calls of at most 64 records (one per record before, on Cluster).
      expect(calls.calls()).toHaveLength(2);
    } finally {
      calls.restore();
    }
    expect(Number(await t.deps.redis.get(t.deps.keys.global.userCount))).toBe(before + 70);
    const g = t.deps.keys.global;
    const totals = await Promise.all(ids.map((id) => t.deps.redis.zscore(g.pointsTotals(xp.id), id)));
    expect(totals).toEqual(ids.map(() => '10'));
    const active = await Promise.all(ids.map((id) => t.deps.redis.zscore(g.streakActive, id)));
    expect(active).toEqual(ids.map(() => '1'));
    expect((await verifyState(t.deps)).differences).toEqual([]);
  });
});
