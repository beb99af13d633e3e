import { type ChildProcess, spawn } from 'node:child_process';
import { userField } from '../../src/redis/user-hash';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { Redis } from 'ioredis';
import postgres from 'postgres';
import { afterAll, describe, expect, inject, it } from 'vitest';
import { generateApiKey } from '../../src/api-keys';
import { Keys } from '../../src/redis/keys';
import { freePort, spawnRedis } from '../helpers/redis-cluster';
import { adminCreate, createTestDatabase, createTestServer, removeKeysUnder } from '../helpers/server';

const cleanups: Array<() => Promise<unknown> | unknown> = [];
afterAll(async () => {
  for (const c of cleanups.reverse()) await c();
});

async function until(what: string, fn: () => Promise<boolean>, ms = 45_000) {
  const end = Date.now() + ms;
  while (Date.now() < end) {
    if (await fn().catch(() => false)) return;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`timed out: ${what}`);
}

/** A redis-server of this test's own, persisting every write (so a stop loses nothing committed). */
const ownRedis = (port: number, dir: string): Promise<ChildProcess> =>
  spawnRedis(port, dir, ['--appendonly', 'yes', '--appendfsync', 'always']);

describe('fault injection', () => {
  it('answers 503 while its Redis is stopped, writes nothing half, and recovers by itself', async () => {
    const port = await freePort();
    const dir = mkdtempSync(join(tmpdir(), 'laurel-redis-'));
    let redis = await ownRedis(port, dir);
    cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
    cleanups.push(() => redis.kill('SIGKILL'));
    const probe = new Redis(port, '127.0.0.1', {
      lazyConnect: true,
      maxRetriesPerRequest: 0,
      retryStrategy: () => 200,
    });
    probe.on('error', () => {});
    cleanups.push(() => probe.disconnect());
    await until('redis up', async () => (await probe.ping()) === 'PONG');

    const t = await createTestServer({ env: { REDIS_URL: `redis://127.0.0.1:${port}` } });
    cleanups.push(() => t.close().catch(() => {}));
    await adminCreate(t, '/metrics', [{ key: 'm', name: 'M' }]);
    const origin = await t.listen();
    const send = async (user: string) => {
      try {
        const res = await fetch(`${origin}/v1/metrics/m/event`, {
          method: 'POST',
          headers: { 'X-API-KEY': t.appKey, 'Content-Type': 'application/json' },
          body: JSON.stringify({ user: { id: user }, value: 1 }),
        });
        const body = (await res.json()) as { error?: string };
        return { user, status: res.status, body };
      } catch (err) {
        return { user, status: 0, body: { error: String(err) } };
      }
    };

    const results: Array<{ user: string; status: number; body: { error?: string } }> = [];
    let n = 0;
    // Load until told to stop (after recovery), never past 30 s.
    let stopAt = Date.now() + 30_000;
    const load = (async () => {
      while (Date.now() < stopAt)
        results.push(...(await Promise.all(Array.from({ length: 5 }, () => send(`f${n++}`)))));
    })();
    await new Promise((r) => setTimeout(r, 1000));
    // The process stays responsive through the outage: a retry that spins without I/O would hold
    // the event loop (and so every request) for seconds.
    let lastTick = Date.now();
    let longestStall = 0;
    const ticker = setInterval(() => {
      longestStall = Math.max(longestStall, Date.now() - lastTick);
      lastTick = Date.now();
    }, 50);
    cleanups.push(() => clearInterval(ticker));
    // Stops after the running script, with the AOF flushed; the reply never comes (connection closes).
    await probe.shutdown().catch(() => {});
    // Requests that arrive while Redis is down are answered 503 at once (a call in flight when the
    // connection dropped waits for Redis instead and is answered from its reply marker). "Down" from
    // the server's side: until it has seen the connection close, a call it writes counts as in flight.
    // Readiness pings Redis, so a 503 there means the close has been seen.
    for (let i = 0; i < 100 && (await fetch(`${origin}/readyz`)).status !== 503; i++) {
      await new Promise((r) => setTimeout(r, 10));
    }
    const during: typeof results = [];
    for (let i = 0; i < 5; i++) {
      const started = Date.now();
      during.push(await send(`down${i}`));
      expect(Date.now() - started).toBeLessThan(2000);
    }
    await new Promise((r) => setTimeout(r, 500));
    redis = await ownRedis(port, dir);
    const restarted = Date.now();
    // Recovery: requests succeed again within seconds of Redis returning, with no restart of ours.
    const mark = results.length;
    await until(
      'a 201 after the restart',
      async () => results.slice(mark).some((r) => r.status === 201),
      10_000,
    );
    expect(Date.now() - restarted).toBeLessThan(10_000);
    stopAt = Date.now() + 300;
    await load;
    clearInterval(ticker);
    expect(longestStall).toBeLessThan(1500);

    const ok = results.filter((r) => r.status === 201);
    const failed = [...results.filter((r) => r.status !== 201), ...during];
    expect(ok.length).toBeGreaterThan(0);
    expect(during.map((d) => d.status)).toEqual([503, 503, 503, 503, 503]);
    // Every failure is a clean 503 {"error"}: never a 500, never a hang.
    for (const f of failed) expect([f.status, f.body.error]).toEqual([503, 'Service unavailable']);
    // …and keep succeeding.
    expect(results.at(-1)!.status).toBe(201);
    const keys = new Keys(t.prefix, 16, t.deps.keys.layout);
    const metricId = t.deps.catalog.snapshot.metricsByKey.get('m')!.id;
    for (const r of ok)
      expect(await t.deps.redis.hget(keys.user(r.user).hash, userField('metrics', metricId))).toBe('1000000');
    for (const r of failed) expect(await t.deps.redis.exists(keys.user(r.user).hash)).toBe(0);
  }, 40_000);

  it('keeps every acknowledged event when the process is killed with SIGKILL under load', async () => {
    const { redisUrl, clusterNodes } = inject('services');
    const databaseUrl = await createTestDatabase();
    const prefix = `fk${randomBytes(4).toString('hex')}`;
    // Runs last (cleanups run in reverse), once the server is gone.
    cleanups.push(() => removeKeysUnder(prefix));
    const admin = generateApiKey();
    const port = await freePort();
    const startServer = () =>
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
        },
        stdio: 'ignore',
      });
    const origin = `http://127.0.0.1:${port}`;
    let server = startServer();
    cleanups.push(() => server.kill('SIGKILL'));
    await until('server ready', async () => (await fetch(`${origin}/readyz`)).ok);
    const call = async (key: string, method: string, path: string, body?: unknown) => {
      const res = await fetch(`${origin}${path}`, {
        method,
        headers: { 'X-API-KEY': key, 'Content-Type': 'application/json' },
        body: body === undefined ? undefined : JSON.stringify(body),
      });
      return { status: res.status, body: (await res.json()) as any };
    };
    const m = await call(admin.key, 'POST', '/admin/v1/metrics', [{ key: 'm', name: 'M' }]);
    const metricId = m.body.created[0].id as string;
    const k = await call(admin.key, 'POST', '/admin/v1/api-keys', [{ name: 'app', kind: 'application' }]);
    const appKey = k.body.created[0].key as string;

    const acked: string[] = [];
    let i = 0;
    const load = (async () => {
      const end = Date.now() + 3000;
      while (Date.now() < end) {
        await Promise.all(
          Array.from({ length: 10 }, async () => {
            const user = `k${i++}`;
            try {
              const r = await call(appKey, 'POST', '/v1/metrics/m/event', { user: { id: user }, value: 1 });
              if (r.status === 201) acked.push(user);
            } catch {
              // connection cut by the kill: not acknowledged
            }
          }),
        );
      }
    })();
    await new Promise((r) => setTimeout(r, 800));
    server.kill('SIGKILL');
    await load;
    expect(acked.length).toBeGreaterThan(10);
    server = startServer();
    await until('server back', async () => (await fetch(`${origin}/readyz`)).ok);

    const keys = new Keys(prefix, 16, { cluster: Boolean(clusterNodes) });
    const redis = new Redis(redisUrl);
    cleanups.push(() => redis.disconnect());
    if (!clusterNodes)
      for (const u of acked)
        expect(await redis.hget(keys.user(u).hash, userField('metrics', metricId))).toBe('1000000');
    const sql = postgres(databaseUrl, { max: 1, onnotice: () => {} });
    cleanups.push(() => sql.end({ timeout: 1 }));
    await until('history caught up', async () => {
      const rows = await sql<{ user_id: string }[]>`select user_id from events`;
      const have = new Set(rows.map((r) => r.user_id));
      return acked.every((u) => have.has(u));
    });
    const dup = await sql<
      { n: number }[]
    >`select count(*)::int as n from (select user_id from events group by user_id having count(*) > 1) d`;
    expect(dup[0]!.n).toBe(0);
    server.kill('SIGTERM');
  }, 60_000);
});
