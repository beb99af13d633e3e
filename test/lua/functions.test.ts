// The user script served as a Redis Function (src/redis/scripts.ts): loaded when Redis does not have
// it (a restart or FUNCTION FLUSH drops it), older versions removed, and a call that met a missing
// function applied once.
import { afterAll, beforeAll, describe, expect, inject, it, vi } from 'vitest';
import type { Redis } from 'ioredis';
import { isCluster } from '../../src/redis/client';
import { functionLibrary } from '../../src/redis/scripts';
import { userField } from '../../src/redis/user-hash';
import { runUserOp } from '../../src/services/user-op';
import { adminCreate, createTestServer, type TestServer } from '../helpers/server';
import { startRedis, startRedisCluster } from '../helpers/redis-cluster';

let t: TestServer;
let metricId: string;
const { library } = functionLibrary('applyUserOp');

/** The Redis, or every master of the Cluster (functions live on each node). */
const masters = (): Redis[] => (isCluster(t.deps.redis) ? t.deps.redis.nodes('master') : [t.deps.redis]);

/** The versions of the library every master has (each must have the same). */
async function libraries(): Promise<string[]> {
  const per = await Promise.all(
    masters().map(async (node) => {
      const listed = (await node.function('LIST', 'LIBRARYNAME', 'laurel_applyUserOp_*')) as unknown[][];
      return listed
        .map((e) => e[e.indexOf('library_name') + 1] as string)
        .sort()
        .join(',');
    }),
  );
  expect(new Set(per).size).toBe(1);
  return per[0] ? per[0].split(',') : [];
}

const flush = () => Promise.all(masters().map((node) => node.function('FLUSH')));

const event = (user: string) =>
  runUserOp(t.deps, { kind: 'event', metricId, user: { id: user }, valueMicros: 1_000_000 });

const total = async (user: string) =>
  Number(await t.deps.redis.hget(t.deps.keys.user(user).hash, userField('metrics', metricId))) / 1e6;

// FUNCTION FLUSH drops the functions of every process on the server: this file runs on a throwaway
// Redis (or Cluster, in the Cluster suite) of its own, so that no other file's calls are in flight
// meanwhile, and no other file reloads the library between a flush and the checks that follow it.
let own: { stop(): Promise<void> } | undefined;

beforeAll(async () => {
  if (inject('services').clusterNodes) {
    const cluster = await startRedisCluster();
    own = cluster;
    t = await createTestServer({ env: { REDIS_CLUSTER_NODES: cluster.nodes, EVALUATE_EVENTS: '0' } });
  } else {
    const redis = await startRedis();
    own = redis;
    // Events go to the user script, whose Function these tests flush and reload (whatever
    // EVALUATE_EVENTS the suite runs with).
    t = await createTestServer({ env: { REDIS_URL: redis.url, EVALUATE_EVENTS: '0' } });
  }
  [{ id: metricId }] = await adminCreate(t, '/metrics', [{ key: 'fn-steps', name: 'Steps' }]);
  await t.deps.catalog.reload();
});
afterAll(async () => {
  await t?.close();
  await own?.stop();
});

describe('applyUserOp as a Redis Function', () => {
  it('is named by a hash of its code, so two versions of Laurel never call each other’s', () => {
    expect(library).toMatch(/^laurel_applyUserOp_[0-9a-f]{16}$/);
    const { code } = functionLibrary('applyUserOp');
    expect(code.startsWith(`#!lua name=${library}\n`)).toBe(true);
    expect(code).toContain(
      `redis.register_function{function_name='${library}', callback=served, flags={'allow-cross-slot-keys'}}`,
    );
    expect(code).not.toMatch(/^return run\(KEYS, ARGV\)/m);
  });

  it('loads itself when Redis has lost its functions, and the call that found it missing counts once', async () => {
    await event('fn-u1');
    expect(await libraries()).toContain(library);
    await flush();
    expect(await libraries()).toEqual([]);
    const r = await event('fn-u1');
    expect(r.totalMicros).toBe(2_000_000);
    expect(await total('fn-u1')).toBe(2);
    expect(await libraries()).toEqual([library]);
  });

  it('loads once for parallel calls that all found it missing, each applied once', async () => {
    await flush();
    await Promise.all(Array.from({ length: 20 }, () => event('fn-u2')));
    expect(await total('fn-u2')).toBe(20);
    expect(await libraries()).toEqual([library]);
  });

  it('loads again when Redis loses the function once more between the load and the call', async () => {
    await flush();
    // The first two loads are followed by another flush (another process's, a restart) before the call.
    const nodes = masters();
    const loads = nodes.map((node) => {
      const original = node.function.bind(node);
      let lost = 0;
      const spy = vi.spyOn(node, 'function').mockImplementation((async (...args: unknown[]) => {
        const reply = await (original as (...a: unknown[]) => Promise<unknown>)(...args);
        if (args[0] === 'LOAD' && lost++ < 2) await original('FLUSH');
        return reply;
      }) as never);
      return spy;
    });
    try {
      const r = await event('fn-u4');
      expect(r.totalMicros).toBe(1_000_000);
    } finally {
      for (const spy of loads) spy.mockRestore();
    }
    expect(await total('fn-u4')).toBe(1);
    expect(await libraries()).toEqual([library]);
  });

  it('removes older versions of the library when it loads its own', async () => {
    await flush();
    const old = 'laurel_applyUserOp_0000000000000000';
    await Promise.all(
      masters().map((node) =>
        node.function(
          'LOAD',
          `#!lua name=${old}\nredis.register_function('${old}', function() return 'old' end)`,
        ),
      ),
    );
    // A fresh client of the same code: its first load prunes what this process did not write.
    const { createDeps, closeDeps } = await import('../../src/deps');
    const deps = await createDeps(t.deps.config, { logger: t.deps.logger });
    try {
      await deps.catalog.reload();
      await runUserOp(deps, { kind: 'event', metricId, user: { id: 'fn-u3' }, valueMicros: 1_000_000 });
    } finally {
      await closeDeps(deps);
    }
    expect(await libraries()).toEqual([library]);
    expect(await total('fn-u3')).toBe(1);
  });

  it('keeps a decoded plan per configuration: a configuration change takes effect at the next event', async () => {
    const [{ id: sysId }] = await adminCreate(t, '/points', [{ key: 'fn-xp', name: 'XP' }]);
    await t.deps.catalog.reload();
    await event('fn-u4');
    await adminCreate(t, `/points/${sysId}/triggers`, [
      { type: 'metric', points: 7, metricId, metricThreshold: 1, status: 'active' },
    ]);
    await t.deps.catalog.reload();
    const r = await event('fn-u4');
    expect(r.points.find((p) => p.sys === sysId)?.total).toBe(7);
  });
});
