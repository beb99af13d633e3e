import { asc, eq } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { pointsAwards, webhookDeliveries } from '../../src/db/schema';
import { HistoryWriter } from '../../src/workers/history-writer';
import { historyHooks } from '../../src/workers/index';
import { Scheduler } from '../../src/workers/scheduler';
import { adminCreate, createTestServer, type TestServer } from '../helpers/server';

const HOUR = 3_600_000;

let t: TestServer;
let writer: HistoryWriter;
let a: Scheduler;
let b: Scheduler;
let boostId: string;

async function tick() {
  await Promise.all([a.runOnce(), b.runOnce()]);
  await writer.drainOnce();
}

const boostHooks = async () =>
  (await t.deps.db.select().from(webhookDeliveries).orderBy(asc(webhookDeliveries.created)))
    .filter((r) => r.type.startsWith('points.boost_'))
    .map((r) => ({ type: r.type, payload: r.payload as any, created: r.created.toISOString() }));

const awards = (user: string) =>
  t.deps.db
    .select()
    .from(pointsAwards)
    .where(eq(pointsAwards.userId, user))
    .orderBy(asc(pointsAwards.created));

beforeAll(async () => {
  t = await createTestServer({ now: '2025-03-10T02:00:00Z' });
  writer = new HistoryWriter(t.deps, { hooks: historyHooks, claimIdleMs: 0 });
  a = new Scheduler(t.deps);
  b = new Scheduler(t.deps);
  await adminCreate(t, '/metrics', [{ key: 'visits', name: 'Visits' }]);
  const [xp] = await adminCreate(t, '/points', [{ key: 'xp', name: 'XP' }]);
  await adminCreate(t, `/points/${xp.id}/triggers`, [
    { type: 'time', points: 10, timeUnit: 'hours', timeInterval: 12, status: 'active' },
  ]);
  const [boost] = await adminCreate(t, `/points/${xp.id}/boosts`, [
    { name: 'Double days', start: '2025-03-11', end: '2025-03-12', multiplier: 2 },
  ]);
  boostId = boost.id;
  await adminCreate(t, '/webhooks', [
    { url: 'http://127.0.0.1:9/never', eventTypes: ['points.boost_started', 'points.boost_finished'] },
  ]);
  // Two users created at 04:00 UTC: Tokyo (UTC+9) and Los Angeles (UTC-7).
  t.clock.set('2025-03-10T04:00:00Z');
  for (const [id, tz] of [
    ['tokyo', 'Asia/Tokyo'],
    ['la', 'America/Los_Angeles'],
  ]) {
    expect((await t.api('POST', '/v1/metrics/visits/event', { user: { id, tz }, value: 1 })).status).toBe(
      201,
    );
  }
  await writer.drainOnce();
});
afterAll(async () => t?.close());

describe('boost windows (semantics §5.8)', () => {
  it('fires boost_started at 00:00 UTC of start and boost_finished at 00:00 UTC after end, once each', async () => {
    t.clock.set('2025-03-10T23:59:59.999Z');
    await tick();
    expect(await boostHooks()).toEqual([]);
    t.clock.set('2025-03-11T00:00:00Z');
    await tick();
    await tick();
    let hooks = await boostHooks();
    expect(hooks).toHaveLength(1);
    expect(hooks[0]!.payload).toMatchObject({
      type: 'points.boost_started',
      timestamp: '2025-03-11T00:00:00.000Z',
      boost: {
        id: boostId,
        name: 'Double days',
        status: 'active',
        userId: null,
        pointsSystemKey: 'xp',
        pointsSystemName: 'XP',
        start: '2025-03-11',
        end: '2025-03-12',
        multiplier: 2,
        rounding: 'down',
      },
    });
    t.clock.set('2025-03-12T23:59:59Z');
    await tick();
    expect(await boostHooks()).toHaveLength(1);
    t.clock.set('2025-03-13T00:00:00Z');
    await tick();
    await tick();
    hooks = await boostHooks();
    expect(hooks.map((h) => h.type)).toEqual(['points.boost_started', 'points.boost_finished']);
    expect(hooks[1]!.payload).toMatchObject({
      timestamp: '2025-03-13T00:00:00.000Z',
      boost: { id: boostId, status: 'finished' },
    });
    t.clock.set('2025-03-14T06:00:00Z');
    await tick();
    expect(await boostHooks()).toHaveLength(2);
  });

  it('boosts time-trigger awards whose slot falls in the window on the user’s local date', async () => {
    // Slots every 12 h from 04:00 UTC on 03-10: 16:00Z 03-10, 04:00Z 03-11, … 16:00Z 03-13, 04:00Z 03-14.
    const slots = (await awards('tokyo')).map((x) => [x.created.toISOString(), x.localDate, x.awarded]);
    expect(slots).toEqual([
      ['2025-03-10T16:00:00.000Z', '2025-03-11', 20], // already 03-11 in Tokyo: boosted
      ['2025-03-11T04:00:00.000Z', '2025-03-11', 20],
      ['2025-03-11T16:00:00.000Z', '2025-03-12', 20],
      ['2025-03-12T04:00:00.000Z', '2025-03-12', 20],
      ['2025-03-12T16:00:00.000Z', '2025-03-13', 10], // 03-13 in Tokyo: over
      ['2025-03-13T04:00:00.000Z', '2025-03-13', 10],
      ['2025-03-13T16:00:00.000Z', '2025-03-14', 10],
      ['2025-03-14T04:00:00.000Z', '2025-03-14', 10],
    ]);
    const la = (await awards('la')).map((x) => [x.created.toISOString(), x.localDate, x.awarded]);
    expect(la).toEqual([
      ['2025-03-10T16:00:00.000Z', '2025-03-10', 10],
      ['2025-03-11T04:00:00.000Z', '2025-03-10', 10], // still 03-10 in Los Angeles
      ['2025-03-11T16:00:00.000Z', '2025-03-11', 20],
      ['2025-03-12T04:00:00.000Z', '2025-03-11', 20],
      ['2025-03-12T16:00:00.000Z', '2025-03-12', 20],
      ['2025-03-13T04:00:00.000Z', '2025-03-12', 20],
      ['2025-03-13T16:00:00.000Z', '2025-03-13', 10],
      ['2025-03-14T04:00:00.000Z', '2025-03-13', 10],
    ]);
    void HOUR;
  });
});
