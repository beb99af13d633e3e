import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { userPart } from '../helpers/user-hash';
import { userField } from '../../src/redis/user-hash';
import { adminCreate, createTestServer, type TestServer } from '../helpers/server';

// Idempotency (application-api §4) and per-user serialisation of parallel events (semantics §0, §2.1),
// over a real socket with truly parallel requests.

let t: TestServer;
let origin: string;
let n = 0;
const uid = () => `idem-user-${++n}`;

interface Res {
  status: number;
  body: any;
}

async function post(path: string, body: unknown, headers: Record<string, string> = {}): Promise<Res> {
  const res = await fetch(`${origin}${path}`, {
    method: 'POST',
    headers: { 'X-API-KEY': t.appKey, 'Content-Type': 'application/json', ...headers },
    body: JSON.stringify(body),
  });
  return { status: res.status, body: await res.json() };
}

const event = (key: string, user: Record<string, unknown> | string, value: number, idem?: string) =>
  post(
    `/v1/metrics/${key}/event`,
    { user: typeof user === 'string' ? { id: user } : user, value },
    idem === undefined ? {} : { 'Idempotency-Key': idem },
  );

beforeAll(async () => {
  t = await createTestServer();
  origin = await t.listen();
});
afterAll(async () => t.close());

describe('parallel events', () => {
  it('applies 250 parallel events of one user one at a time: exact total, points and achievements', async () => {
    const [m] = await adminCreate(t, '/metrics', [{ key: 'par', name: 'Par' }]);
    const [s] = await adminCreate(t, '/points', [{ key: 'par-xp', name: 'Par XP' }]);
    const [mt, uc] = await adminCreate(t, `/points/${s.id}/triggers`, [
      { type: 'metric', points: 10, metricId: m.id, metricThreshold: 1, status: 'active' },
      { type: 'user_creation', points: 3, status: 'active' },
    ]);
    await adminCreate(t, '/achievements', [
      { key: 'par-5', name: 'Five', trigger: 'metric', metricId: m.id, metricValue: 5, status: 'active' },
      { key: 'par-20', name: 'Twenty', trigger: 'metric', metricId: m.id, metricValue: 20, status: 'active' },
    ]);
    const u = uid();
    const N = 250;
    const results = await Promise.all(Array.from({ length: N }, () => event('par', u, 0.1)));
    expect(results.map((r) => r.status)).toEqual(Array(N).fill(201));

    // Each response reflects the state right after its own event: totals 0.1, 0.2, …, 25 exactly.
    const totals = results.map((r) => r.body.total).sort((a, b) => a - b);
    expect(totals).toEqual(Array.from({ length: N }, (_, i) => Number(((i + 1) / 10).toFixed(1))));
    expect(new Set(results.map((r) => r.body.eventId)).size).toBe(N);

    const completed = results.flatMap((r) => r.body.achievements.map((a: any) => a.key)).sort();
    expect(completed).toEqual(['par-20', 'par-5']);
    const fiveAt = results.find((r) => r.body.achievements.some((a: any) => a.key === 'par-5'))!;
    expect(fiveAt.body.total).toBe(5);

    const allAwards = results.flatMap((r) => r.body.points['par-xp']?.awards ?? []);
    expect(allAwards.filter((a: any) => a.trigger.id === uc.id)).toHaveLength(1);
    expect(allAwards.filter((a: any) => a.trigger.id === mt.id)).toHaveLength(25);
    const added = results.reduce((sum, r) => sum + (r.body.points['par-xp']?.added ?? 0), 0);
    expect(added).toBe(253);
    // Award totals form one exact sequence: no lost or duplicated update.
    expect(allAwards.map((a: any) => a.total).sort((a: number, b: number) => a - b)).toEqual([
      3,
      ...Array.from({ length: 25 }, (_, i) => 13 + 10 * i),
    ]);
    expect(await t.deps.redis.hget(t.deps.keys.user(u).hash, userField('metrics', m.id))).toBe('25000000');
    expect(await t.deps.redis.hget(t.deps.keys.user(u).hash, userField('points', s.id))).toBe('253');
    await t.admin('PATCH', `/points/${s.id}/triggers`, [{ id: uc.id, status: 'inactive' }]);
  });

  it('keeps parallel users independent', async () => {
    await adminCreate(t, '/metrics', [{ key: 'many', name: 'Many' }]);
    const users = Array.from({ length: 40 }, () => uid());
    const results = await Promise.all(users.flatMap((u) => [1, 2, 3, 4, 5].map((v) => event('many', u, v))));
    expect(results.every((r) => r.status === 201)).toBe(true);
    const last = await Promise.all(users.map((u) => event('many', u, 0)));
    expect(last.map((r) => r.body.total)).toEqual(Array(users.length).fill(15));
  });
});

