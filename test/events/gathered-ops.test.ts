import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { isCluster } from '../../src/redis/client';
import { type UserOp, runUserOp } from '../../src/services/user-op';
import { adminCreate, createTestServer, type TestServer } from '../helpers/server';
import { userMaster, userSlot, usersPerCall } from '../helpers/gathered';
import { createBoard, standings } from '../helpers/leaderboards';

// The ops a process has for one plan within one turn of its event loop travel in one call of
// lua/applyUserOp.lua (src/services/user-op.ts gathered): on a single Redis one "__multi_full" call, on a
// Cluster one "__multi_node" call per master (users of any slot that master serves). Each op must be
// applied and answered as if called alone, one after the other, and an op that fails must fail alone.

let t: TestServer;
let m: { id: string; key: string };
let board: { key: string };

beforeAll(async () => {
  // The user script's own gathering: every event goes to it (not evaluated in the API, whatever
  // EVALUATE_EVENTS the suite runs with: src/services/evaluated-op.ts gathers its own calls).
  t = await createTestServer({ env: { EVALUATE_EVENTS: '0' } });
  [m] = (await adminCreate(t, '/metrics', [{ key: 'go-m', name: 'M' }])) as [{ id: string; key: string }];
  const [sys] = await adminCreate(t, '/points', [{ key: 'go-xp', name: 'XP' }]);
  const res = await t.admin('POST', `/points/${sys.id}/triggers`, [
    { type: 'metric', points: 10, metricId: m.id, metricThreshold: 1, status: 'active' },
  ]);
  expect(res.status).toBe(201);
  board = await createBoard(t, { rankBy: 'metric', metricId: m.id, maxParticipants: 100 });
  await t.deps.catalog.reload();
});
afterAll(async () => t.close());

const event = (user: string, value: number): Extract<UserOp, { kind: 'event' }> => ({
  kind: 'event',
  metricId: m.id,
  user: { id: user },
  valueMicros: value * 1_000_000,
});

const masterOf = (user: string) => userMaster(t, user);

describe('ops gathered into one script call', () => {
  it('sends the ops of one turn together and answers each as if it had been called alone', async () => {
    const values = Array.from({ length: 12 }, (_, i) => ((i * 5) % 12) + 1);
    let results: Awaited<ReturnType<typeof runUserOp>>[] = [];
    const calls = await usersPerCall(t, async () => {
      results = await Promise.all(values.map((v, i) => runUserOp(t.deps, event(`go-u${i}`, v))));
    });
    const users = values.map((_, i) => `go-u${i}`);
    expect(calls.flat().sort()).toEqual([...users].sort());
    if (isCluster(t.deps.redis)) {
      // One call per master, each carrying the users that master serves (their slots differ).
      const masters = [...new Set(users.map(masterOf))];
      expect(calls).toHaveLength(masters.length);
      for (const call of calls) expect(new Set(call.map(masterOf)).size).toBe(1);
      expect(new Set(users.map((u) => userSlot(t, u))).size).toBeGreaterThan(masters.length);
    } else expect(calls).toEqual([users]);
    results.forEach((r, i) => {
      expect(r.totalMicros).toBe(values[i]! * 1_000_000);
      expect(r.created).toBe(true);
      // 10 points per unit of the metric.
      expect(r.points.map((p) => p.total)).toEqual([values[i]! * 10]);
    });
    // Each op saw the board as the ops before it in the call left it: its rank among them. (On a
    // Cluster the ops' calls run on three masters at once, so their moves come in any order.)
    const ranks = results.map((r) => r.boardMoves?.find((b) => b.board.key === board.key)?.rank);
    if (!isCluster(t.deps.redis))
      values.forEach((v, i) => {
        const earlierAbove = values.slice(0, i).filter((w) => w > v).length;
        expect(ranks[i]).toBe(earlierAbove + 1);
      });
    expect(await standings(t, board.key)).toEqual(
      values.map((v, i) => [`go-u${i}`, v] as [string, number]).sort((a, b) => b[1] - a[1]),
    );
  });

  it('applies two ops of one user in one call one after the other', async () => {
    const [a, b] = await Promise.all([
      runUserOp(t.deps, event('go-same', 2)),
      runUserOp(t.deps, event('go-same', 3)),
    ]);
    expect([a.totalMicros, b.totalMicros]).toEqual([2_000_000, 5_000_000]);
    expect([a.seq, b.seq]).toEqual([a.seq, a.seq + 1]);
    expect(b.points.map((p) => p.total)).toEqual([50]);
  });

  it('fails an op alone: an error reply and a failing script leave the other ops of the call applied', async () => {
    // The input of go-bad's op is made unreadable on its way to Redis (the API never sends such a
    // thing): the script fails on it.
    const redis = t.deps.redis as unknown as Record<string, (...args: unknown[]) => Promise<unknown>>;
    const original = redis.applyUserOp!;
    const spy = vi.spyOn(redis, 'applyUserOp').mockImplementation(function (
      this: unknown,
      ...args: unknown[]
    ) {
      const bad = args.map((a) => (typeof a === 'string' && a.includes('"id":"go-bad"') ? '{not json' : a));
      return original.apply(this, bad);
    });
    let settled: PromiseSettledResult<{ totalMicros: number }>[];
    try {
      settled = await Promise.allSettled([
        runUserOp(t.deps, event('go-ok1', 1)),
        // A total beyond the bound: the script's own error (422), as an op of its own would answer.
        runUserOp(t.deps, { ...event('go-big', 1), valueMicros: 9_007_199_255_000_000 }),
        runUserOp(t.deps, event('go-bad', 1)),
        runUserOp(t.deps, event('go-ok2', 4)),
      ]);
    } finally {
      spy.mockRestore();
    }
    expect(settled.map((s) => s.status)).toEqual(['fulfilled', 'rejected', 'rejected', 'fulfilled']);
    expect((settled[1] as PromiseRejectedResult).reason).toMatchObject({ status: 422 });
    if (!isCluster(t.deps.redis))
      expect(String((settled[2] as PromiseRejectedResult).reason)).toMatch(
        /applyUserOp: .*(json|JSON|Expected)/,
      );
    expect((settled[3] as PromiseFulfilledResult<{ totalMicros: number }>).value.totalMicros).toBe(4_000_000);
    expect(await t.deps.redis.exists(t.deps.keys.user('go-ok1').hash)).toBe(1);
    expect(await t.deps.redis.exists(t.deps.keys.user('go-bad').hash)).toBe(0);
    expect(await t.deps.redis.exists(t.deps.keys.user('go-big').hash)).toBe(0);
  });
});
