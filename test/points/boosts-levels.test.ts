import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { adminCreate, createTestServer, type TestServer } from '../helpers/server';

// Boosts (semantics §5.8, §5.9) and levels (§5.11) on POST /v1/metrics/{key}/event.

let t: TestServer;
let n = 0;
const uid = () => `boost-user-${++n}`;
let plan: { id: string };
const NOW = '2025-03-10T12:00:00.000Z';

const send = (key: string, user: Record<string, unknown> | string, value: number) =>
  t.api('POST', `/v1/metrics/${key}/event`, { user: typeof user === 'string' ? { id: user } : user, value });

let seq = 0;
/** A fresh metric and points system with one metric trigger of `points` per unit of the metric. */
async function setup(points: number, extra: { maxPoints?: number } = {}) {
  const k = `s${++seq}`;
  const [m] = await adminCreate(t, '/metrics', [{ key: k, name: k }]);
  const [s] = await adminCreate(t, '/points', [{ key: `${k}-xp`, name: `XP ${k}`, ...extra }]);
  const [tr] = await adminCreate(t, `/points/${s.id}/triggers`, [
    { type: 'metric', points, metricId: m.id, metricThreshold: 1, status: 'active' },
  ]);
  return {
    metric: k,
    metricId: m.id as string,
    system: s.id as string,
    key: `${k}-xp`,
    trigger: tr.id as string,
  };
}

async function boosts(systemId: string, items: Array<Record<string, unknown>>) {
  return (await adminCreate(
    t,
    `/points/${systemId}/boosts`,
    items.map((b, i) => ({ name: `Boost ${i}`, start: '2025-03-01', ...b })),
  )) as Array<{ id: string; name: string }>;
}

async function levels(systemId: string, items: Array<Record<string, unknown>>) {
  return (await adminCreate(
    t,
    `/points/${systemId}/levels`,
    items.map((l) => ({ name: `Level ${l.key}`, ...l })),
  )) as Array<{ id: string; key: string; name: string; points: number }>;
}

const awarded = (res: { body: any }, key: string) =>
  res.body.points[key]?.awards.map((a: any) => a.awarded) ?? [];

beforeAll(async () => {
  t = await createTestServer();
  [plan] = await adminCreate(t, '/attributes', [{ key: 'plan', name: 'Plan', type: 'user' }]);
});
afterAll(async () => t.close());

