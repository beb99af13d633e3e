import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { verifyState } from '../../src/rebuild/verify';
import { adminCreate, createTestServer, type TestServer } from '../helpers/server';
import { createBoard, getBoard, getUserBoard, send, standings } from '../helpers/leaderboards';

// Streak boards rank current streak lengths; a broken streak is never shown, even before anything
// has processed the break (semantics §6.3, §6.4).

let t: TestServer;
let m: { id: string; key: string };
let other: { id: string; key: string };
const day = (d: number, time = '12:00:00') => `2025-03-${String(d).padStart(2, '0')}T${time}Z`;

beforeAll(async () => {
  t = await createTestServer({ now: day(10) });
  [m, other] = await adminCreate(t, '/metrics', [
    { key: 'st-lessons', name: 'Lessons' },
    { key: 'st-other', name: 'Other' },
  ]);
  const res = await t.admin('PATCH', '/streaks/settings', {
    enabled: true,
    frequency: 'daily',
    conditions: [{ metricId: m.id, threshold: 1 }],
  });
  expect(res.status).toBe(200);
});
afterAll(async () => t.close());

describe('streak leaderboards', () => {
  it('ranks current streaks and drops broken ones at once', async () => {
    t.clock.set(day(10, '06:00:00'));
    const b = await createBoard(t, { rankBy: 'streak' });
    t.clock.set(day(10));
    const r1 = await send(t, m.key, 's1', 1);
    expect(r1.currentStreak.length).toBe(1);
    expect(r1.leaderboards[b.key]).toMatchObject({
      rankBy: 'streak',
      metricKey: null,
      pointsSystemKey: null,
      runUnit: null,
      runInterval: 0,
      start: '2025-03-10',
      end: null,
      previousRank: null,
      rank: 1,
    });
    t.clock.advance(1000);
    await send(t, m.key, 's2', 1);
    t.clock.advance(1000);
    await send(t, m.key, 's3', 1);
    // A second event in the same period does not change the streak: no entry.
    expect((await send(t, m.key, 's3', 1)).leaderboards).toEqual({});
    // Events of metrics outside the streak's conditions leave the board alone.
    expect((await send(t, other.key, 's3', 1)).leaderboards).toEqual({});
    expect(await standings(t, b.key)).toEqual([
      ['s1', 1],
      ['s2', 1],
      ['s3', 1],
    ]);

    t.clock.set(day(11));
    await send(t, m.key, 's2', 1);
    t.clock.advance(1000);
    await send(t, m.key, 's1', 1);
    t.clock.advance(1000);
    await send(t, m.key, 's4', 1);
    expect(await standings(t, b.key)).toEqual([
      ['s2', 2],
      ['s1', 2],
      ['s3', 1],
      ['s4', 1],
    ]);

    // 00:00 UTC on 12 Mar: s3 missed 11 Mar, so its streak is broken, although nothing ran since.
    t.clock.set(day(12, '00:00:00'));
    expect(await standings(t, b.key)).toEqual([
      ['s2', 2],
      ['s1', 2],
      ['s4', 1],
    ]);
    expect((await getUserBoard(t, 's3', b.key)).body).toMatchObject({ rank: null, value: null });
    expect((await getUserBoard(t, 's4', b.key)).body).toMatchObject({ rank: 3, value: 1 });
    expect((await getBoard(t, b.key, { userId: 's3' })).body.rankings).toEqual([]);
    expect((await getBoard(t, b.key, { userId: 's4', offset: -1 })).body.rankings).toEqual([
      { userId: 's1', userName: null, rank: 2, value: 2 },
      { userId: 's4', userName: null, rank: 3, value: 1 },
    ]);

    t.clock.set(day(12));
    const s1 = await send(t, m.key, 's1', 1);
    expect(s1.leaderboards[b.key]).toMatchObject({ previousRank: 2, rank: 1 });
    // s3 starts again at 1: not shown before, shown now, and ranked after s4 (its 1 is newer).
    t.clock.advance(1000);
    const s3 = await send(t, m.key, 's3', 1);
    expect(s3.currentStreak.length).toBe(1);
    expect(s3.leaderboards[b.key]).toMatchObject({ previousRank: null, rank: 4 });
    expect(await standings(t, b.key)).toEqual([
      ['s1', 3],
      ['s2', 2],
      ['s4', 1],
      ['s3', 1],
    ]);

    // 13 Mar: s2 and s4 missed 12 Mar.
    t.clock.set(day(13, '08:00:00'));
    expect(await standings(t, b.key)).toEqual([
      ['s1', 3],
      ['s3', 1],
    ]);
    t.clock.advance(1000);
    const s4 = await send(t, m.key, 's4', 1);
    expect(s4.leaderboards[b.key]).toMatchObject({ previousRank: null, rank: 3 });
    const h4 = await getUserBoard(t, 's4', b.key);
    expect(h4.body).toMatchObject({ rank: 3, value: 1 });
    expect(h4.body.history.at(-1)).toMatchObject({
      previousRank: null,
      rank: 3,
      previousValue: null,
      value: 1,
    });
  });

  it('a broken streak frees its place under the cap', async () => {
    t.clock.set(day(25, '06:00:00'));
    const b = await createBoard(t, { rankBy: 'streak', maxParticipants: 1 });
    t.clock.set(day(25));
    expect((await send(t, m.key, 'cap-a', 1)).leaderboards[b.key]).toMatchObject({ rank: 1, threshold: 1 });
    expect((await send(t, m.key, 'cap-b', 1)).leaderboards[b.key]).toBeUndefined(); // equal: stays out
    t.clock.set(day(27)); // cap-a's streak broke at 00:00 on 27 Mar
    expect(await standings(t, b.key)).toEqual([]);
    const c = await send(t, m.key, 'cap-c', 1);
    expect(c.leaderboards[b.key]).toMatchObject({ previousRank: null, rank: 1, threshold: 1 });
    expect(await standings(t, b.key)).toEqual([['cap-c', 1]]);
  });

  it('drops a broken streak from the ranking and its expiry index, which verify-state checks', async () => {
    t.clock.set(day(25, '06:00:00'));
    const b = await createBoard(t, { rankBy: 'streak' });
    t.clock.set(day(25));
    await send(t, m.key, 'ix-a', 1);
    t.clock.set(day(26));
    await send(t, m.key, 'ix-b', 1);
    t.clock.set(day(27)); // ix-a's streak broke at 00:00 on 27 Mar; ix-b's lasts until 28 Mar
    await send(t, m.key, 'ix-c', 1);
    const bk = t.deps.keys.board(b.id);
    const ranking = await t.deps.redis.zrange(bk.ranking('2025-03-25', ''), 0, -1);
    expect(ranking.map((x) => x.slice(16))).toEqual(['ix-b', 'ix-c']);
    const index = await t.deps.redis.zrange(bk.expiries('2025-03-25', ''), 0, -1, 'WITHSCORES');
    expect(index).toEqual([
      ranking[0],
      String(Date.parse(day(28, '00:00:00'))),
      ranking[1],
      String(Date.parse(day(29, '00:00:00'))),
    ]);
    await t.settle();
    const boardDiffs = async () =>
      (await verifyState(t.deps)).differences.filter(
        (d) => d.userId?.startsWith('ix-') && d.what.startsWith('leaderboard'),
      );
    expect(await boardDiffs()).toEqual([]);
    // An index entry out of step with the member's expiry would keep a broken streak ranked.
    await t.deps.redis.zadd(bk.expiries('2025-03-25', ''), '+inf', ranking[0]!);
    expect(await boardDiffs()).toEqual([
      expect.objectContaining({
        userId: 'ix-b',
        redis: 'inf',
        postgres: String(Date.parse(day(28, '00:00:00'))),
      }),
    ]);
    // Reads leave out broken streaks with the index (ix-b's broke at 00:00 on 28 Mar) and without it
    // (a ranking an earlier version wrote): then from the members' entries.
    await t.deps.redis.zadd(bk.expiries('2025-03-25', ''), Date.parse(day(28, '00:00:00')), ranking[0]!);
    t.clock.set(day(28));
    expect(await standings(t, b.key)).toEqual([['ix-c', 1]]);
    // An index out of step with the ranking (ix-b's entry replaced by a lapsed one the ranking does
    // not hold, as a move of an earlier version leaves it): the members' entries decide.
    await t.deps.redis.zrem(bk.expiries('2025-03-25', ''), ranking[0]!);
    await t.deps.redis.zadd(bk.expiries('2025-03-25', ''), 1, `${'0'.repeat(15)}|ix-stale`);
    expect(await standings(t, b.key)).toEqual([['ix-c', 1]]);
    await t.deps.redis.del(bk.expiries('2025-03-25', ''));
    expect(await standings(t, b.key)).toEqual([['ix-c', 1]]);
    // The next move indexes the ranking again, without the broken streak.
    await send(t, m.key, 'ix-d', 1);
    expect(await standings(t, b.key)).toEqual([
      ['ix-c', 1],
      ['ix-d', 1],
    ]);
    expect(await t.deps.redis.zcard(bk.expiries('2025-03-25', ''))).toBe(2);
  });

  it('hides a broken streak by the user’s own local midnight', async () => {
    t.clock.set(day(20, '00:00:00'));
    const b = await createBoard(t, { rankBy: 'streak' });
    const akl = { id: 'st-akl', tz: 'Pacific/Auckland' };
    const la = { id: 'st-la', tz: 'America/Los_Angeles' };
    // 20 Mar 12:00 UTC = 21 Mar 01:00 in Auckland, 20 Mar 05:00 in Los Angeles.
    t.clock.set(day(20));
    await send(t, m.key, akl, 1);
    await send(t, m.key, la, 1);
    // Auckland's streak breaks at 23 Mar 00:00 local = 22 Mar 11:00 UTC; Los Angeles' at
    // 22 Mar 00:00 local = 22 Mar 07:00 UTC.
    t.clock.set(day(22, '06:59:59'));
    expect((await standings(t, b.key)).map(([id]) => id).sort()).toEqual(['st-akl', 'st-la']);
    t.clock.set(day(22, '07:00:00'));
    expect(await standings(t, b.key)).toEqual([['st-akl', 1]]);
    t.clock.set(day(22, '11:00:00'));
    expect(await standings(t, b.key)).toEqual([]);
  });

  it('keeps a streak that only a pause keeps alive on the board (its expiry counts the pause)', async () => {
    t.clock.set(day(28, '06:00:00'));
    const b = await createBoard(t, { rankBy: 'streak' });
    expect((await t.api('POST', '/v1/users', { id: 'st-paused' })).status).toBe(201);
    const pause = await t.admin('POST', '/streaks/pauses', {
      pauses: [{ userId: 'st-paused', start: '2025-03-29', end: '2025-03-29' }],
    });
    expect(pause.body.issues).toEqual([]);
    t.clock.set(day(28));
    await send(t, m.key, 'st-paused', 1);
    await send(t, m.key, 'st-plain', 1);
    // 29 Mar went unmet: the pause bridges it for st-paused; st-plain's streak is broken.
    t.clock.set(day(30));
    expect((await t.api('GET', '/v1/users/st-paused/streak')).body.length).toBe(1);
    expect(await standings(t, b.key)).toEqual([['st-paused', 1]]);
    // 30 Mar went unmet too, with nothing to bridge it.
    t.clock.set(day(31, '00:00:00'));
    expect(await standings(t, b.key)).toEqual([]);
  });

  it('keeps a streak on boards and rankings when a pause created after its last event keeps it alive', async () => {
    const apr = (d: number, time = '12:00:00') => `2025-04-${String(d).padStart(2, '0')}T${time}Z`;
    const active = async () =>
      (await t.api('GET', '/v1/streaks/rankings?type=active')).body.map((r: any) => [
        r.userId,
        r.streakLength,
      ]);
    const pause = async (start: string, end: string) => {
      const r = await t.admin('POST', '/streaks/pauses', { pauses: [{ userId: 'st-late', start, end }] });
      expect([r.status, r.body.issues]).toEqual([201, []]);
    };
    t.clock.set(apr(1, '06:00:00'));
    const b = await createBoard(t, { rankBy: 'streak' });
    t.clock.set(apr(1));
    await send(t, m.key, 'st-late', 1);
    await send(t, m.key, 'st-plain2', 1);
    await t.settle();
    // Created after the last event: the stored expiry (2 Apr 00:00) did not count it.
    t.clock.set(apr(1, '13:00:00'));
    await pause('2025-04-02', '2025-04-02');
    await t.settle();
    t.clock.set(apr(3));
    expect((await t.api('GET', '/v1/users/st-late/streak')).body.length).toBe(1);
    expect(await standings(t, b.key)).toEqual([['st-late', 1]]);
    expect(await active()).toEqual([['st-late', 1]]);
    // Extended by another pause (today and tomorrow): kept until 6 Apr 00:00.
    await pause('2025-04-03', '2025-04-04');
    await t.settle();
    // The history gives the same board entries (rebuild writes these expiries too).
    const diffs = (await verifyState(t.deps)).differences.filter(
      (d) => d.userId === 'st-late' && d.what.startsWith('leaderboard'),
    );
    expect(diffs).toEqual([]);
    t.clock.set(apr(5, '23:59:59'));
    expect(await standings(t, b.key)).toEqual([['st-late', 1]]);
    expect(await active()).toEqual([['st-late', 1]]);
    t.clock.set(apr(6, '00:00:00'));
    expect(await standings(t, b.key)).toEqual([]);
    expect(await active()).toEqual([]);
  });
});
