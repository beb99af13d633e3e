import { and, eq } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { leaderboardRunResults } from '../../src/db/schema';
import { adminCreate, createTestServer, type TestServer } from '../helpers/server';
import { createBoard, getBoard, getUserBoard, patchBoard, send, standings } from '../helpers/leaderboards';

// Status transitions and which activity counts (semantics §6.2, §6.3): inactive boards are invisible
// and take no entries, scheduled boards become active at 00:00 UTC of their start, boards with an end
// finish 12 hours after it, finished boards are served from their Postgres snapshot.

let t: TestServer;
let n = 0;
const metric = async () => {
  const [m] = await adminCreate(t, '/metrics', [{ key: `life-m${++n}`, name: `Metric ${n}` }]);
  return m as { id: string; key: string };
};
const listed = async (query = '') => {
  const res = await t.api('GET', `/v1/leaderboards${query}`);
  expect(res.status).toBe(200);
  return new Map<string, string>(res.body.map((b: any) => [b.key, b.status]));
};
const adminStatus = async (id: string) => (await t.admin('GET', `/leaderboards/${id}`)).body.status;
const snapshotRows = (boardId: string) =>
  t.deps.db.select().from(leaderboardRunResults).where(eq(leaderboardRunResults.leaderboardId, boardId));
/** Removes every Redis key of a board, to prove that a read is served from Postgres. */
async function dropRedisBoard(boardId: string) {
  const keys = (await t.redisKeys()).filter((k) => k.includes(`{lb:${boardId}}`));
  expect(keys.length).toBeGreaterThan(0);
  await Promise.all(keys.map((k) => t.deps.redis.del(k)));
}

beforeAll(async () => {
  t = await createTestServer({ now: '2025-03-10T12:00:00Z' });
});
afterAll(async () => t.close());

