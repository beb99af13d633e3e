import type { RedisClient } from '../../src/redis/client';

/**
 * A key's contents in a canonical form, whatever its encoding: hash fields and set members sorted.
 * (DUMP is not canonical: a hash or set in its hashtable encoding serialises in dict order, which an
 * incremental rehash, advanced by a mere read, can change.)
 */
export async function keyContents(redis: RedisClient, key: string): Promise<unknown> {
  const type = await redis.type(key);
  if (type === 'hash')
    return Object.entries(await redis.hgetall(key)).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  if (type === 'list') return redis.lrange(key, 0, -1);
  if (type === 'string') return redis.get(key);
  if (type === 'stream') return redis.xrange(key, '-', '+');
  if (type === 'zset') return redis.zrange(key, 0, -1, 'WITHSCORES');
  if (type === 'set') return (await redis.smembers(key)).sort();
  return `<${type}>`;
}

/** Every key of `keys` → its canonical contents. */
export async function redisContents(redis: RedisClient, keys: string[]): Promise<Record<string, unknown>> {
  const out: Record<string, unknown> = {};
  for (const k of keys) out[k] = await keyContents(redis, k);
  return out;
}
