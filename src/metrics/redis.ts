// Counters of the Redis client itself: connection errors, reconnects, and every Lua script call.
import type { RedisClient } from '../redis/client';
import { SCRIPT_NAMES } from '../redis/scripts';
import { redisConnectionErrors, redisReconnects, scriptCalls, scriptDuration } from './registry';

type ScriptFn = (...args: unknown[]) => Promise<unknown>;

/**
 * Counts the client's connection errors and reconnects, and times every Lua script call (by
 * script and result). Call once per client, after registerScripts: the scripts are the client's
 * own methods, wrapped in place, so call sites stay as they are. Calls queued in a pipeline (the
 * rebuild's) are not counted.
 */
export function instrumentRedis(redis: RedisClient): void {
  redis.on('error', () => redisConnectionErrors.inc());
  redis.on('reconnecting', () => redisReconnects.inc());
  const methods = redis as unknown as Record<string, ScriptFn>;
  for (const name of SCRIPT_NAMES) {
    const call = methods[name];
    if (typeof call !== 'function') continue;
    const ok = scriptCalls.labels(name, 'ok');
    const failed = scriptCalls.labels(name, 'error');
    const timer = scriptDuration.labels(name);
    // ioredis copies these methods onto pipelines, where a call queues the command and returns the
    // pipeline: only a direct call (a promise) is timed.
    methods[name] = function (this: unknown, ...args: unknown[]) {
      const start = performance.now();
      const p = call.apply(this, args);
      if (!(p instanceof Promise)) return p;
      p.then(
        () => {
          ok.inc();
          timer.observe((performance.now() - start) / 1000);
        },
        () => {
          failed.inc();
          timer.observe((performance.now() - start) / 1000);
        },
      );
      return p;
    };
  }
}
