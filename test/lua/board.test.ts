// lua/lib/board.lua's updateBoard on its own, on throwaway keys under the harness's prefix.
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { BoardReply } from '../../src/redis/board-moves';
import { createLuaHarness, type LuaHarness } from './harness';

type Reply = BoardReply;

let h: LuaHarness;
let n = 0;
let keys: { members: string; ranking: string; version: string; changes: string };

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
  });

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
