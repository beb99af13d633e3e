// lua/lib/board.lua's updateBoard on its own, on throwaway keys under the harness's prefix.
import fc from 'fast-check';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { BoardReply } from '../../src/redis/board-moves';
import { createLuaHarness, type LuaHarness, luaLib } from './harness';

type Reply = BoardReply;

let h: LuaHarness;
let n = 0;
let keys: { members: string; ranking: string; version: string; changes: string; expiries: string };

beforeAll(async () => {
  h = await createLuaHarness();
});
afterAll(async () => {
  await h.close();
});
afterEach(async () => {
  await h.cleanup();
});

function newBoard() {
  n++;
  keys = {
    members: `${h.prefix}b${n}:run:2025-03-10:members`,
    ranking: `${h.prefix}b${n}:run:2025-03-10:rank:g`,
    version: `${h.prefix}b${n}:version`,
    changes: `${h.prefix}b${n}:changes`,
    expiries: `${h.prefix}b${n}:run:2025-03-10:x:g`,
  };
}

async function update(
  userId: string,
  value: number,
  opts: {
    seq?: number;
    now?: number;
    group?: string;
    max?: number;
    expires?: number;
    streak?: boolean;
    quiet?: boolean;
  } = {},
): Promise<Reply> {
  const args = [
    userId,
    String(value),
    String(opts.seq ?? 1),
    String(opts.now ?? 1000),
    opts.group ?? 'g',
    String(opts.max ?? 10),
    String(opts.expires ?? 0),
    opts.streak ? '1' : '0',
    opts.quiet ? '1' : '0',
  ];
  return h.run<Reply>(['board'], 'return updateBoard(KEYS, INPUT)', args, [
    keys.members,
    keys.ranking,
    keys.version,
    keys.changes,
    keys.expiries,
  ]);
}

async function changes() {
  const entries = await h.redis.xrange(keys.changes, '-', '+');
  return entries.map(([, fields]) => {
    const o: Record<string, string> = {};
    for (let i = 0; i < fields.length; i += 2) o[fields[i]!] = fields[i + 1]!;
    return o;
  });
}

