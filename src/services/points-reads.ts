// Points reads (application-api §6.8, semantics §5.10, §7.2, §7.3) over the per-user award lists and
// the global per-system totals index (every user is added with 0 at creation).
import type { PointsSystemConfig } from '../catalog/snapshot';
import { decodeAward, userField } from '../redis/user-hash';
import type { Deps } from '../deps';
import { matchesFilters } from '../engine/filters';
import { histogramRanges } from '../engine/stats';
import { perUserPipelines } from './user-reads';
import { and, desc, eq, sql } from 'drizzle-orm';
import { pointsAwards } from '../db/schema';
import { crossSlotPipeline, execValues } from '../redis/batch';

/**
 * Awards kept per user and system in Redis (lua/applyUserOp.lua trims the list to them): the newest,
 * which the history writer may not have written yet. Older ones are read from points_awards.
 */
export const RECENT_AWARDS = 10;

/**
 * A user's total and most recent `count` awards (newest first) in a system: the newest
 * RECENT_AWARDS from Redis (one round trip), older ones from Postgres when more are asked for.
 */
export async function userPoints(deps: Deps, userId: string, systemId: string, count: number) {
  const k = deps.keys.user(userId);
  const pipe = crossSlotPipeline(deps.redis);
  pipe.hget(k.hash, userField('points', systemId));
  pipe.lrange(k.awards(systemId), 0, count - 1);
  const res = await execValues(pipe);
  const total = Number(res[0] ?? 0);
  const awards = ((res[1] ?? []) as string[]).map(decodeAward);
  if (awards.length < RECENT_AWARDS || count <= awards.length) return { total, awards };
  // The list is full and more are asked for: the rest, older, come from the history.
  const seen = new Set(awards.map((a) => a.id));
  const rows = await deps.db
    .select()
    .from(pointsAwards)
    .where(and(eq(pointsAwards.userId, userId), eq(pointsAwards.systemId, systemId)))
    .orderBy(
      sql`${pointsAwards.seq} desc nulls last`,
      sql`${pointsAwards.pos} desc nulls last`,
      desc(pointsAwards.created),
    )
    .limit(count + RECENT_AWARDS);
  for (const r of rows) {
    if (awards.length >= count) break;
    if (seen.has(r.id)) continue;
    awards.push({
      id: r.id,
      awarded: r.awarded,
      total: r.total,
      trigger: r.triggerId,
      boosts: r.boosts,
      date: r.created.getTime(),
    });
  }
  return { total, awards };
}

/** Users never indexed in a system (created before it existed) have a total of 0. */
async function unindexedUsers(deps: Deps, systemId: string): Promise<number> {
  const g = deps.keys.global;
  const [users, indexed] = await Promise.all([
    deps.redis.get(g.userCount),
    deps.redis.zcard(g.pointsTotals(systemId)),
  ]);
  return Math.max(0, Number(users ?? 0) - indexed);
}

/**
 * The 11-range histogram of users' totals (semantics §7.2). Without a filter: 11 ZCOUNTs. With a
 * user-attribute filter: reads the filter attributes of every user (O(users)).
 */
export async function pointsHistogram(
  deps: Deps,
  sys: PointsSystemConfig,
  filter: Array<[string, string]> | undefined,
) {
  const zkey = deps.keys.global.pointsTotals(sys.id);
  if (!filter) {
    const top = await deps.redis.zrevrange(zkey, 0, 0, 'WITHSCORES');
    const ranges = histogramRanges(top[1] ? Number(top[1]) : 0);
    const pipe = crossSlotPipeline(deps.redis);
    for (const r of ranges) pipe.zcount(zkey, r.from, r.to);
    const res = await execValues(pipe);
    const zeros = await unindexedUsers(deps, sys.id);
    return ranges.map((r, i) => ({ ...r, users: Number(res[i] ?? 0) + (i === 0 ? zeros : 0) }));
  }
  const raw = await deps.redis.zrange(zkey, 0, -1, 'WITHSCORES');
  const totalOf = new Map<string, number>();
  for (let i = 0; i < raw.length; i += 2) totalOf.set(raw[i]!, Number(raw[i + 1]));
  // Every user of the cohort counts, with 0 when never indexed in this system (e.g. created before
  // it existed): the population is every user (the per-shard user indexes), not the indexed ones.
  const shards = crossSlotPipeline(deps.redis);
  for (let shard = 0; shard < deps.keys.shards; shard++) shards.zrange(deps.keys.shardUsers(shard), 0, -1);
  const ids = [...new Set([...(await execValues(shards)).flatMap((v) => v as string[]), ...totalOf.keys()])];
  const totals = ids.map((id) => totalOf.get(id) ?? 0);
  const fields = filter.map(([key]) => `a:${key}`);
  const values = await perUserPipelines<Array<string | null>>(
    deps,
    ids,
    (pipe, id) => pipe.hmget(deps.keys.user(id).hash, ...fields),
    1,
  );
  const selected = totals.filter((_, i) =>
    matchesFilters(filter, Object.fromEntries(filter.map(([key], j) => [key, values[i]?.[0]?.[j]]))),
  );
  const ranges = histogramRanges(selected.reduce((m, t) => Math.max(m, t), 0));
  return ranges.map((r) => ({ ...r, users: selected.filter((t) => t >= r.from && t <= r.to).length }));
}

/** Users currently at each level of a system, ascending by threshold (semantics §7.3). */
export async function levelSummary(deps: Deps, sys: PointsSystemConfig) {
  const zkey = deps.keys.global.pointsTotals(sys.id);
  const pipe = crossSlotPipeline(deps.redis);
  sys.levels.forEach((l, i) => {
    const next = sys.levels[i + 1];
    pipe.zcount(zkey, l.points, next ? `(${next.points}` : '+inf');
  });
  const res = await execValues(pipe);
  const zeros = sys.levels[0]?.points === 0 ? await unindexedUsers(deps, sys.id) : 0;
  return sys.levels.map((level, i) => ({ level, users: Number(res[i] ?? 0) + (i === 0 ? zeros : 0) }));
}
