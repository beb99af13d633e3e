import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { NAME_TTL_MS } from '../../src/services/leaderboards';
import { isCluster } from '../../src/redis/client';
import { spyOwnCalls } from '../helpers/spy';
import { adminCreate, createTestServer, type TestServer } from '../helpers/server';
import { createBoard, getBoard, send, standings } from '../helpers/leaderboards';

// Reads of live rankings are served from an encoded copy while the board's ranking version is
// unchanged (src/http/routes/v1/leaderboards.ts). These tests read, change, and read again: a copy
// that outlived a change would show the old order.

let t: TestServer;
let m: { id: string; key: string };
let board: any;

beforeAll(async () => {
  t = await createTestServer({ now: '2025-03-10T12:00:00Z' });
  [m] = await adminCreate(t, '/metrics', [{ key: 'rc-lessons', name: 'Lessons' }]);
  board = await createBoard(t, { key: 'rc-board', rankBy: 'metric', metricId: m.id, maxParticipants: 3 });
});
afterAll(async () => t.close());

const version = () => t.deps.redis.get(t.deps.keys.board(board.id).version);
const around = async (userId: string) =>
  (await getBoard(t, board.key, { userId, offset: -1, limit: 3 })).body.rankings.map(
    (r: any) => `${r.rank}:${r.userId}`,
  );

