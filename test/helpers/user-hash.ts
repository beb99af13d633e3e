import type { Redis } from 'ioredis';
import type { Keys } from '../../src/redis/keys';
import { splitUserHash, type UserPart } from '../../src/redis/user-hash';

/** One part of a user's hash (src/redis/user-hash.ts), fields without their prefix. */
export async function userPart(
  redis: Pick<Redis, 'hgetall'>,
  keys: Keys,
  userId: string,
  part: UserPart,
): Promise<Record<string, string>> {
  return splitUserHash(await redis.hgetall(keys.user(userId).hash))[part];
}