describe('updateBoard', () => {
  it('ranks a first positive value and records the change with the run it belongs to', async () => {
    newBoard();
    const r = await update('alice', 5, { now: 1000 });
    expect(r).toEqual({ rank: 1, value: '5', threshold: '0' });
    expect(await h.redis.hget(keys.members, 'alice')).toBe('5|1000|g|1|0');
    expect(await changes()).toEqual([
      { u: 'alice', run: '2025-03-10', g: 'g', pr: '', r: '1', pv: '', v: '5', t: '1000' },
    ]);
  });

  it('orders by value descending, then by who reached the value first', async () => {
    newBoard();
    await update('carol', 3, { now: 1000 });
    await update('bob', 7, { now: 1001 });
    await update('alice', 3, { now: 1002 });
    const r = await update('carol', 3, { now: 1003, seq: 2 });
    // An unchanged value keeps its time: carol still reached 3 before alice.
    expect(r).toMatchObject({ prevRank: 2, rank: 2 });
    const ranking = await h.redis.zrange(keys.ranking, 0, -1);
    expect(ranking.map((m) => m.slice(16))).toEqual(['bob', 'carol', 'alice']);
  });

  it('never moves a user backwards on a late or repeated update', async () => {
    newBoard();
    await update('alice', 5, { seq: 4 });
    const r = await update('alice', 9, { seq: 4, now: 2000 });
    expect(r).toMatchObject({ stale: true, rank: 1 });
    expect(Number(r.value)).toBe(5);
    expect(await h.redis.hget(keys.members, 'alice')).toBe('5|1000|g|4|0');
  });

  it('unranks a user whose value falls to 0, also in the same millisecond as the change before', async () => {
    newBoard();
    await update('alice', 5, { seq: 1, now: 1000 });
    await update('bob', 3, { seq: 1, now: 1000 });
    // Same ms: the member's name (changedAt|user) is the same before and after the move.
    const r = await update('alice', 0, { seq: 2, now: 1000 });
    expect(r).toMatchObject({ prevRank: 1 });
    expect(r.rank).toBeUndefined();
    expect((await h.redis.zrange(keys.ranking, 0, -1)).map((m) => m.slice(16))).toEqual(['bob']);
    expect(await h.redis.hget(keys.members, 'alice')).toBe('0|1000|g|2|0');
  });

  it('keeps at most maxParticipants, evicting the lowest for a higher value only', async () => {
    newBoard();
    await update('a', 5, { max: 2 });
    await update('b', 3, { max: 2 });
    expect(await update('c', 2, { max: 2 })).toEqual({ threshold: '3' });
    const r = await update('d', 4, { max: 2, now: 1500 });
    expect(r).toMatchObject({ rank: 2, value: '4', evicted: 'b', threshold: '4' });
    expect((await changes()).slice(-2)).toEqual([
      { u: 'b', run: '2025-03-10', g: 'g', pr: '2', r: '', pv: '3', v: '', t: '1500' },
      { u: 'd', run: '2025-03-10', g: 'g', pr: '', r: '2', pv: '', v: '4', t: '1500' },
    ]);
  });

  // The stale branch once returned numbers, which cjson prints with 14 significant digits.
  it('after maxParticipants was lowered, compares with and evicts the lowest entry, not the one at the cap', async () => {
    newBoard();
    for (const [u, v] of [
      ['a', 9],
      ['b', 7],
      ['c', 5],
      ['d', 3],
    ] as const)
      await update(u, v, { max: 10 });
    // The cap is now 2 and the ranking holds 4: the threshold is the lowest value (3), and a value above
    // it evicts the lowest entry.
    expect(await update('e', 2, { max: 2 })).toEqual({ threshold: '3' });
    const r = await update('f', 4, { max: 2, now: 1500 });
    expect(r).toMatchObject({ rank: 4, value: '4', evicted: 'd', threshold: '4' });
    expect(await h.redis.zcard(keys.ranking)).toBe(4);
  });

  it('leaves the threshold out of a quiet reply (batch items), the move itself unchanged', async () => {
    newBoard();
    await update('a', 5, { max: 1 });
    expect(await update('b', 7, { max: 1, quiet: true })).toEqual({ rank: 1, value: '7', evicted: 'a' });
    expect(await h.redis.zrange(keys.ranking, 0, -1)).toEqual([expect.stringMatching(/\|b$/)]);
  });

  it('answers a stale update with the exact values, as strings like every other reply', async () => {
    newBoard();
    await update('alice', 123_456_789_012_345, { seq: 5 });
    const r = await update('alice', 123_456_789_012_399, { seq: 5 });
    expect(r).toMatchObject({
      stale: true,
      value: '123456789012345',
      prevValue: '123456789012345',
      threshold: '0',
    });
  });

  it('refuses an update in another group than the one the user entered the run in', async () => {
    newBoard();
    await update('alice', 5, { group: 'eu' });
    expect(await update('alice', 6, { group: 'us', seq: 2 })).toEqual({ err: 'GROUP', group: 'eu' });
  });

  it('drops streaks that broke without activity from streak boards before ranking', async () => {
    newBoard();
    await update('old', 9, { streak: true, expires: 1500, now: 1000 });
    const r = await update('new', 2, { streak: true, expires: 9000, now: 2000 });
    expect(r).toMatchObject({ rank: 1, value: '2' });
    expect(await h.redis.zcard(keys.ranking)).toBe(1);
    expect(await h.redis.zrange(keys.expiries, 0, -1, 'WITHSCORES')).toEqual([
      await h.redis.zrange(keys.ranking, 0, 0).then((m) => m[0]),
      '9000',
    ]);
  });

  it('refuses a streak move without its expiry index', async () => {
    newBoard();
    const run = h.run(
      ['board'],
      'return updateBoard(KEYS, INPUT)',
      ['a', '1', '1', '1000', 'g', '10', '0', '1', '0'],
      [keys.members, keys.ranking, keys.version, keys.changes],
    );
    await expect(run).rejects.toThrow(/expiry index/);
  });

  // A streak move's cost must not grow with the ranking: it reads the lapsed entries from the expiry
  // index, never the whole ranking and every member's entry (what it did before the index, about 1 ms
  // a move on a full board of 1,000).
  it('drops lapsed streaks without reading the whole ranking', async () => {
    newBoard();
    for (let i = 0; i < 200; i++) {
      await update(`u${i}`, 1 + (i % 7), {
        streak: true,
        max: 200,
        now: 1000,
        expires: i < 3 ? 1500 : 9000 + i,
      });
    }
    // The board's lib with every command it runs recorded (the ranking's key and the first argument).
    const counted = luaLib('board').replace(/redis\.call\(/g, 'COUNTED(');
    const r = await h.run<{ calls: string[]; reply: Reply }>(
      [
        {
          source: `local CALLS = {}
local function COUNTED(cmd, ...)
  local a = { ... }
  CALLS[#CALLS + 1] = cmd .. ' ' .. tostring(a[2])
  return redis.call(cmd, ...)
end`,
        },
        { source: counted },
      ],
      'local reply = updateBoard(KEYS, INPUT) return { calls = CALLS, reply = reply }',
      ['u100', '50', '2', '2000', 'g', '200', '99999', '1', '0'],
      [keys.members, keys.ranking, keys.version, keys.changes, keys.expiries],
    );
    expect(r.reply).toMatchObject({ rank: 1, value: '50' });
    expect(r.calls.some((c) => c.startsWith('HMGET'))).toBe(false);
    expect(r.calls.filter((c) => c === 'ZRANGE 0')).toEqual([]);
    // A few commands for the move itself and two for each lapsed entry (ranking and index).
    expect(r.calls.length).toBeLessThanOrEqual(14 + 2 * 3);
    // The three lapsed entries were dropped, from the ranking and its index alike.
    expect(await h.redis.zcard(keys.ranking)).toBe(197);
    expect(await h.redis.zcard(keys.expiries)).toBe(197);
  });

  it('indexes a streak ranking written before its expiry index existed, once', async () => {
    newBoard();
    await update('a', 5, { streak: true, expires: 1500, now: 1000 });
    await update('b', 4, { streak: true, expires: 0, now: 1000 });
    await update('c', 3, { streak: true, expires: 9000, now: 1000 });
    await h.redis.del(keys.expiries);
    const r = await update('d', 1, { streak: true, expires: 9000, now: 2000 });
    expect(r).toMatchObject({ rank: 3, value: '1' });
    const ranked = await h.redis.zrange(keys.ranking, 0, -1);
    expect(ranked.map((m) => m.slice(16))).toEqual(['b', 'c', 'd']);
    const index = await h.redis.zrange(keys.expiries, 0, -1, 'WITHSCORES');
    expect(index.filter((_, i) => i % 2 === 0).map((m) => m.slice(16))).toEqual(['c', 'd', 'b']);
    expect(index.filter((_, i) => i % 2 === 1)).toEqual(['9000', '9000', 'inf']);
  });

  it('makes the expiry index again when it does not hold the ranking (an earlier version wrote to it)', async () => {
    newBoard();
    await update('a', 5, { streak: true, expires: 9000, now: 1000 });
    await update('b', 4, { streak: true, expires: 1500, now: 1000 });
    // b is missing from the index (ranked by an earlier version), and a stale entry is left in it.
    const [, b] = await h.redis.zrange(keys.ranking, 0, -1);
    await h.redis.zrem(keys.expiries, b!);
    await h.redis.zadd(keys.expiries, 1200, `${'0'.repeat(15)}|gone`);
    await update('c', 3, { streak: true, expires: 9000, now: 2000 });
    const ranked = await h.redis.zrange(keys.ranking, 0, -1);
    expect(ranked.map((m) => m.slice(16))).toEqual(['a', 'c']);
    expect(await h.redis.zrange(keys.expiries, 0, -1)).toEqual([...ranked].sort());
  });

  it("keeps a streak ranking's expiry index equal to the ranking through any moves", async () => {
    const move = fc.record({
      user: fc.constantFrom('a', 'b', 'c', 'd', 'e', 'f'),
      value: fc.integer({ min: 0, max: 6 }),
      step: fc.integer({ min: 0, max: 400 }),
      life: fc.oneof(fc.constant(0), fc.integer({ min: 1, max: 1500 })),
    });
    await fc.assert(
      fc.asyncProperty(
        fc.array(move, { minLength: 1, maxLength: 25 }),
        fc.integer({ min: 1, max: 4 }),
        async (moves, max) => {
          newBoard();
          let now = 1000;
          const seq = new Map<string, number>();
          for (const m of moves) {
            now += m.step;
            const s = (seq.get(m.user) ?? 0) + 1;
            seq.set(m.user, s);
            await update(m.user, m.value, {
              streak: true,
              max,
              now,
              seq: s,
              expires: m.life && now + m.life,
            });
            const ranking = await h.redis.zrange(keys.ranking, 0, -1);
            const index = await h.redis.zrange(keys.expiries, 0, -1, 'WITHSCORES');
            const byMember = new Map<string, string>();
            for (let i = 0; i < index.length; i += 2) byMember.set(index[i]!, index[i + 1]!);
            expect([...byMember.keys()].sort()).toEqual([...ranking].sort());
            expect(ranking.length).toBeLessThanOrEqual(max);
            for (const member of ranking) {
              const meta = (await h.redis.hget(keys.members, member.slice(16)))!.split('|');
              const expires = Number(meta[4]);
              expect(byMember.get(member)).toBe(expires > 0 ? String(expires) : 'inf');
              // Nothing ranked has lapsed at the last move's time.
              expect(expires === 0 || expires > now).toBe(true);
            }
          }
          await h.cleanup();
        },
      ),
      { numRuns: 40 },
    );
  }, 60_000);

  it("reuses a full ranking's edge across the moves of one script call only while the ranking is unchanged", async () => {
    newBoard();
    await update('a', 10, { max: 2 });
    await update('b', 9, { max: 2 });
    // One script call (as a multi-op call makes them): c stays out (the edge, 9, is read and kept), d
    // evicts b, and e must be compared with the new lowest (9.5), not the kept 9.
    const moves = [
      ['c', '1'],
      ['d', '9.5'],
      ['e', '9.2'],
    ].map(([u, v]) => `updateBoard(KEYS, { '${u}', '${v}', '1', '1000', 'g', '2', '0', '0', '1' })`);
    const r = await h.run<Reply[]>(['board'], `return { ${moves.join(', ')} }`, null, [
      keys.members,
      keys.ranking,
      keys.version,
      keys.changes,
    ]);
    expect(r.map((m) => m.rank ?? null)).toEqual([null, 2, null]);
    expect(r[1]!.evicted).toBe('b');
    const top = await h.redis.zrange(keys.ranking, 0, -1, 'WITHSCORES');
    expect(top.filter((_, i) => i % 2 === 0).map((m) => m.slice(16))).toEqual(['a', 'd']);
  });

  /** Moves as updateBoard calls in one script call's source (each user's seq rising from 1). */
  const callOf = (moves: Array<{ user: string; value: number; max: number }>) => {
    const seqs = new Map<string, number>();
    return moves.map(({ user, value, max }) => {
      const seq = (seqs.get(user) ?? 0) + 1;
      seqs.set(user, seq);
      return `updateBoard(KEYS, { '${user}', '${value}', '${seq}', '${1000 + seq}', 'g', '${max}', '0', '0', '0' })`;
    });
  };
  const boardKeys = () => [keys.members, keys.ranking, keys.version, keys.changes];
  const boardState = async () => ({
    ranking: await h.redis.zrange(keys.ranking, 0, -1, 'WITHSCORES'),
    members: await h.redis.hgetall(keys.members),
    changes: (await h.redis.xrange(keys.changes, '-', '+')).map(([, f]) => f),
  });

  it('answers and writes the same whether the moves share one script call or each has its own', async () => {
    const move = fc.record({
      user: fc.constantFrom('a', 'b', 'c', 'd', 'e', 'f', 'g'),
      value: fc.integer({ min: 0, max: 6 }),
      // Mostly the same cap; now and then a lower one (a cap lowered while the ranking was full).
      max: fc.oneof({ weight: 5, arbitrary: fc.constant(4) }, { weight: 1, arbitrary: fc.constant(2) }),
    });
    await fc.assert(
      fc.asyncProperty(fc.array(move, { minLength: 1, maxLength: 30 }), async (moves) => {
        const calls = callOf(moves);
        newBoard();
        const alone: Reply[] = [];
        for (const c of calls) alone.push(await h.run<Reply>(['board'], `return ${c}`, null, boardKeys()));
        const aloneState = await boardState();
        newBoard();
        const shared = await h.run<Reply[]>(['board'], `return { ${calls.join(', ')} }`, null, boardKeys());
        expect(shared).toEqual(alone);
        expect(await boardState()).toEqual(aloneState);
        await h.cleanup();
      }),
      { numRuns: 60 },
    );
  }, 60_000);

  it("reads a full ranking's edge once for a call's moves of ranked users above it", async () => {
    newBoard();
    for (const [u, v] of [
      ['a', 10],
      ['b', 9],
      ['c', 8],
      ['d', 7],
    ] as const)
      await update(u, v, { max: 3 });
    const counted = luaLib('board').replace(/redis\.call\(/g, 'COUNTED(');
    const moves = [
      ['a', '11'],
      ['b', '12'],
      ['a', '13'],
      ['b', '14'],
    ].map(
      ([u, v], i) => `updateBoard(KEYS, { '${u}', '${v}', '${2 + i}', '2000', 'g', '3', '0', '0', '0' })`,
    );
    const r = await h.run<{ calls: string[]; replies: Reply[] }>(
      [
        {
          source: `local CALLS = {}
local function COUNTED(cmd, ...)
  CALLS[#CALLS + 1] = cmd
  return redis.call(cmd, ...)
end`,
        },
        { source: counted },
      ],
      `local replies = { ${moves.join(', ')} } return { calls = CALLS, replies = replies }`,
      null,
      boardKeys(),
    );
    expect(r.replies.map((m) => [m.prevRank, m.rank, m.threshold])).toEqual([
      [1, 1, '8'],
      [2, 1, '8'],
      [2, 1, '8'],
      [2, 1, '8'],
    ]);
    // The edge (c at the cap, d beyond it) is read by the first move only.
    expect(r.calls.filter((c) => c === 'ZRANGE')).toHaveLength(1);
    // The ranking version moves once for the call's four changes.
    expect(r.calls.filter((c) => c === 'INCR')).toHaveLength(1);
  });

  it('moves the version once per call that changes a ranking, and again for the next call', async () => {
    newBoard();
    await update('a', 5);
    const v1 = Number(await h.redis.get(keys.version));
    const moves = ['a', 'b', 'c'].map(
      (u, i) => `updateBoard(KEYS, { '${u}', '${6 + i}', '2', '2000', 'g', '10', '0', '0', '0' })`,
    );
    await h.run(['board'], `return { ${moves.join(', ')} }`, null, boardKeys());
    expect(Number(await h.redis.get(keys.version))).toBe(v1 + 1);
    // A call whose moves change nothing (stale seqs) leaves it.
    await h.run(['board'], `return { ${moves.join(', ')} }`, null, boardKeys());
    expect(Number(await h.redis.get(keys.version))).toBe(v1 + 1);
    await update('d', 1, { seq: 3 });
    expect(Number(await h.redis.get(keys.version))).toBe(v1 + 2);
  });

  it('moves the ranking version with every write to a ranking, seeded from the server clock', async () => {
    newBoard();
    await update('alice', 5, { seq: 2 });
    const v1 = Number(await h.redis.get(keys.version));
    expect(v1).toBeGreaterThan(Date.parse('2020-01-01') * 1000);
    await update('alice', 6, { seq: 1 });
    expect(Number(await h.redis.get(keys.version))).toBe(v1);
    await update('alice', 6, { seq: 3 });
    expect(Number(await h.redis.get(keys.version))).toBe(v1 + 1);
  });
});
