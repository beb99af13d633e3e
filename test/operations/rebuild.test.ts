import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { setStreakFields, streakField, userPart } from '../helpers/user-hash';
import { userField } from '../../src/redis/user-hash';
import { rebuildState } from '../../src/rebuild/rebuild';
import { verifyState } from '../../src/rebuild/verify';
import { createTestServer, type TestServer } from '../helpers/server';
import { drain, mixedLoad, mixedSetup, sendEvent, snapshotKeys, wipePrefix } from '../helpers/rebuild';

let t: TestServer;

beforeAll(async () => {
  t = await createTestServer({ now: '2025-03-10T09:00:00Z' });
  await mixedSetup(t);
  await mixedLoad(t, { users: 7, days: 5, prefix: 'rb' });
  await drain(t);
});
afterAll(async () => t.close());

/** A few application reads whose answers must survive a rebuild unchanged. */
async function reads(): Promise<unknown[]> {
  const out: unknown[] = [];
  for (const id of ['rb-0', 'rb-1', 'rb-4']) {
    out.push((await t.api('GET', `/v1/users/${id}/metrics/lessons`)).body);
    out.push((await t.api('GET', `/v1/users/${id}/points/xp`)).body);
    out.push((await t.api('GET', `/v1/users/${id}/streak`)).body);
    out.push((await t.api('GET', `/v1/users/${id}/achievements`)).body);
  }
  for (const key of ['lessons-by-region', 'xp-board', 'streaks', 'daily-minutes']) {
    out.push((await t.api('GET', `/v1/leaderboards/${key}?limit=100`)).body);
  }
  out.push((await t.api('GET', '/v1/achievements')).body);
  return out;
}

