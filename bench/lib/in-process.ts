import { serve } from '@hono/node-server';
import { ensureAdminKey } from '../../src/admin/bootstrap';
import { generateApiKey } from '../../src/api-keys';
import { createApp } from '../../src/app';
import { loadConfig } from '../../src/config';
import { runMigrations } from '../../src/db/migrate';
import { closeDeps, createDeps, type Deps } from '../../src/deps';
import { createLogger } from '../../src/logger';
import { freePort } from './processes';
import { type SeededConfig, seedConfiguration } from './seed';

export interface InProcessLaurel {
  deps: Deps;
  app: ReturnType<typeof createApp>;
  seeded: SeededConfig;
  /** Stops the in-process server and closes the deps (the database and keys stay: the caller's). */
  close(): Promise<void>;
}

/**
 * Laurel's deps and app in this process on a migrated (scratch) database, with the bench's
 * configuration seeded through the admin API of an in-process server (bench:writer, bench:script).
 */
export async function seededInProcess(opts: {
  redisUrl: string;
  databaseUrl: string;
  prefix: string;
  /** Seed the configuration without its leaderboards (bench:script --no-boards). */
  boards?: boolean;
  /** A Redis Cluster's nodes (host:port,…) instead of redisUrl (bench:script --cluster). */
  clusterNodes?: string;
}): Promise<InProcessLaurel> {
  await runMigrations(opts.databaseUrl);
  const adminKey = generateApiKey().key;
  const deps = await createDeps(
    loadConfig({
      REDIS_URL: opts.redisUrl,
      ...(opts.clusterNodes ? { REDIS_CLUSTER_NODES: opts.clusterNodes } : {}),
      DATABASE_URL: opts.databaseUrl,
      REDIS_KEY_PREFIX: opts.prefix,
      ADMIN_API_KEY: adminKey,
      RATE_LIMIT_PER_SECOND: '1000000',
      LOG_LEVEL: 'warn',
      // EVALUATE_EVENTS=1 measures single events evaluated in this process (src/services/evaluated-op.ts).
      ...(process.env.EVALUATE_EVENTS ? { EVALUATE_EVENTS: process.env.EVALUATE_EVENTS } : {}),
    }),
    { logger: createLogger('warn') },
  );
  const app = createApp(deps);
  const port = await freePort();
  const server = serve({ fetch: app.fetch, port, hostname: '127.0.0.1' });
  const close = async () => {
    await new Promise<void>((resolve) => server.close(() => resolve()));
    await closeDeps(deps);
  };
  try {
    await ensureAdminKey(deps.db, adminKey);
    await deps.catalog.changed();
    const seeded = await seedConfiguration(`http://127.0.0.1:${port}`, adminKey, { boards: opts.boards });
    for (const n of seeded.notes) console.error(`note: ${n}`);
    await deps.catalog.reload();
    return { deps, app, seeded, close };
  } catch (err) {
    await close().catch(() => {});
    throw err;
  }
}
