import cluster from 'node:cluster';
import { serve } from '@hono/node-server';
import { ensureAdminKey } from './admin/bootstrap';
import { createApp } from './app';
import { loadConfig } from './config';
import { runMigrations } from './db/migrate';
import { closeDeps, createDeps } from './deps';
import { migrateLayout } from './redis/layout';
import { answerMetricsRequests, startMetricsServer } from './metrics/server';
import { startWorkers } from './workers';
import { lowerPriority } from './workers/priority';
import { createLogger } from './logger';
import { installProcessGuards } from './process-guards';
import { cancelLocalSimulations } from './simulations/runs';

let config: ReturnType<typeof loadConfig>;
try {
  config = loadConfig();
} catch (err) {
  console.error((err as Error).message);
  process.exit(1);
}

const logger = createLogger(config.LOG_LEVEL);
installProcessGuards(logger);

// Several API processes behind one port: the primary forks them (each a ROLE=api process sharing
// the listening socket) and runs the background workers itself unless ROLE=api.
const forkApis = config.API_PROCESSES > 1 && config.ROLE !== 'worker' && cluster.isPrimary;
if (config.MIGRATE_ON_START && cluster.isPrimary) await runMigrations(config.DATABASE_URL);
const deps = await createDeps(config, { logger });
// Redis data of an earlier layout is brought to this one before anything serves (one GET once done).
if (cluster.isPrimary) {
  const moved = await migrateLayout(deps);
  if (moved.users || moved.idem || moved.longestAt) deps.logger.info(moved, 'Redis layout migrated');
}
const generated = await ensureAdminKey(deps.db, config.ADMIN_API_KEY);
// The catalog was loaded before the key existed: load it again (and tell the other processes).
await deps.catalog.changed();
if (generated) {
  // Printed once, on purpose outside the structured log so it is easy to copy.
  console.log(`\n  Laurel admin API key (shown once, store it now):\n\n    ${generated}\n`);
}

if (forkApis) {
  for (let i = 0; i < config.API_PROCESSES; i++) cluster.fork({ ROLE: 'api', MIGRATE_ON_START: 'false' });
  cluster.on('exit', (worker, code) => {
    if (!stopping) {
      deps.logger.error({ pid: worker.process.pid, code }, 'API process exited; starting another');
      cluster.fork({ ROLE: 'api', MIGRATE_ON_START: 'false' });
    }
  });
}
// A process that only runs background work yields the CPU to requests (WORKER_NICE). Not the primary
// of API_PROCESSES: the API processes it forks again later would inherit its niceness.
if (config.ROLE === 'worker' && config.WORKER_NICE > 0) lowerPriority(config.WORKER_NICE, deps.logger);
const workers = config.ROLE === 'api' || !cluster.isPrimary ? null : startWorkers(deps);
// /metrics on its own port, served by the primary for every process of this deployment; the API
// processes it forked answer its requests over IPC.
if (!cluster.isPrimary) answerMetricsRequests();
const metricsServer =
  cluster.isPrimary && config.METRICS_PORT > 0
    ? startMetricsServer(deps, { collect: true, cluster: forkApis })
    : null;
const server =
  config.ROLE === 'worker' || forkApis
    ? null
    : serve({ fetch: createApp(deps).fetch, port: config.PORT, hostname: config.HOST }, (info) =>
        deps.logger.info({ port: info.port, role: config.ROLE }, 'laurel listening'),
      );

let stopping = false;
async function shutdown(signal: string) {
  if (stopping) return;
  stopping = true;
  deps.logger.info({ signal }, 'shutting down');
  const timer = setTimeout(() => process.exit(1), config.SHUTDOWN_TIMEOUT_MS);
  timer.unref();
  // Stop accepting, let in-flight requests finish, then stop workers and close pools.
  metricsServer?.close();
  if (server) {
    const closed = new Promise<void>((resolve) => server.close(() => resolve()));
    // close() would wait out the keep-alive timeout of connections that go idle after it; drop them at once.
    const sweep = setInterval(() => {
      if ('closeIdleConnections' in server) server.closeIdleConnections();
    }, 50);
    await closed;
    clearInterval(sweep);
  }
  if (forkApis) {
    // Each API process finishes its in-flight requests on SIGTERM.
    const apis = Object.values(cluster.workers ?? {});
    for (const w of apis) w?.process.kill('SIGTERM');
    await Promise.all(apis.map((w) => (w && !w.isDead() ? new Promise((r) => w.once('exit', r)) : null)));
  }
  if (workers) await workers.stop();
  // Running simulations stop and delete their replay keys while Redis is still connected.
  await cancelLocalSimulations();
  await closeDeps(deps);
  process.exit(0);
}
process.on('SIGTERM', () => void shutdown('SIGTERM'));
process.on('SIGINT', () => void shutdown('SIGINT'));
