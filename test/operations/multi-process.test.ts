import { type ChildProcess, spawn } from 'node:child_process';
import { userField } from '../../src/redis/user-hash';
import { randomBytes } from 'node:crypto';
import { readdirSync } from 'node:fs';
import { getPriority } from 'node:os';
import { Cluster } from 'ioredis';
import postgres from 'postgres';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { inject } from 'vitest';
import { generateApiKey } from '../../src/api-keys';
import { Keys } from '../../src/redis/keys';
import { freePort, type LocalCluster, startRedisCluster } from '../helpers/redis-cluster';
import { createTestDatabase } from '../helpers/server';

/**
 * Scale-out: two API processes and two worker processes against one Redis Cluster and one
 * Postgres. Events for the same users go through both APIs in parallel.
 */
let cluster: LocalCluster | null = null;
let nodes: string;
let databaseUrl: string;
const procs: ChildProcess[] = [];
const origins: string[] = [];
const prefix = `mp${randomBytes(4).toString('hex')}`;
const admin = generateApiKey();

async function waitFor<T>(what: string, fn: () => Promise<T | undefined>, ms = 50_000): Promise<T> {
  const until = Date.now() + ms;
  let last: unknown;
  while (Date.now() < until) {
    try {
      const v = await fn();
      if (v !== undefined) return v;
    } catch (err) {
      last = err;
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`timed out waiting for ${what}: ${String(last)}`);
}

const roles = new Map<ChildProcess, 'api' | 'worker'>();

/** The nice value of each thread of a process (Linux: /proc/<pid>/task). */
function threadNiceness(pid: number): number[] {
  const out: number[] = [];
  for (const tid of readdirSync(`/proc/${pid}/task`)) {
    try {
      out.push(getPriority(Number(tid)));
    } catch {
      // The thread has ended since it was listed.
    }
  }
  return out;
}

function start(role: 'api' | 'worker', port: number) {
  const p = spawn(process.execPath, ['--import', 'tsx', 'src/main.ts'], {
    env: {
      ...process.env,
      ROLE: role,
      PORT: String(port),
      HOST: '127.0.0.1',
      REDIS_CLUSTER_NODES: nodes,
      DATABASE_URL: databaseUrl,
      REDIS_KEY_PREFIX: prefix,
      USER_SHARDS: '16',
      ADMIN_API_KEY: admin.key,
      LOG_LEVEL: 'warn',
    },
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  procs.push(p);
  roles.set(p, role);
}

beforeAll(async () => {
  const given = inject('services').clusterNodes;
  if (given) nodes = given;
  else {
    cluster = await startRedisCluster();
    nodes = cluster.nodes;
  }
  databaseUrl = await createTestDatabase();
  for (let i = 0; i < 2; i++) {
    const port = await freePort();
    start('api', port);
    origins.push(`http://127.0.0.1:${port}`);
  }
  start('worker', await freePort());
  start('worker', await freePort());
  for (const o of origins)
    await waitFor(`${o}/readyz`, async () => ((await fetch(`${o}/readyz`)).ok ? true : undefined));
}, 120_000);

afterAll(async () => {
  for (const p of procs) p.kill('SIGTERM');
  await Promise.all(
    procs.map((p) => new Promise((r) => (p.exitCode !== null ? r(null) : p.once('exit', r)))),
  );
  if (cluster) await cluster.stop();
});

async function call(origin: string, key: string, method: string, path: string, body?: unknown) {
  const res = await fetch(`${origin}${path}`, {
    method,
    headers: { 'X-API-KEY': key, 'Content-Type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  return { status: res.status, body: (await res.json()) as any };
}

describe('two API and two worker processes on Redis Cluster', () => {
  it('runs the worker processes at a lower CPU priority (WORKER_NICE, default 10) and the API processes at ours', async () => {
    const ours = getPriority();
    // A worker lowers its priority after connecting; the API processes are ready by now.
    await waitFor('worker niceness', async () =>
      procs.every((p) => roles.get(p) === 'api' || getPriority(p.pid!) === Math.max(ours, 10))
        ? true
        : undefined,
    );
    for (const p of procs) {
      const want = roles.get(p) === 'api' ? ours : Math.max(ours, 10);
      // Every thread, not only the main one: on Linux a nice value is a thread's, and V8's threads
      // (parallel scavenges) and libuv's pool were started before the worker lowered itself.
      const threads = threadNiceness(p.pid!);
      expect(threads.length).toBeGreaterThan(1);
      expect(threads.filter((n) => n !== want)).toEqual([]);
    }
  });

  it('gives exact totals, correct ranks and complete history for events sent through both APIs in parallel', async () => {
    const [a, b] = origins as [string, string];
    const m = await call(a, admin.key, 'POST', '/admin/v1/metrics', [{ key: 'steps', name: 'Steps' }]);
    expect(m.status).toBe(201);
    const metricId = m.body.created[0].id;
    const p = await call(a, admin.key, 'POST', '/admin/v1/points', [{ key: 'xp', name: 'XP' }]);
    const systemId = p.body.created[0].id;
    await call(a, admin.key, 'POST', `/admin/v1/points/${systemId}/triggers`, [
      { type: 'metric', points: 2, metricId, metricThreshold: 1, status: 'active' },
    ]);
    const lb = await call(a, admin.key, 'POST', '/admin/v1/leaderboards', [
      { key: 'steps-board', name: 'Steps', rankBy: 'metric', metricId, status: 'active' },
    ]);
    expect(lb.body.created[0].status).toBe('active');
    const k = await call(a, admin.key, 'POST', '/admin/v1/api-keys', [{ name: 'app', kind: 'application' }]);
    const appKey = k.body.created[0].key as string;
    // The second API learns of the configuration through the change channel.
    await waitFor('config on API b', async () => {
      const r = await call(b, appKey, 'GET', '/v1/leaderboards');
      return r.status === 200 && r.body.length === 1 ? true : undefined;
    });

    // User i sends i + 1 events of value 1 (distinct totals), alternating APIs, 40 at a time.
    const jobs: Array<() => Promise<number>> = [];
    const users = 20;
    for (let i = 0; i < users; i++) {
      for (let j = 0; j <= i; j++) {
        const origin = (i + j) % 2 ? a : b;
        jobs.push(
          async () =>
            (
              await call(origin, appKey, 'POST', '/v1/metrics/steps/event', {
                user: { id: `u${i}` },
                value: 1,
              })
            ).status,
        );
      }
    }
    const statuses: number[] = [];
    for (let i = 0; i < jobs.length; i += 40)
      statuses.push(...(await Promise.all(jobs.slice(i, i + 40).map((f) => f()))));
    expect(statuses.every((s) => s === 201)).toBe(true);
    const sent = jobs.length;

    const redis = new Cluster(
      nodes.split(',').map((hp) => ({ host: '127.0.0.1', port: Number(hp.split(':')[1]) })),
    );
    try {
      const keys = new Keys(prefix, 16, { cluster: true });
      for (let i = 0; i < users; i++) {
        const u = keys.user(`u${i}`);
        expect(Number(await redis.hget(u.hash, userField('metrics', metricId)))).toBe((i + 1) * 1_000_000);
        expect(Number(await redis.hget(u.hash, userField('points', systemId)))).toBe((i + 1) * 2);
      }
    } finally {
      redis.disconnect();
    }
    const board = await call(b, appKey, 'GET', '/v1/leaderboards/steps-board?limit=100');
    expect(board.body.rankings.map((r: { userId: string; value: number }) => [r.userId, r.value])).toEqual(
      Array.from({ length: users }, (_, n) => [`u${users - 1 - n}`, users - n]),
    );

    const sql = postgres(databaseUrl, { max: 1, onnotice: () => {} });
    try {
      const rows = await waitFor('history', async () => {
        const r = await sql<
          { n: number; s: string }[]
        >`select count(*)::int as n, sum(value_micros)::text as s from events`;
        return r[0]!.n === sent ? r[0] : undefined;
      });
      expect(Number(rows.s)).toBe(sent * 1_000_000);
      const awards = await sql<{ n: number }[]>`select count(*)::int as n from points_awards`;
      expect(awards[0]!.n).toBe(sent);
    } finally {
      await sql.end({ timeout: 1 });
    }
  }, 90_000);
});
