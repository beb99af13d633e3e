// Every read the dashboard makes of user state and history, in one place, so these can be swapped
// for shared read functions of the application API as those land.
import { and, desc, eq, gte } from 'drizzle-orm';
import { events, pointsAwards, webhookDeliveries } from '../db/schema';
import type { Deps } from '../deps';
import { execValues } from '../redis/batch';
import { decodeAward, decodeCompletion, splitUserHash } from '../redis/user-hash';
import { parseRecord } from '../redis/user-script';
import { fromMicros } from '../engine/decimal';
import type { LuaAward } from '../services/user-op';

/** Number of users ever created (global counter). */
export async function userCount(deps: Deps): Promise<number> {
  return Number((await deps.redis.get(deps.keys.global.userCount)) ?? 0);
}

/** achievementId → completions. */
export async function achievementCompletions(deps: Deps): Promise<Map<string, number>> {
  const raw = await deps.redis.hgetall(deps.keys.global.achievementCompletions);
  return new Map(Object.entries(raw).map(([k, v]) => [k, Number(v)]));
}

export interface RecentEvent {
  id: string;
  userId: string;
  metricId: string;
  value: number;
  at: number;
  /** Points added over every system (from the history, or from the outbox record not stored yet). */
  points?: number;
  achievements?: number;
}

/**
 * The newest records of the outbox streams (records the history writer has not stored yet): about
 * `total` in all, as many of each stream (at least 10).
 */
async function outboxEvents(deps: Deps, total: number): Promise<RecentEvent[]> {
  const streams = deps.keys.outboxes;
  const perStream = Math.max(10, Math.ceil(total / streams.length));
  const out: RecentEvent[] = [];
  for (let i = 0; i < streams.length; i += 64) {
    const replies = await Promise.all(
      streams.slice(i, i + 64).map((s) => deps.redis.xrevrange(s, '+', '-', 'COUNT', perStream)),
    );
    for (const entries of replies) {
      for (const [, fields] of entries) {
        // Read as the history writer reads it (its integers may travel as digits, its awards in points).
        let r: ReturnType<typeof parseRecord>;
        try {
          r = parseRecord(fields);
        } catch {
          continue;
        }
        if (r?.op !== 'event' || !r.metric) continue;
        let points = 0;
        for (const g of r.awards) for (const a of g.awards) points += a.awarded;
        out.push({
          id: r.id,
          userId: r.user,
          metricId: r.metric,
          value: fromMicros(Number(r.value ?? 0)),
          at: r.now,
          points,
          achievements: r.completions.length,
        });
      }
    }
  }
  return out;
}

/**
 * Recent metric events: the stored history (events table) merged with the outbox records not yet
 * stored, newest first. Bounded: `limit` from each source, about `outboxRecords` outbox records.
 */
export async function recentEvents(deps: Deps, limit = 15, outboxRecords = 2560): Promise<RecentEvent[]> {
  const [stored, pending] = await Promise.all([
    deps.db
      .select({
        id: events.id,
        userId: events.userId,
        metricId: events.metricId,
        valueMicros: events.valueMicros,
        created: events.created,
      })
      .from(events)
      .orderBy(desc(events.created))
      .limit(limit),
    outboxEvents(deps, outboxRecords),
  ]);
  const byId = new Map<string, RecentEvent>();
  for (const e of stored) {
    byId.set(e.id, {
      id: e.id,
      userId: e.userId,
      metricId: e.metricId,
      value: fromMicros(e.valueMicros),
      at: e.created.getTime(),
    });
  }
  for (const e of pending) byId.set(e.id, e);
  const shown = [...byId.values()].sort((a, b) => b.at - a.at).slice(0, limit);
  const points = await eventPoints(
    deps,
    shown.filter((e) => e.points === undefined),
  );
  for (const e of shown) if (e.points === undefined) e.points = points.get(e.id) ?? 0;
  return shown;
}

/**
 * Points awarded per stored event, summed over every system. The user ids narrow the read to the
 * primary key (user_id, system_id, created, id); events without awards are absent from the map.
 */
async function eventPoints(deps: Deps, list: RecentEvent[]): Promise<Map<string, number>> {
  if (!list.length) return new Map();
  const rows = await deps.sql<Array<{ event_id: string; points: string }>>`
    select event_id, sum(awarded) as points from points_awards
     where user_id = any(${deps.sql.array([...new Set(list.map((e) => e.userId))])})
       and event_id = any(${deps.sql.array(list.map((e) => e.id))}::uuid[])
     group by event_id`;
  return new Map(rows.map((r) => [r.event_id, Number(r.points)]));
}

/**
 * How far the history writer is behind: the age of the oldest outbox record not yet stored (0 when
 * the outbox is empty) and how many records wait. Stream ids carry Redis' clock, so the age is
 * measured against the wall clock, not the (possibly simulated) application clock.
 */
