/**
 * The version of the Redis layout and the migration to it. Layout 2 keeps a user's state in one hash
 * (src/redis/user-hash.ts); layout 1 kept one hash per part (`keys.user(id).legacy()`). On start the
 * primary process converts every layout-1 user in place, one atomic script call per user
 * (lua/migrateUser.lua), then records the version so later starts skip the scan. Every call is
 * idempotent, so two processes migrating at once, or a start interrupted half-way, are safe: the next
 * start finishes the work. Stop processes of the previous version before starting this one.
 */
import type { Deps } from '../deps';
import { crossSlotPipeline, execValues } from './batch';
import { isCluster } from './client';

export const LAYOUT_VERSION = '2';

/** Suffixes of the layout-1 keys of a user (`…:user:<id>:<suffix>`). */
const LEGACY_SUFFIXES = ['metrics', 'counters', 'achievements', 'points', 'streak', 'boards', 'applied'];
const LEGACY_KEY = new RegExp(`:user:(.+):(${LEGACY_SUFFIXES.join('|')})$`);

/** Users with a layout-1 key, found by SCAN over every primary (ids, in no particular order). */
async function legacyUsers(deps: Deps): Promise<string[]> {
  const found = new Set<string>();
  const nodes = isCluster(deps.redis) ? deps.redis.nodes('master') : [deps.redis];
  for (const node of nodes) {
    let cursor = '0';
    do {
      const [next, batch] = await node.scan(
        cursor,
        'MATCH',
        `${deps.keys.prefix}:{u*}:user:*`,
        'COUNT',
        1000,
      );
      cursor = next;
      for (const key of batch) {
        const m = LEGACY_KEY.exec(key);
        if (m) found.add(m[1]!);
      }
    } while (cursor !== '0');
  }
  return [...found];
}

/**
 * Whether any user was ever stored under this prefix: the user count or a shard's user index exists
 * (every version that could leave layout-1 users wrote one of them). A fresh install skips the scan.
 */
async function anyUsers(deps: Deps): Promise<boolean> {
  const pipe = crossSlotPipeline(deps.redis);
  pipe.exists(deps.keys.global.userCount);
  for (let shard = 0; shard < deps.keys.shards; shard++) pipe.exists(deps.keys.shardUsers(shard));
  return (await execValues(pipe)).some((n) => Number(n) > 0);
}

/** Moves one user to layout 2 (nothing happens for a user already there). Returns the hashes moved. */
export async function migrateUser(deps: Deps, userId: string): Promise<number> {
  const k = deps.keys.user(userId);
  const l = k.legacy();
  return deps.redis.migrateUser(
    9,
    k.hash,
    l.metrics,
    l.counters,
    l.achievements,
    l.points,
    l.streak,
    l.boards,
    l.applied,
    k.streakHistory,
  );
}

/**
 * Brings the data under this prefix to the current layout; returns how many users were moved. Does
 * nothing (one GET) once the version is recorded.
 */
export async function migrateLayout(deps: Deps): Promise<number> {
  const marker = deps.keys.global.layout;
  if ((await deps.redis.get(marker)) === LAYOUT_VERSION) return 0;
  const users = (await anyUsers(deps)) ? await legacyUsers(deps) : [];
  let moved = 0;
  for (let i = 0; i < users.length; i += 100) {
    const results = await Promise.all(users.slice(i, i + 100).map((id) => migrateUser(deps, id)));
    moved += results.filter((n) => n > 0).length;
  }
  await deps.redis.set(marker, LAYOUT_VERSION);
  return moved;
}
