import { randomUUID } from 'node:crypto';
import { eq } from 'drizzle-orm';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { leaderboards, pointsSystems } from '../../src/db/schema';
import { adminCreate, createTestServer, type TestServer } from '../helpers/server';

const NOW = '2025-03-10T12:00:00Z';
let t: TestServer;
let metric: any;
let system: { id: string };
let userAttrs: any[];
let eventAttr: any;
beforeAll(async () => {
  t = await createTestServer({ now: NOW });
  [metric] = await adminCreate(t, '/metrics', [{ key: 'lessons', name: 'Lessons' }]);
  const attrs = await adminCreate(t, '/attributes', [
    ...Array.from({ length: 6 }, (_, i) => ({ key: `u${i}`, name: `U${i}`, type: 'user' })),
    { key: 'src', name: 'Source', type: 'event' },
  ]);
  userAttrs = attrs.slice(0, 6);
  eventAttr = attrs[6];
  const now = new Date(t.clock.now());
  const rows = await t.deps.db
    .insert(pointsSystems)
    .values({ key: 'xp', name: 'XP', created: now, updated: now })
    .returning();
  system = rows[0]!;
  await t.deps.catalog.changed();
});
afterAll(async () => t.close());
beforeEach(() => t.clock.set(NOW));

const list = async () => (await t.admin('GET', '/leaderboards?limit=100')).body as any[];
let seq = 0;
const k = () => `lb${++seq}`;
const board = (extra: Record<string, unknown> = {}) => ({
  key: k(),
  name: 'Board',
  rankBy: 'metric',
  metricId: metric.id,
  ...extra,
});
const create = async (extra: Record<string, unknown> = {}) =>
  (await adminCreate(t, '/leaderboards', [board(extra)]))[0];
const patch = (item: Record<string, unknown>) => t.admin('PATCH', '/leaderboards', [item]);
const get = async (id: string) => (await t.admin('GET', `/leaderboards/${id}`)).body;

