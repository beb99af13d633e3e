import { writeFileSync } from 'node:fs';
import { TrophyApiClient } from '@trophyso/node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { metricSummaryQueries, pointsSummaryQueries } from '../../src/services/event-summary';
import { HistoryWriter } from '../../src/workers/history-writer';
import { adminCreate, createTestServer, type TestServer } from '../helpers/server';

// GET /v1/users/{id}/metrics/{key}/event-summary and /points/{key}/event-summary
// (application-api §6.5, semantics §7.1), read from the Postgres history.

let t: TestServer;
let metricId: string;
let systemId: string;

async function event(at: string, user: Record<string, unknown>, value: number) {
  t.clock.set(at);
  const r = await t.api('POST', '/v1/metrics/lessons/event', { user, value });
  expect(r.status).toBe(201);
}

async function drain() {
  const w = new HistoryWriter(t.deps);
  while ((await w.drainOnce()) > 0) {}
}

const get = (path: string) => t.api('GET', path);

beforeAll(async () => {
  t = await createTestServer({ now: '2025-02-20T12:00:00Z' });
  const [m] = await adminCreate(t, '/metrics', [{ key: 'lessons', name: 'Lessons' }]);
  metricId = m.id;
  const [p] = await adminCreate(t, '/points', [{ key: 'xp', name: 'XP' }]);
  systemId = p.id;
  await adminCreate(t, `/points/${p.id}/triggers`, [
    { type: 'metric', points: 10, metricId: m.id, metricThreshold: 1, status: 'active' },
  ]);
  await event('2025-02-20T12:00:00Z', { id: 'u1' }, 1.5); // +10 points
  await event('2025-03-01T08:00:00Z', { id: 'u1' }, 2.25); // total 3.75: +20
  await event('2025-03-03T23:59:00Z', { id: 'u1' }, 1); // total 4.75: +10
  await event('2025-03-10T10:00:00Z', { id: 'u1' }, -0.5); // total 4.25: no points
  // 03:00Z on 10 March is 23:00 on 9 March in New York.
  await event('2025-03-10T03:00:00Z', { id: 'ny', tz: 'America/New_York' }, 1);
  t.clock.set('2025-03-10T12:00:00Z');
  await t.api('POST', '/v1/users', { id: 'idle' });
  await drain();
});
afterAll(async () => t.close());

