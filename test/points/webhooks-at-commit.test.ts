import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { parseRecord } from '../../src/redis/user-script';
import { resolveWires, wireRef } from '../../src/services/wire-snapshots';
import { userPart } from '../helpers/user-hash';
import { userField } from '../../src/redis/user-hash';
import { HistoryWriter } from '../../src/workers/history-writer';
import { historyHooks } from '../../src/workers/index';
import { adminCreate, createTestServer, type TestServer } from '../helpers/server';

// Points webhooks describe the request as committed (semantics §0, §8.4), a new user's first level
// (§5.11), and the points total bound (README Limits).

let t: TestServer;
let writer: HistoryWriter;
let n = 0;
const uid = () => `pc-${++n}`;

const event = (metric: string, user: string, value: number) =>
  t.api('POST', `/v1/metrics/${metric}/event`, { user: { id: user }, value });

/** Webhook payloads recorded for a user, oldest first (after the history writer has run). */
async function hooks(user: string, type?: string): Promise<any[]> {
  await writer.drainOnce();
  const rows = await t.deps.sql<{ type: string; payload: any }[]>`
    select type, payload from webhook_deliveries where payload->'user'->>'id' = ${user} order by created, type`;
  return rows.filter((r) => !type || r.type === type).map((r) => r.payload);
}

async function system(key: string, extra: Record<string, unknown> = {}) {
  const [s] = await adminCreate(t, '/points', [{ key, name: `System ${key}`, ...extra }]);
  return s as { id: string; key: string };
}

beforeAll(async () => {
  t = await createTestServer();
  writer = new HistoryWriter(t.deps, { hooks: historyHooks, claimIdleMs: 0 });
  await adminCreate(t, '/metrics', [
    { key: 'lessons', name: 'Lessons' },
    { key: 'quiz', name: 'Quiz' },
  ]);
  await adminCreate(t, '/webhooks', [
    {
      url: 'http://127.0.0.1:9/hooks',
      secret: 'secret-secret-secret-1234',
      eventTypes: ['points.changed', 'points.level_changed'],
      enabled: true,
    },
  ]);
});
afterAll(async () => t.close());

