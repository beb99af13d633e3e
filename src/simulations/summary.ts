/**
 * What a simulation compares, per user: points totals, levels, achievements, streak length and board
 * values, read from one Redis key prefix (a replay's, or the live one for the self-check; reads only)
 * and named by key, so that the current and the draft configuration compare item by item.
 */
import type { LeaderboardRow, Snapshot } from '../catalog/snapshot';
import { splitUserHash } from '../redis/user-hash';
import type { Deps } from '../deps';
import { boardValue } from '../services/leaderboards';
import { levelOf } from '../engine/levels';
import { readStreak } from '../services/streak-reads';
import { crossSlotPipeline, execValues } from '../redis/batch';
import type { Keys } from '../redis/keys';

export interface UserSummary {
  /** System key → total. */
  points: Record<string, number>;
  /** System key → key of the highest level reached (null: none). */
  levels: Record<string, string | null>;
  /** Achievement keys, sorted. */
  achievements: string[];
  /** Current streak length as of the end of the window. */
  streak: number;
  /** Board key → the user's newest run and value in it. */
  boards: Record<string, { run: string; value: number } | null>;
}

function boardEntry(board: LeaderboardRow, raw: string | undefined) {
  if (!raw) return null;
  const bar = raw.indexOf('|');
  return { run: raw.slice(0, bar), value: boardValue(board, raw.slice(bar + 1)) };
}

/** Reads the summaries of `userIds` under `keys` as of `asOf` (users without state are absent). */
export async function readSummaries(
  deps: Pick<Deps, 'redis'>,
  keys: Keys,
  snap: Snapshot,
  userIds: string[],
  asOf: number,
  batch = 500,
): Promise<Map<string, UserSummary>> {
  const out = new Map<string, UserSummary>();
  for (let i = 0; i < userIds.length; i += batch) {
    const ids = userIds.slice(i, i + batch);
    const pipe = crossSlotPipeline(deps.redis);
    for (const id of ids) {
      pipe.hgetall(keys.user(id).hash);
    }
    const res = await execValues(pipe);
    ids.forEach((id, j) => {
      const u = splitUserHash((res[j] ?? {}) as Record<string, string>);
      const { created, tz } = u.profile;
      if (!created) return;
      const { points, achievements: achs, streak, boards } = u;
      const s: UserSummary = { points: {}, levels: {}, achievements: [], streak: 0, boards: {} };
      for (const sys of snap.systems) {
        const total = Number(points[sys.id] ?? 0);
        s.points[sys.key] = total;
        s.levels[sys.key] = levelOf(sys, total)?.key ?? null;
      }
      s.achievements = Object.keys(achs)
        .map((aid) => snap.achievementsById.get(aid)?.key)
        .filter((k): k is string => k !== undefined)
        .sort();
      s.streak = readStreak(snap, tz ? { tz } : {}, streak, asOf).view.length;
      for (const b of snap.leaderboards) s.boards[b.key] = boardEntry(b, boards[b.id]);
      out.set(id, s);
    });
  }
  return out;
}

/** What differs between two summaries of one user ("what" names, for the self-check). */
export function differences(a: UserSummary | undefined, b: UserSummary | undefined, withBoards: boolean) {
  if (!a || !b) return a === b ? [] : [{ what: 'user', a: a ? 'exists' : null, b: b ? 'exists' : null }];
  const out: Array<{ what: string; a: unknown; b: unknown }> = [];
  for (const k of new Set([...Object.keys(a.points), ...Object.keys(b.points)])) {
    if ((a.points[k] ?? null) !== (b.points[k] ?? null))
      out.push({ what: `points ${k}`, a: a.points[k] ?? null, b: b.points[k] ?? null });
    if ((a.levels[k] ?? null) !== (b.levels[k] ?? null))
      out.push({ what: `level ${k}`, a: a.levels[k] ?? null, b: b.levels[k] ?? null });
  }
  if (a.achievements.join(',') !== b.achievements.join(','))
    out.push({ what: 'achievements', a: a.achievements, b: b.achievements });
  if (a.streak !== b.streak) out.push({ what: 'streak', a: a.streak, b: b.streak });
  if (withBoards) {
    for (const k of new Set([...Object.keys(a.boards), ...Object.keys(b.boards)])) {
      const x = a.boards[k] ?? null;
      const y = b.boards[k] ?? null;
      if (JSON.stringify(x) !== JSON.stringify(y)) out.push({ what: `leaderboard ${k}`, a: x, b: y });
    }
  }
  return out;
}
