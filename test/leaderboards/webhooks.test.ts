import { asc, eq } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { webhookDeliveries } from '../../src/db/schema';
import { HistoryWriter } from '../../src/workers/history-writer';
import { historyHooks } from '../../src/workers/index';
import { Scheduler } from '../../src/workers/scheduler';
import { adminCreate, createTestServer, type TestServer } from '../helpers/server';

let t: TestServer;
let writer: HistoryWriter;
let a: Scheduler;
let b: Scheduler;

async function tick() {
  await Promise.all([a.runOnce(), b.runOnce()]);
  await writer.drainOnce();
}

const send = async (id: string, value: number) => {
  const r = await t.api('POST', '/v1/metrics/steps/event', { user: { id, name: id.toUpperCase() }, value });
  expect(r.status).toBe(201);
};

const rows = async (type: string) =>
  (
    await t.deps.db
      .select()
      .from(webhookDeliveries)
      .where(eq(webhookDeliveries.type, type))
      .orderBy(asc(webhookDeliveries.created))
  ).map((r) => r.payload as any);

beforeAll(async () => {
  t = await createTestServer({ now: '2025-03-10T12:00:00Z' });
  writer = new HistoryWriter(t.deps, { hooks: historyHooks, claimIdleMs: 0 });
  a = new Scheduler(t.deps);
  b = new Scheduler(t.deps);
  const [m] = await adminCreate(t, '/metrics', [{ key: 'steps', name: 'Steps' }]);
  await adminCreate(t, '/webhooks', [
    { url: 'http://127.0.0.1:9/never', eventTypes: ['leaderboard.rank_changed', 'leaderboard.changed'] },
  ]);
  await adminCreate(t, '/leaderboards', [
    {
      key: 'steps',
      name: 'Steps',
      rankBy: 'metric',
      metricId: m.id,
      start: '2025-03-01',
      maxParticipants: 2,
      status: 'active',
    },
  ]);
});
afterAll(async () => t?.close());

describe('leaderboard change webhooks (semantics §8.4)', () => {
  it('sends rank_changed for each change of the acting (or evicted) user, and coalesces changed to one a minute', async () => {
    await send('amy', 10);
    await send('bob', 20);
    await tick();
    const rc = await rows('leaderboard.rank_changed');
    expect(
      rc.map((r) => [r.user.id, r.leaderboard.previousRank, r.leaderboard.rank, r.leaderboard.value]),
    ).toEqual([
      ['amy', null, 1, 10],
      ['bob', null, 1, 20],
    ]);
    expect(rc[0]).toMatchObject({ leaderboard: { key: 'steps', previousValue: null, start: '2025-03-01' } });
    let changed = await rows('leaderboard.changed');
    expect(changed).toHaveLength(1);
    expect(changed[0].leaderboard.rankings).toEqual([
      { userId: 'bob', userName: 'BOB', rank: 1, value: 20 },
      { userId: 'amy', userName: 'AMY', rank: 2, value: 10 },
    ]);

    // cat beats amy on a full board (max 2): cat enters, amy is evicted.
    t.clock.advance(10_000);
    await send('cat', 15);
    await tick();
    const more = (await rows('leaderboard.rank_changed')).slice(2);
    expect(more.map((r) => [r.user.id, r.leaderboard.previousRank, r.leaderboard.rank]).sort()).toEqual([
      ['amy', 2, null],
      ['cat', null, 2],
    ]);
    // Within the minute: no second changed yet.
    expect(await rows('leaderboard.changed')).toHaveLength(1);
    t.clock.advance(50_000);
    await tick();
    changed = await rows('leaderboard.changed');
    expect(changed).toHaveLength(2);
    expect(changed[1].leaderboard.rankings.map((r: any) => r.userId)).toEqual(['bob', 'cat']);
    // No change since: nothing more.
    t.clock.advance(5 * 60_000);
    await tick();
    expect(await rows('leaderboard.changed')).toHaveLength(2);
  });

  it("forgets a run's leaderboard.changed marker once the run is finalised", async () => {
    const [m] = await adminCreate(t, '/metrics', [{ key: 'laps', name: 'Laps' }]);
    const [board] = await adminCreate(t, '/leaderboards', [
      {
        key: 'laps',
        name: 'Laps',
        rankBy: 'metric',
        metricId: m.id,
        runUnit: 'day',
        runInterval: 1,
        status: 'active',
      },
    ]);
    t.clock.set('2025-03-12T12:00:00Z');
    const r = await t.api('POST', '/v1/metrics/laps/event', { user: { id: 'lap-1' }, value: 3 });
    expect(r.status).toBe(201);
    const marker = `lbc|${board.id}|2025-03-12|`;
    await tick();
    t.clock.set('2025-03-12T12:01:01Z');
    await tick();
    expect(await t.deps.redis.hget(t.deps.keys.sched.done, marker)).not.toBeNull();
    // 12 hours after the run's last UTC day it is finalised and its Redis state dropped.
    t.clock.set('2025-03-13T12:00:01Z');
    await tick();
    await tick();
    expect(await t.deps.redis.exists(t.deps.keys.board(board.id).members('2025-03-12'))).toBe(0);
    expect(await t.deps.redis.hget(t.deps.keys.sched.done, marker)).toBeNull();
  });
});
