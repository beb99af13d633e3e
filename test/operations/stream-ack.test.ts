import calculateSlot from 'cluster-key-slot';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { isCluster } from '../../src/redis/client';
import { HISTORY_GROUP, HistoryWriter } from '../../src/workers/history-writer';
import { adminCreate, createTestServer, type TestServer } from '../helpers/server';

// lua/ackStream.lua: a consumer group's acknowledgement removes every entry the
// group is done with, and never an entry still pending with another consumer or not yet delivered
// (a board's change stream: src/workers/board-changes.ts).

let t: TestServer;

beforeAll(async () => {
  t = await createTestServer();
});
afterAll(async () => t.close());

describe('acknowledging stream entries', () => {
  it('removes the entries the group is done with, never one pending or not yet delivered', async () => {
    const key = `${t.deps.keys.board('ack-test').changes}`;
    const group = 'webhooks';
    await t.deps.redis.xgroup('CREATE', key, group, '0', 'MKSTREAM');
    const ids: string[] = [];
    for (let i = 0; i < 6; i++) ids.push((await t.deps.redis.xadd(key, '*', 'r', String(i)))!);
    const read = async (consumer: string) =>
      (
        (await t.deps.redis.xreadgroup('GROUP', group, consumer, 'COUNT', 3, 'STREAMS', key, '>')) as Array<
          [string, Array<[string, string[]]>]
        >
      )[0]![1].map(([id]) => id);
    expect(await read('a')).toEqual(ids.slice(0, 3));
    expect(await read('b')).toEqual(ids.slice(3));
    const later = (await t.deps.redis.xadd(key, '*', 'r', 'not yet delivered'))!;
    // b acknowledges first: a's entries are still pending, so nothing is removed.
    expect(await t.deps.redis.ackStream(1, key, group, ...ids.slice(3))).toBe(3);
    expect(await t.deps.redis.xlen(key)).toBe(7);
    // a acknowledges: everything delivered is done; the entry never delivered stays.
    await t.deps.redis.ackStream(1, key, group, ...ids.slice(0, 3));
    expect((await t.deps.redis.xrange(key, '-', '+')).map(([id]) => id)).toEqual([later]);
    // Delivered and acknowledged in turn, the stream ends empty.
    expect(await read('a')).toEqual([later]);
    await t.deps.redis.ackStream(1, key, group, later);
    expect(await t.deps.redis.xlen(key)).toBe(0);
  });
});