describe('admin leaderboards', () => {
  it('creates with defaults, gets, lists, updates and deletes', async () => {
    const res = await t.admin('POST', '/leaderboards', [board({ description: 'Top learners' })]);
    expect(res.status).toBe(201);
    const b = res.body.created[0];
    expect(b).toEqual({
      id: expect.any(String),
      key: b.key,
      name: 'Board',
      description: 'Top learners',
      status: 'inactive',
      rankBy: 'metric',
      metricId: metric.id,
      pointsSystemId: null,
      maxParticipants: 1000,
      start: '2025-03-10',
      end: null,
      breakdownAttributes: [],
      runUnit: null,
      runInterval: 0,
      created: '2025-03-10T12:00:00.000Z',
      updated: '2025-03-10T12:00:00.000Z',
    });
    expect(await get(b.id)).toEqual(b);
    expect((await list()).at(-1)).toEqual(b);
    const upd = await patch({
      id: b.id,
      name: 'Renamed',
      maxParticipants: 10,
      runUnit: 'month',
      runInterval: 1,
    });
    expect(upd.body.updated[0]).toMatchObject({
      name: 'Renamed',
      maxParticipants: 10,
      runUnit: 'month',
      runInterval: 1,
    });
    expect((await t.admin('DELETE', `/leaderboards?ids=${b.id}`)).body).toEqual({
      deleted: [{ id: b.id }],
      issues: [],
    });
    expect((await t.admin('GET', `/leaderboards/${b.id}`)).status).toBe(404);
  });

  it('creates points and streak boards, with breakdowns and repeating runs', async () => {
    const [p, s] = await adminCreate(t, '/leaderboards', [
      {
        key: k(),
        name: 'P',
        rankBy: 'points',
        pointsSystemId: system.id,
        runUnit: 'day',
        runInterval: 7,
        breakdownAttributes: userAttrs.slice(0, 5).map((a) => a.id),
        start: '2025-01-01',
        end: '2025-12-31',
        maxParticipants: 1,
      },
      { key: k(), name: 'S', rankBy: 'streak', runUnit: null, runInterval: null },
    ]);
    expect(p).toMatchObject({
      rankBy: 'points',
      pointsSystemId: system.id,
      metricId: null,
      runUnit: 'day',
      runInterval: 7,
    });
    expect(p.breakdownAttributes).toHaveLength(5);
    expect(s).toMatchObject({
      rankBy: 'streak',
      metricId: null,
      pointsSystemId: null,
      runUnit: null,
      runInterval: 0,
    });
  });

  const badCreates: Array<[string, () => Record<string, unknown>, string]> = [
    ['no key', () => ({ name: 'x', rankBy: 'streak' }), 'key is required'],
    ['no rankBy', () => ({ key: k(), name: 'x' }), 'rankBy is required'],
    ['a bad rankBy', () => ({ key: k(), name: 'x', rankBy: 'xp' }), 'rankBy'],
    ['metric without metricId', () => ({ key: k(), name: 'x', rankBy: 'metric' }), 'metricId is required'],
    ['an unknown metric', () => board({ metricId: randomUUID() }), 'Metric not found'],
    [
      'a metricId on a streak board',
      () => ({ key: k(), name: 'x', rankBy: 'streak', metricId: metric.id }),
      'metricId is only allowed',
    ],
    [
      'points without system',
      () => ({ key: k(), name: 'x', rankBy: 'points' }),
      'pointsSystemId is required',
    ],
    [
      'an unknown system',
      () => ({ key: k(), name: 'x', rankBy: 'points', pointsSystemId: randomUUID() }),
      'Points system not found',
    ],
    [
      'a system on a metric board',
      () => board({ pointsSystemId: system.id }),
      'pointsSystemId is only allowed',
    ],
    [
      'a repeating streak board',
      () => ({ key: k(), name: 'x', rankBy: 'streak', runUnit: 'day', runInterval: 1 }),
      'cannot repeat',
    ],
    ['runUnit without interval', () => board({ runUnit: 'day' }), 'runInterval'],
    ['runUnit with zero interval', () => board({ runUnit: 'month', runInterval: 0 }), 'runInterval'],
    ['an interval without unit', () => board({ runInterval: 3 }), 'runInterval requires runUnit'],
    ['a bad runUnit', () => board({ runUnit: 'week', runInterval: 1 }), 'runUnit'],
    ['a fractional interval', () => board({ runUnit: 'day', runInterval: 1.5 }), 'runInterval'],
    ['zero participants', () => board({ maxParticipants: 0 }), 'maxParticipants'],
    ['1001 participants', () => board({ maxParticipants: 1001 }), 'maxParticipants'],
    ['a string maxParticipants', () => board({ maxParticipants: '10' }), 'maxParticipants'],
    ['a bad start', () => board({ start: '2025-02-30' }), 'start'],
    [
      'an end before start',
      () => board({ start: '2025-03-10', end: '2025-03-09' }),
      'end must not be before start',
    ],
    [
      'six breakdowns',
      () => board({ breakdownAttributes: userAttrs.map((a) => a.id) }),
      'breakdownAttributes',
    ],
    [
      'a repeated breakdown',
      () => board({ breakdownAttributes: [userAttrs[0].id, userAttrs[0].id] }),
      'given twice',
    ],
    [
      'an event attribute breakdown',
      () => board({ breakdownAttributes: [eventAttr.id] }),
      'not a user attribute',
    ],
    ['an unknown breakdown', () => board({ breakdownAttributes: [randomUUID()] }), 'does not exist'],
    ['a finished status', () => board({ status: 'finished' }), 'cannot be created finished'],
    ['a bad status', () => board({ status: 'paused' }), 'status'],
  ];

  it.each(badCreates)('reports an item error for %s and creates nothing', async (_label, make, fragment) => {
    const before = await list();
    const res = await t.admin('POST', '/leaderboards', [make()]);
    expect(res.status).toBe(200);
    expect(res.body.created).toEqual([]);
    expect(res.body.issues[0]).toMatchObject({ severity: 'error', index: 0 });
    expect(res.body.issues[0].message).toContain(fragment);
    expect(await list()).toEqual(before);
  });

  it('rejects duplicate keys', async () => {
    const key = k();
    const res = await t.admin('POST', '/leaderboards', [board({ key }), board({ key })]);
    expect(res.body.created).toHaveLength(1);
    expect(res.body.issues).toEqual([
      { severity: 'error', message: 'A leaderboard with this key already exists', index: 1 },
    ]);
  });

  it('answers bad bodies with request-level errors', async () => {
    expect((await t.admin('POST', '/leaderboards', board())).status).toBe(400);
    expect((await t.admin('PATCH', '/leaderboards', {})).status).toBe(400);
    expect((await t.admin('DELETE', '/leaderboards?ids=')).status).toBe(422);
    expect((await t.admin('GET', '/leaderboards?limit=abc')).status).toBe(422);
    expect((await t.api('GET', '/admin/v1/leaderboards')).status).toBe(401);
  });
});

