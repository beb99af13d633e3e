import { randomUUID } from 'node:crypto';
import { and, asc, gte, inArray } from 'drizzle-orm';
import type { Snapshot } from '../catalog/snapshot';
import { events, userStates } from '../db/schema';
import type { Deps } from '../deps';
import { crossSlotPipeline, execValues } from '../redis/batch';
import { toMicros } from '../engine/decimal';
import { leaderboardStatus } from '../engine/leaderboard-status';
import { type Frequency, localDate, periodIndex } from '../engine/periods';
import { runContaining } from '../engine/runs';

// Streak settings changes (semantics §4.10): enabling, disabling and a new frequency start a new
// settings epoch. The cross-user streak indexes (active rankings, streak leaderboards) then hold
// lengths of the old epoch, so they are emptied; after a frequency change every user's streak is
// recomputed from recorded activity since streaks were last enabled, and the history writer carries
// each recomputed length back into those indexes (lua/recomputeStreak.lua writes an outbox record).

/** An event as the recomputation reads it (in the user's op order). */
export interface ActivityEvent {
  metricId: string;
  valueMicros: number;
  localDate: string;
  at: number;
}

export interface RecomputedStreak {
  length: number;
  lastMet?: number;
  started?: string;
  /** Longest chain reached in the activity. */
  longest: number;
  /** When the current length was reached (ms), 0 without one. */
  lengthAt: number;
  curIdx: number;
  curMet: boolean;
  /** Condition sums of the current period (millionths). */
  sums: Record<string, number>;
  /** Met periods with the length at their end, oldest first. */
  periods: Array<{ idx: number; length: number }>;
}

/**
 * A user's streak from their activity under `freq` and the conditions (§4.3: a period stays met once
 * met; §4.4: consecutive met periods; no freezes or pauses are re-applied). `cur` = the user's current
 * period. O(events).
 */
export function computeStreak(
  freq: Frequency,
  mode: 'all' | 'any',
  conds: Array<{ metricId: string; threshold: number }>,
  activity: ActivityEvent[],
  cur: number,
): RecomputedStreak {
  const sums = new Map<number, Record<string, number>>();
  const metAt = new Map<number, { at: number; date: string }>();
  const thr = conds.map((c) => ({ m: c.metricId, t: toMicros(c.threshold) }));
  for (const e of activity) {
    const idx = periodIndex(freq, e.localDate);
    const s = sums.get(idx) ?? {};
    sums.set(idx, s);
    s[e.metricId] = (s[e.metricId] ?? 0) + e.valueMicros;
    if (metAt.has(idx)) continue;
    const ok = (c: { m: string; t: number }) => (s[c.m] ?? 0) >= c.t;
    const met = mode === 'any' ? thr.some(ok) : thr.length > 0 && thr.every(ok);
    if (met) metAt.set(idx, { at: e.at, date: e.localDate });
  }
  const met = [...metAt.keys()].sort((a, b) => a - b);
  const periods: RecomputedStreak['periods'] = [];
  let length = 0;
  let longest = 0;
  let started: string | undefined;
  let prev: number | undefined;
  for (const idx of met) {
    if (prev !== undefined && idx === prev + 1) length++;
    else {
      length = 1;
      started = metAt.get(idx)!.date;
    }
    longest = Math.max(longest, length);
    periods.push({ idx, length });
    prev = idx;
  }
  const lastMet = met.at(-1);
  // The chain is alive while its latest met period is the current one or the one before it.
  const alive = lastMet !== undefined && lastMet >= cur - 1;
  return {
    length: alive ? length : 0,
    lastMet: alive ? lastMet : undefined,
    started: alive ? started : undefined,
    longest,
    lengthAt: alive ? metAt.get(lastMet!)!.at : 0,
    curIdx: cur,
    curMet: metAt.has(cur),
    sums: sums.get(cur) ?? {},
    periods,
  };
}

/** Empties the streak indexes of the previous epoch: active rankings and every streak leaderboard. */
export async function resetStreakIndexes(deps: Deps): Promise<void> {
  const g = deps.keys.global;
  await deps.redis.unlink(g.streakActive, g.streakActiveMeta);
  for (const board of deps.catalog.snapshot.leaderboards) {
    if (board.rankBy !== 'streak') continue;
    const bk = deps.keys.board(board.id);
    const members = bk.members(board.start);
    const meta = await deps.redis.hvals(members);
    const groups = new Set(meta.map((m) => m.split('|')[2] ?? ''));
    groups.add('');
    await deps.redis.unlink(members, ...[...groups].map((grp) => bk.ranking(board.start, grp)));
    await deps.redis.incr(bk.version);
  }
}

const HIST_MAX = 100;

/** Every user id, from the per-shard user indexes. */
async function allUsers(deps: Deps): Promise<string[]> {
  const pipe = crossSlotPipeline(deps.redis);
  for (let shard = 0; shard < deps.keys.shards; shard++) pipe.zrange(deps.keys.shardUsers(shard), 0, -1);
  return (await execValues(pipe)).flatMap((v) => v as string[]);
}

/**
 * Recomputes the streaks of `ids` (default: every user) under the current settings, 500 users at a
 * time. A user whose latest ops are not in the history yet is left for a later pass: they are put in
 * the scheduler's recompute set (retried by every scheduler pass until done). Returns how many wait.
 */
