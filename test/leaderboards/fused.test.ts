import calculateSlot from 'cluster-key-slot';
import type { Cluster } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { userPart } from '../helpers/user-hash';
import { isCluster } from '../../src/redis/client';
import { HistoryWriter } from '../../src/workers/history-writer';
import { runUserOp } from '../../src/services/user-op';
import { adminCreate, createTestServer, type TestServer } from '../helpers/server';
import { spyOwnCalls } from '../helpers/spy';
import { createBoard, send, standings } from '../helpers/leaderboards';

// The user script also moves the user on boards without breakdowns (lua/applyUserOp.lua, input.fuse):
// on a single Redis on every such board, on a Cluster on those whose slot the user's master serves too;
// boards with breakdowns, streak boards and the other boards on a Cluster get their own call of
// lua/updateBoard.lua. Both paths must give the same rankings and response entries; the history writer
// knows the script's moves from their record (board.ap), and the API's from the boards' member entries
// (which hold the seq of the op that last moved the user there).

let t: TestServer;
let m: { id: string; key: string };
let plain: any;
let byCity: any;

beforeAll(async () => {
  t = await createTestServer();
  [m] = await adminCreate(t, '/metrics', [{ key: 'fz-m', name: 'M' }]);
  const [city] = await adminCreate(t, '/attributes', [{ key: 'fz-city', name: 'City', type: 'user' }]);
  plain = await createBoard(t, { key: 'fz-plain', rankBy: 'metric', metricId: m.id, maxParticipants: 2 });
  byCity = await createBoard(t, {
    key: 'fz-city',
    rankBy: 'metric',
    metricId: m.id,
    breakdownAttributes: [city.id],
  });
});
afterAll(async () => t.close());

const cluster = () => isCluster(t.deps.redis);
/** The board of a board key ("…{lb:<id>}…"). */
const boardOf = (key: unknown) => /\{lb:([^}]+)\}/.exec(String(key))?.[1];
/** The ids of the boards ranking metric m, in configuration order. */
const metricBoards = () =>
  t.deps.catalog.snapshot.leaderboards.filter((b) => b.metricId === m.id).map((b) => b.id);
/** On a Cluster, the master that serves a key's slot. */
const masterOf = (key: string) => (t.deps.redis as Cluster).slots[calculateSlot(key)]?.[0];
/**
 * Whether the user script moves `user` on board `id` (src/services/user-op.ts fuseBoards): a board
 * without breakdowns (the boards here are ranked by metric m), on a single Redis always, on a Cluster
 * when one master serves the user's slot and the board's.
 */
const fusedFor = (user: string, id: string) =>
  id !== byCity.id &&
  (!cluster() || masterOf(t.deps.keys.user(user).hash) === masterOf(t.deps.keys.board(id).version));
/** The boards of metric m whose moves of `user` take a call of their own, in configuration order. */
const ownCalls = (user: string) => metricBoards().filter((id) => !fusedFor(user, id));

