import type { Cluster } from 'ioredis';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { userMaster, userSlot, usersPerCall } from '../helpers/gathered';
import { type UserOp, runUserOp } from '../../src/services/user-op';
import { type LocalCluster, startRedisCluster } from '../helpers/redis-cluster';
import { adminCreate, createTestServer, type TestServer } from '../helpers/server';

// On a Redis Cluster, the events a process has for one configuration within one turn of its event loop
// travel in one "__multi_node" call per master (src/services/user-op.ts gathered), for users of any of the
// slots that master serves; an op whose slot the master no longer serves is sent again alone. Runs on
// the Cluster the suite was given (.ci/cluster-tests), or on a throwaway one of its own.

let cluster: LocalCluster | undefined;
let t: TestServer;
let metricId: string;

beforeAll(async () => {
  let nodes = inject('services').clusterNodes;
  if (!nodes) {
    cluster = await startRedisCluster();
    nodes = cluster.nodes;
  }
  t = await createTestServer({ env: { REDIS_CLUSTER_NODES: nodes } });
  [{ id: metricId }] = (await adminCreate(t, '/metrics', [{ key: 'cg-m', name: 'M' }])) as [{ id: string }];
  await t.deps.catalog.reload();
}, 60_000);

afterAll(async () => {
  await t?.close();
  await cluster?.stop();
});

const event = (user: string, value: number): UserOp => ({
  kind: 'event',
  metricId,
  user: { id: user },
  valueMicros: value * 1_000_000,
});

const slotOf = (user: string) => userSlot(t, user);
const masterOf = (user: string) => userMaster(t, user);

describe('events gathered per master on a Redis Cluster', () => {
  it('sends one call per master for the users of its slots, each op answered as if alone', async () => {
    const users = Array.from({ length: 15 }, (_, i) => `cg-u${i}`);
    let results: Awaited<ReturnType<typeof runUserOp>>[] = [];
    const calls = await usersPerCall(t, async () => {
      results = await Promise.all(users.map((u, i) => runUserOp(t.deps, event(u, i + 1))));
    });
    const masters = new Set(users.map(masterOf));
    expect(masters.size).toBe(3);
    expect(calls).toHaveLength(3);
    for (const call of calls) expect(new Set(call.map(masterOf)).size).toBe(1);
    expect(calls.flat().sort()).toEqual([...users].sort());
    // The users of one call are in several slots (16 shards over 3 masters).
    expect(Math.max(...calls.map((c) => new Set(c.map(slotOf)).size))).toBeGreaterThan(1);
    expect(results.map((r) => r.totalMicros)).toEqual(users.map((_, i) => (i + 1) * 1_000_000));
    for (const u of users) expect(await t.deps.redis.hget(t.deps.keys.user(u).hash, 'seq')).toBe('1');
  });

  it('sends an op again alone when the master it went to no longer serves its slot', async () => {
    const redis = t.deps.redis as Cluster;
    // Two users on different masters; the client is made to believe the second's slot is on the
    // first's master (as when a slot has moved since it last read the table), so both share a call there.
    const ids = Array.from({ length: 64 }, (_, i) => `cg-s${i}`);
    const a = ids[0]!;
    const b = ids.find((u) => masterOf(u) !== masterOf(a))!;
    const slotB = slotOf(b);
    const real = redis.slots[slotB]!;
    redis.slots[slotB] = [masterOf(a)];
    let results: Awaited<ReturnType<typeof runUserOp>>[] = [];
    let calls: string[][];
    try {
      calls = await usersPerCall(t, async () => {
        results = await Promise.all([runUserOp(t.deps, event(a, 2)), runUserOp(t.deps, event(b, 3))]);
      });
    } finally {
      redis.slots[slotB] = real;
    }
    // b's op failed in the shared call before anything of it was written (its keys are not on that
    // master), then went alone, routed by its keys (the master's MOVED reply takes it to the right one).
    expect(calls).toEqual([[a, b], [b]]);
    expect(results.map((r) => [r.totalMicros, r.created, r.seq])).toEqual([
      [2_000_000, true, 1],
      [3_000_000, true, 1],
    ]);
    expect(await redis.hget(t.deps.keys.user(b).hash, 'seq')).toBe('1');
    // One outbox record each: the op that failed left none behind.
    const records = async (user: string) =>
      (await redis.xrange(t.deps.keys.user(user).outbox, '-', '+')).filter(([, f]) =>
        f.some((v) => v.includes(`"user":"${user}"`)),
      ).length;
    expect([await records(a), await records(b)]).toEqual([1, 1]);
  });
});
