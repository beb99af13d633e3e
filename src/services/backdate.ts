import { asc, gt } from 'drizzle-orm';
import type { AchievementRow } from '../catalog/snapshot';
import { users } from '../db/schema';
import { splitUserHash } from '../redis/user-hash';
import type { Deps } from '../deps';
import { toMicros } from '../engine/decimal';
import { localDate, periodIndex } from '../engine/periods';
import { runUserOp } from './user-op';
import { profileAttributes } from './user-reads';
import { matchesFilters } from '../engine/filters';
import { planFor } from '../engine/plan';
import { crossSlotPipeline, execValues } from '../redis/batch';

// Backdating (semantics §3.4): when an achievement becomes active or an active achievement's
// requirement changes, every existing user who already satisfies it is completed in the background.
// Backdated completions go through the user script's 'backdate' op (outbox op 'backdate': no
// webhooks), which also cascades composites and fires achievement points triggers.

const BATCH = 500;

/** Backdating runs in flight per process (so tests and shutdown can wait for them). */
const pending = new WeakMap<Deps, Set<Promise<BackdateStats>>>();

export interface BackdateStats {
  checked: number;
  completed: number;
  failed: number;
}

/**
 * Starts backdating `achievementId` in the background and returns at once: the admin request that
 * triggered it does not wait (semantics §3.4: "completed in the background"). The work is tracked
 * on `deps`; `awaitBackdates(deps)` waits for it.
 */
export function backdateAchievement(deps: Deps, achievementId: string): Promise<void> {
  startBackdate(deps, achievementId);
  return Promise.resolve();
}

/** Starts backdating and returns the tracked promise of its result (it never rejects). */
export function startBackdate(deps: Deps, achievementId: string): Promise<BackdateStats> {
  let set = pending.get(deps);
  if (!set) {
    set = new Set();
    pending.set(deps, set);
  }
  const running = set;
  const p: Promise<BackdateStats> = runBackdate(deps, achievementId)
    .catch((err) => {
      deps.logger.error({ err, achievementId }, 'backdating stopped');
      return { checked: 0, completed: 0, failed: 1 };
    })
    .finally(() => running.delete(p));
  running.add(p);
  return p;
}

/** Waits until every backdating started in this process (including ones started meanwhile) is done. */
export async function awaitBackdates(deps: Deps): Promise<void> {
  const set = pending.get(deps);
  while (set && set.size > 0) await Promise.all([...set]);
}

const activeAchievement = (deps: Deps, id: string): AchievementRow | null => {
  const a = deps.catalog.snapshot.achievementsById.get(id);
  return a && a.status === 'active' && !a.deletedAt ? a : null;
};

/**
 * Visits every user once: the user index of every shard (written by the user script when it creates
 * a user, so a user created a moment ago is there), then Postgres users rows missing from them (users
 * created before the index existed). Batches of at most BATCH ids.
 */
async function forEachUserBatch(deps: Deps, visit: (ids: string[]) => Promise<boolean>): Promise<void> {
  for (let shard = 0; shard < deps.config.USER_SHARDS; shard++) {
    const key = deps.keys.shardUsers(shard);
    for (let offset = 0; ; ) {
      const ids = await deps.redis.zrange(key, offset, offset + BATCH - 1);
      if (ids.length === 0) break;
      if (!(await visit(ids))) return;
      offset += ids.length;
    }
  }
  let after = '';
  for (;;) {
    const rows = await deps.db
      .select({ id: users.id })
      .from(users)
      .where(gt(users.id, after))
      .orderBy(asc(users.id))
      .limit(BATCH);
    if (rows.length === 0) break;
    after = rows[rows.length - 1]!.id;
    const ids = rows.map((r) => r.id);
    const pipe = crossSlotPipeline(deps.redis);
    for (const id of ids) pipe.zscore(deps.keys.user(id).users, id);
    const scores = await execValues(pipe);
    const missing = ids.filter((_, i) => scores[i] === null);
    if (missing.length && !(await visit(missing))) return;
  }
}

interface UserFacts {
  exists: boolean;
  tz: string;
  metricMicros: number;
  filteredMicros: number;
  streakLength: number;
  streakEpoch: number;
  lastMet: number | null;
  done: Set<string>;
  /** The user's attribute values (the achievement's user filter). */
  attrs: Record<string, string>;
}

