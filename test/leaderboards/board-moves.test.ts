import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { boardMoves, scriptCalls } from '../../src/metrics/registry';
import { type BoardReply, MAX_MOVES_PER_CALL, moveOnBoard } from '../../src/redis/board-moves';
import { adminCreate, createTestServer, type TestServer } from '../helpers/server';
import { spyOwnCalls } from '../helpers/spy';
import { createBoard, send, standings } from '../helpers/leaderboards';

// Board moves made outside the user script travel per board and event-loop turn in one call of
// lua/updateBoard.lua (src/redis/board-moves.ts). Such a call must answer every move exactly as calls
// of their own, one after the other, would have; a move that fails fails alone.

let t: TestServer;
let boardSeq = 0;

beforeAll(async () => {
  t = await createTestServer();
});
afterAll(async () => t.close());

/**
 * A throwaway board's keys (run 2025-01-01, breakdown group `group`: none by default), with its
 * ranking's expiry index when it is ranked by streak.
 */
function boardKeys(group = '', streak = false) {
  const bk = t.deps.keys.board(`bm-${process.pid}-${++boardSeq}`);
  return {
    members: bk.members('2025-01-01'),
    ranking: bk.ranking('2025-01-01', group),
    version: bk.version,
    changes: bk.changes,
    ...(streak ? { expiries: bk.expiries('2025-01-01', group) } : {}),
  };
}

type Move = { user: string; value: number; seq: number };
/** A move's 8 ARGV; `expires` makes it a streak board's move (0: a streak that never breaks). */
const argsOf = (m: Move, now: number, max: number, group = '', expires?: number) => [
  m.user,
  String(m.value),
  String(m.seq),
  String(now),
  group,
  String(max),
  String(expires ?? 0),
  expires === undefined ? '0' : '1',
];

/** The change stream's entries without their ids (the times differ between two boards' runs). */
async function changes(key: string) {
  const entries = (await t.deps.redis.xrange(key, '-', '+')) as Array<[string, string[]]>;
  return entries.map(([, fields]) => fields);
}

