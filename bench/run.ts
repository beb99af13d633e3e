/**
 * `npm run bench`: the event endpoint under load next to a minimal baseline measured in the same run.
 *
 * Starts Laurel (and the baseline server) as child processes against the local Redis and Postgres,
 * in a fresh database and under a fresh Redis key prefix, seeds a realistic configuration through
 * the admin API, drives both with autocannon one after the other, prints a table and writes
 * bench/results/<timestamp>.json and bench/results/latest.json. Everything it created — processes,
 * keys under its prefix, its database — is removed at the end, also on error or Ctrl-C.
 */
import { randomBytes } from 'node:crypto';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import os from 'node:os';
import { fileURLToPath } from 'node:url';
import { Redis } from 'ioredis';
import postgres from 'postgres';
import { startRedisCluster } from '../test/helpers/redis-cluster';
import { generateApiKey } from '../src/api-keys';
import { http, parseBody } from './lib/http';
import { type LoadSettings, type Measurement, measure, round, type Scenario } from './lib/load';
import { type BenchOptions, parseOptions } from './lib/options';
import {
  type Child,
  cpuSeconds,
  freePort,
  postgresCpuSeconds,
  startChild,
  stopAllChildren,
  totalCpuSeconds,
  waitReady,
} from './lib/processes';
import {
  formatBytes,
  renderBudget,
  renderCpu,
  renderRedisCommands,
  renderTable,
  TARGETS,
} from './lib/report';
import {
  censusKeys,
  commandStats,
  deletePrefix,
  infoNumber,
  redisCpuSeconds,
  waitForOutboxDrain,
} from './lib/redis-stats';
import { startScraper } from './lib/scraper';
import { seedConfiguration } from './lib/seed';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const RESULTS = fileURLToPath(new URL('./results/', import.meta.url));

// A few zones on both sides of UTC, so users' local days (streak periods) differ as in production.
const ZONES = [
  'UTC',
  'Europe/London',
  'Europe/Berlin',
  'America/New_York',
  'America/Los_Angeles',
  'Asia/Tokyo',
];

/** UUID-shaped ids: key names carry the user id, so its length is part of the memory per user. */
const userId = (i: number) => `00000000-0000-4000-8000-${i.toString(16).padStart(12, '0')}`;

/** Laurel under test. The origin list is where the load goes; modes with several instances add origins. */
interface Targets {
  origins: string[];
  servers: Child[];
  /** /metrics of every Laurel process (each on its own METRICS_PORT). */
  metrics: string[];
}

async function startLaurel(opts: BenchOptions, env: NodeJS.ProcessEnv): Promise<Targets> {
  const nodeArgs = opts.profile ? ['--cpu-prof', `--cpu-prof-dir=${RESULTS}profiles`] : [];
  const metrics: string[] = [];
  const metricsPort = async () => {
    const port = await freePort();
    metrics.push(`http://127.0.0.1:${port}/metrics`);
    return String(port);
  };
  const start = async (name: string, extra: NodeJS.ProcessEnv) => {
    const port = await freePort();
    const child = startChild(
      name,
      [...nodeArgs, '--import', 'tsx', 'src/main.ts'],
      { ...env, ...extra, PORT: String(port), METRICS_PORT: await metricsPort() },
      ROOT,
    );
    const origin = `http://127.0.0.1:${port}`;
    await waitReady(child, `${origin}/readyz`);
    return { child, origin };
  };
  if (opts.mode === 'two-api') {
    // Two stateless API processes (connections spread over both) and one worker process.
    const a = await start('laurel', { ROLE: 'api' });
    const b = await start('laurel-2', { ROLE: 'api' });
    // The worker serves no HTTP: nothing to wait for.
    const w = startChild(
      'laurel-worker',
      [...nodeArgs, '--import', 'tsx', 'src/main.ts'],
      { ...env, ROLE: 'worker', METRICS_PORT: await metricsPort() },
      ROOT,
    );
    return { origins: [a.origin, b.origin], servers: [a.child, b.child, w], metrics };
  }
  if (opts.mode === 'cluster') {
    // One Laurel on a throwaway 3-master Redis Cluster (the baseline stays on the single Redis).
    const cluster = await startRedisCluster();
    clusterStops.push(() => cluster.stop());
    const one = await start('laurel', { REDIS_CLUSTER_NODES: cluster.nodes });
    return { origins: [one.origin], servers: [one.child], metrics };
  }
  const one = await start('laurel', {});
  return { origins: [one.origin], servers: [one.child], metrics };
}