describe('leaderboard activation on create', () => {
  it.each([
    ['active', '2025-03-10', 'active'],
    ['active', '2025-03-11', 'scheduled'],
    ['scheduled', '2025-03-01', 'active'],
    ['scheduled', '2025-04-01', 'scheduled'],
    [undefined, '2025-04-01', 'inactive'],
  ])('requesting %s with start %s gives %s', async (status, start, expected) => {
    const b = await create({ start, ...(status ? { status } : {}) });
    expect(b.status).toBe(expected);
    const [row] = await t.deps.db.select().from(leaderboards).where(eq(leaderboards.id, b.id));
    expect(row!.activatedAt?.toISOString() ?? null).toBe(
      expected === 'inactive' ? null : '2025-03-10T12:00:00.000Z',
    );
  });
});

describe('leaderboard status transitions', () => {
  /** A board in each status at 2025-03-10 12:00 UTC. */
  const inStatus = async (status: string) => {
    if (status === 'inactive') return create();
    if (status === 'scheduled') return create({ start: '2025-04-01', status: 'active' });
    const b = await create({ status: 'active' });
    if (status === 'finished') await patch({ id: b.id, status: 'finished' });
    return b;
  };

  it.each([
    ['inactive', 'active', 'active'],
    ['inactive', 'scheduled', 'active'],
    ['inactive', 'finished', 'error'],
    ['inactive', 'inactive', 'inactive'],
    ['scheduled', 'inactive', 'inactive'],
    ['scheduled', 'active', 'warning'],
    ['scheduled', 'finished', 'error'],
    ['scheduled', 'scheduled', 'scheduled'],
    ['active', 'finished', 'finished'],
    ['active', 'inactive', 'error'],
    ['active', 'scheduled', 'error'],
    ['active', 'active', 'active'],
    ['finished', 'active', 'error'],
    ['finished', 'inactive', 'error'],
    ['finished', 'scheduled', 'error'],
    ['finished', 'finished', 'finished'],
  ])('from %s, requesting %s gives %s', async (from, to, result) => {
    const b = await inStatus(from);
    expect((await get(b.id)).status).toBe(from);
    t.clock.advance(5000);
    const before = await get(b.id);
    const res = await patch({ id: b.id, status: to });
    if (result === 'error' || result === 'warning') {
      expect(res.body.updated).toEqual([]);
      expect(res.body.issues[0]).toMatchObject({ severity: result, id: b.id });
      if (result === 'error') expect(res.body.issues[0].message).toBe('Invalid status transition');
      expect(await get(b.id)).toEqual(before);
    } else {
      expect(res.body.issues).toEqual([]);
      expect(res.body.updated[0].status).toBe(result);
    }
  });

  it('records finishedAt when finished by the operator', async () => {
    const b = await create({ status: 'active' });
    t.clock.set('2025-03-12T08:00:00Z');
    await patch({ id: b.id, status: 'finished' });
    const [row] = await t.deps.db.select().from(leaderboards).where(eq(leaderboards.id, b.id));
    expect(row!.finishedAt!.toISOString()).toBe('2025-03-12T08:00:00.000Z');
  });

  it('activates a scheduled board whose start is moved to today', async () => {
    const b = await create({ start: '2025-04-01', status: 'active' });
    const res = await patch({ id: b.id, start: '2025-03-10', status: 'active' });
    expect(res.body.updated[0].status).toBe('active');
  });

  it('shows a scheduled board as active from 00:00 UTC on its start, and finished after finalisation', async () => {
    const b = await create({ start: '2025-03-11', end: '2025-03-12', status: 'active' });
    expect((await get(b.id)).status).toBe('scheduled');
    t.clock.set('2025-03-10T23:59:59.999Z');
    expect((await get(b.id)).status).toBe('scheduled');
    t.clock.set('2025-03-11T00:00:00Z');
    expect((await get(b.id)).status).toBe('active');
    expect((await list()).find((x) => x.id === b.id).status).toBe('active');
    t.clock.set('2025-03-13T11:59:59Z');
    expect((await get(b.id)).status).toBe('active');
    t.clock.set('2025-03-13T12:00:00Z');
    expect((await get(b.id)).status).toBe('finished');
    // Computed status governs edits: a finished board's end cannot change.
    const res = await patch({ id: b.id, end: '2025-03-20' });
    expect(res.body.issues[0].message).toContain('finished');
  });
});