describe('boosts on event awards', () => {
  it('a global boost multiplies every user’s awards and is listed on the award', async () => {
    const s = await setup(10);
    const [b] = await boosts(s.system, [{ name: 'Double', multiplier: 2 }]);
    const res = await send(s.metric, uid(), 1);
    expect(res.body.points[s.key]).toMatchObject({ total: 20, added: 20 });
    expect(res.body.points[s.key].awards[0]).toMatchObject({
      awarded: 20,
      total: 20,
      boosts: [
        {
          id: b!.id,
          name: 'Double',
          status: 'active',
          start: '2025-03-01',
          end: null,
          multiplier: 2,
          rounding: 'down',
        },
      ],
    });
    expect(Object.keys(res.body.points[s.key].awards[0].boosts[0]).sort()).toEqual([
      'end',
      'id',
      'multiplier',
      'name',
      'rounding',
      'start',
      'status',
    ]);
    expect(awarded(await send(s.metric, uid(), 3), s.key)).toEqual([60]);
  });

  it('a cohort boost applies only to users matching its attribute filters', async () => {
    const s = await setup(10);
    await boosts(s.system, [
      { multiplier: 3, userAttributes: [{ attributeId: plan.id, attributeValue: 'pro' }] },
    ]);
    const pro = await send(s.metric, { id: uid(), attributes: { plan: 'pro' } }, 1);
    expect(awarded(pro, s.key)).toEqual([30]);
    expect(pro.body.points[s.key].awards[0].boosts).toHaveLength(1);
    const basic = await send(s.metric, { id: uid(), attributes: { plan: 'basic' } }, 1);
    expect(awarded(basic, s.key)).toEqual([10]);
    expect(basic.body.points[s.key].awards[0].boosts).toEqual([]);
    expect(awarded(await send(s.metric, uid(), 1), s.key)).toEqual([10]);
    // The attribute set in the request counts.
    const u = uid();
    expect(awarded(await send(s.metric, u, 1), s.key)).toEqual([10]);
    expect(awarded(await send(s.metric, { id: u, attributes: { plan: 'pro' } }, 1), s.key)).toEqual([30]);
  });

  it('a user-specific boost applies only to that user', async () => {
    const s = await setup(10);
    const u = uid();
    expect(awarded(await send(s.metric, u, 1), s.key)).toEqual([10]);
    const [b] = await boosts(s.system, [{ multiplier: 5, userId: u }]);
    const mine = await send(s.metric, u, 1);
    expect(awarded(mine, s.key)).toEqual([50]);
    expect(mine.body.points[s.key].awards[0].boosts.map((x: any) => x.id)).toEqual([b!.id]);
    expect(awarded(await send(s.metric, uid(), 1), s.key)).toEqual([10]);
  });

  it("applies each user's own boosts among everyone's in the system's order, however many users have one", async () => {
    const s = await setup(10);
    const [u1, u2, u3] = [uid(), uid(), uid()];
    const others = Array.from({ length: 150 }, (_, i) => `${u1}-other-${i}`);
    // Boosts are for users who exist.
    for (const u of [u1, u2, u3, ...others]) expect((await send(s.metric, u, 1)).status).toBe(201);
    // Ordered by start: A (everyone), B (u1), C (everyone), D (u2), then 150 other users' own boosts.
    const [a, b, c, d] = await boosts(s.system, [
      { multiplier: 2, start: '2025-03-01' },
      { multiplier: 3, start: '2025-03-02', userId: u1 },
      { multiplier: 1.5, start: '2025-03-03' },
      { multiplier: 5, start: '2025-03-04', userId: u2 },
    ]);
    for (let i = 0; i < 150; i += 50) {
      await boosts(
        s.system,
        others.slice(i, i + 50).map((userId) => ({ multiplier: 7, start: '2025-03-05', userId })),
      );
    }
    const applied = async (u: string) => {
      const res = await send(s.metric, u, 1);
      return [awarded(res, s.key)[0], res.body.points[s.key].awards[0].boosts.map((x: any) => x.id)];
    };
    expect(await applied(u1)).toEqual([90, [a!.id, b!.id, c!.id]]);
    expect(await applied(u2)).toEqual([150, [a!.id, c!.id, d!.id]]);
    expect(await applied(u3)).toEqual([30, [a!.id, c!.id]]);
    expect(await applied(others[7]!)).toEqual([210, [a!.id, c!.id, expect.any(String)]]);
  });

  it('stacks applicable boosts multiplicatively (2 × 1.5)', async () => {
    const s = await setup(10);
    const [a, b] = await boosts(s.system, [
      { multiplier: 2, start: '2025-03-01' },
      { multiplier: 1.5, start: '2025-03-05' },
    ]);
    const res = await send(s.metric, uid(), 1);
    expect(awarded(res, s.key)).toEqual([30]);
    expect(res.body.points[s.key].awards[0].boosts.map((x: any) => x.id)).toEqual([a!.id, b!.id]);
  });

  // [label, base points, boosts, expected applied change]
  const roundingCases: Array<[string, number, Array<Record<string, unknown>>, number]> = [
    ['down: 1 × 1.5 → 1', 1, [{ multiplier: 1.5, rounding: 'down' }], 1],
    ['up: 1 × 1.5 → 2', 1, [{ multiplier: 1.5, rounding: 'up' }], 2],
    ['nearest: 1 × 1.5 → 2 (halves up)', 1, [{ multiplier: 1.5, rounding: 'nearest' }], 2],
    ['up: 10 × 1.1 → 11 (exact decimal)', 10, [{ multiplier: 1.1, rounding: 'up' }], 11],
    ['down: 10 × 1.1 → 11 (exact decimal)', 10, [{ multiplier: 1.1, rounding: 'down' }], 11],
    ['nearest: 3 × 1.1 → 3', 3, [{ multiplier: 1.1, rounding: 'nearest' }], 3],
    ['up: 3 × 1.1 → 4', 3, [{ multiplier: 1.1, rounding: 'up' }], 4],
    ['nearest: 7 × 0.25 → 2 (1.75)', 7, [{ multiplier: 0.25, rounding: 'nearest' }], 2],
    ['down: 1 × 0.5 → 0, not recorded', 1, [{ multiplier: 0.5, rounding: 'down' }], 0],
    [
      'mixed up + nearest → down: 1 × 1.5 × 1.5 → 2',
      1,
      [
        { multiplier: 1.5, rounding: 'up' },
        { multiplier: 1.5, rounding: 'nearest' },
      ],
      2,
    ],
    [
      'same mode up + up: 1 × 1.5 × 1.5 → 3',
      1,
      [
        { multiplier: 1.5, rounding: 'up' },
        { multiplier: 1.5, rounding: 'up' },
      ],
      3,
    ],
    ['down on a deduction: −3 × 1.5 → −5', -3, [{ multiplier: 1.5, rounding: 'down' }], -5],
    ['up on a deduction: −3 × 1.5 → −4', -3, [{ multiplier: 1.5, rounding: 'up' }], -4],
    ['nearest on a deduction: −1 × 1.5 → −1 (halves up)', -1, [{ multiplier: 1.5, rounding: 'nearest' }], -1],
  ];

  it('rounds once after multiplying (down, up, nearest, mixed → down; exact decimals; deductions)', async () => {
    // One system per case, created in bulk: a metric trigger with the case's base points, and an
    // earning trigger on a shared metric so deductions have something to take from.
    const [earn, ...caseMetrics] = await adminCreate(t, '/metrics', [
      { key: 'round-earn', name: 'earn' },
      ...roundingCases.map((_, i) => ({ key: `round-${i}`, name: `round ${i}` })),
    ]);
    const systems = await adminCreate(
      t,
      '/points',
      roundingCases.map((_, i) => ({ key: `round-${i}-xp`, name: `round ${i}` })),
    );
    await Promise.all(
      roundingCases.map(async ([, base, bs], i) => {
        await adminCreate(t, `/points/${systems[i].id}/triggers`, [
          { type: 'metric', points: base, metricId: caseMetrics[i].id, metricThreshold: 1, status: 'active' },
          { type: 'metric', points: 1000, metricId: earn.id, metricThreshold: 1, status: 'active' },
        ]);
        await boosts(systems[i].id, bs);
      }),
    );
    const u = uid();
    await send('round-earn', u, 1);
    // [label, applied change, number of systems listed in `points`]
    const results: Array<[string, number, number]> = [];
    for (const [i, [label]] of roundingCases.entries()) {
      const res = await send(`round-${i}`, u, 1);
      expect(res.status).toBe(201);
      results.push([label, awarded(res, `round-${i}-xp`)[0] ?? 0, Object.keys(res.body.points).length]);
    }
    expect(results).toEqual(
      roundingCases.map(([label, , , expected]) => [label, expected, expected === 0 ? 0 : 1]),
    );
  });

  it('applies a boost by the user’s local date, window inclusive', async () => {
    const s = await setup(10);
    // 12:00Z on 10 March: 10 March in UTC, 11 March in Auckland.
    const [endsToday, startsTomorrow] = await boosts(s.system, [
      { name: 'ends 10 March', start: '2025-03-01', end: '2025-03-10', multiplier: 3 },
      { name: 'starts 11 March', start: '2025-03-11', end: '2025-03-11', multiplier: 2 },
    ]);
    const utc = await send(s.metric, uid(), 1);
    expect(awarded(utc, s.key)).toEqual([30]);
    expect(utc.body.points[s.key].awards[0].boosts).toEqual([
      expect.objectContaining({ id: endsToday!.id, status: 'active', end: '2025-03-10' }),
    ]);
    const nz = await send(s.metric, { id: uid(), tz: 'Pacific/Auckland' }, 1);
    expect(awarded(nz, s.key)).toEqual([20]);
    expect(nz.body.points[s.key].awards[0].boosts).toEqual([
      expect.objectContaining({ id: startsTomorrow!.id, status: 'active', start: '2025-03-11' }),
    ]);
    // Los Angeles is still on 10 March at 12:00Z (05:00).
    expect(awarded(await send(s.metric, { id: uid(), tz: 'America/Los_Angeles' }, 1), s.key)).toEqual([30]);
  });

  it('does not apply scheduled or finished boosts', async () => {
    const s = await setup(10);
    await boosts(s.system, [
      { start: '2025-03-11', multiplier: 2 },
      { start: '2025-02-01', end: '2025-03-09', multiplier: 3 },
    ]);
    const u = uid();
    const res = await send(s.metric, u, 1);
    expect(awarded(res, s.key)).toEqual([10]);
    expect(res.body.points[s.key].awards[0].boosts).toEqual([]);
    try {
      t.clock.set('2025-03-11T00:00:00Z');
      expect(awarded(await send(s.metric, u, 1), s.key)).toEqual([20]);
    } finally {
      t.clock.set(NOW);
    }
  });

  it('caps boosted awards at maxPoints', async () => {
    const s = await setup(10, { maxPoints: 35 });
    await boosts(s.system, [{ multiplier: 2 }]);
    const u = uid();
    expect(awarded(await send(s.metric, u, 1), s.key)).toEqual([20]);
    expect(awarded(await send(s.metric, u, 1), s.key)).toEqual([15]);
  });
});