/** Throwaway Redis Clusters started by `--mode cluster`, stopped at cleanup. */
const clusterStops: Array<() => Promise<void>> = [];

/**
 * On a fresh database the server inserts ADMIN_API_KEY after its configuration cache has loaded and
 * does not reload it, so the key is refused until the next configuration change. Publishing on the
 * configuration channel makes every instance reload, as an admin write elsewhere would.
 */
async function waitForAdminKey(
  origin: string,
  adminKey: string,
  redis: Redis,
  prefix: string,
): Promise<void> {
  let last = '';
  for (let i = 0; i < 50; i++) {
    const res = await http('GET', `${origin}/admin/v1/metrics?limit=1`, { 'x-api-key': adminKey });
    last = `${res.status} ${res.text}`;
    if (res.status === 200) return;
    await redis.publish(`${prefix}:config-changed`, String(Date.now()));
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`the server never accepted ADMIN_API_KEY: ${last}`);
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

async function main() {
  const opts = parseOptions(process.argv.slice(2), process.env);
  const stamp = new Date().toISOString();
  const suffix = randomBytes(3).toString('hex');
  const prefix = `bench${suffix}`;
  const dbName = `laurel_bench_${stamp.replace(/[^0-9]/g, '').slice(0, 14)}_${suffix}`;
  const dbUrl = new URL(opts.databaseUrl);
  dbUrl.pathname = `/${dbName}`;
  const adminDbUrl = new URL(opts.databaseUrl);
  adminDbUrl.pathname = '/postgres';
  const adminKey = generateApiKey().key;
  const redis = new Redis(opts.redisUrl, { maxRetriesPerRequest: 1 });
  const settings: LoadSettings = {
    connections: opts.connections,
    duration: opts.duration,
    warmup: opts.warmup,
    rate: opts.rate,
  };

  let cleaned = false;
  const cleanup = async () => {
    if (cleaned) return;
    cleaned = true;
    // Requests autocannon abandoned at the end of the last scenario may still be running in the server.
    await new Promise((r) => setTimeout(r, 1000));
    await stopAllChildren();
    for (const stop of clusterStops) await stop().catch(() => {});
    try {
      const n = await deletePrefix(redis, prefix);
      console.error(`cleanup: unlinked ${n} keys under ${prefix}:`);
    } catch (err) {
      console.error(`cleanup: could not delete keys under ${prefix}: ${(err as Error).message}`);
    }
    redis.disconnect();
    const pg = postgres(adminDbUrl.toString(), { max: 1, onnotice: () => {} });
    try {
      await pg.unsafe(`drop database if exists "${dbName}" with (force)`);
      console.error(`cleanup: dropped database ${dbName}`);
    } catch (err) {
      console.error(`cleanup: could not drop database ${dbName}: ${(err as Error).message}`);
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
      `bench: mode ${opts.mode}, ${opts.connections} connections${opts.rate ? ` at ${opts.rate} req/s` : ''}, ${opts.duration} s (+${opts.warmup} s warm-up), ` +
        `${opts.users} users, prefix ${prefix}, database ${dbName}`,
    );
    const serverEnv: NodeJS.ProcessEnv = {
      ...process.env,
      HOST: '127.0.0.1',
      ROLE: 'all',
      REDIS_URL: opts.redisUrl,
      DATABASE_URL: dbUrl.toString(),
      REDIS_KEY_PREFIX: prefix,
      ADMIN_API_KEY: adminKey,
      LOG_LEVEL: 'warn',
      MIGRATE_ON_START: 'true',
      RATE_LIMIT_PER_SECOND: '1000000',
      SHUTDOWN_TIMEOUT_MS: '5000',
    };
    const laurel = await startLaurel(opts, serverEnv);
    const baselinePort = await freePort();
    const baselineServer = startChild(
      'baseline',
      ['--import', 'tsx', 'bench/baseline-server.ts'],
      { ...process.env, PORT: String(baselinePort), REDIS_URL: opts.redisUrl, BENCH_PREFIX: prefix },
      ROOT,
    );
    const baselineOrigin = `http://127.0.0.1:${baselinePort}`;
    await waitReady(baselineServer, `${baselineOrigin}/healthz`);

    const origin = laurel.origins[0]!;
    await waitForAdminKey(origin, adminKey, redis, prefix);
    const seeded = await seedConfiguration(origin, adminKey);
    for (const n of seeded.notes) console.error(`note: ${n}`);
    const appHeaders = { 'x-api-key': seeded.appKey };
    const eventPath = `/v1/metrics/${seeded.metricKey}/event`;

    // One event first: proves the key and the configuration are live, and shows what is measured.
    let preflight: { status: number; body: any } = { status: 0, body: null };
    for (let i = 0; i < 50; i++) {
      const body = JSON.stringify({ user: { id: 'bench-preflight', tz: 'UTC' }, value: 1 });
      const res = await http('POST', `${origin}${eventPath}`, appHeaders, body);
      preflight = { status: res.status, body: parseBody(res.text) };
      if (res.status === 201) break;
      await new Promise((r) => setTimeout(r, 100)); // the catalog reloads asynchronously after admin writes
    }
    if (preflight.status !== 201)
      throw new Error(`preflight event: ${preflight.status} ${JSON.stringify(preflight.body)}`);
    const b = preflight.body;
    console.error(
      `preflight: 201, ${b.achievements?.length ?? 0} achievements, streak ${b.currentStreak?.length}, ` +
        `points ${Object.entries(b.points ?? {})
          .map(([k, p]: [string, any]) => `${k}=${p.total}`)
          .join(' ')}, leaderboards ${Object.keys(b.leaderboards ?? {}).length}`,
    );

    const zoneOf = Uint8Array.from({ length: opts.users }, () => Math.floor(Math.random() * ZONES.length));
    const eventBody = (i: number) => `{"user":{"id":"${userId(i)}","tz":"${ZONES[zoneOf[i]!]}"},"value":1}`;
    const cycle = () => {
      let n = 0;
      return () => n++ % opts.users;
    };
    let eventsBuilt = 0;

    const cpu = async () => {
      // Every Laurel process (API servers and, in two-api mode, the worker) counts as laurel.
      const worker = laurel.servers.find((s) => s.name === 'laurel-worker');
      const [laurelCpu, workerCpu, baselineCpu, redisCpu, postgresCpu, machine] = await Promise.all([
        totalCpuSeconds(laurel.servers.map((s) => s.proc.pid)),
        cpuSeconds(worker?.proc.pid),
        cpuSeconds(baselineServer.proc.pid),
        redisCpuSeconds(redis),
        postgresCpuSeconds(),
        machineBusySeconds(),
      ]);
      const self = process.cpuUsage();
      return {
        laurel: laurelCpu,
        // two-api mode: the worker process alone (history writer, scheduler, webhooks), part of laurel.
        ...(worker ? { 'laurel-worker': workerCpu } : {}),
        baseline: baselineCpu,
        redis: redisCpu,
        postgres: postgresCpu,
        loadgen: (self.user + self.system) / 1e6,
        machine,
      };
    };
    const probes = { cpu, commands: () => commandStats(redis) };

    const results: Measurement[] = [];
    const nextBaselineUser = cycle();
    const baselineScenario: Scenario = {
      name: 'baseline POST /baseline',
      origins: [baselineOrigin],
      method: 'POST',
      server: 'baseline',
      next: () => ({ path: '/baseline', body: eventBody(nextBaselineUser()) }),
    };
    console.error('measuring the baseline…');
    const baseline = await measure(baselineScenario, settings, probes);
    results.push(baseline);

    const memBefore = await infoNumber(redis, 'memory', 'used_memory');
    const nextEventUser = cycle();
    const eventScenario: Scenario = {
      name: `laurel POST ${eventPath}`,
      origins: laurel.origins,
      method: 'POST',
      server: 'laurel',
      headers: appHeaders,
      next: () => {
        eventsBuilt++;
        return { path: eventPath, body: eventBody(nextEventUser()) };
      },
    };
    console.error('measuring the event endpoint…');
    const events = await measure(eventScenario, settings, probes);
    results.push(events);
    await new Promise((r) => setTimeout(r, 1000)); // let in-flight requests finish
    // The history writer catches up with the outbox before anything else is measured: its Postgres
    // writes would otherwise be charged to the read scenarios.
    const drain = await waitForOutboxDrain(redis, prefix, 120_000);
    console.error(
      drain.left
        ? `history writer: ${drain.left} outbox entries still waiting after ${(drain.ms / 1000).toFixed(1)} s`
        : `history writer: outbox drained ${(drain.ms / 1000).toFixed(1)} s after the event scenario`,
    );
    const memAfter = await infoNumber(redis, 'memory', 'used_memory');
    const census = await censusKeys(redis, prefix);
    const scrapeCost = opts.scrape
      ? await measureScrapeCost(eventScenario, settings, probes, laurel.metrics, redis, prefix)
      : null;
    const usersTouched = Math.min(eventsBuilt, opts.users);

    // Leaderboard reads, once the application API has them.
    const notes = [...seeded.notes];
    const board = seeded.leaderboardKeys[0];
    if (!opts.reads) notes.push('leaderboard reads skipped (BENCH_READS=0 / --no-reads)');
    else if (board) {
      const probe = await http('GET', `${origin}/v1/leaderboards/${board}?limit=100`, appHeaders);
      if (probe.status === 200) {
        for (const [name, query] of [
          ['top 100', () => 'limit=100'],
          ['around user', () => `userId=${userId(nextReadUser())}&offset=-5&limit=11`],
        ] as const) {
          console.error(`measuring leaderboard ${name}…`);
          const path = `/v1/leaderboards/${board}`;
          results.push(
            await measure(
              {
                name: `laurel GET ${path} (${name})`,
                origins: laurel.origins,
                method: 'GET',
                server: 'laurel',
                headers: appHeaders,
                next: () => ({ path: `${path}?${query()}` }),
              },
              settings,
              probes,
            ),
          );
        }
      } else {
        notes.push(`leaderboard reads skipped: GET /v1/leaderboards/{key} answered ${probe.status}`);
      }
    }
    function nextReadUser(): number {
      return Math.floor(Math.random() * usersTouched);
    }

    const ratio = events.reqPerSec / baseline.reqPerSec;
    const perUserDelta = (memAfter - memBefore) / Math.max(1, census.users);
    const perUserKeys =
      (census.sampledUserKeyBytes * census.userKeys + census.boardBytes + census.outboxBytes) /
      Math.max(1, census.users);
    const targets = {
      throughputRatio: {
        target: `>= ${TARGETS.minRatio}`,
        actual: round(ratio, 2),
        met: ratio >= TARGETS.minRatio,
      },
      p99: {
        target: `<= ${TARGETS.maxP99Ms} ms at ${TARGETS.atConnections} connections`,
        actual: events.p99,
        met: events.p99 <= TARGETS.maxP99Ms && opts.connections === TARGETS.atConnections,
      },
    };
    const redisVersion = /^redis_version:(.+)$/m.exec(await redis.info('server'))?.[1]?.trim();
    const report = {
      startedAt: stamp,
      mode: opts.mode,
      settings: { ...settings, users: opts.users, zones: ZONES },
      machine: {
        cpus: os.cpus().length,
        cpuModel: os.cpus()[0]?.model,
        memoryGiB: round(os.totalmem() / 2 ** 30, 1),
        node: process.version,
        redis: redisVersion,
      },
      seeded: { leaderboards: seeded.leaderboardKeys, boostMultiplier: 1.5, levels: 5, achievements: 2 },
      results,
      ratio: round(ratio, 3),
      targets,
      /** How long the history writer took, after the event scenario, to empty the outbox. */
      historyDrain: drain,
      /** --scrape: event throughput with and without a scraper polling /metrics every second. */
      scrapeCost,
      memory: {
        usedMemoryBefore: memBefore,
        usedMemoryAfter: memAfter,
        usersWithProfile: census.users,
        usersSent: usersTouched,
        bytesPerUserUsedMemoryDelta: Math.round(perUserDelta),
        bytesPerUserKeyUsage: Math.round(perUserKeys),
        keysPerUser: round(census.userKeys / Math.max(1, census.users), 2),
        census,
      },
      notes,
    };

    console.log('');
    console.log(renderTable(results, baseline));
    console.log('');
    console.log(`CPU in cores while measuring (machine = all processes on the box, of ${os.cpus().length}):`);
    console.log(renderCpu(results));
    const budget = renderBudget(baseline, events);
    if (budget) console.log(budget);
    console.log('Redis time per event request, by command (server-wide INFO commandstats):');
    console.log(renderRedisCommands(events));
    console.log('');
    if (opts.rate > 0) {
      console.log(
        `fixed rate of ${opts.rate} req/s: the throughput and p99 targets are not evaluated (compare CPU per request)`,
      );
    } else {
      console.log(
        `event/baseline throughput ratio: ${ratio.toFixed(2)} (target ≥ ${TARGETS.minRatio}: ${targets.throughputRatio.met ? 'met' : 'NOT met'})`,
      );
      console.log(
        `event p99: ${events.p99} ms at ${opts.connections} connections (target ≤ ${TARGETS.maxP99Ms} ms at ${TARGETS.atConnections}: ${targets.p99.met ? 'met' : 'NOT met'})`,
      );
    }
    console.log(
      `Redis memory per user: ${formatBytes(perUserDelta)} (used_memory delta over ${census.users} users), ` +
        `${formatBytes(perUserKeys)} (MEMORY USAGE: ${report.memory.keysPerUser} user keys each + share of leaderboards and outbox)`,
    );
    for (const m of results) {
      if (m.non2xx || m.errors)
        console.log(`warning: ${m.name}: status codes ${JSON.stringify(m.statusCodes)}, ${m.errors} errors`);
    }
    if (scrapeCost) console.log(scrapeCost.summary);
    for (const n of notes) console.log(`note: ${n}`);

    await mkdir(RESULTS, { recursive: true });
    const json = `${JSON.stringify(report, null, 2)}\n`;
    const file = `${RESULTS}${stamp.replace(/:/g, '-')}.json`;
    await writeFile(file, json);
    await writeFile(`${RESULTS}latest.json`, json);
    console.log(`results: ${file}`);
  } finally {
    await cleanup();
  }
}

/**
 * The event scenario with a scraper polling every Laurel process's /metrics once a second, between
 * two runs without it (their mean is the reference, which evens out drift as Redis and Postgres
 * fill up). The outbox is drained before each run, so no run pays for another's history.
 */
async function measureScrapeCost(
  scenario: Scenario,
  settings: LoadSettings,
  probes: Parameters<typeof measure>[2],
  metricsUrls: string[],
  redis: Redis,
  prefix: string,
) {
  const run = async (name: string, scraped: boolean) => {
    await waitForOutboxDrain(redis, prefix, 120_000);
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
    cpuUsPerRequest: {
      without: [a.m.cpuUsPerRequest.server, c.m.cpuUsPerRequest.server],
      with: b.m.cpuUsPerRequest.server,
    },
    scrapes: s,
    summary:
      `scrape cost: ${b.m.reqPerSec} events/s scraped every 1 s vs ${a.m.reqPerSec} and ${c.m.reqPerSec} without ` +
      `(${(change * 100).toFixed(1)}%, target within 3%: ${change >= -0.03 ? 'met' : 'NOT met'}); ` +
      `${s.scrapes} scrapes of ${Math.round(s.bytes / 1024)} KiB, mean ${s.meanMs} ms, max ${s.maxMs} ms, ${s.failures} failed`,
  };
}

main().catch((err) => {
  console.error(err instanceof Error ? err.message : err);
  process.exitCode = 1;
});
