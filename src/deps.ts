import { Catalog } from './catalog/cache';
import type { Clock } from './clock';
import { systemClock } from './clock';
import type { AppConfig } from './config';
import { createDb, type Db, type Sql } from './db/client';
import { createLogger, type Logger } from './logger';
import { instrumentRedis } from './metrics/redis';
import { createRedis, isCluster, type RedisClient, waitReady } from './redis/client';
import { Keys } from './redis/keys';
import { registerScripts } from './redis/scripts';

/** Everything a request or worker needs, built once per process (the composition root). */
export interface Deps {
  config: AppConfig;
  logger: Logger;
  clock: Clock;
  redis: RedisClient;
  db: Db;
  sql: Sql;
  keys: Keys;
  catalog: Catalog;
  /**
   * Set while admin services run inside a configuration transaction (config apply): work that must
   * wait for the commit, such as backdating, is handed over here and started with the process's deps.
   */
  afterCommit?: (task: (committed: Deps) => Promise<void>) => void;
  /**
   * false in simulation replays (src/simulations/): ops keep every per-user value, board values
   * included, but leaderboard rankings are not maintained (the report ranks the final values).
   */
  rankings?: boolean;
  /**
   * false in simulation replays: ops write no outbox entry (nothing reads a replay's history, and the
   * entry is a third of the user script's work).
   */
  history?: boolean;
}

export interface DepsOverrides {
  clock?: Clock;
  logger?: Logger;
}

export async function createDeps(config: AppConfig, overrides: DepsOverrides = {}): Promise<Deps> {
  const logger = overrides.logger ?? createLogger(config.LOG_LEVEL);
  let lastRedisError = 0;
  const redis = createRedis({ url: config.REDIS_URL, clusterNodes: config.REDIS_CLUSTER_NODES }, (err) => {
    // At most one line every 5 s while Redis is away.
    if (Date.now() - lastRedisError > 5000) logger.warn({ err: err.message }, 'redis connection error');
    lastRedisError = Date.now();
  });
  registerScripts(redis);
  instrumentRedis(redis);
  await waitReady(redis);
  const { db, sql } = createDb(config.DATABASE_URL);
  const keys = new Keys(config.REDIS_KEY_PREFIX, config.USER_SHARDS, { cluster: isCluster(redis) });
  const catalog = new Catalog(db, redis, keys.configChannel, logger);
  await catalog.start();
  return { config, logger, clock: overrides.clock ?? systemClock, redis, db, sql, keys, catalog };
}

export async function closeDeps(deps: Deps): Promise<void> {
  await deps.catalog.stop();
  deps.redis.disconnect();
  await deps.sql.end({ timeout: 5 });
}
