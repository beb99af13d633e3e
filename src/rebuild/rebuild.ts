/**
 * Rebuild: recomputes every piece of Redis state from Postgres (ARCHITECTURE "Failure rules": Redis data
 * lost). Per-user keys and global indexes come from src/rebuild/state.ts; leaderboards are replayed
 * update by update through lua/updateBoard.lua in commit order, so rankings, member metadata, groups,
 * evictions and rank histories come out as they were.
 *
 * Run it with application traffic stopped: an op committed in Redis while its user is being rebuilt
 * would be overwritten (its history still reaches Postgres, so a second rebuild repairs it).
 */
import { joinUserHash } from '../redis/user-hash';
import type { Deps } from '../deps';
import { snapshottedRuns } from '../services/leaderboards';
import { DAY_MS, idempotencyKeys } from '../engine/idempotency';
import { isCluster } from '../redis/client';
import { HISTORY_GROUP, HistoryWriter } from '../workers/history-writer';
import {
  allUserIds,
  boardsWithUpdates,
  boardUpdates,
  type GlobalState,
  globalCounts,
  globalEntries,
  loadContext,
  loadUserStates,
  type RebuildContext,
  type UserState,
} from './state';
import { crossSlotPipeline, execValues } from '../redis/batch';

export interface RebuildOptions {
  /** Users per batch (default 200). */
  batchSize?: number;
  /** Write pending outbox records to Postgres first (default true). */
  drain?: boolean;
  /** Progress callback (CLI). */
  onProgress?: (msg: string) => void;
}

export interface RebuildSummary {
  users: number;
  drained: number;
  leaderboards: number;
  boardUpdates: number;
  keysWritten: number;
  durationMs: number;
}

/** Every key name a user's state may use (award lists of every system ever created). */
export function userKeyNames(ctx: RebuildContext, s: Pick<UserState, 'keys'>): string[] {
  const k = s.keys;
  return [
    k.hash,
    ...Object.values(k.legacy()),
    ...ctx.systems.map((sys) => k.awards(sys.id)),
    k.streakHistory,
  ];
}

/** The idempotency hashes a user may have now: the forever hash and the live window buckets. */
export function idempotencyKeyNames(deps: Deps, s: Pick<UserState, 'keys'>): string[] {
  const windowMs = deps.config.IDEMPOTENCY_WINDOW_DAYS * DAY_MS;
  const k = idempotencyKeys(s.keys, windowMs, deps.clock.now());
  return [s.keys.idempotency, ...(windowMs > 0 ? [k.current, k.previous!] : [])];
}

const nonEmpty = (h: Record<string, string>) => Object.keys(h).length > 0;
const flat = (h: Record<string, string>) => Object.entries(h).flat();

/** Writes one batch of users: every key of the user is replaced as a whole. */
async function writeUsers(deps: Deps, ctx: RebuildContext, states: UserState[]): Promise<number> {
  const pipe = crossSlotPipeline(deps.redis);
  let keys = 0;
  for (const s of states) {
    for (const key of [...userKeyNames(ctx, s), ...idempotencyKeyNames(deps, s)]) pipe.unlink(key);
    const hash = joinUserHash(s);
    if (nonEmpty(hash)) {
      pipe.hset(s.keys.hash, ...flat(hash));
      keys++;
    }
    for (const [key, h] of Object.entries(s.idem)) {
      pipe.hset(key, ...flat(h));
      const at = s.idemExpireAt[key];
      if (at !== undefined) pipe.pexpire(key, Math.max(1, at - deps.clock.now()));
      keys++;
    }
    pipe.zadd(s.keys.users, String(s.created), s.userId);
    if (s.streakHistory) {
      pipe.set(s.keys.streakHistory, s.streakHistory);
      keys++;
    }
    for (const [sys, list] of Object.entries(s.awards)) {
      if (!list.length) continue;
      pipe.rpush(s.keys.awards(sys), ...list);
      keys++;
    }
  }
  await execValues(pipe);
  return keys;
}

/** The global index keys: replaced as a whole. */
async function writeGlobals(deps: Deps, ctx: RebuildContext, g: GlobalState): Promise<number> {
  const k = deps.keys.global;
  const pipe = crossSlotPipeline(deps.redis);
  const all = [
    k.userCount,
    k.achievementCompletions,
    k.streakActive,
    k.streakActiveMeta,
    k.streakLongest,
    k.streakLongestAt,
    k.appliedSeq,
    ...ctx.systems.map((s) => k.pointsTotals(s.id)),
  ];
  for (const key of all) pipe.unlink(key);
  let keys = 0;
  const zadd = (key: string, m: Record<string, number>) => {
    const args = Object.entries(m).flatMap(([id, score]) => [String(score), id]);
    for (let i = 0; i < args.length; i += 2000) pipe.zadd(key, ...args.slice(i, i + 2000));
    if (args.length) keys++;
  };
  const hset = (key: string, h: Record<string, string>) => {
    if (!nonEmpty(h)) return;
    pipe.hset(key, ...flat(h));
    keys++;
  };
  if (g.userCount !== '0') {
    pipe.set(k.userCount, g.userCount);
    keys++;
  }
  hset(k.achievementCompletions, g.completions);
  for (const [sys, m] of Object.entries(g.pointsTotals)) zadd(k.pointsTotals(sys), m);
  zadd(k.streakActive, g.streakActive);
  hset(k.streakActiveMeta, g.streakActiveMeta);
  zadd(k.streakLongest, g.streakLongest);
  hset(k.streakLongestAt, g.streakLongestAt);
  hset(k.appliedSeq, g.appliedSeq);
  await execValues(pipe);
  return keys;
}

