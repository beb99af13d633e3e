import { randomUUID } from 'node:crypto';
import { and, asc, gte, inArray } from 'drizzle-orm';
import type { Snapshot } from '../catalog/snapshot';
import { events } from '../db/schema';
import { historySeqs } from '../rebuild/user-states';
import type { Deps } from '../deps';
import { crossSlotPipeline, execValues } from '../redis/batch';
import { splitUserHash } from '../redis/user-hash';
import { toMicros } from '../engine/decimal';
import { leaderboardStatus } from '../engine/leaderboard-status';
import { type Frequency, isValidTimeZone, localDate, periodIndex } from '../engine/periods';
import { runContaining } from '../engine/runs';
import { streakExpiry } from '../engine/streak-expiry';
import type { StreakState } from '../engine/user-op-result';
import { applyBoardUpdates, runKeys } from './leaderboards';

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
    const { keys } = await runKeys(deps, board.id, board.start);
    await deps.redis.unlink(...keys);
    await deps.redis.incr(deps.keys.board(board.id).version);
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
export async function recomputeStreaks(
  deps: Deps,
  ids?: string[],
  onChunk?: () => Promise<unknown>,
): Promise<number> {
  const users = ids ?? (await allUsers(deps));
  const epoch = deps.catalog.snapshot.streak.epoch;
  const waiting: string[] = [];
  for (let i = 0; i < users.length; i += 500) {
    waiting.push(...(await recomputeSome(deps, users.slice(i, i + 500))));
    await onChunk?.();
  }
  const key = deps.keys.sched.streakRecompute;
  const done = users.filter((u) => !waiting.includes(u)).map((u) => `${epoch}|${u}`);
  if (done.length && ids) await deps.redis.srem(key, ...done);
  if (waiting.length) await deps.redis.sadd(key, ...waiting.map((u) => `${epoch}|${u}`));
  return waiting.length;
}

// A new epoch's work (emptying the indexes, recomputing every streak) must survive a crash between
// the settings commit and its end: a marker "sr|<epoch>" in the scheduler's done hash, written just
// before the commit (src/admin/streak-settings.ts) and removed when the work is done, holds the
// heartbeat (clock ms) of the process doing it. A scheduler pass that finds the current epoch's marker
// without a heartbeat for STREAK_EPOCH_LEASE_MS does the work again (src/workers/scheduler).

/** A marker without a heartbeat for this long belongs to a process that died: another takes over. */
export const STREAK_EPOCH_LEASE_MS = 60_000;

const epochMarker = (epoch: number) => `sr|${epoch}`;

/** Records that `epoch`'s work is pending, by this process (call before committing the epoch). */
export async function markStreakEpoch(deps: Deps, epoch: number): Promise<void> {
  const done = deps.keys.sched.done;
  await deps.redis
    .multi()
    .hset(done, epochMarker(epoch), String(deps.clock.now()))
    .hdel(done, epochMarker(epoch - 1))
    .exec();
}

/** Forgets `epoch`'s marker (its settings were not committed). Best effort. */
export async function unmarkStreakEpoch(deps: Deps, epoch: number): Promise<void> {
  await deps.redis.hdel(deps.keys.sched.done, epochMarker(epoch)).catch(() => {});
}

/**
 * A new epoch's work: empties the previous epoch's indexes, then (`recompute`) recomputes every
 * user's streak under the current settings, beating the marker's heartbeat; removes the marker at the
 * end. On a failure it gives the marker up (heartbeat 0), so that the next scheduler pass retries.
 */
export async function settleStreakEpoch(deps: Deps, epoch: number, recompute: boolean): Promise<void> {
  const done = deps.keys.sched.done;
  const marker = epochMarker(epoch);
  const beat = () => deps.redis.hset(done, marker, String(deps.clock.now()));
  try {
    await resetStreakIndexes(deps);
    if (recompute) await recomputeStreaks(deps, undefined, beat);
  } catch (err) {
    await deps.redis.hset(done, marker, '0').catch(() => {});
    throw err;
  }
  await deps.redis.hdel(done, marker);
}

/**
 * Scheduler pass: finishes the current epoch's work when the process that committed it died before
 * its end (its marker has no fresh heartbeat). Not knowing which change it was, it recomputes every
 * streak whenever streaks are on: right after any of them. True when it did the work.
 */
export async function resumeStreakEpoch(deps: Deps): Promise<boolean> {
  const snap = deps.catalog.snapshot;
  const epoch = snap.streak.epoch;
  const marker = epochMarker(epoch);
  const beat = await deps.redis.hget(deps.keys.sched.done, marker);
  const now = deps.clock.now();
  if (beat === null || now - Number(beat) < STREAK_EPOCH_LEASE_MS) return false;
  await deps.redis.hset(deps.keys.sched.done, marker, String(now));
  deps.logger.warn({ epoch }, 'resuming the streak reset and recompute of a settings change');
  await settleStreakEpoch(deps, epoch, snap.streak.enabled && snap.streak.conditions.length > 0);
  return true;
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
  const [seqOf, rows] = await Promise.all([
    historySeqs(deps, ids),
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
    ids.reduce((p, id) => p.hget(deps.keys.user(id).hash, 'tz'), crossSlotPipeline(deps.redis)),
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
        k.hash,
        k.outbox,
        k.streakHistory,
        String(seq),
        JSON.stringify(recomputeInput(snap, r, { id, tz, date, now })),
      );
      if (ok !== 1) retry.push(id);
    }),
  );
  return retry;
}

