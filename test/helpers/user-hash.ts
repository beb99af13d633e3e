import type { Redis } from 'ioredis';
import type { Keys } from '../../src/redis/keys';
import { joinUserHash, splitUserHash, type UserPart } from '../../src/redis/user-hash';

/** One part of a user's hash (src/redis/user-hash.ts), fields without their prefix. */
export async function userPart(
  redis: Pick<Redis, 'hgetall'>,
  keys: Keys,
  userId: string,
  part: UserPart,
): Promise<Record<string, string>> {
  return splitUserHash(await redis.hgetall(keys.user(userId).hash))[part];
}

/** One field of a user's streak part (its scalar fields are stored packed: STREAK_PACKS). */
export async function streakField(
  redis: Pick<Redis, 'hgetall'>,
  keys: Keys,
  userId: string,
  field: string,
): Promise<string | undefined> {
  return (await userPart(redis, keys, userId, 'streak'))[field];
}

/** Overwrites fields of a user's streak part as the user script would store them (a tampered state). */
export async function setStreakFields(
  redis: Pick<Redis, 'hgetall' | 'hset'>,
  keys: Keys,
  userId: string,
  fields: Record<string, string>,
): Promise<void> {
  const streak = { ...(await userPart(redis, keys, userId, 'streak')), ...fields };
  await redis.hset(keys.user(userId).hash, joinUserHash({ streak }));
}
