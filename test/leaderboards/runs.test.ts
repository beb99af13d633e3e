import { and, eq } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { leaderboardRunResults } from '../../src/db/schema';
import { adminCreate, createTestServer, type TestServer } from '../helpers/server';
import { createBoard, getBoard, getUserBoard, send, standings } from '../helpers/leaderboards';

// Repeating runs (1 day, 7 days, 1 month, 1 year) across time zones: activity counts in the run of the
// user's local date; the default run of GET /v1/leaderboards/{key} is the UTC one, that of
// GET /v1/users/{id}/leaderboards/{key} the user's local one; runs are final 12 hours after their
// end in UTC (semantics §0, §6.1–§6.3, §6.6).

let t: TestServer;
let n = 0;
const metric = async () => {
  const [m] = await adminCreate(t, '/metrics', [{ key: `runs-m${++n}`, name: `Metric ${n}` }]);
  return m as { id: string; key: string };
};
const AKL = 'Pacific/Auckland';
const LA = 'America/Los_Angeles';
let u = 0;
/** A fresh pair of users: one in Auckland, one in Los Angeles. */
const pair = () => {
  u++;
  return { akl: { id: `akl-${u}`, tz: AKL }, la: { id: `la-${u}`, tz: LA } };
};
const runOf = (res: any, key: string) => {
  const e = res.leaderboards[key];
  return e ? [e.start, e.end] : null;
};
const snapshotRows = (boardId: string, runStart: string) =>
  t.deps.db
    .select()
    .from(leaderboardRunResults)
    .where(
      and(eq(leaderboardRunResults.leaderboardId, boardId), eq(leaderboardRunResults.runStart, runStart)),
    );

beforeAll(async () => {
  t = await createTestServer({ now: '2024-12-01T00:00:00Z' });
});
afterAll(async () => t.close());