export async function recomputeStreaks(deps: Deps, ids?: string[]): Promise<number> {
  const users = ids ?? (await allUsers(deps));
  const epoch = deps.catalog.snapshot.streak.epoch;
  const waiting: string[] = [];
  for (let i = 0; i < users.length; i += 500)
    waiting.push(...(await recomputeSome(deps, users.slice(i, i + 500))));
  const key = deps.keys.sched.streakRecompute;
  const done = users.filter((u) => !waiting.includes(u)).map((u) => `${epoch}|${u}`);
  if (done.length && ids) await deps.redis.srem(key, ...done);
  if (waiting.length) await deps.redis.sadd(key, ...waiting.map((u) => `${epoch}|${u}`));
  return waiting.length;
}

/** Scheduler pass: retries users whose recompute waited for the history writer (current epoch only). */
export async function retryStreakRecomputes(deps: Deps): Promise<number> {
  const key = deps.keys.sched.streakRecompute;
  const members = await deps.redis.srandmember(key, 2000);
  if (!members.length) return 0;
  const epoch = String(deps.catalog.snapshot.streak.epoch);
  const stale = members.filter((m) => m.slice(0, m.indexOf('|')) !== epoch);
  if (stale.length) await deps.redis.srem(key, ...stale);
  const ids = members.filter((m) => !stale.includes(m)).map((m) => m.slice(m.indexOf('|') + 1));
  return ids.length ? recomputeStreaks(deps, ids) : 0;
}

async function recomputeSome(deps: Deps, ids: string[]): Promise<string[]> {
  const snap = deps.catalog.snapshot;
  const s = snap.streak;
  if (!s.enabled || s.conditions.length === 0) return [];
  const since = s.enabledAt ?? new Date(0);
  const metricIds = s.conditions.map((c) => c.metricId);
  const [states, rows] = await Promise.all([
    deps.db
      .select({ userId: userStates.userId, seq: userStates.seq })
      .from(userStates)
      .where(inArray(userStates.userId, ids)),
    deps.db
      .select({
        userId: events.userId,
        metricId: events.metricId,
        valueMicros: events.valueMicros,
        localDate: events.localDate,
        created: events.created,
      })
      .from(events)
      .where(
        and(inArray(events.userId, ids), inArray(events.metricId, metricIds), gte(events.created, since)),
      )
      .orderBy(asc(events.userId), asc(events.seq)),
  ]);
  const seqOf = new Map(states.map((r) => [r.userId, r.seq]));
  const byUser = new Map<string, ActivityEvent[]>();
  for (const r of rows) {
    const list = byUser.get(r.userId) ?? [];
    byUser.set(r.userId, list);
    list.push({
      metricId: r.metricId,
      valueMicros: r.valueMicros,
      localDate: r.localDate,
      at: r.created.getTime(),
    });
  }
  const tzs = await execValues(
    ids.reduce((p, id) => p.hget(deps.keys.user(id).profile, 'tz'), crossSlotPipeline(deps.redis)),
  );
  const now = deps.clock.now();
  const retry: string[] = [];
  await Promise.all(
    ids.map(async (id, i) => {
      const seq = seqOf.get(id);
      if (seq === undefined) {
        retry.push(id);
        return;
      }
      const tz = (tzs[i] as string | null) ?? 'UTC';
      const date = localDate(now, tz);
      const r = computeStreak(
        s.frequency,
        s.mode,
        s.conditions,
        byUser.get(id) ?? [],
        periodIndex(s.frequency, date),
      );
      const k = deps.keys.user(id);
      const ok = await deps.redis.recomputeStreak(
        3,
        k.profile,
        k.streak,
        k.outbox,
        String(seq),
        JSON.stringify(recomputeInput(snap, r, { id, tz, date, now })),
      );
      if (ok !== 1) retry.push(id);
    }),
  );
  return retry;
}

function recomputeInput(
  snap: Snapshot,
  r: RecomputedStreak,
  u: { id: string; tz: string; date: string; now: number },
) {
  const s = snap.streak;
  const fields: string[] = [
    'epoch',
    String(s.epoch),
    'length',
    String(r.length),
    'curIdx',
    String(r.curIdx),
    'curMet',
    r.curMet ? '1' : '0',
    'lengthAt',
    String(r.lengthAt),
    'metAt',
    String(r.lengthAt),
    'started',
    r.started ?? '',
  ];
  if (r.lastMet !== undefined) fields.push('lastMet', String(r.lastMet));
  for (const c of s.conditions) fields.push(`s:${c.metricId}`, String(r.sums[c.metricId] ?? 0));
  const hist = r.periods
    .slice(-HIST_MAX)
    .map((p) => `${p.idx}:${p.length}`)
    .join(',');
  fields.push('hist', hist);
  const boards = snap.leaderboards
    .filter((b) => b.rankBy === 'streak' && leaderboardStatus(b, u.now) === 'active')
    .map((b) => ({ board: b, run: runContaining(b, u.date) }))
    .filter((x) => x.run !== null)
    .map((x) => ({ id: x.board.id, run: x.run!.start, value: String(r.length) }));
  const breakdownKeys = [
    ...new Set(
      snap.leaderboards.flatMap((b) =>
        b.breakdownAttributes.map((a) => snap.attributesById.get(a)?.key).filter((k): k is string => !!k),
      ),
    ),
  ];
  return {
    epoch: s.epoch,
    fields,
    length: r.length,
    lastMet: r.lastMet,
    started: r.started,
    longest: r.longest,
    periods: r.periods.map((p) => ({ ...p, freeze: false, pause: false })),
    breakdownKeys,
    record: { id: randomUUID(), user: u.id, now: u.now, tz: u.tz, date: u.date, freq: s.frequency, boards },
  };
}
