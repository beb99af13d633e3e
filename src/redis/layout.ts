/**
 * The version of the Redis layout and the migration to it. Layout 2 keeps a user's state in one hash
 * (src/redis/user-hash.ts); layout 1 kept one hash per part (`keys.user(id).legacy()`). Layout 3 keeps
 * idempotency entries compact (src/engine/idempotency.ts); layout 2 named their fields
 * "<metricId>|<key>". On start the primary process converts every layout-1 user in place, one atomic
 * script call per user (lua/migrateUser.lua), and every idempotency hash with keyed fields, one call
 * per hash (lua/migrateIdem.lua). Layout 4 keeps one field per user in the longest streaks' "reached at"
 * hash (lib/globals.lua); layout 3 kept one per length a user ever reached: the others are removed
 * (pruneLongestAt). Then the version is recorded so later starts skip the scan. Every call
 * is idempotent, so two processes migrating at once, or a start interrupted half-way, are safe: the
 * next start finishes the work. Stop processes of the previous version before starting this one.
 */
import type { Deps } from '../deps';
import { crossSlotPipeline, execValues } from './batch';
import { isCluster } from './client';

export const LAYOUT_VERSION = '4';

/** Suffixes of the layout-1 keys of a user (`…:user:<id>:<suffix>`). */
const LEGACY_SUFFIXES = ['metrics', 'counters', 'achievements', 'points', 'streak', 'boards', 'applied'];
const LEGACY_KEY = new RegExp(`:user:(.+):(${LEGACY_SUFFIXES.join('|')})$`);
/** An idempotency hash: forever (`…:idem`) or a window bucket (`…:idem:<n>`). */
const IDEM_KEY = /:user:.+:idem(:-?\d+)?$/;

/**
 * Users with a layout-1 key and the idempotency hashes, found by one SCAN over every primary (in no
 * particular order).
 */
async function scanUsers(deps: Deps): Promise<{ users: string[]; idem: string[] }> {
  const found = new Set<string>();
  const idem: string[] = [];
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
        if (IDEM_KEY.test(key)) idem.push(key);
      }
    } while (cursor !== '0');
  }
  return { users: [...found], idem };
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
 * Brings the data under this prefix to the current layout; returns how many users were moved, how
 * many idempotency hashes rewritten and how many "longest reached at" fields removed. Does nothing
 * (one GET) once the version is recorded.
 */
export async function migrateLayout(deps: Deps): Promise<{ users: number; idem: number; longestAt: number }> {
  const marker = deps.keys.global.layout;
  const moved = { users: 0, idem: 0, longestAt: 0 };
  const version = await deps.redis.get(marker);
  if (version === LAYOUT_VERSION) return moved;
  moved.longestAt = await pruneLongestAt(deps);
  // Layout 3 had every user and idempotency hash in today's form already.
  if (version === '3') {
    await deps.redis.set(marker, LAYOUT_VERSION);
    return moved;
  }
  const found = (await anyUsers(deps)) ? await scanUsers(deps) : { users: [], idem: [] };
  for (let i = 0; i < found.users.length; i += 100) {
    const results = await Promise.all(found.users.slice(i, i + 100).map((id) => migrateUser(deps, id)));
    moved.users += results.filter((n) => n > 0).length;
  }
  for (let i = 0; i < found.idem.length; i += 100) {
    const results = await Promise.all(
      found.idem.slice(i, i + 100).map((key) => deps.redis.migrateIdem(1, key)),
    );
    moved.idem += results.filter((n) => n > 0).length;
  }
  await deps.redis.set(marker, LAYOUT_VERSION);
  return moved;
}

/**
 * Removes the fields of the longest streaks' "reached at" hash other than each user's current longest
 * length (`<userId>|<length>`; layout 3 kept one per length ever reached). Returns how many it removed.
 * Both keys are in the {global} slot; safe to run while the history writer adds fields (it only adds
 * the current longest's, and removes the one before).
 */
export async function pruneLongestAt(deps: Deps): Promise<number> {
  const g = deps.keys.global;
  let removed = 0;
  let cursor = '0';
  do {
    const [next, flat] = await deps.redis.hscan(g.streakLongestAt, cursor, 'COUNT', 1000);
    cursor = next;
    const fields: Array<{ field: string; user: string; length: string }> = [];
    for (let i = 0; i < flat.length; i += 2) {
      const field = flat[i]!;
      const bar = field.lastIndexOf('|');
      fields.push({ field, user: field.slice(0, bar), length: field.slice(bar + 1) });
    }
    if (fields.length === 0) continue;
    const users = [...new Set(fields.map((f) => f.user))];
    const scores = await deps.redis.zmscore(g.streakLongest, ...users);
    const longest = new Map(users.map((u, i) => [u, scores[i] === null ? null : Number(scores[i])]));
    const stale = fields.filter((f) => longest.get(f.user) !== Number(f.length)).map((f) => f.field);
    if (stale.length) removed += await deps.redis.hdel(g.streakLongestAt, ...stale);
  } while (cursor !== '0');
  return removed;
}
