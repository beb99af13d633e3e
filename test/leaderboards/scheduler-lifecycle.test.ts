import { and, asc, eq } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { leaderboardRunResults, webhookDeliveries } from '../../src/db/schema';
import { HistoryWriter } from '../../src/workers/history-writer';
import { historyHooks } from '../../src/workers/index';
import { Scheduler } from '../../src/workers/scheduler';
import { adminCreate, createTestServer, type TestServer } from '../helpers/server';

let t: TestServer;
let writer: HistoryWriter;
let a: Scheduler;
let b: Scheduler;
let boardId: string;

async function tick() {
  await Promise.all([a.runOnce(), b.runOnce()]);
  await writer.drainOnce();
}

const send = async (id: string, value: number, tz = 'UTC') => {
  const r = await t.api('POST', '/v1/metrics/steps/event', {
    user: { id, tz, name: id.toUpperCase() },
    value,
  });
  expect(r.status).toBe(201);
  return r.body;
};

/** Payloads of one type, by timestamp then run start (rows come back in no particular order). */
const lbHooks = async (type: string) =>
  (await t.deps.db.select().from(webhookDeliveries).where(eq(webhookDeliveries.type, type)))
    .map((r) => r.payload as any)
    .sort(
      (a, b) =>
        String(a.timestamp).localeCompare(String(b.timestamp)) ||
        String(a.leaderboard?.start).localeCompare(String(b.leaderboard?.start)),
    );

const snapshotRows = () =>
  t.deps.db
    .select()
    .from(leaderboardRunResults)
    .where(
      and(eq(leaderboardRunResults.leaderboardId, boardId), eq(leaderboardRunResults.runStart, '2025-03-10')),
    )
    .orderBy(asc(leaderboardRunResults.rank));

beforeAll(async () => {
  t = await createTestServer({ now: '2025-03-09T20:00:00Z' });
  writer = new HistoryWriter(t.deps, { hooks: historyHooks, claimIdleMs: 0 });
  a = new Scheduler(t.deps);
  b = new Scheduler(t.deps);
  const [m] = await adminCreate(t, '/metrics', [{ key: 'steps', name: 'Steps' }]);
  await adminCreate(t, '/webhooks', [
    { url: 'http://127.0.0.1:9/never', eventTypes: ['leaderboard.started', 'leaderboard.finished'] },
  ]);
  // Weekly runs (7 days from Monday 2025-03-10), two weeks; scheduled until its start.
  const [board] = await adminCreate(t, '/leaderboards', [
    {
      key: 'weekly',
      name: 'Weekly steps',
      rankBy: 'metric',
      metricId: m.id,
      start: '2025-03-10',
      end: '2025-03-23',
      runUnit: 'day',
      runInterval: 7,
      status: 'active',
    },
  ]);
  boardId = board.id;
  expect(board.status).toBe('scheduled');
});
afterAll(async () => t?.close());

