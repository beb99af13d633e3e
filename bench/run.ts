/**
 * `npm run bench`: the event endpoint under load next to a minimal baseline measured in the same run,
 * and every figure of issue 16 in one table.
 *
 * Starts Laurel (an API process and a worker process) and the baseline server as child processes
 * against the local Redis and Postgres, in a fresh database and under a fresh Redis key prefix, seeds
 * a realistic configuration through the admin API, drives both with autocannon one after the other
 * (closed loop and at a fixed rate, new users and veteran users with a year of history), measures
 * events on a throwaway Redis Cluster too, prints the tables and writes bench/results/<timestamp>.json
 * and bench/results/latest.json. Everything it created — processes, keys under its prefix, its
 * databases, the throwaway cluster — is removed at the end, also on error or Ctrl-C.
 */
import { randomBytes } from 'node:crypto';
import { mkdir, readdir, readFile, writeFile } from 'node:fs/promises';
import os from 'node:os';
import { fileURLToPath } from 'node:url';
import { Redis } from 'ioredis';
import postgres from 'postgres';
import { startRedisCluster } from '../test/helpers/redis-cluster';
import { generateApiKey } from '../src/api-keys';
import { createApp } from '../src/app';
import { type Clock, ManualClock, systemClock } from '../src/clock';
import { loadConfig } from '../src/config';
import { closeDeps, createDeps, type Deps } from '../src/deps';
import { createLogger } from '../src/logger';
import { verifyState } from '../src/rebuild/verify';
import { runUserOp } from '../src/services/user-op';
import { http, parseBody } from './lib/http';
import { type LoadSettings, type Measurement, measure, type Probes, round, type Scenario } from './lib/load';
import { parseOptions } from './lib/options';
import {
  type Child,
  cpuSeconds,
  freePort,
  PostgresCpu,
  signalChild,
  startChild,
  stopAllChildren,
  stopChild,
  totalCpuSeconds,
  waitReady,
  workerNodeOptions,
  apiNodeOptions,
} from './lib/processes';
import {
  type Figure,
  formatBytes,
  issueFigures,
  layoutFloor,
  renderBudget,
  renderLayoutFloor,
  renderCpu,
  renderFigures,
  renderRedisCommands,
  renderTable,
  renderVerify,
  type Skipped,
  type Verified,
} from './lib/report';
import {
  censusKeys,
  commandStats,
  connectCluster,
  deletePrefix,
  infoNumber,
  type Nodes,
  redisCpuSeconds,
  TRANSIENT_TTL_MS,
  type UserMemory,
  userMemory,
  waitForOutboxDrain,
} from './lib/redis-stats';
import { startScraper } from './lib/scraper';
import { activateTriggerAsOf, seedConfiguration, userId, ZONES } from './lib/seed';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const RESULTS = fileURLToPath(new URL('./results/', import.meta.url));
const DAY_MS = 86_400_000;

/** Veteran users: the same shape, another variant digit, so they never collide with new users. */
const veteranId = (i: number) => `00000000-0000-4000-9000-${i.toString(16).padStart(12, '0')}`;

/** Days of history each veteran user has before the veteran scenario (one met daily period each). */
const VETERAN_DAYS = 365;
/** Events per request of the batch scenario. */
const BATCH_SIZE = 100;
/** Veteran users seeded at the same time (each user's days stay in order). */
const VETERAN_PARALLELISM = 32;

/** One Laurel under test: API processes (where the load goes) and one worker process. */
interface Laurel {
  origins: string[];
  apis: Child[];
  /** History writer, scheduler and webhooks (ROLE=worker); serves no HTTP. */
  worker: Child;
  /** /metrics of every process (each on its own METRICS_PORT). */
  metrics: string[];
}

const laurelChildren = (l: Laurel) => [...l.apis, l.worker];

/**
 * Starts `apis` ROLE=api processes, each on its own port, and one ROLE=worker process. The API
 * processes are named `<name>`, `<name>-2`, …, the worker `<name>-worker`.
 */
async function startLaurel(
  name: string,
  apis: number,
  env: NodeJS.ProcessEnv,
  nodeArgs: string[],
): Promise<Laurel> {
  const args = [...nodeArgs, '--import', 'tsx', 'src/main.ts'];
  const started: Array<{ child: Child; origin: string }> = [];
  const metrics: string[] = [];
  const metricsPort = async () => {
    const port = await freePort();
    metrics.push(`http://127.0.0.1:${port}/metrics`);
    return String(port);
  };
  for (let i = 0; i < apis; i++) {
    const port = await freePort();
    // The first one migrates the (new) database; the others find it done.
    const child = startChild(
      i === 0 ? name : `${name}-${i + 1}`,
      args,
      // As README's "Running in production" recommends for API processes: a larger young generation.
      {
        ...env,
        ROLE: 'api',
        PORT: String(port),
        METRICS_PORT: await metricsPort(),
        NODE_OPTIONS: apiNodeOptions(env),
      },
      ROOT,
    );
    const origin = `http://127.0.0.1:${port}`;
    await waitReady(child, `${origin}/readyz`);
    started.push({ child, origin });
  }
  // The worker serves no HTTP: nothing to wait for (its start-up is over before the first scenario).
  const worker = startChild(
    `${name}-worker`,
    args,
    // As README's "Running in production" recommends for worker processes: a larger young generation.
    { ...env, ROLE: 'worker', METRICS_PORT: await metricsPort(), NODE_OPTIONS: workerNodeOptions(env) },
    ROOT,
  );
  return { origins: started.map((s) => s.origin), apis: started.map((s) => s.child), worker, metrics };
}