describe('board moves gathered per board', () => {
  it('sends the moves queued in one turn as one call, and more than the per-call cap as several', async () => {
    const calls = spyOwnCalls(t.deps.redis, 'updateBoard');
    try {
      const keys = boardKeys();
      const n = MAX_MOVES_PER_CALL + 8;
      const replies = await Promise.all(
        Array.from({ length: n }, (_, i) =>
          moveOnBoard(t.deps.redis, keys, argsOf({ user: `u${i}`, value: 1 + i, seq: 1 }, 1000, 1000)),
        ),
      );
      // Each call: the key count, the keys, '' (several moves) and one packed argument per move.
      expect(calls.calls().map((args) => args.length - 2 - Number(args[0]))).toEqual([MAX_MOVES_PER_CALL, 8]);
      // Each reply is its own move's: the i-th user entered with value 1 + i, above everyone before.
      expect(replies.map((r) => r.rank)).toEqual(Array.from({ length: n }, () => 1));
      expect(await t.deps.redis.zcard(keys.ranking)).toBe(n);
    } finally {
      calls.restore();
    }
  });

  it('answers a call of several moves as calls of one move each, one after the other', async () => {
    // Users repeat (later and stale seqs), values tie and fall to 0, and a cap of 3 evicts.
    // Several moves travel packed in one argument each, the user id last: ids with the packing's
    // separators ('|', ',') and a group with commas (encoded breakdown values) must come through.
    const group = 'red%7Cblue,%C3%A9';
    // On a streak board each move carries an expiry, before or after the others' times, so entries
    // lapse between moves: both forms must drop the same ones and keep the same expiry index.
    const move = fc.record({
      user: fc.constantFrom('a', 'b|c', 'd,e|', '|', 'é ü'),
      value: fc.integer({ min: 0, max: 6 }),
      seq: fc.integer({ min: 1, max: 4 }),
      at: fc.integer({ min: 0, max: 10 }),
      life: fc.integer({ min: 0, max: 10 }),
    });
    await fc.assert(
      fc.asyncProperty(
        fc.array(move, { minLength: 2, maxLength: 12 }),
        fc.boolean(),
        async (moves, streak) => {
          const together = boardKeys(group, streak);
          const apart = boardKeys(group, streak);
          const base = 1_700_000_000_000;
          const args = (m: (typeof moves)[number]) =>
            argsOf(m, base + m.at, 3, group, streak ? m.life && base + m.at + m.life : undefined);
          const gathered = await Promise.all(moves.map((m) => moveOnBoard(t.deps.redis, together, args(m))));
          const oneByOne: string[] = [];
          for (const m of moves) {
            const keys = [apart.members, apart.ranking, apart.version, apart.changes];
            if (apart.expiries) keys.push(apart.expiries);
            oneByOne.push((await t.deps.redis.updateBoard(keys.length, ...keys, ...args(m))) as string);
          }
          expect(gathered).toEqual(oneByOne.map((r) => JSON.parse(r)));
          expect(await t.deps.redis.zrange(together.ranking, 0, -1, 'WITHSCORES')).toEqual(
            await t.deps.redis.zrange(apart.ranking, 0, -1, 'WITHSCORES'),
          );
          expect(await t.deps.redis.hgetall(together.members)).toEqual(
            await t.deps.redis.hgetall(apart.members),
          );
          expect(await changes(together.changes)).toEqual(await changes(apart.changes));
          if (streak) {
            expect(await t.deps.redis.zrange(together.expiries!, 0, -1, 'WITHSCORES')).toEqual(
              await t.deps.redis.zrange(apart.expiries!, 0, -1, 'WITHSCORES'),
            );
          }
          // Two boards: two slots on a Cluster.
          await t.deps.redis.unlink(...Object.values(together));
          await t.deps.redis.unlink(...Object.values(apart));
        },
      ),
      { numRuns: 25 },
    );
  });

  it("sends a move alone when its group holds '|' (the packing's separator), and answers it as one", async () => {
    const calls = spyOwnCalls(t.deps.redis, 'updateBoard');
    try {
      const plain = boardKeys();
      // The same board and run, another group (its own ranking).
      const odd = { ...plain, ranking: `${plain.ranking}x|y` };
      const [a, b, c] = await Promise.all([
        moveOnBoard(t.deps.redis, plain, argsOf({ user: 'p1', value: 3, seq: 1 }, 1000, 10)),
        moveOnBoard(t.deps.redis, odd, argsOf({ user: 'o1', value: 4, seq: 1 }, 1000, 10, 'x|y')),
        moveOnBoard(t.deps.redis, plain, argsOf({ user: 'p2', value: 5, seq: 1 }, 1000, 10)),
      ]);
      // The two plain moves in one call; the other alone, in a single move's form (4 keys, 8 ARGV).
      expect(
        calls
          .calls()
          .map((args) => args.length)
          .sort((x, y) => x - y),
      ).toEqual([1 + 4 + 1 + 2, 1 + 4 + 8]);
      // Each the first of its ranking when it was applied (p2 above p1).
      expect([a.rank, b.rank, c.rank]).toEqual([1, 1, 1]);
      expect(await t.deps.redis.hkeys(plain.members)).toEqual(expect.arrayContaining(['p1', 'o1', 'p2']));
    } finally {
      calls.restore();
    }
  });

  it('fails a bad move alone: the moves before and after it in the same call are applied', async () => {
    const keys = boardKeys();
    const [before, bad, after] = await Promise.allSettled([
      moveOnBoard(t.deps.redis, keys, argsOf({ user: 'ok1', value: 5, seq: 1 }, 1000, 10)),
      moveOnBoard(t.deps.redis, keys, ['bad', 'not-a-number', '1', '1000', '', '10', '0', '0']),
      moveOnBoard(t.deps.redis, keys, argsOf({ user: 'ok2', value: 7, seq: 1 }, 1000, 10)),
    ]);
    expect(before).toMatchObject({ status: 'fulfilled' });
    expect(bad).toMatchObject({
      status: 'rejected',
      reason: { message: expect.stringMatching(/^updateBoard: /) },
    });
    expect(after).toMatchObject({ status: 'fulfilled' });
    // A new entry: ranked first (7 > 5), no rank before.
    const reply = (after as PromiseFulfilledResult<BoardReply>).value;
    expect([reply.rank, reply.prevRank]).toEqual([1, undefined]);
    expect(await t.deps.redis.zcard(keys.ranking)).toBe(2);
    expect(await t.deps.redis.hexists(keys.members, 'bad')).toBe(0);
  });

  it('ranks parallel events exactly on a board moved outside the user script, in fewer calls than moves', async () => {
    // A breakdown board is moved outside the user script on a single Redis too (every board is on Cluster).
    const [m] = await adminCreate(t, '/metrics', [{ key: 'bm-m', name: 'M' }]);
    const [team] = await adminCreate(t, '/attributes', [{ key: 'bm-team', name: 'Team', type: 'user' }]);
    const board = await createBoard(t, {
      key: 'bm-board',
      rankBy: 'metric',
      metricId: m!.id,
      breakdownAttributes: [team!.id],
      maxParticipants: 10,
    });
    const counts = async () => ({
      moves: (await boardMoves.get()).values[0]?.value ?? 0,
      calls:
        (await scriptCalls.get()).values.find(
          (v) => v.labels.script === 'updateBoard' && v.labels.result === 'ok',
        )?.value ?? 0,
    });
    const before = await counts();
    const users = Array.from({ length: 40 }, (_, i) => ({ id: `bm-u${i}`, value: (i * 7) % 40 }));
    await Promise.all(
      users.map((u) => send(t, m!.key, { id: u.id, attributes: { 'bm-team': 'red' } }, u.value + 1)),
    );
    const after = await counts();
    const moves = after.moves - before.moves;
    const calls = after.calls - before.calls;
    expect(moves).toBeGreaterThanOrEqual(40);
    expect(calls).toBeLessThan(moves);
    const top = [...users].sort((a, b) => b.value - a.value).slice(0, 10);
    expect(await standings(t, board.key, { userAttributes: 'bm-team:red' })).toEqual(
      top.map((u) => [u.id, u.value + 1]),
    );
  });
});
