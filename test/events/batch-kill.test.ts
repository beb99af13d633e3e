import { type ChildProcess, spawn } from 'node:child_process';
import { userField } from '../../src/redis/user-hash';
import { randomBytes } from 'node:crypto';
import postgres from 'postgres';
import { afterAll, describe, expect, inject, it } from 'vitest';
import { generateApiKey } from '../../src/api-keys';
import { createRedis, waitReady } from '../../src/redis/client';
import { Keys } from '../../src/redis/keys';
import { until } from '../helpers/processes';
import { freePort } from '../helpers/redis-cluster';
import { createTestDatabase, removeKeysUnder } from '../helpers/server';

// admin-api §6: a batch accepted before a SIGKILL is resumed in order by the next process, with no
// item lost and none applied twice.

const cleanups: Array<() => Promise<unknown> | unknown> = [];
afterAll(async () => {
  for (const c of cleanups.reverse()) await c();
});

describe('event batches across a SIGKILL', () => {
  it('resumes a batch killed mid-way in another process: every item applied exactly once, in order', async () => {
    const { redisUrl, clusterNodes } = inject('services');
    const databaseUrl = await createTestDatabase();
    const prefix = `bk${randomBytes(4).toString('hex')}`;
    cleanups.push(() => removeKeysUnder(prefix));
    const admin = generateApiKey();
    const port = await freePort();
    const startServer = (): ChildProcess =>
      spawn(process.execPath, ['--import', 'tsx', 'src/main.ts'], {
        env: {
          ...process.env,
          PORT: String(port),
          HOST: '127.0.0.1',
          REDIS_URL: redisUrl,
          ...(clusterNodes ? { REDIS_CLUSTER_NODES: clusterNodes } : {}),
          DATABASE_URL: databaseUrl,
          REDIS_KEY_PREFIX: prefix,
          USER_SHARDS: '16',
          ADMIN_API_KEY: admin.key,
          LOG_LEVEL: 'warn',
          HISTORY_CLAIM_IDLE_MS: '1000',
          // Two chunks: the kill lands inside one, after some of its items committed and before
          // its progress is recorded, so the resume must recognise them (reply markers).
          BATCH_CHUNK_SIZE: '500',
          BATCH_LEASE_MS: '1500',
        },
        stdio: 'ignore',
      });
    const origin = `http://127.0.0.1:${port}`;
    let server = startServer();
    cleanups.push(() => server.kill('SIGKILL'));
    await until(async () => (await fetch(`${origin}/readyz`)).ok);
    const call = async (method: string, path: string, body?: unknown) => {
      const res = await fetch(`${origin}${path}`, {
        method,
        headers: { 'X-API-KEY': admin.key, 'Content-Type': 'application/json' },
        body: body === undefined ? undefined : JSON.stringify(body),
      });
      return { status: res.status, body: (await res.json()) as any };
    };
    const m = await call('POST', '/admin/v1/metrics', [{ key: 'm', name: 'M' }]);
    const metricId = m.body.created[0].id as string;
    const s = await call('POST', '/admin/v1/points', [{ key: 'xp', name: 'XP' }]);
    const sysId = s.body.created[0].id as string;
    await call('POST', `/admin/v1/points/${sysId}/triggers`, [
      { type: 'metric', points: 1, metricId, metricThreshold: 1, status: 'active' },
    ]);

    // 1000 items over 10 users; user j's k-th item has value k + 1 (so order shows in history).
    const users = Array.from({ length: 10 }, (_, j) => `kb${j}`);
    const items = Array.from({ length: 1000 }, (_, i) => ({
      key: 'm',
      user: { id: users[i % 10] },
      value: Math.floor(i / 10) + 1,
    }));
    const keys = new Keys(prefix, 16, { cluster: Boolean(clusterNodes) });
    // The test's own client, on the same Redis (or Cluster) as the server.
    const redis = createRedis({ url: redisUrl, clusterNodes }, () => {});
    await waitReady(redis);
    cleanups.push(() => redis.disconnect());
    const sent = call('POST', '/admin/v1/metrics/events', items).catch(() => null);
    // Items applied so far: user j's k first items sum to k(k+1)/2.
    const applied = async () => {
      let n = 0;
      for (const u of users) {
        const t = Number((await redis.hget(keys.user(u).hash, userField('metrics', metricId))) ?? 0) / 1e6;
        n += Math.round((Math.sqrt(8 * t + 1) - 1) / 2);
      }
      return n;
    };
    // Kill inside a chunk: once items have committed past the progress the batch has recorded, so the
    // resume must recognise them (reply markers). Polled without pauses: a chunk takes a few ms.
    let batchId: string | undefined;
    const deadline = Date.now() + 20_000;
    for (;;) {
      if (Date.now() > deadline) throw new Error('the batch was never seen mid-chunk');
      batchId ??= (await redis.zrange(keys.batches.pending, 0, 0))[0];
      if (batchId) {
        const recorded = Number((await redis.hget(keys.batches.batch(batchId), 'done')) ?? 0);
        if ((await applied()) > recorded) {
          server.kill('SIGKILL');
          break;
        }
      }
    }
    expect(await sent).toBeNull(); // the connection died with the process: no answer
    // A script call already sent still completes in Redis: read the state once the process is gone.
    await new Promise((r) => setTimeout(r, 300));
    const done = Number((await redis.hget(keys.batches.batch(batchId!), 'done')) ?? 0);
    const committed = await applied();
    expect(done).toBeLessThan(items.length);
    expect(committed).toBeGreaterThan(done);
    expect(await redis.zcard(keys.batches.pending)).toBe(1);

    server = startServer();
    await until(async () => (await redis.zcard(keys.batches.pending)) === 0, 30_000);
    // Exact totals: sum of 1..100 per user, and one point per unit of value (no item twice).
    const expected = (100 * 101) / 2;
    for (const u of users) {
      expect(Number(await redis.hget(keys.user(u).hash, userField('metrics', metricId))) / 1e6).toBe(
        expected,
      );
      expect(Number(await redis.hget(keys.user(u).hash, userField('points', sysId)))).toBe(expected);
    }
    expect(await redis.exists(keys.batches.batch('x'))).toBe(0);
    const sql = postgres(databaseUrl, { max: 1, onnotice: () => {} });
    cleanups.push(() => sql.end({ timeout: 1 }));
    await until(async () => {
      const n = (await sql<{ n: number }[]>`select count(*)::int as n from events`)[0]!.n;
      return n >= 1000;
    }, 30_000);
    const n = (await sql<{ n: number }[]>`select count(*)::int as n from events`)[0]!.n;
    expect(n).toBe(1000);
    // In array order per user: values 1, 2, ..., 100 by sequence number.
    for (const u of users.slice(0, 3)) {
      const rows = await sql<{ v: number }[]>`
        select value_micros / 1000000 as v from events where user_id = ${u} order by seq`;
      expect(rows.map((r) => Number(r.v))).toEqual(Array.from({ length: 100 }, (_, k) => k + 1));
    }
    server.kill('SIGTERM');
  }, 90_000);
});
