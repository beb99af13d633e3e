import { and, asc, eq, gte, inArray, isNull } from 'drizzle-orm';
import type { PauseRow } from '../catalog/snapshot';
import { streakPauses, users } from '../db/schema';
import { splitUserHash, userField } from '../redis/user-hash';
import type { Deps } from '../deps';
import { addDays, dayIndex, isValidTimeZone, localDate, periodBounds, periodIndex } from '../engine/periods';
import { refreshStreakExpiry } from '../services/streak-recompute';
import { z } from '../zod';
import { ItemIssue, iso, newId, parseItem } from './common';
import { dateSchema } from './fields';

export const AdminStreakPauseSchema = z
  .object({ id: z.uuid(), userId: z.string(), start: z.string(), end: z.string(), created: z.string() })
  .openapi('AdminStreakPause');

export const StreakPauseCreateSchema = z
  .object({ userId: z.string().min(1).max(255), start: dateSchema, end: dateSchema })
  .openapi('AdminStreakPauseCreate');

/** A pause covers at most this many days, both ends included. */
const MAX_PAUSE_DAYS = 366;

export const showPause = (p: PauseRow) => ({
  id: p.id,
  userId: p.userId,
  start: p.start,
  end: p.end,
  created: iso(p.created),
});

/**
 * The stored time zones of users (Postgres first, then the Redis profile for users the history
 * writer has not copied yet); `null` for unknown users, `'UTC'` for users without a usable zone.
 */
async function userZones(deps: Deps, userIds: string[]): Promise<Map<string, string | null>> {
  const zones = new Map<string, string | null>();
  if (userIds.length === 0) return zones;
  const rows = await deps.db
    .select({ id: users.id, tz: users.tz })
    .from(users)
    .where(inArray(users.id, userIds));
  for (const r of rows) zones.set(r.id, r.tz && isValidTimeZone(r.tz) ? r.tz : 'UTC');
  for (const id of userIds) {
    if (zones.has(id)) continue;
    const profile = deps.keys.user(id).hash;
    const [exists, tz] = await Promise.all([deps.redis.exists(profile), deps.redis.hget(profile, 'tz')]);
    zones.set(id, exists ? (tz && isValidTimeZone(tz) ? tz : 'UTC') : null);
  }
  return zones;
}

/** Pauses that have not ended yet in their user's time zone, oldest first. */
export async function listPauses(deps: Deps, q: { limit: number; skip: number; userId?: string }) {
  const nowMs = deps.clock.now();
  // No zone is more than a day behind UTC, so older pauses have ended everywhere.
  const earliest = addDays(localDate(nowMs, 'UTC'), -1);
  const rows = await deps.db
    .select()
    .from(streakPauses)
    .where(
      and(
        isNull(streakPauses.deletedAt),
        gte(streakPauses.end, earliest),
        q.userId !== undefined ? eq(streakPauses.userId, q.userId) : undefined,
      ),
    )
    .orderBy(asc(streakPauses.created), asc(streakPauses.id));
  const zones = await userZones(deps, [...new Set(rows.map((r) => r.userId))]);
  return rows
    .filter((r) => r.end >= localDate(nowMs, zones.get(r.userId) ?? 'UTC'))
    .slice(q.skip, q.skip + q.limit)
    .map(showPause);
}

/** Creates one pause; problems are item issues (admin §13.3). */
export async function createPause(deps: Deps, item: unknown) {
  const input = parseItem(StreakPauseCreateSchema, item);
  const tz = (await userZones(deps, [input.userId])).get(input.userId);
  if (!tz) throw new ItemIssue('User does not exist');
  const nowMs = deps.clock.now();
  if (input.start < localDate(nowMs, tz)) throw new ItemIssue('Start date is in the past');
  if (input.end < input.start) throw new ItemIssue('end must not be before start');
  if (dayIndex(input.end) - dayIndex(input.start) + 1 > MAX_PAUSE_DAYS) {
    throw new ItemIssue(`A pause covers at most ${MAX_PAUSE_DAYS} days`);
  }
  const [row] = await deps.db
    .insert(streakPauses)
    .values({
      id: newId(),
      userId: input.userId,
      start: input.start,
      end: input.end,
      created: new Date(nowMs),
    })
    .returning();
  await syncPauses(deps, input.userId);
  await refreshStreakExpiry(deps, input.userId);
  return showPause(row!);
}

/**
 * The first day (index) a pause must reach to still matter to a user's streak, from the user's hash:
 * a pause bridges unmet periods after the latest met one (semantics §4.5, §4.9), so one that ended
 * before the period after `lastMet` (before today's period when the user has no streak) can bridge
 * nothing any more. null (keep every pause) when the hash cannot tell: no user, or a streak state of
 * another epoch, whose period indexes may be of another frequency.
 */
export function pausesMatterFrom(
  deps: Pick<Deps, 'catalog' | 'clock'>,
  user: { profile: Record<string, string>; streak: Record<string, string> },
): number | null {
  const s = deps.catalog.snapshot.streak;
  if (user.profile.seq === undefined || Number(user.streak.epoch ?? 0) !== s.epoch) return null;
  const lastMet = user.streak.lastMet;
  if (Number(user.streak.length ?? 0) > 0 && lastMet !== undefined && lastMet !== '') {
    return dayIndex(periodBounds(s.frequency, Number(lastMet) + 1).start);
  }
  const tz = user.profile.tz && isValidTimeZone(user.profile.tz) ? user.profile.tz : 'UTC';
  const today = localDate(deps.clock.now(), tz);
  return dayIndex(periodBounds(s.frequency, periodIndex(s.frequency, today)).start);
}

/**
 * Copies a user's live pauses into their streak state (then the caller refreshes the expiry the
 * streak indexes hold: refreshStreakExpiry), where the user script reads them when it
 * resolves ended periods: [[firstDayIndex, lastDayIndex], ...]. Postgres stays the source of truth.
 * Pauses that can no longer bridge a period (pausesMatterFrom) are left out: every op of the user
 * decodes the list and carries it in its reply and outbox record, so with recurring pauses it would
 * otherwise grow with the user's age (about 0.8 µs of Redis per pause per op).
 */
export async function syncPauses(deps: Deps, userId: string): Promise<void> {
  const rows = await deps.db
    .select({ start: streakPauses.start, end: streakPauses.end })
    .from(streakPauses)
    .where(and(eq(streakPauses.userId, userId), isNull(streakPauses.deletedAt)))
    .orderBy(asc(streakPauses.start), asc(streakPauses.end));
  const key = deps.keys.user(userId).hash;
  const field = userField('streak', 'pauses');
  const from = pausesMatterFrom(deps, splitUserHash(await deps.redis.hgetall(key)));
  const kept = rows
    .map((r) => [dayIndex(r.start), dayIndex(r.end)] as const)
    .filter(([, end]) => from === null || end >= from);
  if (kept.length === 0) await deps.redis.hdel(key, field);
  else await deps.redis.hset(key, field, JSON.stringify(kept));
}

/** Deletes one pause (it stops applying to periods not yet resolved, semantics §4.9). */
export async function deletePause(deps: Deps, id: string): Promise<void> {
  const [row] = await deps.db
    .update(streakPauses)
    .set({ deletedAt: new Date(deps.clock.now()) })
    .where(and(eq(streakPauses.id, id), isNull(streakPauses.deletedAt)))
    .returning({ id: streakPauses.id, userId: streakPauses.userId });
  if (!row) throw new ItemIssue('Pause not found');
  await syncPauses(deps, row.userId);
  await refreshStreakExpiry(deps, row.userId);
}