describe('leaderboard lifecycle (semantics §6.2)', () => {
  it('starts the first run at 00:00 UTC of its start date', async () => {
    await tick();
    expect(await lbHooks('leaderboard.started')).toEqual([]);
    t.clock.set('2025-03-10T00:00:00Z');
    await tick();
    const started = await lbHooks('leaderboard.started');
    expect(started).toHaveLength(1);
    expect(started[0]).toMatchObject({
      timestamp: '2025-03-10T00:00:00.000Z',
      leaderboard: { key: 'weekly', start: '2025-03-10', end: '2025-03-16', status: 'active', rankings: [] },
    });
  });

  it('finalises a weekly run 12 hours after its end, snapshots it and serves it from the snapshot', async () => {
    t.clock.set('2025-03-12T10:00:00Z');
    await send('amy', 300);
    await send('bob', 500);
    await send('cat', 100);
    // Sunday 23:00 in Los Angeles is Monday 06:00 UTC: still the first run for this user.
    t.clock.set('2025-03-17T06:00:00Z');
    await send('dan', 400, 'America/Los_Angeles');
    await writer.drainOnce();

    t.clock.set('2025-03-17T11:59:59.999Z');
    await tick();
    expect(await snapshotRows()).toEqual([]);
    expect(await lbHooks('leaderboard.finished')).toEqual([]);
    // The second run has begun (00:00 UTC on 03-17).
    expect((await lbHooks('leaderboard.started')).map((s) => s.leaderboard.start)).toEqual([
      '2025-03-10',
      '2025-03-17',
    ]);

    t.clock.set('2025-03-17T12:00:00Z');
    await tick();
    await tick();
    const rows = await snapshotRows();
    expect(rows.map((r) => [r.userId, r.rank, r.value])).toEqual([
      ['bob', 1, 500],
      ['dan', 2, 400],
      ['amy', 3, 300],
      ['cat', 4, 100],
    ]);
    expect(rows[0]!.finalizedAt.toISOString()).toBe('2025-03-17T12:00:00.000Z');
    const finished = await lbHooks('leaderboard.finished');
    expect(finished).toHaveLength(1);
    expect(finished[0]).toMatchObject({
      type: 'leaderboard.finished',
      timestamp: '2025-03-17T12:00:00.000Z',
      leaderboard: {
        key: 'weekly',
        start: '2025-03-10',
        end: '2025-03-16',
        status: 'active',
        rankings: [
          { userId: 'bob', userName: 'BOB', rank: 1, value: 500 },
          { userId: 'dan', userName: 'DAN', rank: 2, value: 400 },
          { userId: 'amy', userName: 'AMY', rank: 3, value: 300 },
          { userId: 'cat', userName: 'CAT', rank: 4, value: 100 },
        ],
      },
    });

    // The scheduler dropped the finalised run's rankings and members from Redis: reads of it come from
    // the snapshot (a board's Redis state holds its open runs only).
    expect((await t.redisKeys()).filter((k) => k.includes(`{lb:${boardId}}:run:2025-03-10:`))).toEqual([]);
    const dan = await t.api('GET', '/v1/users/dan/leaderboards/weekly?run=2025-03-10');
    expect(dan.status).toBe(200);
    expect(dan.body).toMatchObject({ rank: 2, value: 400 });
    await t.api('POST', '/v1/users', { id: 'eve' });
    const nobody = await t.api('GET', '/v1/users/eve/leaderboards/weekly?run=2025-03-10');
    expect(nobody.body).toMatchObject({ rank: null, value: null });
    const read = await t.api('GET', '/v1/leaderboards/weekly?run=2025-03-10');
    expect(read.status).toBe(200);
    expect(read.body.rankings.map((r: any) => [r.userId, r.rank, r.value])).toEqual([
      ['bob', 1, 500],
      ['dan', 2, 400],
      ['amy', 3, 300],
      ['cat', 4, 100],
    ]);
    // New activity counts in the second run only.
    await send('cat', 1000, 'America/Los_Angeles');
    expect((await snapshotRows()).find((r) => r.userId === 'cat')!.value).toBe(100);
    const current = await t.api('GET', '/v1/leaderboards/weekly');
    expect(current.body.rankings.map((r: any) => [r.userId, r.value])).toEqual([['cat', 1000]]);
  });

  it('finishes the board 12 hours after its end, with a final leaderboard.finished, once', async () => {
    t.clock.set('2025-03-24T11:59:00Z');
    await tick();
    expect(await lbHooks('leaderboard.finished')).toHaveLength(1);
    t.clock.set('2025-03-24T12:00:00Z');
    await tick();
    await tick();
    const finished = await lbHooks('leaderboard.finished');
    expect(finished).toHaveLength(2);
    const last = finished.find((f) => f.leaderboard.start === '2025-03-17');
    expect(last).toMatchObject({
      leaderboard: {
        status: 'finished',
        end: '2025-03-23',
        rankings: [{ userId: 'cat', rank: 1, value: 1000 }],
      },
    });
    const board = await t.api('GET', '/v1/leaderboards/weekly');
    expect(board.body.status).toBe('finished');
    t.clock.set('2025-04-24T12:00:00Z');
    await tick();
    expect(await lbHooks('leaderboard.finished')).toHaveLength(2);
    expect(await lbHooks('leaderboard.started')).toHaveLength(2);
  });
});