export async function historyBacklog(deps: Deps): Promise<{ records: number; oldestAgeMs: number }> {
  let records = 0;
  let oldest = Number.POSITIVE_INFINITY;
  const streams = deps.keys.outboxes;
  for (let i = 0; i < streams.length; i += 64) {
    const replies = await Promise.all(
      streams.slice(i, i + 64).map(async (key) => {
        const [len, first] = await Promise.all([
          deps.redis.xlen(key),
          deps.redis.xrange(key, '-', '+', 'COUNT', 1),
        ]);
        return { len, at: first[0] ? Number(first[0][0].split('-')[0]) : Number.POSITIVE_INFINITY };
      }),
    );
    for (const r of replies) {
      records += r.len;
      oldest = Math.min(oldest, r.at);
    }
  }
  return { records, oldestAgeMs: records && Number.isFinite(oldest) ? Math.max(0, Date.now() - oldest) : 0 };
}

/** Events per minute over the last `minutes` minutes (oldest first), from history and outbox. */
export async function eventsPerMinute(
  deps: Deps,
  minutes = 15,
): Promise<Array<{ start: number; count: number }>> {
  const now = deps.clock.now();
  const end = Math.floor(now / 60_000) * 60_000 + 60_000;
  const since = end - minutes * 60_000;
  const [stored, pending] = await Promise.all([
    deps.db
      .select({ id: events.id, created: events.created })
      .from(events)
      .where(and(gte(events.created, new Date(since))))
      .limit(20_000),
    outboxEvents(deps, 5000),
  ]);
  const seen = new Map<string, number>();
  for (const e of stored) seen.set(e.id, e.created.getTime());
  for (const e of pending) seen.set(e.id, e.at);
  const buckets = Array.from({ length: minutes }, (_, i) => ({ start: since + i * 60_000, count: 0 }));
  for (const at of seen.values()) {
    const i = Math.floor((at - since) / 60_000);
    if (i >= 0 && i < minutes) buckets[i]!.count++;
  }
  return buckets;
}

/** Distribution of points totals of one system over `n` equal buckets (ZCOUNT per bucket, O(n log N)). */
export async function pointsHistogram(
  deps: Deps,
  systemId: string,
  n = 10,
): Promise<{ users: number; buckets: Array<{ from: number; to: number; count: number }> }> {
  const key = deps.keys.global.pointsTotals(systemId);
  const [users, top, bottom] = await Promise.all([
    deps.redis.zcard(key),
    deps.redis.zrevrange(key, 0, 0, 'WITHSCORES'),
    deps.redis.zrange(key, 0, 0, 'WITHSCORES'),
  ]);
  if (users === 0) return { users, buckets: [] };
  const max = Number(top[1] ?? 0);
  const min = Math.min(0, Number(bottom[1] ?? 0));
  const width = Math.max(1, Math.ceil((max - min + 1) / n));
  const buckets = Array.from({ length: Math.ceil((max - min + 1) / width) }, (_, i) => ({
    from: min + i * width,
    to: min + (i + 1) * width - 1,
    count: 0,
  }));
  const counts = await Promise.all(buckets.map((b) => deps.redis.zcount(key, b.from, b.to)));
  counts.forEach((c, i) => {
    buckets[i]!.count = c;
  });
  return { users, buckets };
}

/** Users holding each points total, for level summaries: users at or above `points`. */
export async function usersAtLeast(deps: Deps, systemId: string, points: number): Promise<number> {
  return deps.redis.zcount(deps.keys.global.pointsTotals(systemId), points, '+inf');
}

/** Active streak count and the longest current streaks. */
export async function streakSummary(deps: Deps, top = 10) {
  const g = deps.keys.global;
  const [active, best] = await Promise.all([
    deps.redis.zcard(g.streakActive),
    deps.redis.zrevrange(g.streakActive, 0, top - 1, 'WITHSCORES'),
  ]);
  const leaders: Array<{ userId: string; length: number }> = [];
  for (let i = 0; i < best.length; i += 2) leaders.push({ userId: best[i]!, length: Number(best[i + 1]) });
  return { active, leaders };
}

export interface UserState {
  profile: Record<string, string>;
  /** metricId → total. */
  metrics: Map<string, number>;
  /** systemId → total. */
  points: Map<string, number>;
  streak: Record<string, string>;
  /** achievementId → completion time (ms). */
  achievements: Map<string, number>;
  /** systemId → recent awards, newest first (at most 100). */
  awards: Map<string, LuaAward[]>;
}

