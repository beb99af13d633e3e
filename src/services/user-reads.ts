// Reads of one user's stored state (all keys in the user's shard slot, so one pipeline each).
import type { Deps } from '../deps';
import { execValues } from '../redis/batch';
import { decodeCompletion, profileAttributes, splitUserHash, type UserHashParts } from '../redis/user-hash';
import { isValidTimeZone } from '../engine/periods';

export type Profile = Record<string, string>;

/** A user's state: the parts of the user hash (src/redis/user-hash.ts). */
export type UserState = UserHashParts;

type Part = Exclude<keyof UserState, 'profile'>;

/**
 * The user's state in one round trip (one HGETALL of the user hash; with 'streak' among `parts`, the
 * streak period history too, as the streak's `hist`, streak-view.ts); null when the user does not
 * exist. Every part is read whatever `parts` says: they are fields of one hash.
 */
export async function loadUser(deps: Deps, userId: string, parts: Part[] = []): Promise<UserState | null> {
  const keys = deps.keys.user(userId);
  const withHistory = parts.includes('streak');
  const pipe = deps.redis.pipeline();
  pipe.hgetall(keys.hash);
  if (withHistory) pipe.get(keys.streakHistory);
  const res = await execValues(pipe);
  const state = splitUserHash((res[0] ?? {}) as Record<string, string>);
  if (!state.profile.created) return null;
  const hist = res[1] as string | null | undefined;
  if (withHistory && hist) state.streak.hist = hist;
  return state;
}

/** The user's attribute values (src/redis/user-hash.ts, where the engine reads it too). */
export { profileAttributes };

/** The user's time zone, UTC when none (semantics §0). */
export const profileTz = (p: Profile): string => (p.tz && isValidTimeZone(p.tz) ? p.tz : 'UTC');

/** Completion {cid, at} of a stored achievement field. */
export const completionOf = decodeCompletion;

/** Number of users and completions per achievement, from the global counters. One round trip. */
export async function achievementStats(
  deps: Deps,
  ids: string[],
): Promise<{ users: number; completions: Map<string, number> }> {
  const g = deps.keys.global;
  const pipe = deps.redis.pipeline();
  pipe.get(g.userCount);
  if (ids.length) pipe.hmget(g.achievementCompletions, ...ids);
  const res = await execValues(pipe);
  const users = Number(res[0] ?? 0);
  const counts = (res[1] ?? []) as Array<string | null>;
  const completions = new Map<string, number>();
  ids.forEach((id, i) => {
    completions.set(id, Number(counts[i] ?? 0));
  });
  return { users, completions };
}

/** Runs one pipeline per user shard (Cluster-safe) and returns each user's replies in input order. */
export async function perUserPipelines<T>(
  deps: Deps,
  userIds: string[],
  add: (pipe: ReturnType<Deps['redis']['pipeline']>, userId: string) => void,
  commandsPerUser: number,
): Promise<T[][]> {
  const byShard = new Map<number, number[]>();
  userIds.forEach((id, i) => {
    const shard = deps.keys.user(id).shard;
    const list = byShard.get(shard) ?? [];
    list.push(i);
    byShard.set(shard, list);
  });
  const out: T[][] = new Array(userIds.length);
  await Promise.all(
    [...byShard.values()].map(async (indexes) => {
      const pipe = deps.redis.pipeline();
      for (const i of indexes) add(pipe, userIds[i]!);
      const res = (await execValues(pipe)) as T[];
      indexes.forEach((userIndex, j) => {
        out[userIndex] = res.slice(j * commandsPerUser, (j + 1) * commandsPerUser);
      });
    }),
  );
  return out;
}
