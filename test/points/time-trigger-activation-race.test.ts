import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Scheduler } from '../../src/workers/scheduler';
import { adminCreate, createTestServer, type TestServer } from '../helpers/server';

// Time-trigger activation (semantics §5.6): every user who exists when a trigger is activated is
// enrolled by the activation pass itself, also one whose creation the history writer has not written
// to Postgres yet (it may have read the outbox record with the configuration from before the
// activation).

let t: TestServer;
let systemId: string;

beforeAll(async () => {
  t = await createTestServer({ now: '2025-03-10T00:00:00Z' });
  await adminCreate(t, '/metrics', [{ key: 'visits', name: 'Visits' }]);
  [{ id: systemId }] = await adminCreate(t, '/points', [{ key: 'xp', name: 'XP' }]);
});
afterAll(async () => t?.close());

describe('time-trigger activation race', () => {
  it('enrols a user created while the trigger is being activated without waiting for a later pass', async () => {
    const [tt] = await adminCreate(t, `/points/${systemId}/triggers`, [
      { type: 'time', points: 10, timeUnit: 'hours', timeInterval: 3 },
    ]);
    // Created just before the activation; its outbox record is not written to history yet.
    expect((await t.api('POST', '/v1/users', { id: 'racer' })).status).toBe(201);
    const act = await t.admin('PATCH', `/points/${systemId}/triggers`, [{ id: tt.id, status: 'active' }]);
    expect(act.body.issues).toEqual([]);
    await new Scheduler(t.deps, { leaseMs: 60_000 }).runOnce();
    const members = await t.deps.redis.zrange(t.deps.keys.sched.timeTriggers, 0, -1);
    expect(members.filter((m) => m.startsWith(`${tt.id}|`) && m.endsWith('|racer'))).toHaveLength(1);
  });
});
