// Streak reads (application-api §6.7, semantics §4.4, §4.11): every length is projected to now
// (streak-view.ts); global rankings skip streaks that have lapsed since they were indexed.
import { and, asc, eq, gte, isNull } from 'drizzle-orm';
import type { Snapshot } from '../catalog/snapshot';
import { streakPauses } from '../db/schema';
import { splitUserHash } from '../redis/user-hash';
import type { Deps } from '../deps';
import { localDate, periodIndex } from '../engine/periods';
import { type StreakView, type StreakViewSettings, viewStreak } from '../engine/streak-view';
import { perUserPipelines, type Profile, profileTz } from './user-reads';

export function streakSettings(snap: Snapshot): StreakViewSettings {
  const s = snap.streak;
  return {
    enabled: s.enabled && s.conditions.length > 0,
    frequency: s.frequency,
    freezesEnabled: s.freezesEnabled,
    epoch: s.epoch,
  };
}

export interface UserStreakRead {
  view: StreakView;
  settings: StreakViewSettings;
  /** The user's local today and its period index. */
  today: string;
  periodIdx: number;
}

/** A user's streak as of `now` in the user's time zone. Pure. */
export function readStreak(snap: Snapshot, profile: Profile, raw: Record<string, string>, now: number) {
  const settings = streakSettings(snap);
  const today = localDate(now, profileTz(profile));
  const periodIdx = periodIndex(settings.frequency, today);
  return { view: viewStreak(raw, settings, periodIdx), settings, today, periodIdx } satisfies UserStreakRead;
}

/** Above this many longer streaks the rank counts them without checking each for a lapse. */
const RANK_FILTER_LIMIT = 1000;

/** `1 + users with a strictly longer current streak` (semantics §4.4). O(log n + k) for k longer streaks. */
export async function streakRank(deps: Deps, length: number, now: number): Promise<number> {
  const g = deps.keys.global;
  const longer = await deps.redis.zcount(g.streakActive, `(${length}`, '+inf');
  if (longer === 0 || longer > RANK_FILTER_LIMIT) return 1 + longer;
  const members = await deps.redis.zrangebyscore(g.streakActive, `(${length}`, '+inf');
  if (members.length === 0) return 1;
  const metas = await deps.redis.hmget(g.streakActiveMeta, ...members);
  return 1 + metas.filter((m) => !lapsed(m, now)).length;
}

/** A streak index entry "<reachedAtMs>|<expiresAtMs>" whose expiry has passed. */
function lapsed(meta: string | null, now: number): boolean {
  if (!meta) return false;
  const expires = Number(meta.split('|')[1]);
  return expires > 0 && expires <= now;
}

/** Current streaks of existing users among `userIds` (GET /v1/streaks), longest first, then by id. */
export async function bulkStreaks(deps: Deps, userIds: string[], now: number) {
  const snap = deps.catalog.snapshot;
  const replies = await perUserPipelines<unknown>(
    deps,
    userIds,
    (pipe, id) => {
      pipe.hgetall(deps.keys.user(id).hash);
    },
    1,
  );
  const out: Array<{ userId: string; streakLength: number; extendedAt: number | null }> = [];
  userIds.forEach((userId, i) => {
    const u = splitUserHash((replies[i]?.[0] ?? {}) as Record<string, string>);
    if (!u.profile.created) return;
    const raw = u.streak;
    const profile: Profile = u.profile.tz ? { tz: u.profile.tz } : {};
    const { view } = readStreak(snap, profile, raw, now);
    out.push({
      userId,
      streakLength: view.length,
      extendedAt: view.length > 0 ? (view.metAt ?? null) : null,
    });
  });
  return out.sort(
    (a, b) => b.streakLength - a.streakLength || (a.userId < b.userId ? -1 : a.userId > b.userId ? 1 : 0),
  );
}

export type StreakRankingType = 'active' | 'longest';

/**
 * The top `limit` users by current (non-lapsed) or longest streak, ties by who reached that length
 * first, then user id (semantics §4.11). Reads the index in pages until every tie at the cut is seen.
 */
export async function streakRankings(deps: Deps, type: StreakRankingType, limit: number, now: number) {
  const g = deps.keys.global;
  const zkey = type === 'active' ? g.streakActive : g.streakLongest;
  const page = Math.max(2 * limit, 100);
  const chosen: Array<{ userId: string; length: number; at: number }> = [];
  for (let offset = 0; ; offset += page) {
    const raw = await deps.redis.zrevrange(zkey, offset, offset + page - 1, 'WITHSCORES');
    const batch: Array<{ userId: string; length: number }> = [];
    for (let i = 0; i < raw.length; i += 2) batch.push({ userId: raw[i]!, length: Number(raw[i + 1]) });
    if (batch.length === 0) break;
    const metas =
      type === 'active'
        ? await deps.redis.hmget(g.streakActiveMeta, ...batch.map((b) => b.userId))
        : await deps.redis.hmget(g.streakLongestAt, ...batch.map((b) => `${b.userId}|${b.length}`));
    batch.forEach((b, i) => {
      const meta = metas[i] ?? null;
      if (b.length <= 0 || (type === 'active' && lapsed(meta, now))) return;
      const at = meta ? Number(meta.split('|')[0]) : Number.POSITIVE_INFINITY;
      chosen.push({ ...b, at });
    });
    const last = batch[batch.length - 1]!;
    if (batch.length < page) break;
    if (chosen.length >= limit && last.length < chosen[limit - 1]!.length) break;
  }
  chosen.sort(
    (a, b) => b.length - a.length || a.at - b.at || (a.userId < b.userId ? -1 : a.userId > b.userId ? 1 : 0),
  );
  const top = chosen.slice(0, limit);
  const names = await perUserPipelines<string | null>(
    deps,
    top.map((u) => u.userId),
    (pipe, id) => pipe.hget(deps.keys.user(id).hash, 'name'),
    1,
  );
  return top.map((u, i) => ({ userId: u.userId, name: names[i]?.[0] ?? null, streakLength: u.length }));
}

/** The user's active and upcoming pauses (end on or after the user's local today), by start. */
export async function upcomingPauses(deps: Deps, userId: string, today: string) {
  return deps.db
    .select({ id: streakPauses.id, start: streakPauses.start, end: streakPauses.end })
    .from(streakPauses)
    .where(and(eq(streakPauses.userId, userId), isNull(streakPauses.deletedAt), gte(streakPauses.end, today)))
    .orderBy(asc(streakPauses.start), asc(streakPauses.created));
}
