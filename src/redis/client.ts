import { Cluster, Redis } from 'ioredis';

export type RedisClient = Redis | Cluster;

/** True for a Redis Cluster client: keys in different slots cannot share a script or a pipeline. */
export const isCluster = (client: RedisClient): client is Cluster => client instanceof Cluster;

export interface RedisOptions {
  url: string;
  clusterNodes?: string | undefined;
}

/** A Redis or Redis Cluster client (REDIS_CLUSTER_NODES switches to Cluster). */
export function createRedis(opts: RedisOptions, onError?: (err: Error) => void): RedisClient {
  const client = connect(opts);
  // Connection errors surface on the commands that fail (503); the event only needs a listener.
  client.on('error', (err: Error) => onError?.(err));
  return client;
}

function connect(opts: RedisOptions): RedisClient {
  const common = {
    maxRetriesPerRequest: 1,
    // No auto-pipelining: ioredis keeps one auto-pipeline in flight per connection and holds every
    // later command until all of its replies are back, so Node and Redis took turns (Redis idle while
    // Node worked through a batch of replies, Node idle while Redis ran the next batch of scripts).
    // Written at once, commands overlap with Redis's work. On the event bench: 2,240-2,750 events/s
    // over six runs (median about 2,550) against 2,200-2,340 with auto-pipelining. (Corking the
    // socket for a tick to save write syscalls measured slower: 2,150-2,370.)
    enableAutoPipelining: false,
    // Disconnected: fail at once (503) instead of queueing requests until Redis returns.
    enableOfflineQueue: false,
    connectTimeout: 2000,
    // Never queue forever when Redis is down: requests fail fast with 503 and recover by themselves.
    retryStrategy: (times: number) => Math.min(times * 100, 1000),
    // A command in flight when the connection drops is failed, not silently resent: the caller
    // decides (user ops retry with the same op id, which the script answers from its marker).
    autoResendUnfulfilledCommands: false,
  };
  if (opts.clusterNodes) {
    const nodes = opts.clusterNodes.split(',').map((hp) => {
      const i = hp.lastIndexOf(':');
      return { host: hp.slice(0, i), port: Number(hp.slice(i + 1)) };
    });
    return new Cluster(nodes, {
      redisOptions: common,
      scaleReads: 'master',
    });
  }
  return new Redis(opts.url, common);
}

/** Resolves when the client is connected (commands fail fast while it is not). */
export async function waitReady(client: RedisClient, timeoutMs = 10_000): Promise<void> {
  if (client.status === 'ready') return;
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => {
      client.off('ready', onReady);
      reject(new Error(`Redis not reachable within ${timeoutMs} ms`));
    }, timeoutMs);
    const onReady = () => {
      clearTimeout(timer);
      resolve();
    };
    client.once('ready', onReady);
  });
}

/** A second connection for SUBSCRIBE (a subscribed connection cannot run commands). */
export function duplicateForSubscribe(client: RedisClient): RedisClient {
  return client.duplicate();
}