describe('metric event summary', () => {
  it('daily buckets include zero-change days and start from the total before the window', async () => {
    const r = await get(
      '/v1/users/u1/metrics/lessons/event-summary?aggregation=daily&startDate=2025-02-28&endDate=2025-03-04',
    );
    expect(r.status).toBe(200);
    expect(r.body).toEqual([
      { date: '2025-02-28', total: 1.5, change: 0 },
      { date: '2025-03-01', total: 3.75, change: 2.25 },
      { date: '2025-03-02', total: 3.75, change: 0 },
      { date: '2025-03-03', total: 4.75, change: 1 },
      { date: '2025-03-04', total: 4.75, change: 0 },
    ]);
  });

  it('weekly buckets start on Mondays (before startDate) and days after today carry the current total', async () => {
    const r = await get(
      '/v1/users/u1/metrics/lessons/event-summary?aggregation=weekly&startDate=2025-03-01&endDate=2025-03-20',
    );
    expect(r.body).toEqual([
      { date: '2025-02-24', total: 3.75, change: 2.25 },
      { date: '2025-03-03', total: 4.75, change: 1 },
      { date: '2025-03-10', total: 4.25, change: -0.5 },
      { date: '2025-03-17', total: 4.25, change: 0 },
    ]);
  });

  it('monthly buckets start on the 1st; 0 before any activity', async () => {
    const r = await get(
      '/v1/users/u1/metrics/lessons/event-summary?aggregation=monthly&startDate=2025-01-15&endDate=2025-03-31',
    );
    expect(r.body).toEqual([
      { date: '2025-01-01', total: 0, change: 0 },
      { date: '2025-02-01', total: 1.5, change: 1.5 },
      { date: '2025-03-01', total: 4.25, change: 2.75 },
    ]);
  });

  it("uses the user's local calendar", async () => {
    const r = await get(
      '/v1/users/ny/metrics/lessons/event-summary?aggregation=daily&startDate=2025-03-09&endDate=2025-03-10',
    );
    expect(r.body).toEqual([
      { date: '2025-03-09', total: 1, change: 1 },
      { date: '2025-03-10', total: 1, change: 0 },
    ]);
  });

  it('a user without events gets zero buckets', async () => {
    const r = await get(
      '/v1/users/idle/metrics/lessons/event-summary?aggregation=daily&startDate=2025-03-09&endDate=2025-03-10',
    );
    expect(r.body).toEqual([
      { date: '2025-03-09', total: 0, change: 0 },
      { date: '2025-03-10', total: 0, change: 0 },
    ]);
  });

  it('answers 404 for an unknown user or metric', async () => {
    const q = 'aggregation=daily&startDate=2025-03-01&endDate=2025-03-02';
    const u = await get(`/v1/users/nobody/metrics/lessons/event-summary?${q}`);
    expect(u.status).toBe(404);
    expect(u.body).toEqual({ error: 'User not found' });
    const m = await get(`/v1/users/u1/metrics/nope/event-summary?${q}`);
    expect(m.status).toBe(404);
    expect(m.body).toEqual({ error: 'Metric not found' });
  });

  it('answers 422 for bad query values, before looking up resources', async () => {
    const bad = [
      '',
      'aggregation=yearly&startDate=2025-03-01&endDate=2025-03-02',
      'aggregation=daily&aggregation=weekly&startDate=2025-03-01&endDate=2025-03-02',
      'aggregation=daily&endDate=2025-03-02',
      'aggregation=daily&startDate=2025-03-01',
      'aggregation=daily&startDate=2025-02-30&endDate=2025-03-02',
      'aggregation=daily&startDate=2025-3-01&endDate=2025-03-02',
      'aggregation=daily&startDate=2025-03-02&endDate=2025-03-02',
      'aggregation=daily&startDate=2025-03-03&endDate=2025-03-02',
      'aggregation=daily&startDate=2024-01-01&endDate=2025-02-05',
    ];
    for (const q of bad) {
      const r = await get(`/v1/users/nobody/metrics/nope/event-summary?${q}`);
      expect(r.status, q).toBe(422);
      expect(Object.keys(r.body)).toEqual(['error']);
    }
    const limit = await get(
      '/v1/users/u1/metrics/lessons/event-summary?aggregation=daily&startDate=2024-01-01&endDate=2025-02-04',
    );
    expect(limit.status).toBe(200);
    expect(limit.body).toHaveLength(401);
  });
});

describe('points event summary', () => {
  it('sums awards per bucket as integers', async () => {
    const r = await get(
      '/v1/users/u1/points/xp/event-summary?aggregation=daily&startDate=2025-03-01&endDate=2025-03-03',
    );
    expect(r.status).toBe(200);
    expect(r.body).toEqual([
      { date: '2025-03-01', total: 30, change: 20 },
      { date: '2025-03-02', total: 30, change: 0 },
      { date: '2025-03-03', total: 40, change: 10 },
    ]);
    const m = await get(
      '/v1/users/u1/points/xp/event-summary?aggregation=monthly&startDate=2025-02-01&endDate=2025-03-31',
    );
    expect(m.body).toEqual([
      { date: '2025-02-01', total: 10, change: 10 },
      { date: '2025-03-01', total: 40, change: 30 },
    ]);
  });

  it('answers 404 for an unknown points system or user and 422 for bad queries', async () => {
    const q = 'aggregation=weekly&startDate=2025-03-01&endDate=2025-03-02';
    const s = await get(`/v1/users/u1/points/nope/event-summary?${q}`);
    expect(s.status).toBe(404);
    expect(s.body).toEqual({ error: 'Points system not found' });
    const u = await get(`/v1/users/nobody/points/xp/event-summary?${q}`);
    expect(u.body).toEqual({ error: 'User not found' });
    const bad = await get(
      '/v1/users/u1/points/xp/event-summary?aggregation=hourly&startDate=2025-03-01&endDate=2025-03-02',
    );
    expect(bad.status).toBe(422);
  });
});