describe('idempotency', () => {
  it('200 parallel requests with 20 keys × 10: each key processed once (201), the rest replayed (202)', async () => {
    const [m] = await adminCreate(t, '/metrics', [{ key: 'idem', name: 'Idem' }]);
    const [s] = await adminCreate(t, '/points', [{ key: 'idem-xp', name: 'Idem XP' }]);
    await adminCreate(t, `/points/${s.id}/triggers`, [
      { type: 'metric', points: 1, metricId: m.id, metricThreshold: 1, status: 'active' },
    ]);
    const u = uid();
    const keys = Array.from({ length: 20 }, (_, i) => `key-${i}`);
    const requests = keys.flatMap((k) => Array.from({ length: 10 }, () => k));
    // Shuffle so duplicates are interleaved.
    for (let i = requests.length - 1; i > 0; i--) {
      const j = Math.floor(Math.random() * (i + 1));
      [requests[i], requests[j]] = [requests[j]!, requests[i]!];
    }
    const results = await Promise.all(requests.map((k) => event('idem', u, 2, k).then((r) => ({ k, ...r }))));

    for (const k of keys) {
      const mine = results.filter((r) => r.k === k);
      const created = mine.filter((r) => r.status === 201);
      const replayed = mine.filter((r) => r.status === 202);
      expect(created).toHaveLength(1);
      expect(replayed).toHaveLength(9);
      expect(created[0]!.body).toMatchObject({ idempotencyKey: k, idempotentReplayed: false });
      for (const r of replayed) {
        expect(r.body).toMatchObject({
          eventId: created[0]!.body.eventId,
          metricId: m.id,
          achievements: [],
          points: {},
          leaderboards: {},
          idempotencyKey: k,
          idempotentReplayed: true,
        });
        expect(r.body.currentStreak.extended).toBe(false);
        // A replay answers after the original committed: its total includes the original.
        expect(r.body.total).toBeGreaterThanOrEqual(created[0]!.body.total);
      }
    }
    const totals = results
      .filter((r) => r.status === 201)
      .map((r) => r.body.total)
      .sort((a, b) => a - b);
    expect(totals).toEqual(Array.from({ length: 20 }, (_, i) => 2 * (i + 1)));
    const after = await event('idem', u, 0);
    expect(after.body.total).toBe(40);
    expect(await t.deps.redis.hget(t.deps.keys.user(u).hash, userField('points', s.id))).toBe('40');
  });

  it('a replay answers 202 with the current state and changes nothing (no upsert, no value)', async () => {
    const [m] = await adminCreate(t, '/metrics', [{ key: 'replay', name: 'Replay' }]);
    const [plan] = await adminCreate(t, '/attributes', [{ key: 'plan', name: 'Plan', type: 'user' }]);
    const [s] = await adminCreate(t, '/points', [{ key: 'replay-xp', name: 'Replay XP' }]);
    await adminCreate(t, `/points/${s.id}/triggers`, [
      { type: 'metric', points: 1, metricId: m.id, metricThreshold: 1, status: 'active' },
    ]);
    await adminCreate(t, '/achievements', [
      {
        key: 'replay-pro',
        name: 'Pro',
        trigger: 'metric',
        metricId: m.id,
        metricValue: 1,
        status: 'active',
        userAttributes: [{ attributeId: plan.id, attributeValue: 'pro' }],
      },
    ]);
    const u = uid();
    const original = await event(
      'replay',
      { id: u, email: 'first@x.test', name: 'First', tz: 'Europe/London', attributes: { plan: 'basic' } },
      5,
      'once',
    );
    expect(original.status).toBe(201);
    expect(original.body.points['replay-xp'].total).toBe(5);
    await event('replay', u, 1);
    const profileKey = t.deps.keys.user(u).hash;
    const before = await t.deps.redis.hgetall(profileKey);
    const metricsBefore = await userPart(t.deps.redis, t.deps.keys, u, 'metrics');

    const replay = await event(
      'replay',
      { id: u, email: 'second@x.test', name: 'Second', tz: 'Pacific/Auckland', attributes: { plan: 'pro' } },
      100,
      'once',
    );
    expect(replay.status).toBe(202);
    expect(replay.body).toEqual({
      eventId: original.body.eventId,
      metricId: m.id,
      total: 6,
      achievements: [],
      currentStreak: {
        length: 0,
        frequency: 'daily',
        started: null,
        periodStart: null,
        periodEnd: null,
        expires: null,
        extended: false,
      },
      points: {},
      leaderboards: {},
      idempotencyKey: 'once',
      idempotentReplayed: true,
    });
    expect(await t.deps.redis.hgetall(profileKey)).toEqual(before);
    expect(before).toMatchObject({
      email: 'first@x.test',
      name: 'First',
      tz: 'Europe/London',
      'a:plan': 'basic',
    });
    expect(await userPart(t.deps.redis, t.deps.keys, u, 'metrics')).toEqual(metricsBefore);
    // The alias shares the scope.
    const alias = await post(
      '/api/metrics/replay/event',
      { user: { id: u }, value: 1 },
      { 'Idempotency-Key': 'once' },
    );
    expect(alias.status).toBe(202);
    expect(alias.body.eventId).toBe(original.body.eventId);
    // The same key for a new user is a first use.
    expect((await event('replay', uid(), 1, 'once')).status).toBe(201);
  });

  it('a replay reports the current streak with extended false', async () => {
    const [m] = await adminCreate(t, '/metrics', [{ key: 'idem-streak', name: 'Idem streak' }]);
    const set = await t.admin('PATCH', '/streaks/settings', {
      enabled: true,
      frequency: 'daily',
      conditions: [{ metricId: m.id, threshold: 1 }],
    });
    expect(set.status).toBe(200);
    try {
      const u = uid();
      const first = await event('idem-streak', u, 1, 'k');
      expect(first.body.currentStreak).toMatchObject({ length: 1, extended: true });
      const again = await event('idem-streak', u, 1, 'k');
      expect(again.status).toBe(202);
      expect(again.body.currentStreak).toEqual({ ...first.body.currentStreak, extended: false });
      // Two days later the replay shows the broken streak.
      t.clock.set('2025-03-12T12:00:00Z');
      const later = await event('idem-streak', u, 1, 'k');
      expect(later.body.currentStreak).toMatchObject({
        length: 0,
        started: null,
        expires: null,
        periodStart: '2025-03-12',
        extended: false,
      });
    } finally {
      t.clock.set('2025-03-10T12:00:00Z');
      await t.admin('PATCH', '/streaks/settings', { enabled: false });
    }
  });

  it('scopes keys per (user, metric)', async () => {
    await adminCreate(t, '/metrics', [
      { key: 'scope-a', name: 'A' },
      { key: 'scope-b', name: 'B' },
    ]);
    const u = uid();
    const v = uid();
    expect((await event('scope-a', u, 1, 'shared')).status).toBe(201);
    expect((await event('scope-a', u, 1, 'shared')).status).toBe(202);
    const otherMetric = await event('scope-b', u, 1, 'shared');
    expect(otherMetric.status).toBe(201);
    expect(otherMetric.body).toMatchObject({ total: 1, idempotentReplayed: false });
    const otherUser = await event('scope-a', v, 1, 'shared');
    expect(otherUser.status).toBe(201);
    expect(otherUser.body).toMatchObject({ total: 1, idempotentReplayed: false });
    expect((await event('scope-a', u, 1, 'other')).body).toMatchObject({
      total: 2,
      idempotentReplayed: false,
    });
  });

  it('omits the idempotency fields without the header and echoes the key with it', async () => {
    await adminCreate(t, '/metrics', [{ key: 'echo', name: 'Echo' }]);
    const plain = await event('echo', uid(), 1);
    expect(plain.body).not.toHaveProperty('idempotencyKey');
    expect(plain.body).not.toHaveProperty('idempotentReplayed');
    const long = 'k'.repeat(255);
    const keyed = await event('echo', uid(), 1, long);
    expect(keyed.status).toBe(201);
    expect(keyed.body).toMatchObject({ idempotencyKey: long, idempotentReplayed: false });
  });
});