describe('points webhooks are built from the configuration at commit', () => {
  it('keeps the level a request reached even when the level is edited before the history is written', async () => {
    const s = await system('commit-a');
    const metricId = t.deps.catalog.snapshot.metricsByKey.get('lessons')!.id;
    await adminCreate(t, `/points/${s.id}/triggers`, [
      { type: 'metric', points: 10, metricId, metricThreshold: 1, status: 'active' },
    ]);
    const [lvl] = await adminCreate(t, `/points/${s.id}/levels`, [
      { key: 'bronze', name: 'Bronze', points: 10 },
    ]);
    const u = uid();
    await writer.drainOnce();
    const r = await event('lessons', u, 1);
    expect(r.body.points['commit-a'].level).toMatchObject({ key: 'bronze' });
    // Edited right after the event, before the writer has seen it.
    const edit = await t.admin('PATCH', `/points/${s.id}/levels`, [
      { id: lvl.id, name: 'Renamed', points: 500 },
    ]);
    expect(edit.status).toBe(200);
    const changed = await hooks(u, 'points.changed');
    expect(changed).toHaveLength(1);
    expect(changed[0].points.level).toMatchObject({ id: lvl.id, name: 'Bronze', points: 10 });
    const level = await hooks(u, 'points.level_changed');
    expect(level).toHaveLength(1);
    expect(level[0]).toMatchObject({
      previousLevel: null,
      newLevel: { id: lvl.id, key: 'bronze', name: 'Bronze', points: 10 },
      points: { key: 'commit-a', total: 10 },
    });
  });

  // A system with a metric trigger (10 points per unit) and a x2 boost running today, both edited or
  // archived right after the requests below, before the history writer builds their webhooks.
  async function boosted(key: string) {
    const s = await system(key);
    const metricId = t.deps.catalog.snapshot.metricsByKey.get('lessons')!.id;
    const [trigger] = await adminCreate(t, `/points/${s.id}/triggers`, [
      { type: 'metric', points: 10, metricId, metricThreshold: 1, status: 'active' },
    ]);
    const [boost] = await adminCreate(t, `/points/${s.id}/boosts`, [
      { name: 'Double', start: '2025-03-09', end: '2025-03-12', multiplier: 2, rounding: 'down' },
    ]);
    await writer.drainOnce();
    return { s, trigger, boost };
  }

  const committedAward = (trigger: any, boost: any) => ({
    awarded: 20,
    total: 20,
    trigger: { ...trigger, points: 10, status: 'active' },
    boosts: [
      {
        id: boost.id,
        name: 'Double',
        status: 'active',
        start: '2025-03-09',
        end: '2025-03-12',
        multiplier: 2,
        rounding: 'down',
      },
    ],
  });

  it('describes the award trigger and boosts as committed when both are edited before the history is written', async () => {
    const { s, trigger, boost } = await boosted('commit-tb');
    const u = uid();
    const r = await event('lessons', u, 1);
    const { id: _id, date: _date, ...answered } = r.body.points['commit-tb'].awards[0];
    expect(answered).toMatchObject(committedAward(trigger, boost));
    // Another user's award through a batch (ops of several users share a script call).
    const v = uid();
    const b = await t.admin('POST', '/metrics/events', [
      { key: 'quiz', user: { id: uid() }, value: 1 },
      { key: 'lessons', user: { id: v }, value: 1 },
    ]);
    expect(b.status).toBe(202);
    const edits = await Promise.all([
      t.admin('PATCH', `/points/${s.id}/triggers`, [{ id: trigger.id, points: 99 }]),
      t.admin('PATCH', `/points/${s.id}/boosts`, [
        { id: boost.id, name: 'Triple', multiplier: 3, end: '2025-03-10' },
      ]),
    ]);
    expect(edits.map((e) => e.status)).toEqual([200, 200]);
    expect(t.deps.catalog.snapshot.triggersById.get(trigger.id)?.points).toBe(99);
    for (const user of [u, v]) {
      const changed = (await hooks(user, 'points.changed')).filter((h) => h.points.key === 'commit-tb');
      expect(changed).toHaveLength(1);
      expect(changed[0].points.awards).toHaveLength(1);
      expect(changed[0].points.awards[0]).toMatchObject(committedAward(trigger, boost));
      expect(changed[0].points.awards[0].trigger).toEqual(answered.trigger);
    }
  });

  it('describes the award trigger and boosts as committed when both are deleted before the history is written', async () => {
    const { s, trigger, boost } = await boosted('commit-tc');
    const u = uid();
    expect((await event('lessons', u, 1)).status).toBe(201);
    await t.admin('DELETE', `/points/${s.id}/boosts?ids=${boost.id}`);
    await t.admin('DELETE', `/points/${s.id}/triggers?ids=${trigger.id}`);
    const changed = (await hooks(u, 'points.changed')).filter((h) => h.points.key === 'commit-tc');
    expect(changed).toHaveLength(1);
    expect(changed[0].points.awards[0]).toMatchObject(committedAward(trigger, boost));
  });

  it('sends no level webhook for events that ran before the level existed', async () => {
    const s = await system('commit-b');
    const metricId = t.deps.catalog.snapshot.metricsByKey.get('lessons')!.id;
    await adminCreate(t, `/points/${s.id}/triggers`, [
      { type: 'metric', points: 10, metricId, metricThreshold: 1, status: 'active' },
    ]);
    await writer.drainOnce();
    const u = uid();
    await event('lessons', u, 1);
    await event('lessons', u, 1);
    await adminCreate(t, `/points/${s.id}/levels`, [{ key: 'late', name: 'Late', points: 5 }]);
    const ofB = (hs: any[]) => hs.filter((h) => h.points.key === 'commit-b');
    expect(ofB(await hooks(u, 'points.level_changed'))).toEqual([]);
    const changed = ofB(await hooks(u, 'points.changed'));
    expect(changed.map((c) => c.points.level)).toEqual([null, null]);
  });
});