describe('levels on events', () => {
  it('reports level only when it changes; a threshold-0 level applies at 0', async () => {
    const s = await setup(10);
    const [spend] = await adminCreate(t, '/metrics', [{ key: `${s.metric}-spend`, name: 'spend' }]);
    await adminCreate(t, `/points/${s.system}/triggers`, [
      { type: 'metric', points: -100, metricId: spend.id, metricThreshold: 1, status: 'active' },
    ]);
    const [l0, l20, l50] = await levels(s.system, [
      { key: 'starter', points: 0 },
      { key: 'silver', points: 20, description: 'Twenty', badge: { url: 'https://cdn.example.com/s.png' } },
      { key: 'gold', points: 50 },
    ]);
    const u = uid();
    const first = await send(s.metric, u, 1);
    expect(first.body.points[s.key].total).toBe(10);
    // The user is new: no level before the request (semantics §5.11), the starter level after it.
    expect(first.body.points[s.key].level).toMatchObject({ id: l0!.id, key: 'starter' });
    const second = await send(s.metric, u, 1);
    expect(second.body.points[s.key].level).toEqual({
      id: l20!.id,
      key: 'silver',
      name: 'Level silver',
      description: 'Twenty',
      badgeUrl: 'https://cdn.example.com/s.png',
      points: 20,
    });
    expect((await send(s.metric, u, 1)).body.points[s.key]).not.toHaveProperty('level');
    // Jumping two levels reports the last one.
    const jump = await send(s.metric, u, 3);
    expect(jump.body.points[s.key]).toMatchObject({
      total: 60,
      level: { id: l50!.id, key: 'gold', points: 50 },
    });
    // Down to 0: the threshold-0 level, not null.
    const down = await send(`${s.metric}-spend`, u, 1);
    expect(down.body.points[s.key]).toMatchObject({
      total: 0,
      added: -60,
      level: { id: l0!.id, key: 'starter', points: 0 },
    });
  });

  it('reports null when the total drops below the lowest level', async () => {
    const s = await setup(10);
    const [spend] = await adminCreate(t, '/metrics', [{ key: `${s.metric}-spend`, name: 'spend' }]);
    await adminCreate(t, `/points/${s.system}/triggers`, [
      { type: 'metric', points: -5, metricId: spend.id, metricThreshold: 1, status: 'active' },
    ]);
    const [l5] = await levels(s.system, [{ key: 'five', points: 5 }]);
    const u = uid();
    expect((await send(s.metric, u, 1)).body.points[s.key].level).toMatchObject({ id: l5!.id });
    expect((await send(`${s.metric}-spend`, u, 1)).body.points[s.key]).not.toHaveProperty('level');
    const below = await send(`${s.metric}-spend`, u, 1);
    expect(below.body.points[s.key].total).toBe(0);
    expect(below.body.points[s.key]).toHaveProperty('level', null);
  });

  it('shows no level key for a system without levels', async () => {
    const s = await setup(10);
    const res = await send(s.metric, uid(), 1);
    expect(res.body.points[s.key]).not.toHaveProperty('level');
  });
});