describe('rebuild and verify-state', () => {
  it('after a mixed load and a drained writer, verify-state reports no differences', async () => {
    const all = await verifyState(t.deps);
    expect(all.differences).toEqual([]);
    expect(all.checkedUsers).toBe(8);
    const sample = await verifyState(t.deps, { sample: 3 });
    expect(sample).toEqual({ checkedUsers: 3, differences: [] });
  });

  it('the load covered freezes, breaks, boosts, levels, every achievement kind and evictions', async () => {
    const db = t.deps.sql;
    const [p] =
      await db`select count(*) filter (where used_freeze) as frozen, max(length) as longest from streak_periods`;
    expect(Number(p!.frozen)).toBeGreaterThan(0);
    expect(Number(p!.longest)).toBeGreaterThanOrEqual(4);
    const [a] =
      await db`select count(*) filter (where jsonb_array_length(boosts) > 0) as boosted, count(*) as n from points_awards`;
    expect(Number(a!.boosted)).toBeGreaterThan(0);
    const kinds =
      await db`select distinct a.key from achievement_completions c join achievements a on a.id = c.achievement_id`;
    expect(kinds.map((r) => r.key).sort()).toEqual(['both', 'quizzes', 'three', 'two-days']);
    const rb1 = (await t.api('GET', '/v1/users/rb-1/streak')).body;
    expect(rb1.length).toBeLessThan(5); // broke after its freeze ran out
    const [evicted] =
      await db`select count(*) as n from leaderboard_updates_all u join leaderboards b on b.id = u.leaderboard_id where b.key = 'daily-minutes' and u.value > 0`;
    expect(Number(evicted!.n)).toBeGreaterThan(3 * 5); // more than fit: evictions happened
    const xp = (await t.api('GET', '/v1/users/rb-0/points/xp')).body;
    expect(xp.level).not.toBeNull();
  });

  it('verify-state reports a tampered total, award list, streak and ranking', async () => {
    const k = t.deps.keys.user('rb-2');
    const metrics = await userPart(t.deps.redis, t.deps.keys, 'rb-2', 'metrics');
    const [mid, total] = Object.entries(metrics)[0]!;
    const streakLen = await streakField(t.deps.redis, t.deps.keys, 'rb-2', 'length');
    const sys = Object.keys(await userPart(t.deps.redis, t.deps.keys, 'rb-2', 'points'))[0]!;
    const award = (await t.deps.redis.lindex(k.awards(sys), 0))!;
    await t.deps.redis.hset(k.hash, userField('metrics', mid), String(Number(total) + 1));
    await setStreakFields(t.deps.redis, t.deps.keys, 'rb-2', { length: '99' });
    await t.deps.redis.lset(k.awards(sys), 0, award.replace('|', '|1'));
    const { differences } = await verifyState(t.deps);
    expect(differences).toEqual(
      expect.arrayContaining([
        { userId: 'rb-2', what: `metrics.${mid}`, redis: String(Number(total) + 1), postgres: total },
        { userId: 'rb-2', what: 'streak.length', redis: '99', postgres: streakLen },
        expect.objectContaining({ userId: 'rb-2', what: `awards:${sys}[0]`, postgres: award }),
      ]),
    );
    await t.deps.redis.hset(k.hash, userField('metrics', mid), total);
    await setStreakFields(t.deps.redis, t.deps.keys, 'rb-2', { length: streakLen! });
    await t.deps.redis.lset(k.awards(sys), 0, award);
    expect((await verifyState(t.deps)).differences).toEqual([]);
  });

  it('deleting every key under the prefix, then rebuilding, restores identical state', async () => {
    const before = await snapshotKeys(t);
    const answers = await reads();
    const appliedKey = t.deps.keys.global.appliedSeq;
    const appliedBefore = await t.deps.redis.hgetall(appliedKey);
    expect(Object.keys(before).length).toBeGreaterThan(50);
    await wipePrefix(t);
    const summary = await rebuildState(t.deps);
    expect(summary.users).toBe(8);
    expect(summary.boardUpdates).toBeGreaterThan(0);
    // The writer's ordering guard is rebuilt with each user's seq: no lower than it was, for every
    // field it had (a user's streak, "<user>", and points totals, "<user>\0<system>").
    const appliedAfter = await t.deps.redis.hgetall(appliedKey);
    expect(Object.keys(appliedBefore).length).toBeGreaterThan(0);
    for (const [field, seq] of Object.entries(appliedBefore))
      expect(Number(appliedAfter[field])).toBeGreaterThanOrEqual(Number(seq));
    for (const [field, seq] of Object.entries(appliedAfter))
      expect(seq).toBe(await t.deps.redis.hget(t.deps.keys.user(field.split('\u0000')[0]!).hash, 'seq'));
    const after = await snapshotKeys(t);
    expect(Object.keys(after).sort()).toEqual(Object.keys(before).sort());
    for (const key of Object.keys(before))
      expect({ key, value: after[key] }).toEqual({ key, value: before[key] });
    expect(await reads()).toEqual(answers);
    expect((await verifyState(t.deps)).differences).toEqual([]);
  });

  it('keeps working after the rebuild: new events, the writer, verify', async () => {
    t.clock.advance(24 * 3600_000);
    for (let i = 0; i < 4; i++) {
      await sendEvent(t, 'lessons', { id: `rb-${i}`, attributes: { region: 'eu' } }, 2.25);
    }
    await drain(t, 'after');
    expect((await verifyState(t.deps)).differences).toEqual([]);
  });

  it('POST /admin/v1/rebuild runs in the background and reports its summary', async () => {
    const before = await snapshotKeys(t);
    const res = await t.admin('POST', '/rebuild');
    expect(res.status).toBe(202);
    expect(res.body.status).toBe('running');
    let status = res.body;
    for (let i = 0; i < 200 && status.status === 'running'; i++) {
      await new Promise((r) => setTimeout(r, 50));
      status = (await t.admin('GET', '/rebuild')).body;
    }
    expect(status).toMatchObject({ status: 'succeeded', summary: { users: 8 }, error: null });
    expect(await snapshotKeys(t)).toEqual(before);
    const doc = (await t.api('GET', '/openapi.json')).body;
    expect(Object.keys(doc.paths['/admin/v1/rebuild'])).toEqual(expect.arrayContaining(['post', 'get']));
  });
});