describe('board moves inside the user script', () => {
  it('moves a user on a plain board in the user script, and on a breakdown board with its own call', async () => {
    const boardCalls = spyOwnCalls(t.deps.redis, 'updateBoard');
    const calls = () => boardCalls.calls().length;
    try {
      const body = await send(t, m.key, { id: 'fz-a', attributes: { 'fz-city': 'paris' } }, 5);
      expect(calls()).toBe(ownCalls('fz-a').length);
      expect(body.leaderboards['fz-plain']).toMatchObject({ previousRank: null, rank: 1, threshold: 0 });
      expect(body.leaderboards['fz-city']).toMatchObject({ previousRank: null, rank: 1 });
      // Configuration order in the response, whichever path moved the board.
      expect(Object.keys(body.leaderboards)).toEqual(['fz-plain', 'fz-city']);
      // Nothing is written to the user hash after the script: the API's own moves are recorded by the
      // boards' scripts (the member entry's seq), the script's in its record (board.ap).
      expect(await userPart(t.deps.redis, t.deps.keys, 'fz-a', 'applied')).toEqual({});
    } finally {
      boardCalls.restore();
    }
  });

  it('applies the cap, the strict-beat rule and eviction as the board script does', async () => {
    await send(t, m.key, { id: 'fz-b', attributes: { 'fz-city': 'paris' } }, 3);
    const full = await send(t, m.key, { id: 'fz-c', attributes: { 'fz-city': 'rome' } }, 3);
    // A tie with the lowest of a full board does not enter.
    expect(full.leaderboards['fz-plain']).toBeUndefined();
    const beat = await send(t, m.key, { id: 'fz-c', attributes: { 'fz-city': 'rome' } }, 1);
    expect(beat.leaderboards['fz-plain']).toMatchObject({ previousRank: null, rank: 2, threshold: 4 });
    expect(await standings(t, plain.key)).toEqual([
      ['fz-a', 5],
      ['fz-c', 4],
    ]);
    expect(await standings(t, byCity.key, { userAttributes: 'fz-city:paris' })).toEqual([
      ['fz-a', 5],
      ['fz-b', 3],
    ]);
  });

  it('reads a full ranking again in each call, whatever was written to it in between', async () => {
    // On a single Redis, where every user's move on the board is the user script's (on a Cluster only
    // some users' are, and the board's own calls are covered by test/lua/board.test.ts).
    if (cluster()) return;
    const b = await createBoard(t, { key: 'fz-edge', rankBy: 'metric', metricId: m.id, maxParticipants: 2 });
    await send(t, m.key, 'fz-e1', 10);
    await send(t, m.key, 'fz-e2', 9);
    // Below the lowest of the full ranking: not ranked (the call reads the ranking's edge, 9).
    expect((await send(t, m.key, 'fz-e3', 1)).leaderboards['fz-edge']).toBeUndefined();
    // A move made by the board's own script (as for a board whose breakdowns were removed, or the
    // history writer's repair) evicts fz-e2: the lowest is now 9.5.
    const bk = t.deps.keys.board(b.id);
    const [members] = await t.deps.redis.keys(bk.members('*'));
    const run = members!.slice(members!.indexOf(':run:') + 5, -':members'.length);
    const moved = JSON.parse(
      (await t.deps.redis.updateBoard(
        4,
        bk.members(run),
        bk.ranking(run, ''),
        bk.version,
        bk.changes,
        'fz-e4',
        '9500000',
        '1',
        String(Date.now()),
        '',
        '2',
        '0',
        '0',
      )) as string,
    );
    expect(moved).toMatchObject({ rank: 2, evicted: 'fz-e2' });
    // 9.2 is below the new lowest: a call that compared with the edge read before (9) would rank it.
    expect((await send(t, m.key, 'fz-e5', 9.2)).leaderboards['fz-edge']).toBeUndefined();
    expect(await standings(t, b.key)).toEqual([
      ['fz-e1', 10],
      ['fz-e4', 9.5],
    ]);
  });

  it('lets the history writer skip the repair look-up of moves the user script made, and repair none made', async () => {
    await send(t, m.key, { id: 'fz-d', attributes: { 'fz-city': 'oslo' } }, 1);
    const lookups = spyOwnCalls(t.deps.redis, 'hmget');
    const repairs = spyOwnCalls(t.deps.redis, 'updateBoard');
    try {
      const writer = new HistoryWriter(t.deps, { consumer: 'fz-writer' });
      while ((await writer.drainOnce()) > 0) {}
      const looked = lookups
        .calls()
        .filter((args) => args.slice(1).includes('fz-d'))
        .map((args) => boardOf(args[0]));
      // Only the member entries of the boards whose moves were the API's own calls are looked up (the
      // breakdown board's; on a Cluster also those on another master than fz-d's). Every move was
      // made, so nothing is applied again.
      expect([...looked].sort()).toEqual(ownCalls('fz-d').sort());
      expect(looked).toContain(byCity.id);
      expect(repairs.calls()).toEqual([]);
    } finally {
      lookups.restore();
      repairs.restore();
    }
  });

  it('looks up the member entries of a pass’s records with one HMGET per board run, not one call per record', async () => {
    const writer = new HistoryWriter(t.deps, { consumer: 'fz-writer' });
    while ((await writer.drainOnce()) > 0) {}
    const users = ['fz-p1', 'fz-p2', 'fz-p3', 'fz-p4'];
    for (const u of users) await send(t, m.key, { id: u, attributes: { 'fz-city': 'oslo' } }, 1);
    const lookups = spyOwnCalls(t.deps.redis, 'hmget');
    const single = spyOwnCalls(t.deps.redis, 'hget');
    try {
      while ((await writer.drainOnce()) > 0) {}
      const mine = lookups.calls().filter((args) => users.some((u) => args.slice(1).includes(u)));
      // One call per board looked up (the breakdown board; on a Cluster also the others, for the users
      // on another master than theirs), each for all its users at once; no lookup of one user alone.
      const expected = new Map<string, string[]>();
      for (const u of users) for (const id of ownCalls(u)) expected.set(id, [...(expected.get(id) ?? []), u]);
      expect(expected.get(byCity.id)).toEqual(users);
      expect(new Map(mine.map((args) => [boardOf(args[0])!, args.slice(1).map(String).sort()]))).toEqual(
        expected,
      );
      expect(mine).toHaveLength(expected.size);
      expect(single.calls().filter((args) => users.includes(String(args[1])))).toEqual([]);
    } finally {
      lookups.restore();
      single.restore();
    }
  });

  it('never ranks twice a user its op creates who already has an entry on the run', async () => {
    // On a single Redis, where the user script makes every move on this board (on a Cluster only for
    // users on the board's master).
    if (cluster()) return;
    // A user the op creates has no entry on the board's run, so the user script writes the entry first
    // and reads it only if one was there after all (lib/board.lua A[10]). Here one is: the user's hash
    // is removed after a first event (as if lost), so the second event creates the user again, with
    // seq 1 again, which the entry's seq says is no newer than the move it holds.
    const b = await createBoard(t, {
      key: 'fz-again',
      rankBy: 'metric',
      metricId: m.id,
      maxParticipants: 10,
    });
    await send(t, m.key, 'fz-again-u', 3);
    await t.deps.redis.del(t.deps.keys.user('fz-again-u').hash);
    const again = await send(t, m.key, 'fz-again-u', 7);
    expect(again.total).toBe(7);
    // The entry's move is no older than this one: the board keeps it, and the response has no entry.
    expect(again.leaderboards['fz-again']).toBeUndefined();
    expect(await standings(t, b.key)).toEqual([['fz-again-u', 3]]);
    // A user the op creates on a run without the user's entry: written once, ranked once.
    const fresh = await send(t, m.key, 'fz-again-v', 5);
    expect(fresh.leaderboards['fz-again']).toMatchObject({ previousRank: null, rank: 1 });
    expect(await standings(t, b.key)).toEqual([
      ['fz-again-v', 5],
      ['fz-again-u', 3],
    ]);
  });

  it('repairs from the history writer the moves of an API process that died after the user script', async () => {
    const writer = new HistoryWriter(t.deps, { consumer: 'fz-writer' });
    await send(t, m.key, { id: 'fz-r', attributes: { 'fz-city': 'lima' } }, 1);
    while ((await writer.drainOnce()) > 0) {}
    // The second event commits, but its process never makes the board calls (rankings: false also
    // leaves the moves out of the user script): every board is behind until the writer repairs it.
    await runUserOp(
      { ...t.deps, rankings: false },
      { kind: 'event', metricId: m.id, user: { id: 'fz-r' }, valueMicros: 99_000_000 },
    );
    expect((await standings(t, plain.key)).find(([id]) => id === 'fz-r')?.[1] ?? 1).toBe(1);
    expect(await standings(t, byCity.key, { userAttributes: 'fz-city:lima' })).toEqual([['fz-r', 1]]);
    const repairs = spyOwnCalls(t.deps.redis, 'updateBoard');
    try {
      while ((await writer.drainOnce()) > 0) {}
      // Every board of the metric, once (the earlier tests' boards too).
      expect(repairs.calls().map((args) => boardOf(args[1]))).toEqual(metricBoards());
    } finally {
      repairs.restore();
    }
    expect((await standings(t, plain.key))[0]).toEqual(['fz-r', 100]);
    expect(await standings(t, byCity.key, { userAttributes: 'fz-city:lima' })).toEqual([['fz-r', 100]]);
  });
});