describe('runs across time zones', () => {
  it('1-day runs: local dates pick the run, UTC picks the default read run, final at 12:00 UTC next day', async () => {
    t.clock.set('2025-03-10T10:00:00Z');
    const m = await metric();
    const b = await createBoard(t, {
      rankBy: 'metric',
      metricId: m.id,
      start: '2025-03-09',
      runUnit: 'day',
      runInterval: 1,
    });
    const { akl, la } = pair();
    const edge = { id: `edge-${u}`, tz: 'Etc/GMT+12' }; // UTC−12: the last zone to leave a date

    // 11:30 UTC on 10 Mar = 00:30 on 11 Mar in Auckland (NZDT) and 04:30 on 10 Mar in Los Angeles (PDT).
    t.clock.set('2025-03-10T11:30:00Z');
    expect(runOf(await send(t, m.key, akl, 5), b.key)).toEqual(['2025-03-11', '2025-03-11']);
    expect(runOf(await send(t, m.key, la, 3), b.key)).toEqual(['2025-03-10', '2025-03-10']);
    expect(await standings(t, b.key)).toEqual([[la.id, 3]]); // the UTC run of 10 Mar
    expect((await getBoard(t, b.key, { run: '2025-03-11' })).status).toBe(422); // after the current run
    // Each user's own default run is the one of their local today.
    expect((await getUserBoard(t, akl.id, b.key)).body).toMatchObject({ rank: 1, value: 5 });
    expect((await getUserBoard(t, la.id, b.key)).body).toMatchObject({ rank: 1, value: 3 });
    expect((await getUserBoard(t, akl.id, b.key, { run: '2025-03-10' })).body).toMatchObject({
      rank: null,
      value: null,
      history: [],
    });
    expect((await getUserBoard(t, la.id, b.key, { run: '2025-03-11' })).status).toBe(422);

    // 06:00 UTC on 11 Mar: still 10 Mar (23:00) in Los Angeles → run of 10 Mar, not yet final.
    t.clock.set('2025-03-11T06:00:00Z');
    expect(runOf(await send(t, m.key, la, 4), b.key)).toEqual(['2025-03-10', '2025-03-10']);
    expect(runOf(await send(t, m.key, akl, 1), b.key)).toEqual(['2025-03-11', '2025-03-11']);
    expect(await standings(t, b.key)).toEqual([[akl.id, 6]]);
    expect(await standings(t, b.key, { run: '2025-03-10' })).toEqual([[la.id, 7]]);

    // 11:59:59 UTC: 23:59:59 on 10 Mar at UTC−12 still counts in the run of 10 Mar.
    t.clock.set('2025-03-11T11:59:59Z');
    expect(runOf(await send(t, m.key, edge, 9), b.key)).toEqual(['2025-03-10', '2025-03-10']);
    expect(await snapshotRows(b.id, '2025-03-10')).toHaveLength(0);

    // 12:00 UTC: the run of 10 Mar is final and served from its snapshot.
    t.clock.set('2025-03-11T12:00:00Z');
    expect(runOf(await send(t, m.key, edge, 1), b.key)).toEqual(['2025-03-11', '2025-03-11']);
    expect(await standings(t, b.key, { run: '2025-03-10' })).toEqual([
      [edge.id, 9],
      [la.id, 7],
    ]);
    const rows = await snapshotRows(b.id, '2025-03-10');
    expect(rows.map((r) => [r.userId, r.rank, r.value, r.runEnd]).sort()).toEqual([
      [edge.id, 1, 9, '2025-03-10'],
      [la.id, 2, 7, '2025-03-10'],
    ]);
    expect(await standings(t, b.key)).toEqual([
      [akl.id, 6],
      [edge.id, 1],
    ]);
  });

  it('7-day runs: a week boundary falls on different UTC instants in Auckland and Los Angeles', async () => {
    t.clock.set('2025-03-09T00:00:00Z');
    const m = await metric();
    const b = await createBoard(t, {
      rankBy: 'metric',
      metricId: m.id,
      start: '2025-03-03',
      runUnit: 'day',
      runInterval: 7,
    });
    const { akl, la } = pair();
    // 12:00 UTC on 9 Mar = 01:00 on 10 Mar in Auckland, 05:00 on 9 Mar in Los Angeles.
    t.clock.set('2025-03-09T12:00:00Z');
    expect(runOf(await send(t, m.key, akl, 2), b.key)).toEqual(['2025-03-10', '2025-03-16']);
    expect(runOf(await send(t, m.key, la, 3), b.key)).toEqual(['2025-03-03', '2025-03-09']);
    expect(await standings(t, b.key)).toEqual([[la.id, 3]]);
    expect(await standings(t, b.key, { run: '2025-03-05' })).toEqual([[la.id, 3]]);
    expect((await getUserBoard(t, akl.id, b.key)).body).toMatchObject({ rank: 1, value: 2 });

    // A week later the first week is a past run; any date inside it selects it.
    t.clock.set('2025-03-12T12:00:00Z');
    await send(t, m.key, la, 1);
    expect(await standings(t, b.key)).toEqual([
      [akl.id, 2],
      [la.id, 1],
    ]);
    for (const run of ['2025-03-03', '2025-03-06', '2025-03-09']) {
      expect(await standings(t, b.key, { run })).toEqual([[la.id, 3]]);
    }
    expect(await standings(t, b.key, { run: '2025-03-16' })).toEqual([
      [akl.id, 2],
      [la.id, 1],
    ]);
    expect((await getBoard(t, b.key, { run: '2025-03-17' })).status).toBe(422);
    expect((await getBoard(t, b.key, { run: '2025-03-02' })).status).toBe(422);
    expect((await getUserBoard(t, la.id, b.key, { run: '2025-03-04' })).body).toMatchObject({
      rank: 1,
      value: 3,
    });
  });

  it('1-month runs from the 31st clamp to month ends; the boundary differs by time zone', async () => {
    t.clock.set('2025-03-30T00:00:00Z');
    const m = await metric();
    // Runs: 31 Jan–27 Feb, 28 Feb–30 Mar, 31 Mar–29 Apr, …
    const b = await createBoard(t, {
      rankBy: 'metric',
      metricId: m.id,
      start: '2025-01-31',
      runUnit: 'month',
      runInterval: 1,
    });
    const { akl, la } = pair();
    // 12:00 UTC on 30 Mar = 01:00 on 31 Mar in Auckland (NZDT), 05:00 on 30 Mar in Los Angeles.
    t.clock.set('2025-03-30T12:00:00Z');
    expect(runOf(await send(t, m.key, akl, 4), b.key)).toEqual(['2025-03-31', '2025-04-29']);
    expect(runOf(await send(t, m.key, la, 6), b.key)).toEqual(['2025-02-28', '2025-03-30']);
    expect(await standings(t, b.key)).toEqual([[la.id, 6]]);
    expect(await standings(t, b.key, { run: '2025-02-28' })).toEqual([[la.id, 6]]);
    // The first run exists but is empty: nothing is backfilled from before activation.
    expect(await standings(t, b.key, { run: '2025-02-27' })).toEqual([]);
    expect((await getBoard(t, b.key, { run: '2025-01-30' })).status).toBe(422);
    expect((await getBoard(t, b.key, { run: '2025-03-31' })).status).toBe(422);
    expect((await getUserBoard(t, akl.id, b.key)).body).toMatchObject({ rank: 1, value: 4 });
    expect((await getUserBoard(t, akl.id, b.key, { run: '2025-04-29' })).body).toMatchObject({
      rank: 1,
      value: 4,
    });

    t.clock.set('2025-04-02T00:00:00Z');
    expect(await standings(t, b.key)).toEqual([[akl.id, 4]]);
    expect(await standings(t, b.key, { run: '2025-03-01' })).toEqual([[la.id, 6]]);
  });

  it('1-year runs: New Year comes 21 hours apart in Auckland and Los Angeles', async () => {
    t.clock.set('2024-12-31T00:00:00Z');
    const m = await metric();
    const b = await createBoard(t, {
      rankBy: 'metric',
      metricId: m.id,
      start: '2024-01-01',
      runUnit: 'year',
      runInterval: 1,
    });
    const { akl, la } = pair();
    // 12:00 UTC on 31 Dec = 01:00 on 1 Jan 2025 in Auckland, 04:00 on 31 Dec in Los Angeles (PST).
    t.clock.set('2024-12-31T12:00:00Z');
    expect(runOf(await send(t, m.key, akl, 1), b.key)).toEqual(['2025-01-01', '2025-12-31']);
    expect(runOf(await send(t, m.key, la, 2), b.key)).toEqual(['2024-01-01', '2024-12-31']);
    // 07:59 UTC on 1 Jan is still 31 Dec in Los Angeles.
    t.clock.set('2025-01-01T07:59:00Z');
    expect(runOf(await send(t, m.key, la, 2), b.key)).toEqual(['2024-01-01', '2024-12-31']);
    t.clock.set('2025-01-01T08:00:00Z');
    expect(runOf(await send(t, m.key, la, 5), b.key)).toEqual(['2025-01-01', '2025-12-31']);
    expect(await standings(t, b.key)).toEqual([
      [la.id, 5],
      [akl.id, 1],
    ]);
    expect(await standings(t, b.key, { run: '2024-06-15' })).toEqual([[la.id, 4]]);
    t.clock.set('2025-01-01T12:00:00Z'); // the 2024 run is final
    expect(await standings(t, b.key, { run: '2024-12-31' })).toEqual([[la.id, 4]]);
    expect(await snapshotRows(b.id, '2024-01-01')).toHaveLength(1);
    expect((await getUserBoard(t, la.id, b.key, { run: '2024-01-01' })).body).toMatchObject({
      rank: 1,
      value: 4,
      history: [
        { timestamp: '2024-12-31T12:00:00.000Z', previousRank: null, rank: 1, previousValue: null, value: 2 },
        { timestamp: '2025-01-01T07:59:00.000Z', previousRank: 1, rank: 1, previousValue: 2, value: 4 },
      ],
    });
  });

  it('clips the last run at the end date', async () => {
    t.clock.set('2025-03-10T00:00:00Z');
    const m = await metric();
    const b = await createBoard(t, {
      rankBy: 'metric',
      metricId: m.id,
      start: '2025-03-03',
      end: '2025-03-12',
      runUnit: 'day',
      runInterval: 7,
    });
    t.clock.set('2025-03-10T12:00:00Z');
    const res = await send(t, m.key, 'clip-1', 1);
    expect(runOf(res, b.key)).toEqual(['2025-03-10', '2025-03-12']);
    expect((await getBoard(t, b.key, { run: '2025-03-13' })).status).toBe(422);
  });
});
