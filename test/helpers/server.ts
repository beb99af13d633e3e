import { randomBytes } from 'node:crypto';
import type { AddressInfo } from 'node:net';
import { serve } from '@hono/node-server';
import postgres from 'postgres';
import { inject } from 'vitest';
import { generateApiKey } from '../../src/api-keys';
import { createApp } from '../../src/app';
import { type Clock, ManualClock } from '../../src/clock';
import { loadConfig } from '../../src/config';
import { apiKeys } from '../../src/db/schema';
import { closeDeps, createDeps, type Deps } from '../../src/deps';
import { createLogger } from '../../src/logger';
import { createRedis, isCluster, type RedisClient, waitReady } from '../../src/redis/client';
import { drainBoardChanges } from '../../src/workers/board-changes';
import { HistoryWriter } from '../../src/workers/history-writer';

export interface TestServer {
  deps: Deps;
  app: ReturnType<typeof createApp>;
  clock: ManualClock;
  adminKey: string;
  appKey: string;
  prefix: string;
  databaseUrl: string;
  /** Admin API call through app.request; returns status and parsed JSON body. */
  admin(method: string, path: string, body?: unknown): Promise<TestResponse>;
  /** Application API call (path relative to the origin, e.g. /v1/...). */
  api(method: string, path: string, body?: unknown, headers?: Record<string, string>): Promise<TestResponse>;
  /** Serves the app on a real socket at 127.0.0.1; returns the origin. */
  listen(): Promise<string>;
  /**
   * Runs the history writer until the outbox is empty, then records the boards' change streams:
   * history rows, the cross-user indexes the writer maintains (user count, completion counts, points
   * totals, streak rankings) and users' rank histories are then up to date.
   */
  settle(): Promise<number>;
  /** Every Redis key under this server's prefix except rate-limit buckets (test-only SCAN). */
  redisKeys(): Promise<string[]>;
  close(): Promise<void>;
}

export interface TestResponse {
  status: number;
  body: any;
  headers: Headers;
}

/** Creates a database cloned from the migrated template for this test file. */
export async function createTestDatabase(): Promise<string> {
  const { databaseUrl, templateDb, runId } = inject('services');
  const name = `laurel_t_${runId}_${randomBytes(4).toString('hex')}`;
  const admin = postgres(databaseUrl, { max: 1, onnotice: () => {} });
  try {
    await admin.unsafe(`create database "${name}" template "${templateDb}"`);
  } finally {
    await admin.end({ timeout: 2 });
  }
  const url = new URL(databaseUrl);
  url.pathname = `/${name}`;
  return url.toString();
}

export interface TestServerOptions {
  clock?: Clock;
  now?: string;
  env?: Record<string, string>;
}

