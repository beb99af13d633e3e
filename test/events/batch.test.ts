import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { userField } from '../../src/redis/user-hash';
import { idempotencyField, keyedEventId } from '../../src/engine/idempotency';
import { acceptBatch, batchEventId, processBatch } from '../../src/services/batch-events';
import { runUserOp } from '../../src/services/user-op';
import { isCluster } from '../../src/redis/client';
import { localDate } from '../../src/engine/periods';
import { BatchResumer } from '../../src/workers/batches';
import { adminCreate, createTestServer, type TestServer } from '../helpers/server';

// POST /admin/v1/metrics/events (admin-api §6).

let t: TestServer;
let metricId: string;
let sysId: string;
const batch = (items: unknown) => t.admin('POST', '/metrics/events', items);
const total = async (user: string, mid = metricId) =>
  Number((await t.deps.redis.hget(t.deps.keys.user(user).hash, userField('metrics', mid))) ?? '0') / 1e6;
const points = async (user: string) =>
  Number((await t.deps.redis.hget(t.deps.keys.user(user).hash, userField('points', sysId))) ?? '0');

/**
 * Item `i` of an accepted batch as its processor runs it (a value of 1): its reply marker in
 * `markHash` (a single Redis's batch hash) or in a key of its own.
 */
const itemOp = (batchId: string, user: { id: string }, i: number, markHash?: string) => ({
  kind: 'event' as const,
  metricId,
  user,
  valueMicros: 1_000_000,
  opId: batchEventId(batchId, i),
  markMs: 600_000,
  markHash,
});

beforeAll(async () => {
  t = await createTestServer();
  [{ id: metricId }] = await adminCreate(t, '/metrics', [{ key: 'steps', name: 'Steps' }]);
  await adminCreate(t, '/metrics', [{ key: 'other', name: 'Other' }]);
  await adminCreate(t, '/attributes', [
    { key: 'plan', name: 'Plan', type: 'user' },
    { key: 'source', name: 'Source', type: 'event' },
  ]);
  [{ id: sysId }] = await adminCreate(t, '/points', [{ key: 'xp', name: 'XP' }]);
  await adminCreate(t, `/points/${sysId}/triggers`, [
    { type: 'metric', points: 10, metricId, metricThreshold: 3, status: 'active' },
  ]);
  await adminCreate(t, '/achievements', [
    { key: 'ten', name: 'Ten', trigger: 'metric', metricId, metricValue: 10, status: 'active' },
  ]);
});
afterAll(async () => t.close());

