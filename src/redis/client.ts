import { Cluster, Redis } from 'ioredis';

export type RedisClient = Redis | Cluster;

export interface RedisOptions {
  url: string;
  clusterNodes?: string | undefined;
}

/** A Redis or Redis Cluster client (REDIS_CLUSTER_NODES switches to Cluster). */
export function createRedis(opts: RedisOptions): RedisClient {
  const common = {
    maxRetriesPerRequest: 1,
    enableOfflineQueue: true,
    connectTimeout: 2000,
    // Never queue forever when Redis is down: requests fail fast with 503 and recover by themselves.
    retryStrategy: (times: number) => Math.min(times * 100, 1000),
  };
  if (opts.clusterNodes) {
    const nodes = opts.clusterNodes.split(',').map((hp) => {
      const i = hp.lastIndexOf(':');
      return { host: hp.slice(0, i), port: Number(hp.slice(i + 1)) };
    });
    return new Cluster(nodes, { redisOptions: common, scaleReads: 'master' });
  }
  return new Redis(opts.url, common);
}

/** A second connection for SUBSCRIBE (a subscribed connection cannot run commands). */
export function duplicateForSubscribe(client: RedisClient): RedisClient {
  return client.duplicate();
}
