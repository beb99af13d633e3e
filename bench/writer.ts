/**
 * The history writer's cost per event, on its own (npm run bench:writer; bench/README.md).
 *
 * In a fresh database and under a fresh Redis key prefix it seeds the bench's configuration
 * (bench/lib/seed.ts, through the admin API of an in-process server), then:
 *
 * - backlog (default): sends `--events` new-user events (one each) with no writer running, starts a
 *   worker child process (the worker of a ROLE=worker process: history writer with its hooks,
 *   scheduler, webhooks) and waits until it has emptied the outbox;
 * - `--rate R`: starts the worker first, sends the events at R per second, and waits until the
 *   outbox is empty (the writer's passes are then as small as at the bench's fixed rate).
 *
 * It reports the worker's and Postgres' CPU (the backends of this database plus the shared
 * processes, bench/lib/processes.ts PostgresCpu) per event from the moment the worker was told to
 * start until the outbox was empty, and the statements Postgres ran (pg_stat_database: commits,
 * rows). CPU time is robust to other load on the machine; wall time is not. `--profile` writes a V8
 * CPU profile of the worker to bench/results/profiles/. `--cluster` runs it all on a throwaway 3-master
 * Redis Cluster (the outbox then has a stream per user shard). Everything it created is removed at the
 * end.
 *
 * The events go through the application API in-process (app.request), so the parent's CPU is the
 * API's and is not counted.
 */
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdir } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { Redis } from 'ioredis';
import postgres from 'postgres';
import { loadConfig } from '../src/config';
import { closeDeps, createDeps } from '../src/deps';
import { createLogger } from '../src/logger';
import { startWorkers } from '../src/workers';
import { cpuSeconds, PostgresCpu, workerNodeOptions } from './lib/processes';
import { startRedisCluster } from '../test/helpers/redis-cluster';
import {
  connectCluster,
  deletePrefix,
  type Nodes,
  redisCpuSeconds,
  waitForOutboxDrain,
} from './lib/redis-stats';
import { seededInProcess } from './lib/in-process';
import { userId, ZONES } from './lib/seed';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const RESULTS = fileURLToPath(new URL('./results/', import.meta.url));

function env(name: string, fallback: string): string {
  return process.env[name] ?? fallback;
}

/** The worker child: loads, says ready, starts the workers on "go", stops on SIGTERM. */
async function child(): Promise<void> {
  const deps = await createDeps(
    loadConfig({
      REDIS_URL: env('REDIS_URL', 'redis://127.0.0.1:6379'),
      ...(process.env.REDIS_CLUSTER_NODES ? { REDIS_CLUSTER_NODES: process.env.REDIS_CLUSTER_NODES } : {}),
      DATABASE_URL: process.env.DATABASE_URL,
      REDIS_KEY_PREFIX: process.env.REDIS_KEY_PREFIX,
      // The writer's own setting, to compare values of it.
      HISTORY_PASS_INTERVAL_MS: process.env.HISTORY_PASS_INTERVAL_MS,
      LOG_LEVEL: 'warn',
    }),
    { logger: createLogger('warn') },
  );
  await deps.catalog.reload();
  let workers: ReturnType<typeof startWorkers> | null = null;
  process.on('message', (m) => {
    if (m === 'go' && !workers) workers = startWorkers(deps);
  });
  process.once('SIGTERM', () => {
    void (async () => {
      await workers?.stop();
      await closeDeps(deps);
      process.exit(0);
    })();
  });
  process.send?.('ready');
}

interface Options {
  events: number;
  rate: number;
  concurrency: number;
  profile: boolean;
  cluster: boolean;
}

function parse(argv: string[]): Options {
  const o: Options = { events: 20_000, rate: 0, concurrency: 32, profile: false, cluster: false };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    if (a === '--events') o.events = Number(argv[++i]);
    else if (a === '--rate') o.rate = Number(argv[++i]);
    else if (a === '--concurrency') o.concurrency = Number(argv[++i]);
    else if (a === '--profile') o.profile = true;
    else if (a === '--cluster') o.cluster = true;
    else throw new Error(`unknown option ${a} (--events N, --rate R, --concurrency C, --profile, --cluster)`);
  }
  if (!(o.events > 0) || !(o.rate >= 0)) throw new Error('--events must be > 0 and --rate >= 0');
  return o;
}