describe("acknowledging many outbox streams in one call (lua/ackOutboxes.lua, a Cluster's history writer)", () => {
  it('acknowledges each stream as ackStream does, and reports a stream of another master untouched', async () => {
    const redis = t.deps.redis;
    // Two streams in one slot (a call reaches the slots of one master); on a Cluster, one elsewhere.
    const a = `${t.deps.keys.prefix}:{ack-many}:a`;
    const b = `${t.deps.keys.prefix}:{ack-many}:b`;
    const owner = (key: string) => (isCluster(redis) ? redis.slots[calculateSlot(key)]![0] : '');
    const elsewhere = isCluster(redis)
      ? Array.from({ length: 64 }, (_, i) => `${t.deps.keys.prefix}:{ack-other-${i}}:c`).find(
          (k) => owner(k) !== owner(a),
        )!
      : null;
    const group = 'probe';
    const read = async (key: string, consumer: string, n: number) =>
      (
        (await redis.xreadgroup('GROUP', group, consumer, 'COUNT', n, 'STREAMS', key, '>')) as Array<
          [string, Array<[string, string[]]>]
        >
      )[0]![1].map(([id]) => id);
    const streams = [a, b, ...(elsewhere ? [elsewhere] : [])];
    const ids = new Map<string, string[]>();
    for (const key of streams) {
      await redis.xgroup('CREATE', key, group, '0', 'MKSTREAM');
      const list: string[] = [];
      for (let i = 0; i < 3; i++) list.push((await redis.xadd(key, '*', 'r', String(i)))!);
      ids.set(key, list);
    }
    try {
      // a: two entries with one consumer, the third with another; b and elsewhere: all with one.
      expect(await read(a, 'c1', 2)).toEqual(ids.get(a)!.slice(0, 2));
      expect(await read(a, 'c2', 1)).toEqual(ids.get(a)!.slice(2));
      for (const key of streams.slice(1)) expect(await read(key, 'c1', 3)).toEqual(ids.get(key));
      const args = [a, '2', ...ids.get(a)!.slice(0, 2), b, '3', ...ids.get(b)!];
      if (elsewhere) args.push(elsewhere, '3', ...ids.get(elsewhere)!);
      const refused = await redis.ackOutboxes(1, a, group, ...args);
      // a keeps c2's pending entry and what follows it; b is done with entirely.
      expect((await redis.xrange(a, '-', '+')).map(([id]) => id)).toEqual(ids.get(a)!.slice(2));
      expect(((await redis.xpending(a, group)) as unknown[])[0]).toBe(1);
      expect(await redis.xlen(b)).toBe(0);
      expect(((await redis.xpending(b, group)) as unknown[])[0]).toBe(0);
      if (elsewhere) {
        expect(refused[0]).toBe(elsewhere);
        expect(refused[1]).toMatch(/non local key|cluster/i);
        expect(refused).toHaveLength(2);
        expect(await redis.xlen(elsewhere)).toBe(3);
        expect(((await redis.xpending(elsewhere, group)) as unknown[])[0]).toBe(3);
      } else expect(refused).toEqual([]);
    } finally {
      await Promise.all(streams.map((key) => redis.unlink(key)));
    }
  });

  it("leaves nothing pending on a Cluster, a stream whose master the client's slot table has wrong included", async () => {
    const redis = t.deps.redis;
    if (!isCluster(redis)) {
      // A single Redis acknowledges in lua/ackWithGlobals.lua, with the cross-user indexes.
      expect(t.deps.keys.outboxes).toHaveLength(1);
      return;
    }
    await adminCreate(t, '/metrics', [{ key: 'ack-many', name: 'Ack many' }]);
    await t.deps.catalog.reload();
    const users = Array.from({ length: 40 }, (_, i) => `ack-many-${i}`);
    for (const id of users) {
      const r = await t.api('POST', '/v1/metrics/ack-many/event', { user: { id }, value: 1 });
      expect(r.status).toBe(201);
    }
    // One user's stream placed on the wrong master once its entries are read (a hook runs after the
    // pass has written Postgres, before it acknowledges): its acknowledgement there is refused, then
    // sent on its own and redirected.
    const stream = t.deps.keys.user(users[0]!).outbox;
    const slot = calculateSlot(stream);
    const right = redis.slots[slot]![0]!;
    const masters = [...new Set(redis.slots.map((s) => s?.[0]).filter((n): n is string => !!n))];
    const calls = { many: 0, alone: 0 };
    const many = redis.ackOutboxes;
    const alone = redis.ackStream;
    redis.ackOutboxes = ((...a: Parameters<typeof many>) => {
      calls.many++;
      return many.apply(redis, a);
    }) as typeof many;
    redis.ackStream = ((...a: Parameters<typeof alone>) => {
      calls.alone++;
      return alone.apply(redis, a);
    }) as typeof alone;
    try {
      const wrong = masters.find((m) => m !== right)!;
      const writer = new HistoryWriter(t.deps, {
        consumer: 'w-ack-many',
        hooks: [
          async () => {
            redis.slots[slot] = [wrong];
          },
        ],
      });
      while ((await writer.drainOnce()) > 0) {}
      expect(calls.alone).toBeGreaterThanOrEqual(1);
      // The others: at most a call per master and pass, never one per stream.
      expect(calls.many).toBeLessThanOrEqual(masters.length * 2);
      for (const key of t.deps.keys.outboxes) {
        expect(((await redis.xpending(key, HISTORY_GROUP)) as unknown[])[0], key).toBe(0);
        expect(await redis.xlen(key), key).toBe(0);
      }
      expect(await writer.lag()).toBe(0);
    } finally {
      redis.slots[slot] = [right];
      redis.ackOutboxes = many;
      redis.ackStream = alone;
    }
  });
});