/** Throwaway Redis Clusters, stopped at cleanup (or as soon as their scenario is over). */
const clusterStops = new Set<() => Promise<void>>();

/**
 * On a fresh database the server inserts ADMIN_API_KEY after its configuration cache has loaded and
 * does not reload it, so the key is refused until the next configuration change. Publishing on the
 * configuration channel makes every instance reload, as an admin write elsewhere would.
 */
async function waitForAdminKey(
  origin: string,
  adminKey: string,
  publish: (message: string) => Promise<unknown>,
): Promise<void> {
  let last = '';
  for (let i = 0; i < 50; i++) {
    const res = await http('GET', `${origin}/admin/v1/metrics?limit=1`, { 'x-api-key': adminKey });
    last = `${res.status} ${res.text}`;
    if (res.status === 200) return;
    await publish(String(Date.now()));
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`the server never accepted ADMIN_API_KEY: ${last}`);
}

/** One event first: proves the key and the configuration are live, and shows what is measured. */
async function preflight(origin: string, path: string, headers: Record<string, string>): Promise<string> {
  let last: { status: number; body: any } = { status: 0, body: null };
  for (let i = 0; i < 50; i++) {
    const body = JSON.stringify({ user: { id: 'bench-preflight', tz: 'UTC' }, value: 1 });
    const res = await http('POST', `${origin}${path}`, headers, body);
    last = { status: res.status, body: parseBody(res.text) };
    if (res.status === 201) break;
    await new Promise((r) => setTimeout(r, 100)); // the catalog reloads asynchronously after admin writes
  }
  if (last.status !== 201) throw new Error(`preflight event: ${last.status} ${JSON.stringify(last.body)}`);
  const b = last.body;
  return (
    `201, ${b.achievements?.length ?? 0} achievements, streak ${b.currentStreak?.length}, ` +
    `points ${Object.entries(b.points ?? {})
      .map(([k, p]: [string, any]) => `${k}=${p.total}`)
      .join(' ')}, leaderboards ${Object.keys(b.leaderboards ?? {}).length}`
  );
}

/** Busy CPU seconds of the whole machine (all cores), from /proc/stat. */
async function machineBusySeconds(): Promise<number | null> {
  try {
    const first = (await readFile('/proc/stat', 'utf8')).split('\n')[0]!;
    const t = first.trim().split(/\s+/).slice(1).map(Number);
    const idle = (t[3] ?? 0) + (t[4] ?? 0);
    return (t.reduce((a, b) => a + b, 0) - idle) / 100;
  } catch {
    return null;
  }
}

/** Runs `fn` over `items` with at most `n` calls in flight. */
async function inPool<T>(items: T[], n: number, fn: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  const lane = async () => {
    while (next < items.length) await fn(items[next++]!);
  };
  await Promise.all(Array.from({ length: Math.min(n, items.length) }, lane));
}

/**
 * Gives each veteran a year of daily activity through the product's own code path: the bench's own
 * deps with a manual clock send, for each of the VETERAN_DAYS days before today (at 12:00 UTC, the
 * same local date in every zone the bench uses), one event of value 1 per veteran with a distinct
 * Idempotency-Key, the days in order and the veterans of one day in parallel.
 *
 * The worker process is paused meanwhile (SIGSTOP, resumed in any case): its scheduler runs on the
 * real clock and would roll the streaks of these users over "now" between two of their simulated
 * days (a year early), breaking them. Once resumed, its history writer works through the outbox as
 * after any outage; the caller waits for that before measuring.
 */
async function seedVeterans(
  deps: Deps,
  clock: ManualClock,
  worker: Child,
  metricId: string,
  count: number,
): Promise<{ ms: number; streakMin: number; streakMax: number; events: number }> {
  const users = Array.from({ length: count }, (_, i) => ({ id: veteranId(i), tz: ZONES[i % ZONES.length]! }));
  const streak = new Map<string, number>();
  const todayUtc = Math.floor(Date.now() / DAY_MS) * DAY_MS;
  const started = Date.now();
  let events = 0;
  signalChild(worker, 'SIGSTOP');
  try {
    for (let d = VETERAN_DAYS; d >= 1; d--) {
      const at = todayUtc - d * DAY_MS + DAY_MS / 2;
      clock.set(at);
      const date = new Date(at).toISOString().slice(0, 10);
      await inPool(users, VETERAN_PARALLELISM, async (u) => {
        const r = await runUserOp(deps, {
          kind: 'event',
          metricId,
          user: u,
          valueMicros: 1_000_000,
          idempotencyKey: `bench-day-${date}`,
        });
        if (r.replayOf) throw new Error(`veteran ${u.id}: the event of ${date} was taken for a replay`);
        streak.set(u.id, r.streak.length);
        events++;
      });
      if (d % 73 === 0)
        console.error(
          `veterans: ${VETERAN_DAYS - d + 1} of ${VETERAN_DAYS} days sent (${((Date.now() - started) / 1000).toFixed(0)} s)`,
        );
    }
  } finally {
    signalChild(worker, 'SIGCONT');
  }
  const lengths = [...streak.values()];
  return {
    ms: Date.now() - started,
    streakMin: Math.min(...lengths),
    streakMax: Math.max(...lengths),
    events,
  };
}