async function main(): Promise<void> {
  const opts = parse(process.argv.slice(2));
  const redisUrl = env('REDIS_URL', 'redis://127.0.0.1:6379');
  const baseUrl = env('DATABASE_URL', 'postgres://postgres@127.0.0.1:5432/postgres');
  for (const u of [redisUrl, baseUrl])
    if (!['127.0.0.1', 'localhost', '[::1]'].includes(new URL(u).hostname))
      throw new Error(`only loopback hosts: ${u}`);
  const suffix = randomBytes(3).toString('hex');
  const prefix = `benchw${suffix}`;
  const dbName = `laurel_benchw_${suffix}`;
  const dbUrl = new URL(baseUrl);
  dbUrl.pathname = `/${dbName}`;
  const redis = new Redis(redisUrl, { maxRetriesPerRequest: 1 });
  const closers: Array<() => Promise<void>> = [];
  const cleanup = async () => {
    for (const close of closers.reverse()) await close().catch(() => {});
    console.error(`cleanup: unlinked ${await deletePrefix(redis, prefix)} keys under ${prefix}:`);
    redis.disconnect();
    const admin = new URL(baseUrl);
    admin.pathname = '/postgres';
    const pg = postgres(admin.toString(), { max: 1, onnotice: () => {} });
    await pg.unsafe(`drop database if exists "${dbName}" with (force)`);
    console.error(`cleanup: dropped database ${dbName}`);
    await pg.end({ timeout: 2 });
  };
  process.once('SIGINT', () => void cleanup().finally(() => process.exit(130)));
  try {
    // Where Laurel keeps its data: the local Redis, or (--cluster) a throwaway Redis Cluster.
    let dataNodes: Nodes = redis;
    let clusterNodes: string | undefined;
    if (opts.cluster) {
      const cluster = await startRedisCluster();
      closers.push(() => cluster.stop());
      const c = await connectCluster(cluster.nodes);
      closers.push(async () => c.client.disconnect());
      dataNodes = c.masters;
      clusterNodes = cluster.nodes;
    }
    const laurel = await seededInProcess({ redisUrl, databaseUrl: dbUrl.toString(), prefix, clusterNodes });
    closers.push(() => laurel.close());
    const { deps, app, seeded } = laurel;
    const path = `/v1/metrics/${seeded.metricKey}/event`;
    const headers = { 'x-api-key': seeded.appKey, 'content-type': 'application/json' };
    const send = async (i: number) => {
      const body = `{"user":{"id":"${userId(i)}","tz":"${ZONES[i % ZONES.length]}"},"value":1}`;
      const res = await app.request(path, { method: 'POST', headers, body });
      if (res.status !== 201) throw new Error(`event ${i}: ${res.status} ${await res.text()}`);
    };
    // The catalog reloads asynchronously after the admin writes.
    for (let i = 0; ; i++) {
      const res = await app.request(path, {
        method: 'POST',
        headers,
        body: '{"user":{"id":"writer-preflight","tz":"UTC"},"value":1}',
      });
      if (res.status === 201) break;
      if (i > 50) throw new Error(`preflight: ${res.status} ${await res.text()}`);
      await new Promise((r) => setTimeout(r, 100));
    }

    const profileDir = `${RESULTS}profiles`;
    if (opts.profile) await mkdir(profileDir, { recursive: true });
    // The worker child, with an IPC channel: it says when it has loaded and starts on "go".
    const proc = spawn(
      process.execPath,
      [
        ...(opts.profile ? ['--cpu-prof', `--cpu-prof-dir=${profileDir}`] : []),
        '--import',
        'tsx',
        'bench/writer.ts',
        '--child',
      ],
      {
        cwd: ROOT,
        env: {
          ...process.env,
          REDIS_URL: redisUrl,
          DATABASE_URL: dbUrl.toString(),
          REDIS_KEY_PREFIX: prefix,
          ...(clusterNodes ? { REDIS_CLUSTER_NODES: clusterNodes } : {}),
          // As the full bench's worker and README's "Running in production": a larger young generation.
          NODE_OPTIONS: workerNodeOptions(process.env),
        },
        stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
      },
    );
    const exited = new Promise<void>((resolve) => proc.once('exit', () => resolve()));
    const stopWorker = async () => {
      if (proc.exitCode !== null || proc.signalCode !== null) return;
      proc.kill('SIGTERM');
      const timer = setTimeout(() => proc.kill('SIGKILL'), 10_000);
      await exited;
      clearTimeout(timer);
    };
    closers.push(stopWorker);
    await new Promise<void>((resolve, reject) => {
      proc.once('message', () => resolve());
      void exited.then(() => reject(new Error('the writer child exited during start-up')));
    });

    const produce = async () => {
      const started = Date.now();
      let next = 0;
      const lane = async () => {
        while (next < opts.events) {
          const i = next++;
          if (opts.rate > 0) {
            const due = started + (i * 1000) / opts.rate;
            const wait = due - Date.now();
            if (wait > 0) await new Promise((r) => setTimeout(r, wait));
          }
          await send(i);
        }
      };
      await Promise.all(Array.from({ length: opts.concurrency }, lane));
      return Date.now() - started;
    };

    const pgCpu = new PostgresCpu([dbName]);
    const pgStats = async () => {
      const [row] = await deps.sql<Array<{ xact: string; ins: string; upd: string }>>`
        select xact_commit + xact_rollback as xact, tup_inserted as ins, tup_updated as upd
        from pg_stat_database where datname = ${dbName}`;
      return { xact: Number(row!.xact), ins: Number(row!.ins), upd: Number(row!.upd) };
    };
    if (opts.rate === 0) {
      const ms = await produce();
      console.error(`sent ${opts.events} events in ${(ms / 1000).toFixed(1)} s (writer stopped)`);
    }
    await pgCpu.sample();
    const stats0 = await pgStats();
    const cpu0 = (await cpuSeconds(proc.pid))!;
    const redis0 = await redisCpuSeconds(dataNodes);
    const t0 = Date.now();
    proc.send('go');
    if (opts.rate > 0) {
      const ms = await produce();
      console.error(`sent ${opts.events} events in ${(ms / 1000).toFixed(1)} s at ${opts.rate}/s`);
    }
    const drain = await waitForOutboxDrain(dataNodes, prefix, 600_000);
    const cpu1 = (await cpuSeconds(proc.pid))!;
    const redis1 = await redisCpuSeconds(dataNodes);
    const pg1 = (await pgCpu.sample())!;
    const stats1 = await pgStats();
    if (drain.left) throw new Error(`${drain.left} outbox entries left`);
    const n = opts.events;
    const per = (s: number) => Math.round((s * 1e6) / n);
    const result = {
      mode: (opts.rate > 0 ? `rate ${opts.rate}/s` : 'backlog') + (opts.cluster ? ', 3-master Cluster' : ''),
      events: n,
      drainS: (Date.now() - t0) / 1000,
      workerUs: per(cpu1 - cpu0),
      postgresUs: per(pg1.own),
      postgresAllUs: per(pg1.all),
      // Every Redis (or Cluster master) holding the data: the writer's share alone in the backlog mode;
      // with --rate, the events' own scripts too.
      redisUs: per(redis1 - redis0),
      transactions: stats1.xact - stats0.xact,
      rowsInsertedPerEvent: +((stats1.ins - stats0.ins) / n).toFixed(2),
      rowsUpdatedPerEvent: +((stats1.upd - stats0.upd) / n).toFixed(2),
    };
    await stopWorker();
    console.log(JSON.stringify(result));
    console.error(
      `history writer (${result.mode}, ${n} events, drained in ${result.drainS.toFixed(1)} s): ` +
        `worker ${result.workerUs} µs + postgres ${result.postgresUs} µs per event, ` +
        `Redis ${result.redisUs} µs (${opts.rate > 0 ? "the events' scripts included" : "the writer's share"}) ` +
        `(${result.transactions} transactions, ${result.rowsInsertedPerEvent} rows inserted and ` +
        `${result.rowsUpdatedPerEvent} updated per event)`,
    );
  } finally {
    await cleanup();
  }
}

if (process.argv.includes('--child')) await child();
else await main();
