import type { ChainableCommander } from 'ioredis';
import { isCluster, type RedisClient } from './client';

/**
 * A pipeline whose commands may touch keys in different slots. On a single Redis it is an ordinary
 * pipeline; on Cluster (which refuses cross-slot pipelines) each command is routed on its own and the
 * results come back in the same `[error, value]` form, in order.
 */
export function crossSlotPipeline(redis: RedisClient): ChainableCommander {
  if (!isCluster(redis)) return redis.pipeline();
  const queued: Array<[string, unknown[]]> = [];
  const proxy: ChainableCommander = new Proxy({} as ChainableCommander, {
    get(_target, name) {
      if (name === 'exec') {
        return () =>
          Promise.all(
            queued.map(([command, args]) =>
              (redis as unknown as Record<string, (...a: unknown[]) => Promise<unknown>>)[command]!(
                ...args,
              ).then(
                (value) => [null, value] as [null, unknown],
                (err: Error) => [err, null] as [Error, null],
              ),
            ),
          );
      }
      if (name === 'length') return queued.length;
      return (...args: unknown[]) => {
        queued.push([String(name), args]);
        return proxy;
      };
    },
  });
  return proxy;
}

/** Runs a pipeline and returns its replies in order; the first failed command's error is thrown. */
export async function execValues(pipe: ChainableCommander): Promise<unknown[]> {
  const res = (await pipe.exec()) ?? [];
  return res.map(([err, value]) => {
    if (err) throw err;
    return value;
  });
}