describe('cached leaderboard reads', () => {
  it('every ranking change shows in the next read, from an offset and around a user', async () => {
    await send(t, m.key, { id: 'rc-a', name: 'Ann' }, 5);
    await send(t, m.key, { id: 'rc-b', name: 'Bo' }, 3);
    expect(await standings(t, board.key)).toEqual([
      ['rc-a', 5],
      ['rc-b', 3],
    ]);
    expect(await around('rc-b')).toEqual(['1:rc-a', '2:rc-b']);
    // Same reads again (served from the copies), then a change that reorders them.
    expect(await standings(t, board.key)).toEqual([
      ['rc-a', 5],
      ['rc-b', 3],
    ]);
    await send(t, m.key, 'rc-b', 4);
    expect(await standings(t, board.key)).toEqual([
      ['rc-b', 7],
      ['rc-a', 5],
    ]);
    expect(await around('rc-b')).toEqual(['1:rc-b', '2:rc-a']);
    // A newcomer, then an eviction at the cap of 3.
    await send(t, m.key, 'rc-c', 1);
    expect(await around('rc-c')).toEqual(['2:rc-a', '3:rc-c']);
    await send(t, m.key, 'rc-d', 2);
    expect(await standings(t, board.key)).toEqual([
      ['rc-b', 7],
      ['rc-a', 5],
      ['rc-d', 2],
    ]);
    expect(await around('rc-c')).toEqual([]);
    expect(await around('rc-d')).toEqual(['2:rc-a', '3:rc-d']);
  });

  it('shows a name this process wrote at once, even though the ranking did not change', async () => {
    const before = (await getBoard(t, board.key, { limit: 1 })).body.rankings[0];
    expect(before).toMatchObject({ userId: 'rc-b', userName: 'Bo' });
    // An event with value 0 renames the user without moving any ranking.
    const v = await version();
    await send(t, m.key, { id: 'rc-b', name: 'Bob' }, 0);
    expect(await version()).toBe(v);
    expect((await getBoard(t, board.key, { limit: 1 })).body.rankings[0]).toMatchObject({
      userId: 'rc-b',
      userName: 'Bob',
    });
  });

  it('the version moves with ranking writes only, and a recreated version never repeats', async () => {
    const v1 = await version();
    // Seeded from the Redis clock in µs when the key was created: far from small counters.
    expect(Number(v1)).toBeGreaterThan(1e15);
    await send(t, m.key, 'rc-a', 10);
    const v2 = await version();
    expect(Number(v2)).toBe(Number(v1) + 1);
    // A user below the cap's threshold is not ranked: no ranking write, no new version.
    await send(t, m.key, 'rc-e', 1);
    expect(await version()).toBe(v2);
    await t.deps.redis.del(t.deps.keys.board(board.id).version);
    await send(t, m.key, 'rc-a', 1);
    const v3 = await version();
    expect(v3).not.toBeNull();
    expect(Number(v3)).toBeGreaterThan(Number(v2));
    expect((await standings(t, board.key))[0]).toEqual(['rc-a', 16]);
  });

  it('keeps an empty window (user not ranked) past the name bound; a window with names is re-read', async () => {
    // rc-c was evicted at the cap: its window is empty and holds no names.
    expect(await around('rc-c')).toEqual([]);
    expect(await around('rc-a')).not.toEqual([]);
    const windowReads = spyOwnCalls(t.deps.redis, 'readWindow');
    const reads = () => windowReads.calls().length;
    const realNow = performance.now.bind(performance);
    const later = vi.spyOn(performance, 'now').mockImplementation(() => realNow() + NAME_TTL_MS + 1000);
    try {
      expect(await around('rc-c')).toEqual([]);
      expect(reads()).toBe(0);
      expect(await around('rc-a')).not.toEqual([]);
      expect(reads()).toBe(1);
    } finally {
      later.mockRestore();
      windowReads.restore();
    }
  });

  it('reads the version before the ranking on a miss, so a copy is never filed under a newer version', async () => {
    const bk = t.deps.keys.board(board.id);
    const gets = vi.spyOn(t.deps.redis, 'get');
    const ranges = vi.spyOn(t.deps.redis, 'zrange');
    try {
      // A window no read asked for before: a miss.
      expect((await getBoard(t, board.key, { offset: 0, limit: 7 })).status).toBe(200);
      const callOrder = (spy: typeof gets | typeof ranges, match: (key: string) => boolean) =>
        spy.mock.invocationCallOrder.filter((_, i) => match(String(spy.mock.calls[i]?.[0])));
      const [versionRead] = callOrder(gets, (key) => key === bk.version);
      const rankingReads = callOrder(ranges, (key) => key.includes(`{lb:${board.id}}:run:`));
      expect(versionRead).toBeDefined();
      expect(rankingReads.length).toBeGreaterThan(0);
      expect(versionRead!).toBeLessThan(Math.min(...rankingReads));
    } finally {
      gets.mockRestore();
      ranges.mockRestore();
    }
  });

  it('reads that start in the same tick share one version read, and a write after them still shows', async () => {
    const versionKey = t.deps.keys.board(board.id).version;
    const gets = spyOwnCalls(t.deps.redis, 'get');
    const versionGets = () => gets.calls().filter((args) => args[0] === versionKey).length;
    try {
      const reads = await Promise.all(Array.from({ length: 5 }, () => getBoard(t, board.key, { limit: 2 })));
      expect(new Set(reads.map((r) => JSON.stringify(r.body.rankings))).size).toBe(1);
      // One GET on a single Redis (sent when the tick ends); one each on Cluster.
      expect(versionGets()).toBe(isCluster(t.deps.redis) ? 5 : 1);
      await send(t, m.key, 'rc-d', 100);
      const after = await Promise.all(Array.from({ length: 3 }, () => getBoard(t, board.key, { limit: 1 })));
      for (const r of after) expect(r.body.rankings[0]).toMatchObject({ userId: 'rc-d' });
    } finally {
      gets.restore();
    }
  });
});

describe('two servers in one process', () => {
  it('never show each other’s display names for the same user id', async () => {
    // The name cache is per process; each server reads its own users' names (its key prefix), even
    // when another server of the process just learned a different name for the same id.
    const other = await createTestServer({ now: '2025-03-10T12:00:00Z' });
    try {
      const [om] = await adminCreate(other, '/metrics', [{ key: 'rc-lessons', name: 'Lessons' }]);
      const ob = await createBoard(other, { key: 'rc-board', rankBy: 'metric', metricId: om.id });
      await send(t, m.key, { id: 'rc-twin', name: 'Here' }, 1000);
      await send(other, om.key, { id: 'rc-twin', name: 'There' }, 1000);
      const top = async (s: TestServer, key: string) =>
        (await getBoard(s, key, { limit: 1 })).body.rankings[0];
      expect(await top(t, board.key)).toMatchObject({ userId: 'rc-twin', userName: 'Here' });
      expect(await top(other, ob.key)).toMatchObject({ userId: 'rc-twin', userName: 'There' });
    } finally {
      await other.close();
    }
  });
});