describe('leaderboard lifecycle', () => {
  it('an inactive board is invisible, takes no entries, and counts nothing from before activation', async () => {
    t.clock.set('2025-03-10T12:00:00Z');
    const m = await metric();
    const b = await createBoard(t, { rankBy: 'metric', metricId: m.id, status: undefined });
    expect(b.status).toBe('inactive');
    expect((await listed('?includeFinished=true')).has(b.key)).toBe(false);
    const res = await getBoard(t, b.key);
    expect(res.status).toBe(404);
    expect(res.body).toEqual({ error: 'Leaderboard not found' });
    const ev = await send(t, m.key, 'in-1', 5);
    expect(ev.leaderboards).toEqual({});
    expect((await getUserBoard(t, 'in-1', b.key)).status).toBe(404);

    t.clock.set('2025-03-10T13:00:00Z');
    expect((await patchBoard(t, { id: b.id, status: 'active' })).status).toBe('active');
    expect((await listed()).get(b.key)).toBe('active');
    expect(await standings(t, b.key)).toEqual([]);
    // Only activity from activation on counts: 1, not 5 + 1.
    const after = await send(t, m.key, 'in-1', 1);
    expect(after.leaderboards[b.key]).toMatchObject({ previousRank: null, rank: 1 });
    expect(await standings(t, b.key)).toEqual([['in-1', 1]]);
  });

  it('a scheduled board lists as scheduled with empty rankings and becomes active at 00:00 UTC of its start', async () => {
    t.clock.set('2025-03-10T12:00:00Z');
    const m = await metric();
    const b = await createBoard(t, { rankBy: 'metric', metricId: m.id, start: '2025-03-12' });
    expect(b.status).toBe('scheduled');
    expect((await listed()).get(b.key)).toBe('scheduled');
    const res = await getBoard(t, b.key);
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ status: 'scheduled', start: '2025-03-12', end: null, rankings: [] });
    expect((await getBoard(t, b.key, { run: '2025-03-12' })).status).toBe(200);
    expect((await getBoard(t, b.key, { run: '2025-03-11' })).status).toBe(422);

    // Nothing counts while scheduled, even where the local date already is the start date.
    t.clock.set('2025-03-11T11:00:00Z'); // 00:00 on 12 Mar in Auckland
    expect((await send(t, m.key, { id: 'sc-akl', tz: 'Pacific/Auckland' }, 5)).leaderboards).toEqual({});
    t.clock.set('2025-03-11T23:59:59.999Z');
    expect((await send(t, m.key, 'sc-utc', 5)).leaderboards).toEqual({});
    expect(await adminStatus(b.id)).toBe('scheduled');
    const scheduledUser = await getUserBoard(t, 'sc-utc', b.key);
    expect(scheduledUser.status).toBe(200);
    expect(scheduledUser.body).toMatchObject({ rank: null, value: null, history: [] });

    t.clock.set('2025-03-12T00:00:00Z');
    expect((await listed()).get(b.key)).toBe('active');
    expect(await adminStatus(b.id)).toBe('active');
    expect((await send(t, m.key, 'sc-utc', 2)).leaderboards[b.key]).toMatchObject({ rank: 1 });
    expect(
      (await send(t, m.key, { id: 'sc-akl', tz: 'Pacific/Auckland' }, 1)).leaderboards[b.key],
    ).toMatchObject({
      rank: 2,
    });
    // Still 11 Mar in Los Angeles: before the board's start, so it does not count.
    expect((await send(t, m.key, { id: 'sc-la', tz: 'America/Los_Angeles' }, 9)).leaderboards).toEqual({});
    expect(await standings(t, b.key)).toEqual([
      ['sc-utc', 2],
      ['sc-akl', 1],
    ]);
  });

  it('a scheduled board can be deactivated (and is then invisible again)', async () => {
    t.clock.set('2025-03-10T12:00:00Z');
    const m = await metric();
    const b = await createBoard(t, {
      rankBy: 'metric',
      metricId: m.id,
      start: '2025-04-01',
      status: 'scheduled',
    });
    expect(b.status).toBe('scheduled');
    expect((await patchBoard(t, { id: b.id, status: 'inactive' })).status).toBe('inactive');
    expect((await getBoard(t, b.key)).status).toBe(404);
    expect((await listed()).has(b.key)).toBe(false);
  });

  it('a board with an end stops counting after it and finishes at 12:00 UTC the day after', async () => {
    t.clock.set('2025-03-10T12:00:00Z');
    const m = await metric();
    const b = await createBoard(t, { rankBy: 'metric', metricId: m.id, end: '2025-03-11' });
    await send(t, m.key, 'end-a', 3);
    await send(t, m.key, { id: 'end-b', name: 'Bea' }, 5);

    // 01:00 UTC on 12 Mar: past the end in UTC, still 11 Mar in Los Angeles.
    t.clock.set('2025-03-12T01:00:00Z');
    expect((await send(t, m.key, 'end-a', 10)).leaderboards).toEqual({});
    const la = await send(t, m.key, { id: 'end-la', tz: 'America/Los_Angeles' }, 4);
    expect(la.leaderboards[b.key]).toMatchObject({ start: '2025-03-10', end: '2025-03-11', rank: 2 });

    t.clock.set('2025-03-12T11:59:59.999Z');
    expect((await listed()).get(b.key)).toBe('active');
    expect(await adminStatus(b.id)).toBe('active');
    expect(await standings(t, b.key)).toEqual([
      ['end-b', 5],
      ['end-la', 4],
      ['end-a', 3],
    ]);
    expect(await snapshotRows(b.id)).toHaveLength(0);

    t.clock.set('2025-03-12T12:00:00Z');
    expect(await adminStatus(b.id)).toBe('finished');
    expect((await listed()).has(b.key)).toBe(false);
    expect((await listed('?includeFinished=false')).has(b.key)).toBe(false);
    expect((await listed('?includeFinished=true')).get(b.key)).toBe('finished');
    const res = await getBoard(t, b.key);
    expect(res.status).toBe(200);
    expect(res.body.status).toBe('finished');
    expect(res.body.rankings).toEqual([
      { userId: 'end-b', userName: 'Bea', rank: 1, value: 5 },
      { userId: 'end-la', userName: null, rank: 2, value: 4 },
      { userId: 'end-a', userName: null, rank: 3, value: 3 },
    ]);
    const rows = await snapshotRows(b.id);
    expect(rows.map((r) => [r.runStart, r.runEnd, r.groupKey, r.userId, r.rank, r.value])).toEqual(
      expect.arrayContaining([
        ['2025-03-10', '2025-03-11', '', 'end-b', 1, 5],
        ['2025-03-10', '2025-03-11', '', 'end-la', 2, 4],
        ['2025-03-10', '2025-03-11', '', 'end-a', 3, 3],
      ]),
    );
    // Later activity never counts.
    t.clock.set('2025-03-13T12:00:00Z');
    expect((await send(t, m.key, { id: 'end-la', tz: 'America/Los_Angeles' }, 100)).leaderboards).toEqual({});
    // Served from Postgres: the Redis keys of the board are no longer needed for the rankings.
    await dropRedisBoard(b.id);
    expect(await standings(t, b.key)).toEqual([
      ['end-b', 5],
      ['end-la', 4],
      ['end-a', 3],
    ]);
    expect(await standings(t, b.key, { run: '2025-03-10' })).toHaveLength(3);
    expect(await standings(t, b.key, { userId: 'end-la', offset: -1, limit: 2 })).toEqual([
      ['end-b', 5],
      ['end-la', 4],
    ]);
  });

  it('a finished repeating board keeps every run queryable with run=, the last one by default', async () => {
    t.clock.set('2025-03-09T00:00:00Z');
    const m = await metric();
    const b = await createBoard(t, {
      rankBy: 'metric',
      metricId: m.id,
      start: '2025-03-09',
      end: '2025-03-10',
      runUnit: 'day',
      runInterval: 1,
    });
    t.clock.set('2025-03-09T12:00:00Z');
    await send(t, m.key, 'rep-a', 1);
    await send(t, m.key, 'rep-b', 2);
    t.clock.set('2025-03-10T12:00:00Z');
    await send(t, m.key, 'rep-a', 7);
    t.clock.set('2025-03-11T12:00:00Z');
    expect((await getBoard(t, b.key)).body.status).toBe('finished');
    expect(await standings(t, b.key)).toEqual([['rep-a', 7]]);
    expect(await standings(t, b.key, { run: '2025-03-09' })).toEqual([
      ['rep-b', 2],
      ['rep-a', 1],
    ]);
    expect((await getBoard(t, b.key, { run: '2025-03-11' })).status).toBe(422);
    expect((await getBoard(t, b.key, { run: '2025-03-08' })).status).toBe(422);
    // The user's default run on a finished board is its last run too.
    expect((await getUserBoard(t, 'rep-a', b.key)).body).toMatchObject({ rank: 1, value: 7 });
    expect((await getUserBoard(t, 'rep-b', b.key, { run: '2025-03-09' })).body).toMatchObject({
      rank: 1,
      value: 2,
    });
    await dropRedisBoard(b.id);
    expect(await standings(t, b.key, { run: '2025-03-09' })).toEqual([
      ['rep-b', 2],
      ['rep-a', 1],
    ]);
  });

  it('snapshots every breakdown group of a finished board', async () => {
    t.clock.set('2025-03-10T12:00:00Z');
    const m = await metric();
    const [attr] = await adminCreate(t, '/attributes', [{ key: `team${n}`, name: 'Team', type: 'user' }]);
    const b = await createBoard(t, {
      rankBy: 'metric',
      metricId: m.id,
      end: '2025-03-10',
      breakdownAttributes: [attr.id],
    });
    await send(t, m.key, { id: 'grp-a', attributes: { [attr.key]: 'red' } }, 1.5);
    await send(t, m.key, { id: 'grp-b', attributes: { [attr.key]: 'red' } }, 2);
    await send(t, m.key, { id: 'grp-c', attributes: { [attr.key]: 'green' } }, 1);
    t.clock.set('2025-03-11T12:00:00Z');
    expect((await getBoard(t, b.key, { userAttributes: `${attr.key}:red` })).body.status).toBe('finished');
    expect(await standings(t, b.key, { userId: 'grp-c' })).toEqual([['grp-c', 1]]);
    const rows = await snapshotRows(b.id);
    expect(rows.map((r) => [r.groupKey, r.userId, r.rank, r.value]).sort()).toEqual([
      ['green', 'grp-c', 1, 1],
      ['red', 'grp-a', 2, 1.5],
      ['red', 'grp-b', 1, 2],
    ]);
    await dropRedisBoard(b.id);
    expect(await standings(t, b.key, { userAttributes: `${attr.key}:red` })).toEqual([
      ['grp-b', 2],
      ['grp-a', 1.5],
    ]);
    expect(await standings(t, b.key, { userAttributes: `${attr.key}:green` })).toEqual([['grp-c', 1]]);
  });

  it('an operator finish finalises the current run immediately from the Postgres snapshot', async () => {
    t.clock.set('2025-03-10T12:00:00Z');
    const m = await metric();
    const b = await createBoard(t, { rankBy: 'metric', metricId: m.id });
    await send(t, m.key, 'op-a', 2);
    await send(t, m.key, 'op-b', 3);
    t.clock.set('2025-03-11T08:00:00Z');
    expect((await patchBoard(t, { id: b.id, status: 'finished' })).status).toBe('finished');
    expect((await listed()).has(b.key)).toBe(false);
    expect((await listed('?includeFinished=true')).get(b.key)).toBe('finished');
    expect((await send(t, m.key, 'op-a', 5)).leaderboards).toEqual({});
    const res = await getBoard(t, b.key);
    expect(res.body.status).toBe('finished');
    expect(await standings(t, b.key)).toEqual([
      ['op-b', 3],
      ['op-a', 2],
    ]);
    const rows = await t.deps.db
      .select()
      .from(leaderboardRunResults)
      .where(
        and(eq(leaderboardRunResults.leaderboardId, b.id), eq(leaderboardRunResults.runStart, '2025-03-10')),
      );
    expect(rows.map((r) => [r.userId, r.rank, r.value]).sort()).toEqual([
      ['op-a', 2, 2],
      ['op-b', 1, 3],
    ]);
    await dropRedisBoard(b.id);
    expect(await standings(t, b.key)).toEqual([
      ['op-b', 3],
      ['op-a', 2],
    ]);
    expect(await standings(t, b.key, { run: '2025-03-10' })).toHaveLength(2);
  });
});