/** A full Laurel (real Redis, real Postgres) isolated by key prefix and its own database. */
export async function createTestServer(opts: TestServerOptions = {}): Promise<TestServer> {
  const { redisUrl, clusterNodes } = inject('services');
  const databaseUrl = await createTestDatabase();
  const prefix = `t${randomBytes(5).toString('hex')}`;
  const config = loadConfig({
    REDIS_URL: redisUrl,
    DATABASE_URL: databaseUrl,
    REDIS_KEY_PREFIX: prefix,
    ...(clusterNodes ? { REDIS_CLUSTER_NODES: clusterNodes } : {}),
    LOG_LEVEL: 'silent',
    USER_SHARDS: '16',
    // The test clock stands still, so buckets never refill: limits are tested where they are set.
    RATE_LIMIT_PER_SECOND: '1000000',
    // EVALUATE_EVENTS=1 npm test runs the suite with single events evaluated in the API.
    ...(process.env.EVALUATE_EVENTS ? { EVALUATE_EVENTS: process.env.EVALUATE_EVENTS } : {}),
    ...opts.env,
  });
  const clock =
    (opts.clock as ManualClock | undefined) ??
    new ManualClock(Date.parse(opts.now ?? '2025-03-10T12:00:00Z'));
  const deps = await createDeps(config, { clock, logger: createLogger('silent') });
  const adm = generateApiKey();
  const appK = generateApiKey();
  await deps.db.insert(apiKeys).values([
    { name: 'test admin', kind: 'admin', prefix: adm.prefix, secretHash: adm.secretHash },
    { name: 'test app', kind: 'application', prefix: appK.prefix, secretHash: appK.secretHash },
  ]);
  await deps.catalog.reload();
  const app = createApp(deps);
  const servers: Array<{ close(cb: () => void): void }> = [];

  const call = async (
    method: string,
    path: string,
    key: string,
    body?: unknown,
    headers: Record<string, string> = {},
  ) => {
    const init: RequestInit = { method, headers: { 'X-API-KEY': key, ...headers } };
    if (body !== undefined) {
      init.body = typeof body === 'string' ? body : JSON.stringify(body);
      (init.headers as Record<string, string>)['Content-Type'] = 'application/json';
    }
    const res = await app.request(path, init);
    const text = await res.text();
    let parsed: unknown = text;
    try {
      parsed = text ? JSON.parse(text) : undefined;
    } catch {}
    return { status: res.status, body: parsed as any, headers: res.headers };
  };

  const self: TestServer = {
    deps,
    app,
    clock,
    adminKey: adm.key,
    appKey: appK.key,
    prefix,
    databaseUrl,
    admin: (method, path, body) => call(method, `/admin/v1${path}`, adm.key, body),
    api: (method, path, body, headers) => call(method, path, appK.key, body, headers),
    async listen() {
      const server = await new Promise<ReturnType<typeof serve>>((resolve) => {
        const s = serve({ fetch: app.fetch, port: 0, hostname: '127.0.0.1' }, () => resolve(s));
      });
      servers.push(server);
      return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    },
    async settle() {
      const w = new HistoryWriter(deps, { consumer: 'settle', claimIdleMs: 0 });
      let n = 0;
      for (let k = await w.drainOnce(); k > 0; k = await w.drainOnce()) n += k;
      await drainBoardChanges(deps, 'settle');
      return n;
    },
    async redisKeys() {
      // Rate-limit buckets change on every request and expire by themselves: not state.
      return (await keysUnder(deps.redis, prefix)).filter((k) => !k.includes(':{rl:'));
    },
    async close() {
      await Promise.all(servers.map((s) => new Promise<void>((r) => s.close(() => r()))));
      await unlinkAll(deps.redis, await self.redisKeys());
      // Simulations keep their records and replays outside the prefix (src/simulations/runs.ts).
      await unlinkAll(deps.redis, await keysUnder(deps.redis, `sim:${prefix}`));
      await closeDeps(deps);
    },
  };
  return self;
}

/** Every key under a prefix, on every master of a Cluster (test-only SCAN), sorted. */
export async function keysUnder(redis: RedisClient, prefix: string): Promise<string[]> {
  const found: string[] = [];
  for (const node of isCluster(redis) ? redis.nodes('master') : [redis]) {
    let cursor = '0';
    do {
      const [next, batch] = await node.scan(cursor, 'MATCH', `${prefix}:*`, 'COUNT', 1000);
      cursor = next;
      found.push(...batch);
    } while (cursor !== '0');
  }
  return found.sort();
}

/** Unlinks keys one by one (they may live in different Cluster slots), 500 at a time. */
async function unlinkAll(redis: RedisClient, keys: string[]): Promise<void> {
  for (let i = 0; i < keys.length; i += 500) {
    await Promise.all(keys.slice(i, i + 500).map((k) => redis.unlink(k)));
  }
}

/**
 * Removes every key under a prefix from the suite's Redis: for tests whose servers run in child
 * processes under a prefix of their own (createTestServer's close() does this for its own).
 */
export async function removeKeysUnder(prefix: string): Promise<void> {
  const { redisUrl, clusterNodes } = inject('services');
  const redis = createRedis({ url: redisUrl, clusterNodes });
  try {
    await waitReady(redis);
    await unlinkAll(redis, await keysUnder(redis, prefix));
  } finally {
    redis.disconnect();
  }
}

/** Creates resources through the admin API and returns the created items (fails the test on issues). */
export async function adminCreate(t: TestServer, path: string, items: unknown[]): Promise<any[]> {
  const res = await t.admin('POST', path, items);
  if (res.status !== 201 || res.body.issues.length) {
    throw new Error(`admin create ${path} failed: ${res.status} ${JSON.stringify(res.body)}`);
  }
  return res.body.created;
}