/** The stored facts a requirement check needs, for a batch of users (one pipeline); per-user errors. */
async function loadFacts(deps: Deps, a: AchievementRow, ids: string[]): Promise<Array<UserFacts | Error>> {
  const pipe = crossSlotPipeline(deps.redis);
  for (const id of ids) {
    const k = deps.keys.user(id);
    pipe.hgetall(k.hash);
  }
  const res = (await pipe.exec()) ?? [];
  return ids.map((_, i) => {
    const [err, raw] = res[i] ?? [new Error('no reply'), null];
    if (err) return err;
    const u = splitUserHash((raw ?? {}) as Record<string, string>);
    const streak = u.streak;
    return {
      exists: Boolean(u.profile.created),
      tz: u.profile.tz || 'UTC',
      metricMicros: Number(u.metrics[a.metricId ?? '-'] ?? 0),
      filteredMicros: Number(u.counters[`af:${a.id}`] ?? 0),
      streakLength: Number(streak.length ?? 0),
      streakEpoch: streak.epoch === undefined ? -1 : Number(streak.epoch),
      lastMet: streak.lastMet === undefined ? null : Number(streak.lastMet),
      done: new Set(Object.keys(u.achievements)),
      attrs: profileAttributes(u.profile),
    };
  });
}

/**
 * Whether the user's stored state satisfies the requirement (eligibility is checked by the script).
 * 'maybe': a streak whose stored length qualifies but may have lapsed since (rollover is lazy).
 */
function satisfies(deps: Deps, a: AchievementRow, f: UserFacts): boolean | 'maybe' {
  if (!f.exists || f.done.has(a.id)) return false;
  switch (a.trigger) {
    case 'metric': {
      const value = a.eventAttributes.length ? f.filteredMicros : f.metricMicros;
      return value >= toMicros(a.metricValue ?? 0);
    }
    case 'streak': {
      const s = deps.catalog.snapshot.streak;
      if (!s.enabled || s.conditions.length === 0 || f.streakEpoch !== s.epoch) return false;
      if (f.streakLength < (a.streakLength ?? 1)) return false;
      const cur = periodIndex(s.frequency, localDate(deps.clock.now(), f.tz));
      // No period has ended unmet since the last met one: the stored length is current.
      return f.lastMet !== null && f.lastMet >= cur - 1 ? true : 'maybe';
    }
    case 'achievement':
      return a.achievementIds.length > 0 && a.achievementIds.every((id) => f.done.has(id));
    default:
      return false; // `api` achievements complete only through the API
  }
}

/** Completes one user when they qualify; the script re-checks eligibility and "not yet completed". */
async function backdateUser(deps: Deps, a: AchievementRow, userId: string, f: UserFacts): Promise<boolean> {
  // A user outside the achievement's user filter is not touched (the script would refuse it too).
  if (!matchesFilters(planFor(deps.catalog.snapshot, 'backdate', a.id).plan.api?.uf, f.attrs)) return false;
  let ok = satisfies(deps, a, f);
  if (ok === 'maybe') {
    // Resolve ended periods first (an op with no other effect: zero freezes), then read the length.
    const touched = await runUserOp(deps, { kind: 'freeze', user: { id: userId }, count: 0 });
    ok = touched.streak.length >= (a.streakLength ?? 1);
  }
  if (!ok) return false;
  const r = await runUserOp(deps, { kind: 'backdate', achievementId: a.id, user: { id: userId } });
  return r.completions.some((c) => c.id === a.id);
}

/** Backdates one achievement over every user; one user's failure is logged and skipped. */
export async function runBackdate(deps: Deps, achievementId: string): Promise<BackdateStats> {
  const stats: BackdateStats = { checked: 0, completed: 0, failed: 0 };
  if (!activeAchievement(deps, achievementId)) return stats;
  await forEachUserBatch(deps, async (ids) => {
    // Re-read per batch: the achievement may have been locked, deleted or edited meanwhile.
    const a = activeAchievement(deps, achievementId);
    if (!a) return false;
    const facts = await loadFacts(deps, a, ids);
    for (const [i, userId] of ids.entries()) {
      stats.checked++;
      try {
        const f = facts[i]!;
        if (f instanceof Error) throw f;
        if (await backdateUser(deps, a, userId, f)) stats.completed++;
      } catch (err) {
        stats.failed++;
        deps.logger.warn({ err, achievementId, userId }, 'backdating skipped a user');
      }
    }
    return true;
  });
  return stats;
}