describe('POST /admin/v1/metrics/events: validation, all or nothing', () => {
  const ok = (user: string) => ({ key: 'steps', user: { id: user }, value: 1 });

  it('answers 400 when the body is not an array, and 422 when it is empty or above 1000 items', async () => {
    expect(await batch({ key: 'steps' })).toMatchObject({ status: 400 });
    const empty = await batch([]);
    expect(empty.status).toBe(422);
    expect(empty.body).toEqual({ error: expect.any(String) });
    const big = await batch(Array.from({ length: 1001 }, (_, i) => ok(`v-big-${i}`)));
    expect(big.status).toBe(422);
    expect(await t.deps.redis.exists(t.deps.keys.user('v-big-0').hash)).toBe(0);
  });

  it('answers 400 naming the item index for a structural problem, before anything is processed', async () => {
    const r = await batch([ok('v-s1'), { key: 'steps', user: { id: 'v-s2' }, value: '3' }]);
    expect(r.status).toBe(400);
    expect(r.body).toEqual({ error: 'Item 1: value must be a number' });
    const r2 = await batch([ok('v-s1'), { key: 'steps', value: 1 }]);
    expect(r2.body).toEqual({ error: 'Item 1: user is required' });
    expect(await t.deps.redis.exists(t.deps.keys.user('v-s1').hash)).toBe(0);
  });

  it('answers 404 "Metric not found: <key>" for an unknown metric key', async () => {
    const r = await batch([ok('v-m1'), { key: 'nope', user: { id: 'v-m2' }, value: 1 }]);
    expect(r).toMatchObject({ status: 404, body: { error: 'Metric not found: nope' } });
    expect(await t.deps.redis.exists(t.deps.keys.user('v-m1').hash)).toBe(0);
  });

  it('answers 422 naming the item index for a domain problem, and changes nothing', async () => {
    const cases: Array<[unknown, string]> = [
      [{ ...ok('v-d'), user: { id: 'v-d', tz: 'Mars/Base' } }, 'Item 1: Unknown time zone: Mars/Base'],
      [{ ...ok('v-d'), attributes: { nope: 'x' } }, 'Item 1: Invalid attribute keys: nope.'],
      [
        { ...ok('v-d'), user: { id: 'v-d', attributes: { nope: 'x' } } },
        'Item 1: Invalid attribute keys: nope.',
      ],
      [{ ...ok('v-d'), idempotencyKey: '' }, 'Item 1: idempotencyKey must be 1 to 255 characters'],
      [{ ...ok('v-d'), value: 1e300 }, 'Item 1: value is too large'],
    ];
    for (const [item, error] of cases) {
      const r = await batch([ok('v-d0'), item]);
      expect([r.status, r.body]).toEqual([422, { error }]);
    }
    // A non-finite number (1e400 parses as Infinity).
    const res = await t.app.request('/admin/v1/metrics/events', {
      method: 'POST',
      headers: { 'X-API-KEY': t.adminKey, 'Content-Type': 'application/json' },
      body: '[{"key":"steps","user":{"id":"v-d0"},"value":1},{"key":"steps","user":{"id":"v-d"},"value":1e400}]',
    });
    expect([res.status, await res.json()]).toEqual([422, { error: 'Item 1: value must be a finite number' }]);
    expect(await t.deps.redis.exists(t.deps.keys.user('v-d0').hash)).toBe(0);
  });

  it('is described in /openapi.json', async () => {
    const doc = (await (await t.app.request('/openapi.json')).json()) as any;
    const op = doc.paths['/admin/v1/metrics/events'].post;
    expect(Object.keys(op.responses)).toEqual(expect.arrayContaining(['202', '400', '404', '422', '503']));
    expect(op.requestBody.content['application/json'].schema).toMatchObject({
      type: 'array',
      maxItems: 1000,
    });
  });

  it('refuses application keys', async () => {
    const r = await t.api('POST', '/admin/v1/metrics/events', [ok('v-k')]);
    expect(r.status).toBe(401);
  });
});