describe("a new user's first level (semantics §5.11)", () => {
  let sys: { id: string; key: string };
  let starter: { id: string };
  beforeAll(async () => {
    sys = await system('first-level');
    [starter] = await adminCreate(t, `/points/${sys.id}/levels`, [
      { key: 'starter', name: 'Starter', points: 0 },
    ]);
  });

  const firstLevelHook = async (u: string) => {
    const level = (await hooks(u, 'points.level_changed')).filter((h) => h.points.key === 'first-level');
    expect(level).toHaveLength(1);
    expect(level[0]).toMatchObject({
      previousLevel: null,
      newLevel: { id: starter.id, key: 'starter', points: 0 },
      points: { id: sys.id, key: 'first-level', total: 0 },
    });
  };

  it('an event creating the user reports the level in its points entry and sends level_changed from null', async () => {
    const u = uid();
    const r = await event('quiz', u, 1);
    expect(r.status).toBe(201);
    expect(r.body.points['first-level']).toMatchObject({
      total: 0,
      added: 0,
      awards: [],
      level: { id: starter.id, key: 'starter', points: 0 },
    });
    await firstLevelHook(u);
    // The next event: the user had that level already.
    const again = await event('quiz', u, 1);
    expect(again.body.points).not.toHaveProperty('first-level');
  });

  it('identification creating the user sends level_changed from null', async () => {
    const u = uid();
    expect((await t.api('POST', '/v1/users', { id: u })).status).toBe(201);
    await firstLevelHook(u);
  });

  it('an achievement completion creating the user reports the level', async () => {
    await adminCreate(t, '/achievements', [
      { key: 'hello', name: 'Hello', trigger: 'api', status: 'active' },
    ]);
    const u = uid();
    const r = await t.api('POST', '/v1/achievements/hello/complete', { user: { id: u } });
    expect(r.status).toBe(201);
    expect(r.body.points['first-level']).toMatchObject({ level: { key: 'starter' } });
    await firstLevelHook(u);
  });

  it('a batch item creating the user sends level_changed from null', async () => {
    const u = uid();
    const r = await t.admin('POST', '/metrics/events', [{ key: 'quiz', user: { id: u }, value: 1 }]);
    expect(r.status).toBe(202);
    await firstLevelHook(u);
  });
});

describe('points totals are bounded like metric totals', () => {
  it('refuses with 422 the event whose award would carry a total past 9,007,199,254, changing nothing', async () => {
    const s = await system('huge');
    const metricId = t.deps.catalog.snapshot.metricsByKey.get('lessons')!.id;
    await adminCreate(t, `/points/${s.id}/triggers`, [
      { type: 'metric', points: 999_999_999, metricId, metricThreshold: 1, status: 'active' },
    ]);
    const u = uid();
    expect((await event('lessons', u, 9)).body.points.huge.total).toBe(8_999_999_991);
    const before = await userPart(t.deps.redis, t.deps.keys, u, 'metrics');
    const r = await event('lessons', u, 1);
    expect([r.status, r.body]).toEqual([
      422,
      { error: 'The event would carry a points total beyond 9007199254' },
    ]);
    expect(await userPart(t.deps.redis, t.deps.keys, u, 'metrics')).toEqual(before);
    expect(Number(await t.deps.redis.hget(t.deps.keys.user(u).hash, userField('points', s.id)))).toBe(
      8_999_999_991,
    );
    // Nothing was written for a new user either.
    const fresh = uid();
    expect((await event('lessons', fresh, 10)).status).toBe(422);
    expect(await t.deps.redis.exists(t.deps.keys.user(fresh).hash)).toBe(0);
    await t.admin('DELETE', `/points?ids=${s.id}`);
  });
});

