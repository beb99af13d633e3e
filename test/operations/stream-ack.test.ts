import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestServer, type TestServer } from '../helpers/server';

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
