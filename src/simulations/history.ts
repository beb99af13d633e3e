/**
 * Reading the recorded history a simulation replays: its users, and their events and API completions
 * in time order. Read-only; the events come through one server-side cursor (one sort, streamed).
 */
import { and, eq, gte, inArray, isNull, lte, sql } from 'drizzle-orm';
import type { Snapshot } from '../catalog/snapshot';
import { achievementCompletions, streakPauses, users } from '../db/schema';
import type { Deps } from '../deps';
import { pauseRanges, type RecordedItem, type ReplayUser } from './replay';

export interface HistoryWindow {
  /** Inclusive, ms; null = from the beginning. */
  from: number | null;
  /** Inclusive, ms. */
  to: number;
}

/** The sample: every user, a number of random users, or a list of ids. */
export type Sample = { all: true } | { count: number } | { ids: string[] };

/** The users of a sample (created by the end of the window), with their pauses. */
export async function loadUsers(
  deps: Deps,
  sample: Sample,
  w: HistoryWindow,
): Promise<Map<string, ReplayUser>> {
  const created = lte(users.created, new Date(w.to));
  const rows =
    'ids' in sample
      ? await deps.db
          .select()
          .from(users)
          .where(and(inArray(users.id, sample.ids.length ? sample.ids : ['']), created))
      : 'count' in sample
        ? await deps.db.select().from(users).where(created).orderBy(sql`random()`).limit(sample.count)
        : await deps.db.select().from(users).where(created);
  const out = new Map<string, ReplayUser>();
  for (const u of rows) {
    out.set(u.id, {
      id: u.id,
      created: u.created.getTime(),
      tz: u.tz,
      attributes: u.attributes ?? {},
      pauses: [],
    });
  }
  if (out.size) {
    const pauses = await deps.db
      .select({ userId: streakPauses.userId, start: streakPauses.start, end: streakPauses.end })
      .from(streakPauses)
      .where(isNull(streakPauses.deletedAt));
    const byUser = new Map<string, Array<{ start: string; end: string }>>();
    for (const p of pauses) {
      if (!out.has(p.userId)) continue;
      const list = byUser.get(p.userId) ?? [];
      list.push(p);
      byUser.set(p.userId, list);
    }
    for (const [id, list] of byUser) out.get(id)!.pauses = pauseRanges(list);
  }
  return out;
}

const idFilter = (deps: Deps, ids: string[] | null) =>
  ids ? deps.sql`and user_id = any(${deps.sql.array(ids)}::text[])` : deps.sql``;

/** How many events and completions the window holds for these users (for progress and ETA). */
export async function countItems(deps: Deps, ids: string[] | null, w: HistoryWindow): Promise<number> {
  const from = new Date(w.from ?? 0).toISOString();
  const to = new Date(w.to).toISOString();
  const [row] = await deps.sql<Array<{ n: string }>>`
    select count(*)::text as n from events
    where created >= ${from}::timestamptz and created <= ${to}::timestamptz ${idFilter(deps, ids)}`;
  return Number(row?.n ?? 0);
}

/** API completions of the window (few: loaded at once), oldest first. */
async function apiCompletions(
  deps: Deps,
  snap: Snapshot,
  ids: string[] | null,
  w: HistoryWindow,
): Promise<RecordedItem[]> {
  const api = snap.achievements.filter((a) => a.trigger === 'api').map((a) => a.id);
  if (!api.length) return [];
  const c = achievementCompletions;
  const rows = await deps.db
    .select({ userId: c.userId, achievementId: c.achievementId, at: c.achievedAt })
    .from(c)
    .where(
      and(
        inArray(c.achievementId, api),
        eq(c.backdated, false),
        gte(c.achievedAt, new Date(w.from ?? 0)),
        lte(c.achievedAt, new Date(w.to)),
        ids ? inArray(c.userId, ids.length ? ids : ['']) : undefined,
      ),
    )
    .orderBy(c.achievedAt);
  return rows.map((r) => ({
    kind: 'complete',
    at: r.at.getTime(),
    userId: r.userId,
    achievementId: r.achievementId,
  }));
}

interface EventRow {
  user_id: string;
  metric_id: string;
  value_micros: string;
  attributes: Record<string, string> | null;
  tz: string;
  at: number;
}

/**
 * The window's events and API completions of these users, merged in time order (a user's own events
 * in their op order), in batches. `snap` tells which achievements are API-completed (the live one).
 */
export async function* recordedItems(
  deps: Deps,
  snap: Snapshot,
  ids: string[] | null,
  w: HistoryWindow,
  batchSize = 2000,
): AsyncGenerator<RecordedItem[]> {
  const completions = await apiCompletions(deps, snap, ids, w);
  let ci = 0;
  const cursor = deps.sql<EventRow[]>`
    select user_id, metric_id, value_micros::text as value_micros, attributes, tz,
      (extract(epoch from created) * 1000)::float8 as at from events
    where created >= ${new Date(w.from ?? 0).toISOString()}::timestamptz
      and created <= ${new Date(w.to).toISOString()}::timestamptz ${idFilter(deps, ids)}
    order by created, seq nulls first, id`.cursor(batchSize);
  for await (const rows of cursor) {
    const out: RecordedItem[] = [];
    for (const r of rows) {
      const at = Math.round(r.at);
      while (ci < completions.length && completions[ci]!.at < at) out.push(completions[ci++]!);
      out.push({
        kind: 'event',
        at,
        userId: r.user_id,
        metricId: r.metric_id,
        valueMicros: Number(r.value_micros),
        attributes: r.attributes ?? {},
        tz: r.tz,
      });
    }
    yield out;
  }
  if (ci < completions.length) yield completions.slice(ci);
}