/** Attribute keys of every leaderboard's breakdowns (the record's battrs). */
function breakdownKeysOf(snap: Snapshot): string[] {
  return [
    ...new Set(
      snap.leaderboards.flatMap((b) =>
        b.breakdownAttributes.map((a) => snap.attributesById.get(a)?.key).filter((k): k is string => !!k),
      ),
    ),
  ];
}

/**
 * After a user's pauses changed (src/admin/streak-pauses.ts): the expiry their streak leaderboard
 * entries and their active streak ranking entry carry was computed at their last op, without the new
 * pauses, so a streak kept alive only by a pause would drop off as lapsed (semantics §4.9, §6.4).
 * Rewrites both with the expiry under the current pauses: the user's streak boards of the current run
 * they are on now, and, through an outbox record (op "recompute", streak unchanged, written by
 * lua/recomputeStreak.lua), the rankings (the history writer) and the history rebuild replays. Nothing
 * is done for a streak that has already lapsed. True when something was rewritten.
 */
export async function refreshStreakExpiry(deps: Deps, userId: string): Promise<boolean> {
  const snap = deps.catalog.snapshot;
  const s = snap.streak;
  if (!s.enabled || s.conditions.length === 0) return false;
  const k = deps.keys.user(userId);
  const battrKeys = breakdownKeysOf(snap);
  // An op in between changes the profile's seq: the script then writes nothing, and we read again.
  for (let attempt = 0; attempt < 5; attempt++) {
    const { profile, streak: raw } = splitUserHash(await deps.redis.hgetall(k.hash));
    const seq = profile.seq;
    if (seq === undefined || Number(raw.epoch) !== s.epoch) return false;
    const tzRaw = profile.tz;
    const tz = tzRaw && isValidTimeZone(tzRaw) ? tzRaw : 'UTC';
    const streak: StreakState = {
      length: Number(raw.length ?? 0),
      freezes: Number(raw.freezes ?? 0),
      ...(raw.lastMet !== undefined && raw.lastMet !== '' ? { lastMet: Number(raw.lastMet) } : {}),
      pauses: raw.pauses ? (JSON.parse(raw.pauses) as Array<[number, number]>) : [],
    };
    const now = deps.clock.now();
    if (streak.length <= 0 || streakExpiry(snap, { tz, streak }) <= now) return false;
    const date = localDate(now, tz);
    const boards = await currentStreakBoards(deps, userId, date, now, streak.length);
    // When the length was reached: the rankings' tie order (their meta is "<reachedAt>|<expires>").
    const reachedAt = Number(raw.lengthAt ?? 0) || now;
    const input = {
      epoch: s.epoch,
      fields: [],
      length: streak.length,
      lastMet: streak.lastMet,
      started: raw.started || undefined,
      longest: 0,
      periods: [],
      pauses: streak.pauses,
      breakdownKeys: battrKeys,
      record: { id: randomUUID(), user: userId, now: reachedAt, tz, date, freq: s.frequency, boards },
    };
    const ok = await deps.redis.recomputeStreak(
      3,
      k.hash,
      k.outbox,
      k.streakHistory,
      seq,
      JSON.stringify(input),
    );
    if (ok !== 1) continue;
    const breakdown: Record<string, string> = {};
    for (const key of battrKeys) {
      const v = profile[`a:${key}`];
      if (v !== undefined) breakdown[key] = v;
    }
    if (boards.length) {
      await applyBoardUpdates(deps, {
        boards,
        localDate: date,
        breakdown,
        seq: Number(seq) + 1,
        now,
        tz,
        userId,
        streak,
      });
    }
    return true;
  }
  return false;
}

/** The active streak boards whose current run (on the user's `date`) has the user, with `length`. */
async function currentStreakBoards(deps: Deps, userId: string, date: string, now: number, length: number) {
  const out: Array<{ id: string; run: string; value: string }> = [];
  for (const b of deps.catalog.snapshot.leaderboards) {
    if (b.rankBy !== 'streak' || leaderboardStatus(b, now) !== 'active') continue;
    const run = runContaining(b, date);
    if (!run) continue;
    if (await deps.redis.hexists(deps.keys.board(b.id).members(run.start), userId))
      out.push({ id: b.id, run: run.start, value: String(length) });
  }
  return out;
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
  // The period history key's new value (lua/lib/streak.lua), written by the script with the fields.
  const hist = r.periods
    .slice(-HIST_MAX)
    .map((p) => `${p.idx}:${p.length}`)
    .join(',');
  const boards = snap.leaderboards
    .filter((b) => b.rankBy === 'streak' && leaderboardStatus(b, u.now) === 'active')
    .map((b) => ({ board: b, run: runContaining(b, u.date) }))
    .filter((x) => x.run !== null)
    .map((x) => ({ id: x.board.id, run: x.run!.start, value: String(r.length) }));
  const breakdownKeys = breakdownKeysOf(snap);
  return {
    epoch: s.epoch,
    fields,
    hist,
    length: r.length,
    lastMet: r.lastMet,
    started: r.started,
    longest: r.longest,
    periods: r.periods.map((p) => ({ ...p, freeze: false, pause: false })),
    breakdownKeys,
    record: { id: randomUUID(), user: u.id, now: u.now, tz: u.tz, date: u.date, freq: s.frequency, boards },
  };
}
