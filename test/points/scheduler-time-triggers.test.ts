import { asc, eq } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { pointsAwards } from '../../src/db/schema';
import { localDate } from '../../src/engine/periods';
import { HistoryWriter } from '../../src/workers/history-writer';
import { historyHooks } from '../../src/workers/index';
import { Scheduler } from '../../src/workers/scheduler';
import { adminCreate, createTestServer, type TestServer } from '../helpers/server';

const HOUR = 3_600_000;
const START = '2025-03-10T00:00:00Z';

let t: TestServer;
let writer: HistoryWriter;
let a: Scheduler;
let b: Scheduler;
let systemId: string;
let triggerId: string;
let activatedAt: number;

const ZONES: Record<string, string> = {
  la: 'America/Los_Angeles',
  berlin: 'Europe/Berlin',
  tokyo: 'Asia/Tokyo',
};

/** Two scheduler copies run concurrently, then the history writer drains (as the workers would). */
async function tick() {
  await Promise.all([a.runOnce(), b.runOnce()]);
  await writer.drainOnce();
}

async function awardsOf(user: string) {
  return t.deps.db
    .select()
    .from(pointsAwards)
    .where(eq(pointsAwards.userId, user))
    .orderBy(asc(pointsAwards.created));
}

beforeAll(async () => {
  t = await createTestServer({ now: START });
  writer = new HistoryWriter(t.deps, { hooks: historyHooks, claimIdleMs: 0 });
  a = new Scheduler(t.deps, { leaseMs: 10 * 60_000 });
  b = new Scheduler(t.deps, { leaseMs: 10 * 60_000 });
  await adminCreate(t, '/metrics', [{ key: 'visits', name: 'Visits' }]);
  const [p] = await adminCreate(t, '/points', [{ key: 'xp', name: 'XP' }]);
  systemId = p.id;
  // A user who exists before the trigger is activated: anchored at the activation.
  expect((await t.api('POST', '/v1/metrics/visits/event', { user: { id: 'early' }, value: 1 })).status).toBe(
    201,
  );
  await writer.drainOnce();
  const [tt] = await adminCreate(t, `/points/${systemId}/triggers`, [
    { type: 'time', points: 10, timeUnit: 'hours', timeInterval: 3 },
  ]);
  triggerId = tt.id;
  t.clock.advance(HOUR);
  activatedAt = t.clock.now();
  const act = await t.admin('PATCH', `/points/${systemId}/triggers`, [{ id: triggerId, status: 'active' }]);
  expect(act.status).toBe(200);
  expect(act.body.issues).toEqual([]);
});
afterAll(async () => t?.close());

describe('time triggers (semantics §5.6)', () => {
  it('grants every 3-hour slot exactly once over a simulated day, in three time zones, with two scheduler copies', async () => {
    // Three users in three zones, created half an hour apart from 01:30 UTC.
    const created: Record<string, number> = {};
    for (const [id, tz] of Object.entries(ZONES)) {
      t.clock.advance(30 * 60_000);
      created[id] = t.clock.now();
      const r = await t.api('POST', '/v1/metrics/visits/event', { user: { id, tz }, value: 1 });
      expect(r.status).toBe(201);
    }
    await writer.drainOnce();
    const end = Date.parse('2025-03-11T04:00:00Z');

    // 30-minute steps for 12 hours, then the schedulers are "down" for 7 hours, then steps again.
    let downFrom = t.clock.now() + 12 * HOUR;
    while (t.clock.now() < end) {
      if (downFrom && t.clock.now() >= downFrom) {
        t.clock.advance(7 * HOUR);
        downFrom = 0;
      } else t.clock.advance(30 * 60_000);
      if (t.clock.now() > end) t.clock.set(end);
      await tick();
    }
    await tick();

    const anchors: Record<string, number> = { early: activatedAt, ...created };
    for (const [user, anchor] of Object.entries(anchors)) {
      const awards = await awardsOf(user);
      const expected: number[] = [];
      for (let s = anchor + 3 * HOUR; s <= end; s += 3 * HOUR) expected.push(s);
      // Exactly the slots, each once, each dated at its slot; local dates in the user's zone.
      expect(awards.map((x) => x.created.getTime())).toEqual(expected);
      expect(awards.every((x) => x.triggerId === triggerId && x.awarded === 10)).toBe(true);
      expect(awards.map((x) => x.total)).toEqual(expected.map((_, i) => 10 * (i + 1)));
      const tz = ZONES[user] ?? 'UTC';
      expect(awards.map((x) => x.localDate)).toEqual(expected.map((s) => localDate(s, tz)));
    }
    // la: created 01:30Z, slots 04:30Z .. 04:30Z next day minus → 8 slots until 04:00Z next day.
    expect((await awardsOf('la')).length).toBe(8);
    expect((await awardsOf('early')).length).toBe(9);

    const pts = await t.api('GET', '/v1/users/tokyo/points/xp');
    if (pts.status === 200) expect(pts.body.total).toBe(80);
  });

  it('a copy that claims a slot and dies does not lose it: the lease expires and the slot is granted once', async () => {
    const before = (await awardsOf('berlin')).length;
    const k = t.deps.keys.sched.timeTriggers;
    const [[, nextSlot]] = [
      (await t.deps.redis.zrange(k, 0, -1, 'WITHSCORES')).reduce<Array<[string, number]>>(
        (acc, v, i, arr) => {
          if (i % 2 === 0 && v.endsWith('|berlin')) acc.push([v, Number(arr[i + 1])]);
          return acc;
        },
        [],
      )[0]!,
    ];
    t.clock.set(nextSlot);
    // A dead copy claims everything due and never finishes.
    const claimed = await t.deps.redis.claimDue(
      1,
      k,
      String(nextSlot),
      String(nextSlot + 10 * 60_000),
      '100',
    );
    expect(claimed.some((m) => m.endsWith('|berlin'))).toBe(true);
    await tick();
    expect((await awardsOf('berlin')).length).toBe(before);
    t.clock.set(nextSlot + 10 * 60_000);
    await tick();
    await tick();
    const after = await awardsOf('berlin');
    expect(after.length).toBe(before + 1);
    expect(after[after.length - 1]!.created.getTime()).toBe(nextSlot);
  });

  it('the grant itself is idempotent per slot: replaying a granted slot awards nothing', async () => {
    const { runUserOp } = await import('../../src/services/user-op');
    const last = (await awardsOf('la')).at(-1)!;
    const r = await runUserOp(t.deps, {
      kind: 'grant',
      user: { id: 'la' },
      triggerIds: [triggerId],
      at: last.created.getTime(),
    });
    expect(r.points).toEqual([]);
  });

  it('deactivating the trigger stops the grants and drops the due entries', async () => {
    const r = await t.admin('PATCH', `/points/${systemId}/triggers`, [{ id: triggerId, status: 'inactive' }]);
    expect(r.status).toBe(200);
    const before = (await awardsOf('tokyo')).length;
    t.clock.advance(24 * HOUR);
    await tick();
    expect((await awardsOf('tokyo')).length).toBe(before);
    expect(await t.deps.redis.zcard(t.deps.keys.sched.timeTriggers)).toBe(0);
  });
});