describe('through the SDK', () => {
  it('users.metricEventSummary and users.pointsEventSummary parse', async () => {
    const origin = await t.listen();
    const client = new TrophyApiClient({
      apiKey: t.appKey,
      environment: { api: `${origin}/v1`, admin: `${origin}/admin/v1` },
    });
    const m = await client.users.metricEventSummary('u1', 'lessons', {
      aggregation: 'weekly',
      startDate: '2025-03-01',
      endDate: '2025-03-12',
    });
    expect(m.map((i) => [i.date, i.total, i.change])).toEqual([
      ['2025-02-24', 3.75, 2.25],
      ['2025-03-03', 4.75, 1],
      ['2025-03-10', 4.25, -0.5],
    ]);
    const p = await client.users.pointsEventSummary('u1', 'xp', {
      aggregation: 'daily',
      startDate: '2025-03-02',
      endDate: '2025-03-03',
    });
    expect(p).toEqual([
      { date: '2025-03-02', total: 30, change: 0 },
      { date: '2025-03-03', total: 40, change: 10 },
    ]);
  });
});

describe('query plans', () => {
  it('both queries use an index on realistic data (EXPLAIN written to EXPLAIN_OUT when set)', async () => {
    // 200 users × 40 events (8,000 events, 8,000 awards) over ~13 months, plus the rows above.
    await t.deps.sql`
      insert into events (id, user_id, metric_id, value_micros, attributes, local_date, tz, created)
      select gen_random_uuid(), 'seed' || (g % 200), ${metricId}, 1000000, '{}'::jsonb,
        date '2024-02-01' + (g / 20), 'UTC', now()
      from generate_series(1, 8000) g`;
    await t.deps.sql`
      insert into points_awards (id, user_id, system_id, trigger_id, awarded, total, local_date, created)
      select gen_random_uuid(), 'seed' || (g % 200), ${systemId}, gen_random_uuid(), 10, 10 * g,
        date '2024-02-01' + (g / 20), now()
      from generate_series(1, 8000) g`;
    await t.deps.sql`analyze events`;
    await t.deps.sql`analyze points_awards`;
    const plans: string[] = [];
    const run = async (label: string, text: string, params: unknown[]) => {
      const rows = await t.deps.sql.unsafe(
        `explain (analyze, costs, buffers off, timing off) ${text}`,
        params as never[],
      );
      const plan = rows.map((r) => r['QUERY PLAN']).join('\n');
      plans.push(`-- ${label}\n${text.trim()}\n${plan}\n`);
      return plan;
    };
    const mq = metricSummaryQueries(t.deps, 'seed7', metricId, '2024-06-01', '2025-03-01');
    const pq = pointsSummaryQueries(t.deps, 'seed7', systemId, '2024-06-01', '2025-03-01');
    const texts = {
      mDays: (await mq.days.describe()).string,
      mBefore: (await mq.before.describe()).string,
      pDays: (await pq.days.describe()).string,
      pBefore: (await pq.before.describe()).string,
    };
    const mParams = ['seed7', metricId, '2024-06-01', '2025-03-01'];
    const pParams = ['seed7', systemId, '2024-06-01', '2025-03-01'];
    const p1 = await run('metric: change per local date', texts.mDays, mParams);
    const p2 = await run('metric: total before the window', texts.mBefore, mParams.slice(0, 3));
    const p3 = await run('points: change per local date', texts.pDays, pParams);
    const p4 = await run('points: total before the window', texts.pBefore, pParams.slice(0, 3));
    if (process.env.EXPLAIN_OUT) writeFileSync(process.env.EXPLAIN_OUT, plans.join('\n'));
    for (const p of [p1, p2, p3, p4]) {
      expect(p).toMatch(/Index (Only )?Scan|Bitmap Index Scan/);
      expect(p).not.toMatch(/Seq Scan/);
    }
  });
});