/** Everything stored about one user, or null when the user does not exist. One slot: one pipeline. */
export async function userState(deps: Deps, userId: string, systemIds: string[]): Promise<UserState | null> {
  const k = deps.keys.user(userId);
  const pipe = deps.redis.pipeline();
  pipe.hgetall(k.hash);
  for (const s of systemIds) pipe.lrange(k.awards(s), 0, 99);
  pipe.get(k.streakHistory);
  const res = await execValues(pipe);
  const parts = splitUserHash((res[0] ?? {}) as Record<string, string>);
  const hist = res[res.length - 1] as string | null;
  if (hist) parts.streak.hist = hist;
  const val = (i: number) => res[i];
  const { profile } = parts;
  if (!profile.created) return null;
  const num = (h: Record<string, string>, conv: (n: number) => number = (n) => n) =>
    new Map(Object.entries(h).map(([id, v]) => [id, conv(Number(v))]));
  const achievements = new Map<string, number>();
  for (const [id, raw] of Object.entries(parts.achievements)) {
    try {
      achievements.set(id, decodeCompletion(raw)!.at);
    } catch {
      // An unreadable completion is shown as completed at an unknown time.
      achievements.set(id, Number.NaN);
    }
  }
  const awards = new Map<string, LuaAward[]>();
  systemIds.forEach((s, i) => {
    const list = (val(1 + i) ?? []) as string[];
    awards.set(s, list.map(decodeAward));
  });
  return {
    profile,
    metrics: num(parts.metrics, fromMicros),
    points: num(parts.points),
    streak: parts.streak,
    achievements,
    awards,
  };
}

/** Display names of users (one read each: users live in different slots). */
export async function userNames(deps: Deps, ids: string[]): Promise<Map<string, string>> {
  const names = await Promise.all(ids.map((id) => deps.redis.hget(deps.keys.user(id).hash, 'name')));
  return new Map(ids.flatMap((id, i) => (names[i] ? [[id, names[i]!] as [string, string]] : [])));
}

/** Users ranked in one run of a board, over every breakdown group (HLEN of its members hash, O(1)). */
export async function participantCount(deps: Deps, boardId: string, runStart: string): Promise<number> {
  return deps.redis.hlen(deps.keys.board(boardId).members(runStart));
}

/** Breakdown groups that have members in one run (a board's members hash, ≤ maxParticipants per group). */
export async function runGroups(deps: Deps, boardId: string, runStart: string): Promise<Map<string, number>> {
  const members = await deps.redis.hvals(deps.keys.board(boardId).members(runStart));
  const groups = new Map<string, number>();
  for (const m of members) {
    const g = m.split('|')[2] ?? '';
    groups.set(g, (groups.get(g) ?? 0) + 1);
  }
  return groups;
}

/**
 * Queues one delivery of an endpoint again: pending, due now. The webhook worker picks it up like
 * any other due delivery. Returns false when the delivery does not belong to the endpoint.
 */
export async function redeliver(deps: Deps, endpointId: string, deliveryId: string): Promise<boolean> {
  const rows = await deps.db
    .update(webhookDeliveries)
    .set({ status: 'pending', nextAttemptAt: new Date(deps.clock.now()) })
    .where(and(eq(webhookDeliveries.id, deliveryId), eq(webhookDeliveries.endpointId, endpointId)))
    .returning({ id: webhookDeliveries.id });
  return rows.length > 0;
}

export interface UserListItem {
  id: string;
  name: string | null;
  email: string | null;
  created: Date;
}

/**
 * Users from the history, newest first, optionally only those whose id, name or e-mail contains
 * `search` (case-insensitive). Returns one more than `limit` when a next page exists.
 */
export async function listUsers(
  deps: Deps,
  opts: { search: string; limit: number; offset: number },
): Promise<UserListItem[]> {
  const { sql } = deps;
  const like = `%${opts.search.replace(/[\\%_]/g, (ch) => `\\${ch}`)}%`;
  const where = opts.search
    ? sql`where id ilike ${like} or name ilike ${like} or email ilike ${like}`
    : sql``;
  return sql<UserListItem[]>`
    select id, name, email, created from users ${where}
     order by created desc, id desc limit ${opts.limit + 1} offset ${opts.offset}`;
}

/**
 * A user's latest stored events, newest first: the columns the user page shows (not the board values
 * and state changes the rows carry for rebuild).
 */
export async function userEvents(deps: Deps, userId: string, limit = 20) {
  return deps.db
    .select({
      created: events.created,
      metricId: events.metricId,
      valueMicros: events.valueMicros,
      localDate: events.localDate,
    })
    .from(events)
    .where(eq(events.userId, userId))
    .orderBy(desc(events.created), desc(events.seq))
    .limit(limit);
}

/** A user's latest stored points awards (every system), newest first. */
export async function userAwards(deps: Deps, userId: string, limit = 20) {
  return deps.db
    .select()
    .from(pointsAwards)
    .where(eq(pointsAwards.userId, userId))
    .orderBy(desc(pointsAwards.created), desc(pointsAwards.seq), desc(pointsAwards.pos))
    .limit(limit);
}