describe('POST /admin/v1/metrics/events: processing', () => {
  it('processes every item like a single event (identification, totals, triggers, achievements, history) and answers 202', async () => {
    const items = [
      { key: 'steps', user: { id: 'p-1', name: 'Ann', attributes: { plan: 'pro' } }, value: 2 },
      { key: 'steps', user: { id: 'p-2' }, value: 5, attributes: { source: 'app' } },
      { key: 'steps', user: { id: 'p-1' }, value: 1.5 },
      { key: 'other', user: { id: 'p-1' }, value: 7 },
      { key: 'steps', user: { id: 'p-1' }, value: 7 },
    ];
    const r = await batch(items);
    expect([r.status, r.body]).toEqual([202, { accepted: 5 }]);
    expect(await total('p-1')).toBe(10.5);
    expect(await total('p-2')).toBe(5);
    expect(await points('p-1')).toBe(30);
    expect(await points('p-2')).toBe(10);
    const u = await t.api('GET', '/v1/users/p-1');
    expect(u.body).toMatchObject({ id: 'p-1', name: 'Ann', attributes: { plan: 'pro' } });
    const ach = await t.api('GET', '/v1/users/p-1/achievements');
    expect(ach.body.map((a: any) => a.key)).toContain('ten');
    await t.settle();
    // History in array order per user (the user's op sequence).
    const rows = await t.deps.sql<{ user_id: string; value_micros: number }[]>`
      select user_id, value_micros from events where user_id in ('p-1','p-2') order by user_id, seq`;
    expect(rows.map((r) => [r.user_id, r.value_micros / 1e6])).toEqual([
      ['p-1', 2],
      ['p-1', 1.5],
      ['p-1', 7],
      ['p-1', 7],
      ['p-2', 5],
    ]);
    // Each item's event id is its pre-minted batch id (resumption recognises it).
    const ids = await t.deps.sql<{ id: string }[]>`select id::text from events where user_id = 'p-2'`;
    expect(ids[0]!.id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
  });

  it('moves every item on leaderboards: those the script moves and those with breakdowns the API moves', async () => {
    const [laps] = await adminCreate(t, '/metrics', [{ key: 'laps', name: 'Laps' }]);
    const plan = t.deps.catalog.snapshot.userAttributesByKey.get('plan')!;
    await adminCreate(t, '/leaderboards', [
      { key: 'laps-all', name: 'Laps', rankBy: 'metric', metricId: laps.id, status: 'active' },
      {
        key: 'laps-plan',
        name: 'Laps by plan',
        rankBy: 'metric',
        metricId: laps.id,
        breakdownAttributes: [plan.id],
        status: 'active',
      },
    ]);
    const users = Array.from({ length: 8 }, (_, i) => ({ id: `lb-${i}`, plan: i % 2 ? 'pro' : 'free' }));
    const items = Array.from({ length: 40 }, (_, k) => {
      const u = users[k % users.length]!;
      return { key: 'laps', user: { id: u.id, attributes: { plan: u.plan } }, value: 1 + (k % 3) };
    });
    expect((await batch(items)).status).toBe(202);
    const expected = new Map<string, number>();
    for (const it of items) expected.set(it.user.id, (expected.get(it.user.id) ?? 0) + it.value);
    const all = (await t.api('GET', '/v1/leaderboards/laps-all?limit=100')).body.rankings;
    expect(new Map(all.map((r: any) => [r.userId, r.value]))).toEqual(expected);
    const pro = (await t.api('GET', '/v1/leaderboards/laps-plan?userAttributes=plan%3Apro&limit=100')).body
      .rankings;
    expect(new Map(pro.map((r: any) => [r.userId, r.value]))).toEqual(
      new Map([...expected].filter(([id]) => users.find((u) => u.id === id)!.plan === 'pro')),
    );
    expect(pro.map((r: any) => r.rank)).toEqual([1, 2, 3, 4]);
  });

  it('groups the items of one script call by day and board run: each lands on its own run, once', async () => {
    const [swims] = await adminCreate(t, '/metrics', [{ key: 'swims', name: 'Swims' }]);
    const [board] = await adminCreate(t, '/leaderboards', [
      {
        key: 'swims-daily',
        name: 'Swims today',
        rankBy: 'metric',
        metricId: swims.id,
        start: '2025-01-01',
        runUnit: 'day',
        runInterval: 1,
        status: 'active',
      },
    ]);
    // UTC+14 and UTC-11 are always on different local dates (UTC shares one of them part of the day):
    // two or three groups in every multi-op call.
    const zones = ['Pacific/Kiritimati', 'Pacific/Pago_Pago', 'UTC'];
    const items = Array.from({ length: 12 }, (_, k) => ({
      key: 'swims',
      user: { id: `zone-${k % 3}`, tz: zones[k % 3] },
      value: 1 + (k % 4),
      idempotencyKey: `swim-${k}`,
    }));
    const spy = vi.spyOn(t.deps.redis, 'applyUserOp');
    try {
      expect((await batch(items)).status).toBe(202);
      // Four waves of three users, one call each.
      expect(spy.mock.calls.length).toBe(4);
    } finally {
      spy.mockRestore();
    }
    // Replayed keys change nothing.
    expect((await batch(items)).status).toBe(202);
    for (let u = 0; u < 3; u++) {
      const sum = items.filter((_, k) => k % 3 === u).reduce((a, it) => a + it.value, 0);
      expect(await total(`zone-${u}`, swims.id)).toBe(sum);
      const run = localDate(t.clock.now(), zones[u]!);
      // The user's value on its own day's run, and that run's ranking holds the users of that day
      // only (the moves the script made went to the run of the op's group).
      expect(await t.deps.redis.hget(t.deps.keys.user(`zone-${u}`).hash, userField('boards', board.id))).toBe(
        `${run}|${sum * 1e6}`,
      );
      const sameDay = zones.filter((z) => localDate(t.clock.now(), z) === run).length;
      expect(await t.deps.redis.zcard(t.deps.keys.board(board.id).ranking(run, ''))).toBe(sameDay);
    }
  });

  it('skips items whose idempotencyKey was already used for the same user and metric', async () => {
    const first = await t.api(
      'POST',
      '/v1/metrics/steps/event',
      { user: { id: 'i-1' }, value: 1 },
      { 'Idempotency-Key': 'k1' },
    );
    expect(first.status).toBe(201);
    const r = await batch([
      { key: 'steps', user: { id: 'i-1' }, value: 100, idempotencyKey: 'k1' },
      { key: 'steps', user: { id: 'i-1' }, value: 2, idempotencyKey: 'k2' },
      { key: 'steps', user: { id: 'i-1' }, value: 200, idempotencyKey: 'k2' },
      { key: 'other', user: { id: 'i-1' }, value: 4, idempotencyKey: 'k2' },
      { key: 'steps', user: { id: 'i-2' }, value: 3, idempotencyKey: 'k2' },
    ]);
    expect([r.status, r.body]).toEqual([202, { accepted: 5 }]);
    expect(await total('i-1')).toBe(3);
    expect(await total('i-2')).toBe(3);
    const other = t.deps.catalog.snapshot.metricsByKey.get('other')!.id;
    expect(await total('i-1', other)).toBe(4);

    // Compact entries (src/engine/idempotency.ts): the single event's id is derived from its key and
    // first use, so only the ms is kept; a batch item's id follows from its batch, so it is kept.
    const steps = t.deps.catalog.snapshot.metricsByKey.get('steps')!.id;
    const windowMs = t.deps.config.IDEMPOTENCY_WINDOW_DAYS * 86_400_000;
    const bucket = t.deps.keys.user('i-1').idemBucket(Math.floor(t.clock.now() / windowMs));
    const stored = await t.deps.redis.hgetall(bucket);
    expect(stored[idempotencyField(steps, 'k1')]).toBe(String(t.clock.now()));
    expect(first.body.eventId).toBe(keyedEventId('i-1', steps, 'k1', t.clock.now()));
    const k2 = stored[idempotencyField(steps, 'k2')]!;
    expect(k2).toMatch(/^[0-9a-f-]{36}\|\d+$/);
    expect(Object.keys(stored).every((f) => /^[0-9a-f]{16}$/.test(f))).toBe(true);
    // A single event reusing the batch item's key replays it, with the item's event id.
    const again = await t.api(
      'POST',
      '/v1/metrics/steps/event',
      { user: { id: 'i-1' }, value: 1 },
      { 'Idempotency-Key': 'k2' },
    );
    expect(again.status).toBe(202);
    expect(again.body).toMatchObject({ eventId: k2.split('|')[0], idempotentReplayed: true, total: 3 });
    // And the first event's key replays the derived id.
    const k1 = await t.api(
      'POST',
      '/v1/metrics/steps/event',
      { user: { id: 'i-1' }, value: 1 },
      { 'Idempotency-Key': 'k1' },
    );
    expect(k1.body).toMatchObject({ eventId: first.body.eventId, idempotentReplayed: true });
    await t.settle();
    const keys = await t.deps.sql<{ id: string; k: string }[]>`
      select id, idempotency_key as k from events where user_id = 'i-1' and metric_id = ${steps} order by k`;
    expect(keys.map((r) => [r.id, r.k])).toEqual([
      [first.body.eventId, 'k1'],
      [k2.split('|')[0], 'k2'],
    ]);
  });

  it('has each multi-op call answer short for items that leave nothing to do: d (committed), r (replayed)', async () => {
    const spy = vi.spyOn(t.deps.redis, 'applyUserOp');
    try {
      const items = [0, 1, 2].map((i) => ({
        key: 'other',
        user: { id: `short-${i}` },
        value: 1,
        idempotencyKey: 's',
      }));
      expect((await batch(items)).status).toBe(202);
      expect((await batch(items)).status).toBe(202);
      const replies = await Promise.all(spy.mock.results.map((r) => r.value as Promise<string | string[]>));
      // 'other' is on no leaderboard: nothing is left to the API, so no record travels back.
      expect(replies.flat()).toEqual(['d', 'd', 'd', 'r', 'r', 'r']);
    } finally {
      spy.mockRestore();
    }
    expect(await total('short-0', t.deps.catalog.snapshot.metricsByKey.get('other')!.id)).toBe(1);
  });

  it('keeps parallel batches touching the same users exact (totals, one award per crossing)', async () => {
    const users = Array.from({ length: 20 }, (_, i) => `par-${i}`);
    const batches = Array.from({ length: 5 }, (_, b) =>
      Array.from({ length: 200 }, (_, i) => ({ key: 'steps', user: { id: users[(i + b) % 20] }, value: 1 })),
    );
    const rs = await Promise.all(batches.map((b) => batch(b)));
    expect(rs.map((r) => r.status)).toEqual([202, 202, 202, 202, 202]);
    for (const u of users) {
      expect(await total(u)).toBe(50);
      // floor(50 / 3) crossings of 10 points, never one twice.
      expect(await points(u)).toBe(160);
    }
    await t.settle();
    const n = (
      await t.deps.sql<{ n: number }[]>`
      select count(*)::int as n from points_awards where user_id like 'par-%'`
    )[0]!.n;
    expect(n).toBe(20 * 16);
  });

  it('leaves nothing of a processed batch in Redis (batch record, progress, reply markers)', async () => {
    const r = await batch([
      { key: 'steps', user: { id: 'g-1' }, value: 1 },
      { key: 'steps', user: { id: 'g-2' }, value: 1 },
    ]);
    expect(r.status).toBe(202);
    const keys = await t.redisKeys();
    expect(keys.filter((k) => k.includes('{batch}'))).toEqual([]);
    expect(keys.filter((k) => /:op:/.test(k) && /g-[12]/.test(k))).toEqual([]);
  });
});

describe('event batches: durability', () => {
  it('resumes an interrupted batch from its last record, applying committed items once', async () => {
    const items = Array.from({ length: 30 }, (_, i) => ({
      m: metricId,
      u: { id: `r-${i % 3}` },
      v: 1_000_000,
    }));
    const accepted = await acceptBatch(t.deps, items);
    // A single Redis keeps the batch's reply markers in one hash (a Cluster in per-item keys).
    expect(accepted.marks).toBe(!isCluster(t.deps.redis));
    // The "crashed" processor committed the first 10 items (and recorded nothing).
    const markHash = accepted.marks ? t.deps.keys.batches.marks(accepted.id) : undefined;
    for (let i = 0; i < 10; i++) await runUserOp(t.deps, itemOp(accepted.id, items[i]!.u, i, markHash));
    if (accepted.marks) {
      expect(await t.deps.redis.hlen(t.deps.keys.batches.marks(accepted.id))).toBe(10);
    }
    // Its lease expires; a resumer of any process takes the batch over.
    await t.deps.redis.zadd(t.deps.keys.batches.pending, '0', accepted.id);
    expect(await new BatchResumer(t.deps).pass()).toBe(1);
    for (let u = 0; u < 3; u++) expect(await total(`r-${u}`)).toBe(10);
    expect(await t.deps.redis.exists(t.deps.keys.batches.batch(accepted.id))).toBe(0);
    expect(await t.deps.redis.exists(t.deps.keys.batches.marks(accepted.id))).toBe(0);
    expect(await t.deps.redis.zscore(t.deps.keys.batches.pending, accepted.id)).toBeNull();
    await t.settle();
    const n = (
      await t.deps.sql<{ n: number }[]>`
      select count(*)::int as n from events where user_id like 'r-%'`
    )[0]!.n;
    expect(n).toBe(30);
  });

  it('fences out a processor whose batch was taken over: it stops and records nothing', async () => {
    const items = Array.from({ length: 4 }, (_, i) => ({ m: metricId, u: { id: `f-${i}` }, v: 1_000_000 }));
    const stale = await acceptBatch(t.deps, items);
    await t.deps.redis.zadd(t.deps.keys.batches.pending, '0', stale.id);
    // Another process claims it (and would process it); the stale owner is refused at its first record.
    const claimed = await t.deps.redis.claimBatch(
      2,
      t.deps.keys.batches.pending,
      t.deps.keys.batches.batch(stale.id),
      stale.id,
      String(Date.now()),
      String(Date.now() + 60_000),
    );
    expect(claimed?.[0]).toBe(2);
    expect(await processBatch(t.deps, stale)).toBe('lost');
    expect(await t.deps.redis.hget(t.deps.keys.batches.batch(stale.id), 'done')).toBe('0');
    // The new owner finishes it; items the stale owner already ran are answered from their markers.
    expect(await processBatch(t.deps, { ...stale, owner: '2' })).toBe('done');
    for (let i = 0; i < 4; i++) expect(await total(`f-${i}`)).toBe(1);
  });
});

describe('event batches: reply markers on a single Redis', () => {
  it("keeps the running chunk's markers through a lease renewal and drops them with its progress record", async () => {
    if (isCluster(t.deps.redis)) return;
    const k = t.deps.keys.batches;
    const items = Array.from({ length: 4 }, (_, i) => ({ m: metricId, u: { id: `mk-${i}` }, v: 1_000_000 }));
    const accepted = await acceptBatch(t.deps, items);
    const op = (i: number) => itemOp(accepted.id, items[i]!.u, i, k.marks(accepted.id));
    await runUserOp(t.deps, op(0));
    await runUserOp(t.deps, op(1));
    // The same item again (a resumed chunk): answered from its marker, applied once.
    await runUserOp(t.deps, op(1));
    expect(await total('mk-1')).toBe(1);
    expect(await t.deps.redis.exists(t.deps.keys.user('mk-0').op(batchEventId(accepted.id, 0)))).toBe(0);
    const progress = (done: number) =>
      t.deps.redis.batchProgress(
        3,
        k.pending,
        k.batch(accepted.id),
        k.marks(accepted.id),
        accepted.id,
        '1',
        String(done),
        String(Date.now() + 60_000),
      );
    // A renewal (done unchanged): the chunk is still running, its markers stay.
    expect(await progress(0)).toBe(1);
    expect(await t.deps.redis.hlen(k.marks(accepted.id))).toBe(2);
    // The chunk's record: its markers go with it, in the same script.
    expect(await progress(2)).toBe(1);
    expect(await t.deps.redis.exists(k.marks(accepted.id))).toBe(0);
    expect(await t.deps.redis.hget(k.batch(accepted.id), 'done')).toBe('2');
    // The last record removes the batch (and any markers left).
    await runUserOp(t.deps, op(2));
    expect(await progress(4)).toBe(1);
    expect(await t.deps.redis.exists(k.batch(accepted.id), k.marks(accepted.id))).toBe(0);
    expect(await t.deps.redis.zscore(k.pending, accepted.id)).toBeNull();
  });

  it('resumes a batch accepted with per-item marker keys (before the markers hash) from those keys', async () => {
    const items = Array.from({ length: 6 }, (_, i) => ({
      m: metricId,
      u: { id: `old-${i % 2}` },
      v: 1_000_000,
    }));
    const accepted = await acceptBatch(t.deps, items);
    await t.deps.redis.hdel(t.deps.keys.batches.batch(accepted.id), 'mk');
    for (let i = 0; i < 3; i++) await runUserOp(t.deps, itemOp(accepted.id, items[i]!.u, i));
    await t.deps.redis.zadd(t.deps.keys.batches.pending, '0', accepted.id);
    expect(await new BatchResumer(t.deps).pass()).toBe(1);
    expect(await total('old-0')).toBe(3);
    expect(await total('old-1')).toBe(3);
  });
});

describe('event batches: a connection dropped during the accepting MULTI', () => {
  afterEach(() => vi.restoreAllMocks());

  /**
   * The next MULTI's EXEC: `reached` says whether it reaches Redis; either way the connection then
   * drops (for real: the client reconnects) before any reply is read.
   */
  function dropDuringExec(reached: boolean) {
    const redis = t.deps.redis;
    const real = redis.multi.bind(redis);
    vi.spyOn(redis, 'multi').mockImplementationOnce(((...args: Parameters<typeof real>) => {
      const m = real(...args);
      const exec = m.exec.bind(m);
      m.exec = (async () => {
        if (reached) await exec();
        else m.discard();
        redis.disconnect(true);
        throw new Error('Connection is closed.');
      }) as typeof m.exec;
      return m;
    }) as typeof real);
  }

  const pendingBatches = async () =>
    (await t.redisKeys()).filter((k) => k.includes('{batch}') && !k.endsWith('pending'));

  it('answers 202 and processes every item once when the batch was accepted before the drop', async () => {
    dropDuringExec(true);
    const r = await batch([
      { key: 'steps', user: { id: 'drop-1' }, value: 2 },
      { key: 'steps', user: { id: 'drop-2' }, value: 3 },
      { key: 'steps', user: { id: 'drop-1' }, value: 4 },
    ]);
    expect(r).toMatchObject({ status: 202, body: { accepted: 3 } });
    expect(t.deps.redis.status).toBe('ready');
    expect(await total('drop-1')).toBe(6);
    expect(await total('drop-2')).toBe(3);
    expect(await pendingBatches()).toEqual([]);
    expect(await t.deps.redis.zcard(t.deps.keys.batches.pending)).toBe(0);
  });

  it('answers 503 and leaves nothing when the batch was not accepted', async () => {
    dropDuringExec(false);
    const r = await batch([{ key: 'steps', user: { id: 'drop-3' }, value: 1 }]);
    expect(r).toMatchObject({ status: 503, body: { error: expect.any(String) } });
    expect(await t.deps.redis.zcard(t.deps.keys.batches.pending)).toBe(0);
    expect(await pendingBatches()).toEqual([]);
    expect(await t.deps.redis.exists(t.deps.keys.user('drop-3').hash)).toBe(0);
    // The next batch goes through.
    expect((await batch([{ key: 'steps', user: { id: 'drop-3' }, value: 1 }])).status).toBe(202);
    expect(await total('drop-3')).toBe(1);
  });
});