async function main() {
  const opts = parseOptions(process.argv.slice(2), process.env);
  const stamp = new Date().toISOString();
  const suffix = randomBytes(3).toString('hex');
  const prefix = `bench${suffix}`;
  const dbName = `laurel_bench_${stamp.replace(/[^0-9]/g, '').slice(0, 14)}_${suffix}`;
  const clusterDbName = `${dbName}_c`;
  const dbUrlOf = (name: string) => {
    const u = new URL(opts.databaseUrl);
    u.pathname = `/${name}`;
    return u.toString();
  };
  const adminKey = generateApiKey().key;
  const redis = new Redis(opts.redisUrl, { maxRetriesPerRequest: 1 });
  const closedLoop: LoadSettings = {
    connections: opts.connections,
    duration: opts.duration,
    warmup: opts.warmup,
    rate: 0,
  };
  const atRate: LoadSettings = { ...closedLoop, rate: opts.rate };
  const apiProcesses = opts.mode === 'two-api' ? 2 : 1;
  const runCluster = opts.cluster && opts.mode === 'single';
  const databases = [dbName, ...(runCluster ? [clusterDbName] : [])];
  const postgresCpu = new PostgresCpu(databases);
  const closers: Array<() => Promise<void>> = [];

  let cleaned = false;
  const cleanup = async () => {
    if (cleaned) return;
    cleaned = true;
    // Requests autocannon abandoned at the end of the last scenario may still be running in the server.
    await new Promise((r) => setTimeout(r, 1000));
    await stopAllChildren();
    for (const close of closers) await close().catch(() => {});
    for (const stop of clusterStops) await stop().catch(() => {});
    try {
      const n = await deletePrefix(redis, prefix);
      console.error(`cleanup: unlinked ${n} keys under ${prefix}:`);
    } catch (err) {
      console.error(`cleanup: could not delete keys under ${prefix}: ${(err as Error).message}`);
    }
    redis.disconnect();
    const pg = postgres(dbUrlOf('postgres'), { max: 1, onnotice: () => {} });
    try {
      for (const name of databases) {
        try {
          await pg.unsafe(`drop database if exists "${name}" with (force)`);
          console.error(`cleanup: dropped database ${name}`);
        } catch (err) {
          console.error(`cleanup: could not drop database ${name}: ${(err as Error).message}`);
        }
      }
    } finally {
      await pg.end({ timeout: 2 });
    }
  };
  for (const sig of ['SIGINT', 'SIGTERM'] as const) {
    process.once(sig, () => {
      console.error(`\n${sig}: stopping`);
      void cleanup().finally(() => process.exit(130));
    });
  }

  try {
    console.error(
      `bench: mode ${opts.mode}, ${opts.connections} connections, fixed rate ${opts.rate} req/s, ` +
        `${opts.duration} s (+${opts.warmup} s warm-up) per scenario, ${opts.users} users, ` +
        `${opts.veterans} veterans, prefix ${prefix}, database ${dbName}` +
        (opts.nodeArgs.length ? `, Laurel started with node ${opts.nodeArgs.join(' ')}` : ''),
    );

    // Where Laurel keeps its data: the local Redis, or (--mode cluster) a throwaway Redis Cluster.
    let dataNodes: Nodes = redis;
    let publishConfig = (m: string) => redis.publish(`${prefix}:config-changed`, m);
    let clusterNodesEnv: string | undefined;
    if (opts.mode === 'cluster') {
      const cluster = await startRedisCluster();
      clusterStops.add(() => cluster.stop());
      const c = await connectCluster(cluster.nodes);
      closers.push(async () => c.client.disconnect());
      dataNodes = c.masters;
      publishConfig = (m: string) => c.client.publish(`${prefix}:config-changed`, m);
      clusterNodesEnv = cluster.nodes;
    }

    const serverEnv: NodeJS.ProcessEnv = {
      ...process.env,
      HOST: '127.0.0.1',
      REDIS_URL: opts.redisUrl,
      DATABASE_URL: dbUrlOf(dbName),
      REDIS_KEY_PREFIX: prefix,
      ADMIN_API_KEY: adminKey,
      LOG_LEVEL: 'warn',
      MIGRATE_ON_START: 'true',
      RATE_LIMIT_PER_SECOND: '1000000',
      SHUTDOWN_TIMEOUT_MS: '5000',
      ...(clusterNodesEnv ? { REDIS_CLUSTER_NODES: clusterNodesEnv } : {}),
    };
    const nodeArgs = [
      ...opts.nodeArgs,
      ...(opts.profile ? ['--cpu-prof', `--cpu-prof-dir=${RESULTS}profiles`] : []),
    ];
    const laurel = await startLaurel('laurel', apiProcesses, serverEnv, nodeArgs);
    const baselinePort = await freePort();
    const baselineServer = startChild(
      'baseline',
      ['--import', 'tsx', 'bench/baseline-server.ts'],
      { ...process.env, PORT: String(baselinePort), REDIS_URL: opts.redisUrl, BENCH_PREFIX: prefix },
      ROOT,
    );
    const baselineOrigin = `http://127.0.0.1:${baselinePort}`;
    await waitReady(baselineServer, `${baselineOrigin}/healthz`);

    // The product's own deps on the run's data (its Redis prefix and database), in this process.
    const ownDeps = async (clock: Clock) => {
      const deps = await createDeps(
        loadConfig({
          REDIS_URL: opts.redisUrl,
          REDIS_CLUSTER_NODES: clusterNodesEnv,
          DATABASE_URL: dbUrlOf(dbName),
          REDIS_KEY_PREFIX: prefix,
          ADMIN_API_KEY: adminKey,
          LOG_LEVEL: 'warn',
          // The key layout of the Laurel processes (they run with this environment).
          ...(process.env.USER_SHARDS ? { USER_SHARDS: process.env.USER_SHARDS } : {}),
        }),
        { clock, logger: createLogger('warn') },
      );
      let open = true;
      const close = async () => {
        if (open) {
          open = false;
          await closeDeps(deps);
        }
      };
      closers.push(close);
      await deps.catalog.reload();
      return { deps, close };
    };
    const origin = laurel.origins[0]!;
    await waitForAdminKey(origin, adminKey, publishConfig);
    const seeded = await seedConfiguration(origin, adminKey);
    if (opts.veterans > 0) {
      // The veterans' year of events carries a controlled clock (below), and a metric trigger counts
      // events from its activation (semantics §5.3): the trigger is activated again as of before their
      // first day, through the admin API's own code in this process with its clock set back.
      const before = await ownDeps(new ManualClock(Date.now() - (VETERAN_DAYS + 7) * DAY_MS));
      const app = createApp(before.deps);
      await activateTriggerAsOf(origin, adminKey, seeded, async (method, url, headers = {}, body) => {
        const res = await app.request(url, {
          method,
          headers: body === undefined ? headers : { 'content-type': 'application/json', ...headers },
          body,
        });
        return { status: res.status, text: await res.text() };
      });
      await before.close();
      // The change reaches the Laurel processes on the configuration channel; let them reload.
      await new Promise((r) => setTimeout(r, 500));
    }
    for (const n of seeded.notes) console.error(`note: ${n}`);
    const appHeaders = { 'x-api-key': seeded.appKey };
    const eventPath = `/v1/metrics/${seeded.metricKey}/event`;
    console.error(`preflight: ${await preflight(origin, eventPath, appHeaders)}`);

    const zoneOf = Uint8Array.from({ length: opts.users }, () => Math.floor(Math.random() * ZONES.length));
    /** Body of user i (any i ≥ 0; the zone repeats every `users` ids). */
    const eventBody = (i: number) =>
      `{"user":{"id":"${userId(i)}","tz":"${ZONES[zoneOf[i % opts.users]!]}"},"value":1}`;
    /** Ids first + 0, 1, … cycling over `users`: each scenario of new users gets its own range. */
    const cycle = (first = 0) => {
      let n = 0;
      return () => first + (n++ % opts.users);
    };
    let eventsBuilt = 0;

    /** Cumulative CPU of one Laurel, the Redis it uses and everything else of interest. */
    const cpuProbe = (target: Laurel, data: Nodes) => async (): Promise<Record<string, number | null>> => {
      const [api, worker, baselineCpu, redisCpu, singleCpu, pg, machine] = await Promise.all([
        totalCpuSeconds(target.apis.map((s) => s.proc.pid)),
        cpuSeconds(target.worker.proc.pid),
        cpuSeconds(baselineServer.proc.pid),
        redisCpuSeconds(data),
        data === redis ? null : redisCpuSeconds(redis),
        postgresCpu.sample(),
        machineBusySeconds(),
      ]);
      const self = process.cpuUsage();
      return {
        // Every process of this Laurel; the API process(es) and the worker apart.
        laurel: api === null || worker === null ? null : api + worker,
        'laurel-api': api,
        'laurel-worker': worker,
        baseline: baselineCpu,
        // The Redis (or every Cluster master) holding this Laurel's data.
        redis: redisCpu,
        // The local Redis when the data is on a Cluster (the baseline uses it).
        ...(data === redis ? {} : { 'redis-single': singleCpu }),
        postgres: pg?.all ?? null,
        // This run's databases and Postgres' shared processes, not other databases' backends.
        'postgres-own': pg?.own ?? null,
        loadgen: (self.user + self.system) / 1e6,
        machine,
      };
    };
    const probes: Probes = { cpu: cpuProbe(laurel, dataNodes), commands: () => commandStats(dataNodes) };
    // The baseline's data is on the local Redis whatever the mode.
    const baselineRedisKey = dataNodes === redis ? 'redis' : 'redis-single';
    const baselineProbes: Probes = { cpu: probes.cpu, commands: () => commandStats(redis) };

    /** Worker and Postgres CPU seconds so far: the history writer's cost over a stretch of time. */
    const writerCpu = async () => {
      const [worker, pg] = await Promise.all([cpuSeconds(laurel.worker.proc.pid), postgresCpu.sample()]);
      return worker === null || pg === null ? null : { worker, postgres: pg.own };
    };
    const drainOutbox = async (after: string) => {
      await new Promise((r) => setTimeout(r, 1000)); // let in-flight requests finish
      const drain = await waitForOutboxDrain(dataNodes, prefix, 180_000);
      console.error(
        drain.left
          ? `history writer: ${drain.left} outbox entries still waiting ${(drain.ms / 1000).toFixed(1)} s after ${after}`
          : `history writer: outbox drained ${(drain.ms / 1000).toFixed(1)} s after ${after}`,
      );
      return drain;
    };

    const results: Measurement[] = [];
    const baselineScenario = (rate: number, paced = false): Scenario => {
      const next = cycle();
      return {
        name: `baseline POST /baseline${rate ? ` @${rate}/s${paced ? ' paced' : ''}` : ''}`,
        origins: [baselineOrigin],
        method: 'POST',
        server: 'baseline',
        redis: baselineRedisKey,
        next: () => ({ path: '/baseline', body: eventBody(next()) }),
      };
    };
    const eventScenario = (label: string, origins: string[], next: () => string): Scenario => ({
      name: `laurel POST ${eventPath} ${label}`,
      origins,
      method: 'POST',
      server: 'laurel',
      headers: appHeaders,
      next: () => {
        eventsBuilt++;
        return { path: eventPath, body: next() };
      },
    });

    // 1. Closed loop: the baseline, then events of new users.
    console.error('measuring the baseline (closed loop)…');
    const baseline = await measure(baselineScenario(0), closedLoop, baselineProbes);
    results.push(baseline);

    const memBefore = await infoNumber(redis, 'memory', 'used_memory');
    const nextEventUser = cycle();
    console.error('measuring the event endpoint (closed loop, new users)…');
    const events = await measure(
      eventScenario('(new users)', laurel.origins, () => eventBody(nextEventUser())),
      closedLoop,
      probes,
    );
    results.push(events);
    const usersTouched = Math.min(eventsBuilt, opts.users);
    // The history writer catches up with the outbox before anything else is measured: its Postgres
    // writes would otherwise be charged to the next scenarios.
    const drain = await drainOutbox('the closed-loop event scenario');
    const memAfter = await infoNumber(redis, 'memory', 'used_memory');
    const census = await censusKeys(dataNodes, prefix);
    // --scrape: the same closed-loop scenario with and without a scraper polling /metrics.
    const scrapeCost = opts.scrape
      ? await measureScrapeCost(
          eventScenario('(new users)', laurel.origins, () => eventBody(nextEventUser())),
          closedLoop,
          probes,
          laurel.metrics,
          () => drainOutbox('a scrape-cost run'),
        )
      : null;

    // 1b. Batches of BATCH_SIZE events (POST /admin/v1/metrics/events) to the same users, closed loop:
    // the same per-event effects, one request per batch.
    const nextBatchUser = cycle();
    const batchBody = () => {
      const items: string[] = [];
      for (let j = 0; j < BATCH_SIZE; j++) {
        const i = nextBatchUser();
        items.push(
          `{"key":"${seeded.metricKey}","user":{"id":"${userId(i)}","tz":"${ZONES[zoneOf[i % opts.users]!]}"},"value":1}`,
        );
      }
      return `[${items.join(',')}]`;
    };
    console.error(`measuring the batch endpoint (closed loop, batches of ${BATCH_SIZE}, the same users)…`);
    const batches = await measure(
      {
        name: `laurel POST /admin/v1/metrics/events (batches of ${BATCH_SIZE})`,
        origins: laurel.origins,
        method: 'POST',
        server: 'laurel',
        headers: { 'x-api-key': adminKey },
        next: () => ({ path: '/admin/v1/metrics/events', body: batchBody() }),
      },
      closedLoop,
      probes,
    );
    results.push(batches);
    await drainOutbox('the batch scenario');

    // 2. Leaderboard reads, closed loop.
    const notes = [...seeded.notes];
    let reads: Array<{ label: string; m: Measurement }> | Skipped;
    const board = seeded.leaderboardKeys[0];
    if (!opts.reads) reads = { skipped: 'BENCH_READS=0 / --no-reads' };
    else if (!board) reads = { skipped: 'no leaderboard was seeded' };
    else {
      const probe = await http('GET', `${origin}/v1/leaderboards/${board}?limit=100`, appHeaders);
      if (probe.status !== 200) {
        reads = { skipped: `GET /v1/leaderboards/{key} answered ${probe.status}` };
      } else {
        const done: Array<{ label: string; m: Measurement }> = [];
        const nextReadUser = () => Math.floor(Math.random() * usersTouched);
        for (const [label, query] of [
          ['top 100', () => 'limit=100'],
          ['around a user', () => `userId=${userId(nextReadUser())}&offset=-5&limit=11`],
        ] as const) {
          console.error(`measuring leaderboard ${label}…`);
          const path = `/v1/leaderboards/${board}`;
          const m = await measure(
            {
              name: `laurel GET ${path} (${label})`,
              origins: laurel.origins,
              method: 'GET',
              server: 'laurel',
              headers: appHeaders,
              next: () => ({ path: `${path}?${query()}` }),
            },
            closedLoop,
            probes,
          );
          results.push(m);
          done.push({ label, m });
        }
        reads = done;
      }
    }
    if (!Array.isArray(reads)) notes.push(`leaderboard reads skipped: ${reads.skipped}`);

    // 3. Veterans: a year of daily history each, through the product's code path.
    let veteranSeed: Awaited<ReturnType<typeof seedVeterans>> | null = null;
    let veteranMemory: UserMemory | null = null;
    let veteranDrain: { ms: number; left: number } | null = null;
    if (opts.veterans > 0) {
      const clock = new ManualClock(Date.now());
      const { deps, close } = await ownDeps(clock);
      console.error(
        `seeding ${opts.veterans} veterans × ${VETERAN_DAYS} days (${opts.veterans * VETERAN_DAYS} events, worker paused)…`,
      );
      veteranSeed = await seedVeterans(deps, clock, laurel.worker, seeded.metricId, opts.veterans);
      await close();
      console.error(
        `veterans: ${veteranSeed.events} events in ${(veteranSeed.ms / 1000).toFixed(1)} s, ` +
          `streak lengths ${veteranSeed.streakMin}-${veteranSeed.streakMax} (expected ${VETERAN_DAYS})`,
      );
      if (veteranSeed.streakMin !== VETERAN_DAYS)
        notes.push(
          `veterans' streaks after seeding are ${veteranSeed.streakMin}-${veteranSeed.streakMax} long, not ${VETERAN_DAYS}`,
        );
      veteranDrain = await drainOutbox('seeding the veterans');
      const sample = Array.from({ length: Math.min(20, opts.veterans) }, (_, i) =>
        veteranId(Math.floor((i * opts.veterans) / Math.min(20, opts.veterans))),
      );
      veteranMemory = await userMemory(dataNodes, prefix, sample);
    }

    // 4. At the fixed rate: the baseline, new users (and the history writer's cost), veterans.
    console.error(`measuring the baseline at ${opts.rate} req/s…`);
    const baselineAtRate = await measure(baselineScenario(opts.rate), atRate, baselineProbes);
    results.push(baselineAtRate);
    // Issue 16's consolidated layout (bench/baseline-server.ts), the floor figure 1's bar was set from.
    console.error(`measuring issue 16's consolidated layout at ${opts.rate} req/s…`);
    const layoutNext = cycle();
    const layoutAtRate = await measure(
      {
        name: `layout POST /baseline/layout @${opts.rate}/s`,
        origins: [baselineOrigin],
        method: 'POST',
        server: 'baseline',
        redis: baselineRedisKey,
        next: () => ({ path: '/baseline/layout', body: eventBody(layoutNext()) }),
      },
      atRate,
      baselineProbes,
    );
    results.push(layoutAtRate);

    // New users again: ids after the closed-loop scenario's range.
    const nextNewUser = cycle(opts.users);
    console.error(`measuring the event endpoint at ${opts.rate} req/s (new users)…`);
    const writerBefore = await writerCpu();
    const eventsAtRate = await measure(
      eventScenario(`@${opts.rate}/s (new users)`, laurel.origins, () => eventBody(nextNewUser())),
      atRate,
      probes,
    );
    results.push(eventsAtRate);
    const rateDrain = await drainOutbox(`the event scenario at ${opts.rate} req/s`);
    const writerAfter = await writerCpu();
    const ok = (m: Measurement) => m.warmupRequests + m.requests - m.non2xx - m.errors;
    const writer =
      writerBefore && writerAfter && !rateDrain.left
        ? {
            events: ok(eventsAtRate),
            workerUs: Math.round(((writerAfter.worker - writerBefore.worker) * 1e6) / ok(eventsAtRate)),
            postgresUs: Math.round(((writerAfter.postgres - writerBefore.postgres) * 1e6) / ok(eventsAtRate)),
            drainMs: rateDrain.ms,
          }
        : null;

    let veteransAtRate: Measurement | Skipped = { skipped: 'no veterans (--veterans 0)' };
    if (veteranSeed) {
      let n = 0;
      const body = () => {
        const i = n++ % opts.veterans;
        return `{"user":{"id":"${veteranId(i)}","tz":"${ZONES[i % ZONES.length]}"},"value":1}`;
      };
      console.error(`measuring the event endpoint at ${opts.rate} req/s (veterans)…`);
      veteransAtRate = await measure(
        eventScenario(`@${opts.rate}/s (veterans)`, laurel.origins, body),
        atRate,
        probes,
      );
      results.push(veteransAtRate);
      await drainOutbox(`the veteran scenario`);
    }

    // The same rate spread evenly over each second (figure 6's latencies): autocannon's rate sends
    // each connection's share of a second back to back, so its latencies are a closed loop's. After
    // the veterans, whose figure counts Redis server-wide, so that it is measured as in earlier runs.
    const paced: LoadSettings = { ...atRate, paced: true };
    console.error(`measuring the baseline and the event endpoint at ${opts.rate} req/s, evenly paced…`);
    const baselinePaced = await measure(baselineScenario(opts.rate, true), paced, baselineProbes);
    results.push(baselinePaced);
    const eventsPaced = await measure(
      eventScenario(`@${opts.rate}/s paced (new users)`, laurel.origins, () => eventBody(nextNewUser())),
      paced,
      probes,
    );
    results.push(eventsPaced);
    await drainOutbox(`the evenly paced event scenario at ${opts.rate} req/s`);

    // --verify: the live state against the history this run wrote (issue 16: verify-state finds no
    // difference after a bench run), over every user, once the history has caught up.
    let verified: Verified | null = null;
    if (opts.verify) {
      console.error('verify-state over every user the run wrote…');
      const { deps, close } = await ownDeps(systemClock);
      const t0 = performance.now();
      const v = await verifyState(deps);
      await close();
      verified = {
        checkedUsers: v.checkedUsers,
        differences: v.differences.length,
        first: v.differences.slice(0, 10),
        seconds: round((performance.now() - t0) / 1000, 1),
      };
      console.error(renderVerify(verified));
      if (verified.differences > 0) {
        notes.push(renderVerify(verified));
        process.exitCode = 1;
      }
    }

    // 5. A second Laurel on a throwaway 3-master Redis Cluster, seeded the same way, at the fixed rate.
    let clusterAtRate: Measurement | Skipped;
    if (opts.mode !== 'single') clusterAtRate = { skipped: `--mode ${opts.mode} (measured in mode single)` };
    else if (!opts.cluster) clusterAtRate = { skipped: 'BENCH_CLUSTER=0 / --no-cluster' };
    else {
      console.error('starting a 3-master Redis Cluster and a second Laurel on it…');
      const cluster = await startRedisCluster();
      let stopped = false;
      const stopCluster = async () => {
        if (!stopped) {
          stopped = true;
          await cluster.stop();
        }
      };
      clusterStops.add(stopCluster);
      const c = await connectCluster(cluster.nodes);
      closers.push(async () => c.client.disconnect());
      const onCluster = await startLaurel(
        'laurel-c',
        1,
        { ...serverEnv, REDIS_CLUSTER_NODES: cluster.nodes, DATABASE_URL: dbUrlOf(clusterDbName) },
        opts.nodeArgs,
      );
      const cOrigin = onCluster.origins[0]!;
      await waitForAdminKey(cOrigin, adminKey, (m) => c.client.publish(`${prefix}:config-changed`, m));
      const cSeeded = await seedConfiguration(cOrigin, adminKey);
      const cHeaders = { 'x-api-key': cSeeded.appKey };
      const cPath = `/v1/metrics/${cSeeded.metricKey}/event`;
      console.error(`preflight on the Cluster: ${await preflight(cOrigin, cPath, cHeaders)}`);
      const nextClusterUser = cycle();
      // A fresh process: a longer warm-up, so its JIT is as warm as the single-Redis Laurel's.
      const clusterWarmup = Math.max(opts.warmup, 5);
      console.error(
        `measuring the event endpoint on the Cluster at ${opts.rate} req/s (new users, ${clusterWarmup} s warm-up)…`,
      );
      clusterAtRate = await measure(
        {
          name: `laurel-c POST ${cPath} @${opts.rate}/s (new users, 3-master Cluster)`,
          origins: onCluster.origins,
          method: 'POST',
          server: 'laurel',
          headers: cHeaders,
          next: () => ({ path: cPath, body: eventBody(nextClusterUser()) }),
        },
        { ...atRate, warmup: clusterWarmup },
        { cpu: cpuProbe(onCluster, c.masters), commands: () => commandStats(c.masters) },
      );
      results.push(clusterAtRate);
      await new Promise((r) => setTimeout(r, 1000));
      await Promise.all(laurelChildren(onCluster).map((ch) => stopChild(ch)));
      c.client.disconnect();
      await stopCluster();
    }
    if (!('reqPerSec' in clusterAtRate)) notes.push(`Cluster scenario skipped: ${clusterAtRate.skipped}`);

    const ratio = events.reqPerSec / baseline.reqPerSec;
    const perUserDelta = (memAfter - memBefore) / Math.max(1, census.users);
    const perUserKeys =
      (census.sampledUserKeyBytes * census.userKeys + census.boardBytes + census.outboxBytes) /
      Math.max(1, census.users);
    // Reply markers of the last seconds' requests (expiring within TRANSIENT_TTL_MS), left out above.
    const perUserTransient = (census.sampledTransientBytes * census.userKeys) / Math.max(1, census.users);
    const figures: Figure[] = issueFigures({
      rate: opts.rate,
      connections: opts.connections,
      apiProcesses,
      baseline,
      events,
      baselineAtRate,
      eventsAtRate,
      baselinePaced,
      eventsPaced,
      writerUs: writer ? writer.workerUs + writer.postgresUs : null,
      veteransAtRate,
      bytesPerNewUser: perUserKeys,
      bytesPerVeteran: veteranMemory ? veteranMemory.bytesPerUser : { skipped: 'no veterans (--veterans 0)' },
      reads,
      clusterAtRate,
      batches: { m: batches, size: BATCH_SIZE },
      layoutAtRate,
    });
    const redisVersion = /^redis_version:(.+)$/m.exec(await redis.info('server'))?.[1]?.trim();
    const report = {
      startedAt: stamp,
      mode: opts.mode,
      settings: {
        ...closedLoop,
        rate: opts.rate,
        users: opts.users,
        veterans: opts.veterans,
        veteranDays: VETERAN_DAYS,
        zones: ZONES,
        ...(opts.nodeArgs.length ? { nodeArgs: opts.nodeArgs } : {}),
      },
      machine: {
        cpus: os.cpus().length,
        cpuModel: os.cpus()[0]?.model,
        memoryGiB: round(os.totalmem() / 2 ** 30, 1),
        node: process.version,
        redis: redisVersion,
      },
      seeded: { leaderboards: seeded.leaderboardKeys, boostMultiplier: 1.5, levels: 5, achievements: 2 },
      /** Issue 16's figures: what was measured against what is required. */
      figures,
      results,
      ratio: round(ratio, 3),
      /** How long the history writer took, after the closed-loop event scenario, to empty the outbox. */
      historyDrain: drain,
      /** --scrape: event throughput with and without a scraper polling /metrics every second. */
      scrapeCost,
      /** Worker process and Postgres CPU per event of the fixed-rate new-user scenario, until drained. */
      historyWriter: writer,
      /** CPU per request of issue 16's consolidated layout at the fixed rate (bench/baseline-server.ts). */
      layoutFloor: layoutFloor(layoutAtRate),
      /** --verify: verify-state over every user after the single-Redis scenarios (null when not asked). */
      verify: verified,
      veterans: veteranSeed ? { ...veteranSeed, drain: veteranDrain, memory: veteranMemory } : null,
      memory: {
        usedMemoryBefore: memBefore,
        usedMemoryAfter: memAfter,
        usersWithProfile: census.users,
        usersSent: usersTouched,
        bytesPerUserUsedMemoryDelta: Math.round(perUserDelta),
        bytesPerUserKeyUsage: Math.round(perUserKeys),
        transientBytesPerUser: Math.round(perUserTransient),
        keysPerUser: round((census.userKeys * (1 - census.transientKeyShare)) / Math.max(1, census.users), 2),
        census,
      },
      notes,
    };

    console.log('');
    console.log(renderTable(results, [baseline, baselineAtRate, baselinePaced]));
    console.log('');
    console.log(`CPU in cores while measuring (machine = all processes on the box, of ${os.cpus().length}):`);
    console.log(renderCpu(results));
    for (const [label, b, e] of [
      ['closed loop', baseline, events],
      [`at ${opts.rate} req/s`, baselineAtRate, eventsAtRate],
    ] as const) {
      const budget = renderBudget(b, e);
      if (budget) console.log(`${label}: ${budget}`);
    }
    if (writer)
      console.log(
        `history writer at ${opts.rate} req/s, from the scenario's start until the outbox drained ` +
          `(${(writer.drainMs / 1000).toFixed(1)} s after it): worker ${writer.workerUs} µs + postgres ${writer.postgresUs} µs per event`,
      );
    console.log(renderLayoutFloor(layoutAtRate, baselineAtRate, eventsAtRate, opts.rate));
    console.log(`Redis time per event request at ${opts.rate} req/s, by command (INFO commandstats):`);
    console.log(renderRedisCommands(eventsAtRate));
    if (!('skipped' in veteransAtRate)) {
      console.log(`Redis time per veteran event request at ${opts.rate} req/s, by command:`);
      console.log(renderRedisCommands(veteransAtRate));
    }
    console.log(`Redis time per batch event (closed loop, batches of ${BATCH_SIZE}), by command:`);
    console.log(renderRedisCommands(batches, BATCH_SIZE));
    console.log('');
    console.log(
      `Redis memory per user: ${formatBytes(perUserDelta)} (used_memory delta over ${census.users} users), ` +
        `${formatBytes(perUserKeys)} (MEMORY USAGE: ${report.memory.keysPerUser} user keys each + share of leaderboards and outbox; ` +
        `besides ${formatBytes(perUserTransient)} in keys expiring within ${TRANSIENT_TTL_MS / 1000} s, left out)`,
    );
    if (veteranMemory)
      console.log(
        `Redis memory per veteran (${veteranMemory.users} sampled): ${formatBytes(veteranMemory.bytesPerUser)} in ` +
          `${veteranMemory.keysPerUser} keys of its own, besides ${formatBytes(veteranMemory.boardHistoryBytesPerUser)} in ` +
          `${veteranMemory.boardHistoryKeysPerUser} leaderboard rank-history keys and ${formatBytes(veteranMemory.transientBytesPerUser)} ` +
          `in ${veteranMemory.transientKeysPerUser} keys expiring within ${TRANSIENT_TTL_MS / 1000} s (left out); ` +
          `${veteranMemory.longestAtFieldsPerUser} field(s) each in the longest streaks' "first reached at" index`,
      );
    if (verified) console.log(renderVerify(verified));
    for (const m of results) {
      if (m.non2xx || m.errors)
        console.log(`warning: ${m.name}: status codes ${JSON.stringify(m.statusCodes)}, ${m.errors} errors`);
      if (m.rate && m.reqPerSec < 0.95 * m.rate)
        console.log(
          `warning: ${m.name}: ${m.reqPerSec} req/s, below the fixed rate (the machine did not keep up)`,
        );
      if (m.generatorBehindMs)
        console.log(
          `warning: ${m.name}: the load generator fell ${m.generatorBehindMs} ms behind its schedule (its own process was starved)`,
        );
    }
    if (scrapeCost) console.log(scrapeCost.summary);
    for (const n of notes) console.log(`note: ${n}`);
    console.log('');
    console.log('Issue 16 — event path at half the cost, and flat as users age:');
    console.log(renderFigures(figures));

    await mkdir(RESULTS, { recursive: true });
    const json = `${JSON.stringify(report, null, 2)}\n`;
    const file = `${RESULTS}${stamp.replace(/:/g, '-')}.json`;
    await writeFile(file, json);
    await writeFile(`${RESULTS}latest.json`, json);
    console.log(`results: ${file}`);
    if (opts.profile) {
      // Stopped here so their profiles are written now; each process writes one per thread (the main
      // thread's is `.<pid>.0.`; the other is tsx's loader thread).
      await stopChild(laurel.worker);
      for (const api of laurel.apis) await stopChild(api);
      const files = await readdir(`${RESULTS}profiles`).catch(() => [] as string[]);
      for (const [role, child] of [
        ...laurel.apis.map((a) => ['API', a] as const),
        ['worker', laurel.worker] as const,
      ]) {
        const main = files.find((f) => f.includes(`.${child.proc.pid}.0.`) && f.endsWith('.cpuprofile'));
        if (main)
          console.log(
            `profile of the ${role} process: npx tsx bench/profile-summary.ts ${RESULTS}profiles/${main}`,
          );
      }
    }
  } finally {
    await cleanup();
  }
}

