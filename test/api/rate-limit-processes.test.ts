import { type ChildProcess, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { Cluster, Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { generateApiKey } from '../../src/api-keys';
import { Keys } from '../../src/redis/keys';
import { freePort } from '../helpers/redis-cluster';
import { createTestDatabase, removeKeysUnder } from '../helpers/server';

/**
 * Rate limits hold across processes: two real API processes share one Redis (the token bucket of a
 * key lives there) and one database. 3× the limit is sent through both, alternately, over a fixed
 * window; the number of 429s must be within 5% of what one bucket of the configured rate and burst
 * allows, and no refused event may have been committed.
 */
const RATE = 50;
const WINDOW_MS = 2000;
const procs: ChildProcess[] = [];
const origins: string[] = [];
const prefix = `rlp${randomBytes(4).toString('hex')}`;
const admin = generateApiKey();
const { redisUrl, clusterNodes } = inject('services');

async function waitFor(what: string, fn: () => Promise<boolean>, ms = 50_000) {
  const until = Date.now() + ms;
  while (Date.now() < until) {
    if (await fn().catch(() => false)) return;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`timed out waiting for ${what}`);
}

beforeAll(async () => {
  const databaseUrl = await createTestDatabase();
  for (let i = 0; i < 2; i++) {
    const port = await freePort();
    const p = spawn(process.execPath, ['--import', 'tsx', 'src/main.ts'], {
      env: {
        ...process.env,
        ROLE: 'api',
        PORT: String(port),
        HOST: '127.0.0.1',
        REDIS_URL: redisUrl,
        ...(clusterNodes ? { REDIS_CLUSTER_NODES: clusterNodes } : {}),
        DATABASE_URL: databaseUrl,
        REDIS_KEY_PREFIX: prefix,
        USER_SHARDS: '16',
        ADMIN_API_KEY: admin.key,
        LOG_LEVEL: 'warn',
        RATE_LIMIT_PER_SECOND: String(RATE),
        RATE_LIMIT_BURST_FACTOR: '1',
      },
      stdio: ['ignore', 'ignore', 'inherit'],
    });
    procs.push(p);
    origins.push(`http://127.0.0.1:${port}`);
  }
  for (const o of origins) await waitFor(`${o}/readyz`, async () => (await fetch(`${o}/readyz`)).ok);
}, 120_000);

afterAll(async () => {
  for (const p of procs) p.kill('SIGTERM');
  await Promise.all(
    procs.map((p) => new Promise((r) => (p.exitCode !== null ? r(null) : p.once('exit', r)))),
  );
  await removeKeysUnder(prefix);
});

async function call(origin: string, key: string, method: string, path: string, body?: unknown) {
  const res = await fetch(`${origin}${path}`, {
    method,
    headers: { 'X-API-KEY': key, 'Content-Type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  return { status: res.status, body: (await res.json()) as any, retryAfter: res.headers.get('retry-after') };
}

describe('rate limits across two API processes sharing one Redis', () => {
  it('refuses within 5% of the expected number of requests when 3× the limit goes through both', async () => {
    const [a, b] = origins as [string, string];
    expect((await call(a, admin.key, 'POST', '/admin/v1/metrics', [{ key: 'm', name: 'M' }])).status).toBe(
      201,
    );
    const k = await call(a, admin.key, 'POST', '/admin/v1/api-keys', [{ name: 'app', kind: 'application' }]);
    const appKey = k.body.created[0].key as string;
    await waitFor('key and metric known to both processes', async () => {
      for (const o of origins)
        if ((await call(o, appKey, 'GET', '/v1/users/nobody/metrics/m')).status !== 404) return false;
      return true;
    });
    // Let the bucket refill completely (burst = rate: one second).
    await new Promise((r) => setTimeout(r, 1500));

    // 3× what the window allows (burst + rate × window), evenly paced, alternating processes.
    const allowedInWindow = RATE + (RATE * WINDOW_MS) / 1000;
    const n = 3 * allowedInWindow;
    const results: Array<
      Promise<{ user: string; status: number; retryAfter: string | null; sent: number; answered: number }>
    > = [];
    const started = performance.now();
    for (let i = 0; i < n; i++) {
      const due = started + (i * WINDOW_MS) / n;
      const wait = due - performance.now();
      if (wait > 1) await new Promise((r) => setTimeout(r, wait));
      const user = `rl-${i}`;
      const sent = performance.now();
      results.push(
        call(i % 2 ? a : b, appKey, 'POST', '/v1/metrics/m/event', { user: { id: user }, value: 1 }).then(
          (r) => ({ user, status: r.status, retryAfter: r.retryAfter, sent, answered: performance.now() }),
        ),
      );
    }
    const done = await Promise.all(results);

    const ok = done.filter((r) => r.status === 201);
    const limited = done.filter((r) => r.status === 429);
    expect(ok.length + limited.length).toBe(n);
    // One bucket for the key across both processes: the burst, plus the refill between the first and
    // the last request the bucket saw (at 3× the rate every refilled token is taken). Each request
    // reached it between its sending and its answer, so that span lies between the last sending less
    // the first answer and the last answer less the first sending: on a busy machine, where requests
    // wait in the servers, the bounds widen by how long they waited, not by a guess.
    const span = (from: 'sent' | 'answered', to: 'sent' | 'answered') =>
      Math.max(0, Math.max(...done.map((r) => r[to])) - Math.min(...done.map((r) => r[from])));
    const refusedAtMost = n - (RATE + (RATE * span('answered', 'sent')) / 1000);
    const refusedAtLeast = n - (RATE + (RATE * span('sent', 'answered')) / 1000);
    console.log(
      `sent ${n} over ${span('sent', 'sent').toFixed(0)} ms through 2 processes: ${ok.length} accepted, ${limited.length} refused (expected ${refusedAtLeast.toFixed(1)}-${refusedAtMost.toFixed(1)} refused)`,
    );
    // Within 5% of those bounds (and one token: the bucket's last refill may be left unspent).
    expect(limited.length).toBeLessThanOrEqual(refusedAtMost * 1.05 + 1);
    expect(limited.length).toBeGreaterThanOrEqual(refusedAtLeast * 0.95 - 1);
    // Both processes accepted and refused some: the limit is shared, not per process.
    for (const parity of [0, 1]) {
      const mine = done.filter((_, i) => i % 2 === parity);
      expect(mine.some((r) => r.status === 201)).toBe(true);
      expect(mine.some((r) => r.status === 429)).toBe(true);
    }
    for (const r of limited) expect(Number(r.retryAfter)).toBeGreaterThanOrEqual(1);

    // Nothing of a refused event was committed; every accepted one was.
    const redis = clusterNodes
      ? new Cluster(
          clusterNodes.split(',').map((hp) => ({ host: hp.split(':')[0], port: Number(hp.split(':')[1]) })),
        )
      : new Redis(redisUrl);
    try {
      const keys = new Keys(prefix, 16, { cluster: Boolean(clusterNodes) });
      for (const r of limited) expect(await redis.exists(keys.user(r.user).hash)).toBe(0);
      for (const r of ok) expect(await redis.exists(keys.user(r.user).hash)).toBe(1);
    } finally {
      redis.disconnect();
    }
  }, 60_000);
});
