import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { isCluster } from '../../src/redis/client';
import { adminCreate, createTestServer, type TestServer } from '../helpers/server';
import { spyOwnCalls } from '../helpers/spy';

// On a single Redis the user script also updates the cross-user indexes (lua/lib/globals.lua, input.glob);
// on Cluster, and when an active streak ends beyond the expiries the script was given, lua/updateGlobals.lua
// does it in a call of its own. Both paths must write the same indexes.

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
    created: await r.zscore(g.userIds, id),
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
  it('are updated inside the user script on a single Redis, and by a call of their own on Cluster', async () => {
    const globalCalls = spyOwnCalls(t.deps.redis, 'updateGlobals');
    try {
      await send('gf-a');
      expect(globalCalls.calls().length).toBe(isCluster(t.deps.redis) ? 1 : 0);
    } finally {
      globalCalls.restore();
    }
    const now = String(t.clock.now());
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
    const after = await indexesOf('gf-a');
    expect(after).toEqual({ ...before, xp: '20' });
  });

  it('are left to their own call when the streak ends beyond the expiries the script was given', async () => {
    // 10 freezes: the streak is covered 11 periods ahead, past the 9 expiries passed to the script.
    await streakSettings(10);
    const globalCalls = spyOwnCalls(t.deps.redis, 'updateGlobals');
    try {
      await send('gf-b');
      expect(globalCalls.calls().length).toBe(1);
    } finally {
      globalCalls.restore();
    }
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
});