describe('leaderboard field editability', () => {
  it.each([
    [
      'scheduled',
      { start: '2025-05-01', maxParticipants: 5, end: '2025-06-01', name: 'n', description: 'd' },
    ],
    ['active', { end: '2025-03-10', name: 'n', description: null }],
    ['active', { end: null }],
    ['finished', { name: 'n', description: 'd' }],
    [
      'inactive',
      { key: 'fresh-key', rankBy: 'streak', metricId: null, breakdownAttributes: [], start: '2025-01-01' },
    ],
  ])('allows on a %s board: %j', async (status, fields) => {
    const b = await (status === 'inactive'
      ? create()
      : status === 'scheduled'
        ? create({ start: '2025-04-01', status: 'active' })
        : create({ status: 'active', end: '2025-03-20' }));
    if (status === 'finished') await patch({ id: b.id, status: 'finished' });
    const res = await patch({ id: b.id, ...fields });
    expect(res.body.issues).toEqual([]);
    expect(res.body.updated[0]).toMatchObject(fields);
  });

  it.each([
    ['scheduled', { key: 'x1' }, 'key can only be changed while the leaderboard is inactive'],
    ['scheduled', { rankBy: 'streak' }, 'rankBy'],
    ['scheduled', { runUnit: 'day', runInterval: 1 }, 'runUnit'],
    ['scheduled', { breakdownAttributes: [] as string[] }, null],
    [
      'active',
      { start: '2025-03-01' },
      'start can only be changed while the leaderboard is inactive or scheduled',
    ],
    ['active', { maxParticipants: 3 }, 'maxParticipants'],
    ['active', { end: '2025-03-09' }, 'must not be before today'],
    ['active', { metricId: '00000000-0000-4000-8000-000000000000' }, 'metricId'],
    ['finished', { end: '2025-04-01' }, 'end cannot be changed on a finished leaderboard'],
    ['finished', { maxParticipants: 5 }, 'maxParticipants'],
    ['finished', { key: 'x2' }, 'key'],
    ['inactive', { end: '2025-03-01' }, 'end must not be before start'],
    ['inactive', { name: null }, 'name cannot be null'],
    ['inactive', { status: null }, 'status cannot be null'],
    ['inactive', { rankBy: 'points' }, 'pointsSystemId is required'],
    ['inactive', { runUnit: 'year' }, 'runInterval must be at least 1'],
    ['inactive', { maxParticipants: 2000 }, 'maxParticipants'],
    ['inactive', { start: 'tomorrow' }, 'start'],
  ])('refuses on a %s board: %j', async (status, fields, fragment) => {
    const b = await (status === 'inactive'
      ? create()
      : status === 'scheduled'
        ? create({ start: '2025-04-01', status: 'active' })
        : create({ status: 'active' }));
    if (status === 'finished') await patch({ id: b.id, status: 'finished' });
    const before = await get(b.id);
    const res = await patch({ id: b.id, ...fields });
    if (fragment === null) {
      // Repeating the current value is not a change.
      expect(res.body.issues).toEqual([]);
      return;
    }
    expect(res.body.updated).toEqual([]);
    expect(res.body.issues[0]).toMatchObject({ severity: 'error', id: b.id });
    expect(res.body.issues[0].message).toContain(fragment);
    expect(await get(b.id)).toEqual(before);
  });

  it('switching rankBy drops the old reference', async () => {
    const b = await create();
    const res = await patch({ id: b.id, rankBy: 'points', pointsSystemId: system.id });
    expect(res.body.updated[0]).toMatchObject({
      rankBy: 'points',
      metricId: null,
      pointsSystemId: system.id,
    });
    const back = await patch({ id: b.id, runUnit: 'day', runInterval: 2 });
    expect(back.body.updated[0]).toMatchObject({ runUnit: 'day', runInterval: 2 });
    const perpetual = await patch({ id: b.id, runUnit: null });
    expect(perpetual.body.updated[0]).toMatchObject({ runUnit: null, runInterval: 0 });
  });

  it('deletes boards in any status and reports unknown ids', async () => {
    const a = await create();
    const s = await create({ start: '2025-04-01', status: 'active' });
    const f = await create({ status: 'active' });
    await patch({ id: f.id, status: 'finished' });
    const unknown = randomUUID();
    const res = await t.admin('DELETE', `/leaderboards?ids=${a.id},${s.id},${f.id},${unknown}`);
    expect(res.body).toEqual({
      deleted: [{ id: a.id }, { id: s.id }, { id: f.id }],
      issues: [{ severity: 'error', message: 'Leaderboard not found', id: unknown }],
    });
    expect((await list()).some((b) => [a.id, s.id, f.id].includes(b.id))).toBe(false);
  });
});