/** Every key of a board (all runs, groups, members, histories). Maintenance only: SCAN. */
export async function boardKeys(deps: Deps, boardId: string): Promise<string[]> {
  const pattern = `${deps.keys.prefix}:{lb:${boardId}}:*`;
  const nodes = isCluster(deps.redis) ? deps.redis.nodes('master') : [deps.redis];
  const found: string[] = [];
  for (const node of nodes) {
    let cursor = '0';
    do {
      const [next, batch] = await node.scan(cursor, 'MATCH', pattern, 'COUNT', 1000);
      cursor = next;
      found.push(...batch);
    } while (cursor !== '0');
  }
  return found;
}

/** Deletes a board's keys and replays its updates in commit order. Returns how many were replayed. */
async function replayBoard(deps: Deps, ctx: RebuildContext, boardId: string): Promise<number> {
  const old = await boardKeys(deps, boardId);
  for (let i = 0; i < old.length; i += 500) await deps.redis.unlink(...old.slice(i, i + 500));
  const board = ctx.boards.find((b) => b.id === boardId);
  const max = String(board?.maxParticipants ?? 1000);
  const streak = board?.rankBy === 'streak' ? '1' : '0';
  const bk = deps.keys.board(boardId);
  // Finalised runs whose snapshot is taken are read from it; their Redis state was dropped.
  const done = await snapshottedRuns(deps, boardId);
  const rows = (await boardUpdates(deps, boardId)).filter((u) => !done.has(u.runStart));
  for (let i = 0; i < rows.length; i += 500) {
    const pipe = crossSlotPipeline(deps.redis);
    for (const u of rows.slice(i, i + 500)) {
      // No change stream: the rank history the replay implies is already in leaderboard_rank_changes.
      // A streak board's ranking has its expiry index as the last key.
      const keys = [bk.members(u.runStart), bk.ranking(u.runStart, u.group), bk.version];
      if (streak === '1') keys.push(bk.expiries(u.runStart, u.group));
      pipe.updateBoard(
        keys.length,
        ...keys,
        u.userId,
        String(u.value),
        String(u.seq),
        String(u.created),
        u.group,
        max,
        String(u.expires),
        streak,
      );
    }
    await execValues(pipe);
  }
  return rows.length;
}

/** Consumer groups of every outbox stream (a writer that cached them survives a wiped Redis). */
async function ensureOutboxGroups(deps: Deps): Promise<void> {
  for (const stream of deps.keys.outboxes) {
    try {
      await deps.redis.xgroup('CREATE', stream, HISTORY_GROUP, '0', 'MKSTREAM');
    } catch (err) {
      if (!String((err as Error).message).includes('BUSYGROUP')) throw err;
    }
  }
}

/** Recomputes all Redis state from Postgres history. */
export async function rebuildState(deps: Deps, opts: RebuildOptions = {}): Promise<RebuildSummary> {
  const started = Date.now();
  const log = opts.onProgress ?? (() => {});
  let drained = 0;
  if (opts.drain !== false) {
    const writer = new HistoryWriter(deps, { consumer: 'rebuild', claimIdleMs: 0 });
    for (let n = await writer.drainOnce(); n > 0; n = await writer.drainOnce()) drained += n;
    log(`outbox drained: ${drained} records`);
  }
  const ctx = await loadContext(deps);
  const ids = await allUserIds(deps);
  const batch = opts.batchSize ?? 200;
  // The shards' user indexes are shared by their users: replaced as a whole, user by user below.
  const clear = crossSlotPipeline(deps.redis);
  for (let shard = 0; shard < deps.config.USER_SHARDS; shard++) clear.unlink(deps.keys.shardUsers(shard));
  await execValues(clear);
  let g: GlobalState | undefined;
  let keysWritten = 0;
  for (let i = 0; i < ids.length; i += batch) {
    const states = await loadUserStates(deps, ctx, ids.slice(i, i + batch));
    keysWritten += await writeUsers(deps, ctx, states);
    g = globalEntries(ctx, states, g);
    log(`users ${Math.min(i + batch, ids.length)}/${ids.length}`);
  }
  g = globalEntries(ctx, [], g);
  Object.assign(g, await globalCounts(deps));
  keysWritten += await writeGlobals(deps, ctx, g);
  const boardIds = [...new Set([...ctx.boards.map((b) => b.id), ...(await boardsWithUpdates(deps))])];
  let replayed = 0;
  for (const id of boardIds) replayed += await replayBoard(deps, ctx, id);
  log(`leaderboards ${boardIds.length}, updates replayed ${replayed}`);
  await ensureOutboxGroups(deps);
  return {
    users: ids.length,
    drained,
    leaderboards: boardIds.length,
    boardUpdates: replayed,
    keysWritten,
    durationMs: Date.now() - started,
  };
}

export type { RebuildContext };