main().catch((err) => {
  console.error(err instanceof Error ? err.message : err);
  process.exitCode = 1;
});

/**
 * The event scenario with a scraper polling every Laurel process's /metrics once a second, between
 * two runs without it (their mean is the reference, which evens out drift as Redis and Postgres
 * fill up). The outbox is drained before each run, so no run pays for another's history.
 */
async function measureScrapeCost(
  scenario: Scenario,
  settings: LoadSettings,
  probes: Probes,
  metricsUrls: string[],
  drain: () => Promise<unknown>,
) {
  const run = async (name: string, scraped: boolean) => {
    await drain();
    console.error(`measuring the event endpoint ${scraped ? 'with' : 'without'} a scraper…`);
    const scraper = scraped ? startScraper(metricsUrls) : null;
    const m = await measure({ ...scenario, name }, settings, probes);
    return { m, scrapes: scraper ? await scraper.stop() : null };
  };
  const a = await run(`${scenario.name} (no scraper, 1)`, false);
  const b = await run(`${scenario.name} (scraped every 1 s)`, true);
  const c = await run(`${scenario.name} (no scraper, 2)`, false);
  const without = (a.m.reqPerSec + c.m.reqPerSec) / 2;
  const change = (b.m.reqPerSec - without) / without;
  const s = b.scrapes!;
  return {
    withoutScraper: [a.m.reqPerSec, c.m.reqPerSec],
    withScraper: b.m.reqPerSec,
    change: round(change, 4),
    withinThreePercent: change >= -0.03,
    p99: { without: [a.m.p99, c.m.p99], with: b.m.p99 },
    scrapes: s,
    summary:
      `scrape cost: ${b.m.reqPerSec} events/s scraped every 1 s vs ${a.m.reqPerSec} and ${c.m.reqPerSec} without ` +
      `(${(change * 100).toFixed(1)}%, target within 3%: ${change >= -0.03 ? 'met' : 'NOT met'}); ` +
      `${s.scrapes} scrapes of ${Math.round(s.bytes / 1024)} KiB, mean ${s.meanMs} ms, max ${s.maxMs} ms, ${s.failures} failed`,
  };
}