describe('wire snapshots: the outbox names the configured objects instead of carrying them', () => {
  /** The newest outbox entry of a user's shard (its id and fields). */
  async function lastEntry(user: string): Promise<[string, string[]]> {
    const [entry] = (await t.deps.redis.xrevrange(
      t.deps.keys.user(user).outbox,
      '+',
      '-',
      'COUNT',
      1,
    )) as Array<[string, string[]]>;
    return entry!;
  }
  /** Field w of the newest outbox entry of a user's shard. */
  async function lastWire(user: string): Promise<string | undefined> {
    const [, fields] = await lastEntry(user);
    const i = fields.indexOf('w');
    return i >= 0 ? fields[i + 1] : undefined;
  }
  /** A new system (so a new configuration) with a metric trigger and one level at its points. */
  async function leveled(key: string, points: number, level: { key: string; name: string }) {
    const s = await system(key);
    const metricId = t.deps.catalog.snapshot.metricsByKey.get('lessons')!.id;
    await adminCreate(t, `/points/${s.id}/triggers`, [
      { type: 'metric', points, metricId, metricThreshold: 1, status: 'active' },
    ]);
    await adminCreate(t, `/points/${s.id}/levels`, [{ ...level, points }]);
    return s;
  }
  const snapshots = async () =>
    (await t.deps.sql<{ n: number }[]>`select count(*)::int as n from wire_snapshots`)[0]!.n;

  it('stores one row per configuration, and every op of it names that row', async () => {
    const s = await leveled('snap-a', 5, { key: 'snap-l1', name: 'Snap one' });
    const users = [uid(), uid(), uid()];
    expect((await event('lessons', users[0]!, 1)).status).toBe(201);
    const rows = await snapshots();
    await Promise.all(users.map((u) => event('lessons', u, 1)));
    expect(await snapshots()).toBe(rows);
    const ids = new Set(await Promise.all(users.map(lastWire)));
    expect(ids.size).toBe(1);
    const [id] = [...ids];
    expect(id).toMatch(/^w[A-Za-z0-9_-]{27}$/);
    const [row] = await t.deps.sql<{ body: string }[]>`select body from wire_snapshots where id = ${id!}`;
    expect(JSON.parse(row!.body)[s.id].lv).toEqual([expect.objectContaining({ key: 'snap-l1', points: 5 })]);
    // The webhooks are built from it.
    const changed = (await hooks(users[1]!, 'points.changed')).filter((h) => h.points.key === 'snap-a');
    expect(changed).toHaveLength(1);
    expect(changed[0].points.level).toMatchObject({ key: 'snap-l1', name: 'Snap one' });
  });

  it('carries the JSON itself while Postgres cannot store a new configuration, with the same webhooks', async () => {
    const s = await leveled('snap-b', 7, { key: 'snap-l2', name: 'Snap two' });
    const insert = vi.spyOn(t.deps.db, 'insert').mockImplementationOnce(() => {
      throw new Error('Postgres away');
    });
    const u = uid();
    try {
      expect((await event('lessons', u, 1)).status).toBe(201);
    } finally {
      insert.mockRestore();
    }
    const w = await lastWire(u);
    expect(JSON.parse(w!)[s.id].sb).toMatchObject({ key: 'snap-b' });
    const level = (await hooks(u, 'points.level_changed')).filter((h) => h.points.key === 'snap-b');
    expect(level).toEqual([
      expect.objectContaining({ previousLevel: null, newLevel: expect.objectContaining({ key: 'snap-l2' }) }),
    ]);
  });

  it('stores nothing for ops that write no history (simulation replays)', async () => {
    const rows = await snapshots();
    expect(wireRef({ ...t.deps, history: false }, '{"replay-only":{}}')).toBe('');
    expect(await wireRef(t.deps, '{"live":{}}')).toMatch(/^w/);
    expect(await snapshots()).toBe(rows + 1);
  });

  it('a record naming a snapshot that is gone is still written, without the configured objects', async () => {
    const u = uid();
    expect((await event('lessons', u, 1)).status).toBe(201);
    const [entryId, fields] = await lastEntry(u);
    expect(fields).toContain('w');
    const record = parseRecord(
      fields.map((f: string, i: number) => (fields[i - 1] === 'w' ? 'wGoneGoneGoneGoneGoneGoneGone' : f)),
    )!;
    const entries = [{ entryId, stream: t.deps.keys.user(u).outbox, record }];
    await resolveWires(t.deps, entries);
    expect(record.levels!.every((l) => l.a === false && l.sb === undefined)).toBe(true);
    expect(record.awards.length).toBeGreaterThan(0);
  });
});
