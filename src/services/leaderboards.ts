import { and, asc, desc, eq, sql } from 'drizzle-orm';
import { LRUCache } from 'lru-cache';
import type { LeaderboardRow, Snapshot } from '../catalog/snapshot';
import { leaderboardRankChanges, leaderboardRunResults } from '../db/schema';
import type { Deps } from '../deps';
import { crossSlotPipeline, execValues } from '../redis/batch';
import { type BoardMoveKeys, type BoardReply, moveOnBoard } from '../redis/board-moves';
import { unprocessable } from '../errors';
import { fromMicros } from '../engine/decimal';
import { leaderboardStatus, utcDate } from '../engine/leaderboard-status';
import { type Run, runByIndex, runContaining, runFinalizationMs } from '../engine/runs';
import { streakExpiry } from '../engine/streak-expiry';
import type { BoardMove, StreakState, UserOpResult } from '../engine/user-op-result';

/** One board move as the board script answered it (values already converted to numbers). */
export type { BoardMove } from '../engine/user-op-result';

/** Board values are integers in Redis: metric boards hold millionths. */
export const boardValue = (board: LeaderboardRow, raw: string | number) =>
  board.rankBy === 'metric' ? fromMicros(Number(raw)) : Number(raw);

/** Breakdown attribute keys of a board, in configuration order. */
export function breakdownKeys(snap: Snapshot, board: LeaderboardRow): string[] {
  return board.breakdownAttributes.map((id) => snap.attributesById.get(id)?.key ?? '');
}

/** The group key of a combination of breakdown values ('' for boards without breakdowns). */
export const groupKey = (values: string[]) => values.map(encodeURIComponent).join(',');

export function decodeGroup(snap: Snapshot, board: LeaderboardRow, group: string) {
  const keys = breakdownKeys(snap, board);
  const values = group === '' ? [] : group.split(',').map(decodeURIComponent);
  return keys.map((key, i) => ({ key, value: values[i] ?? '' }));
}

/** A value of a board script's reply as the board ranks it (null when absent). */
const replyValue = (board: LeaderboardRow, v: string | undefined) =>
  v === undefined || v === null ? null : boardValue(board, v);

/** A board move from the board script's reply (lua/lib/board.lua). */
export function boardMove(
  snap: Snapshot,
  board: LeaderboardRow,
  run: Run,
  group: string,
  reply: { prevRank?: number; rank?: number; prevValue?: string; value?: string; threshold?: string },
): BoardMove {
  // No closure per call: under tsx (esbuild's keepNames) every named function the code creates is
  // named by redefining its `name` property, a slow path that would be taken on every move.
  return {
    board,
    run,
    group,
    groupValues: decodeGroup(snap, board, group),
    prevRank: reply.prevRank ?? null,
    rank: reply.rank ?? null,
    prevValue: replyValue(board, reply.prevValue),
    value: replyValue(board, reply.value),
    threshold: replyValue(board, reply.threshold) ?? 0,
  };
}

/** What applyBoardUpdates needs of an op (its result, or an outbox record's replay of it). */
export type BoardUpdateInput = Pick<
  UserOpResult,
  'boards' | 'localDate' | 'breakdown' | 'seq' | 'now' | 'tz' | 'userId'
> & { streak: StreakState };

/** One board move to make: its board, run, keys and arguments (lua/updateBoard.lua). */
interface PlannedMove {
  board: LeaderboardRow;
  run: Run;
  group: string;
  keys: BoardMoveKeys;
  args: string[];
}

/**
 * The move of one of an op's board values; null when there is none to make: the board is gone, the value
 * is for another run than the board's run of the op's date, or a breakdown value is missing.
 */
function planMove(
  deps: Deps,
  snap: Snapshot,
  r: BoardUpdateInput,
  u: BoardUpdateInput['boards'][number],
): PlannedMove | null {
  const board = snap.leaderboardsById.get(u.id);
  if (!board) return null;
  const run = runContaining(board, r.localDate);
  if (!run || run.start !== u.run) return null;
  let group = '';
  if (board.breakdownAttributes.length) {
    const values = breakdownKeys(snap, board).map((k) => r.breakdown[k]);
    if (values.some((v) => v === undefined)) return null; // never entered without every breakdown value
    group = groupKey(values as string[]);
  }
  const streak = board.rankBy === 'streak';
  const bk = deps.keys.board(board.id);
  return {
    board,
    run,
    group,
    keys: {
      members: bk.members(run.start),
      ranking: bk.ranking(run.start, group),
      version: bk.version,
      changes: bk.changes,
      ...(streak ? { expiries: bk.expiries(run.start, group) } : {}),
    },
    args: [
      r.userId,
      u.value,
      String(r.seq),
      String(r.now),
      group,
      String(board.maxParticipants),
      streak ? String(streakExpiry(snap, r)) : '0',
      streak ? '1' : '0',
    ],
  };
}

/** A move's reply: the move, or the group the user entered the run in (a call again with it). */
function movedOrGroup(snap: Snapshot, m: PlannedMove, reply: BoardReply): BoardMove | string {
  if (reply.err === 'GROUP') return String(reply.group);
  return boardMove(snap, m.board, m.run, m.group, reply);
}

/**
 * Applies the board values an op produced: one move per board on the board's slot, travelling with
 * the process's other moves on the same board in this turn (src/redis/board-moves.ts).
 * Returns the moves, in configuration order. Prepared and read synchronously, with one wait for the
 * replies of all the op's boards rather than an async step per board.
 */
export async function applyBoardUpdates(deps: Deps, r: BoardUpdateInput): Promise<BoardMove[]> {
  const snap = deps.catalog.snapshot;
  const planned: PlannedMove[] = [];
  for (const u of r.boards) {
    const m = planMove(deps, snap, r, u);
    if (m) planned.push(m);
  }
  if (!planned.length) return [];
  const replies = await Promise.all(planned.map((m) => moveOnBoard(deps.redis, m.keys, m.args)));
  const moves: BoardMove[] = [];
  for (let i = 0; i < planned.length; i++) {
    const m = planned[i]!;
    let out = movedOrGroup(snap, m, replies[i]!);
    if (typeof out === 'string') {
      // The user entered this run in another group (its breakdowns changed since): once more with it.
      m.group = out;
      const bk = deps.keys.board(m.board.id);
      m.keys.ranking = bk.ranking(m.run.start, out);
      if (m.keys.expiries !== undefined) m.keys.expiries = bk.expiries(m.run.start, out);
      m.args[4] = out;
      out = movedOrGroup(snap, m, await moveOnBoard(deps.redis, m.keys, m.args));
      if (typeof out === 'string') continue;
    }
    moves.push(out);
  }
  return moves;
}

// ---------------------------------------------------------------- reads

/** The run a read refers to (semantics §6.6); a bad `run` date → 422. */
export function runForRead(board: LeaderboardRow, nowMs: number, today: string, runDate?: string): Run {
  const status = leaderboardStatus(board, nowMs);
  let current: Run | null;
  if (status === 'scheduled') current = runByIndex(board, 0);
  else if (status === 'finished') {
    const last = board.finishedAt ? utcDate(board.finishedAt.getTime()) : (board.end ?? today);
    current = runContaining(board, last < board.start ? board.start : last) ?? runByIndex(board, 0);
  } else {
    const d = board.end !== null && today > board.end ? board.end : today < board.start ? board.start : today;
    current = runContaining(board, d);
  }
  if (!current) throw unprocessable('The leaderboard has no run');
  if (runDate === undefined) return current;
  const run = runContaining(board, runDate);
  if (!run || run.index > current.index)
    throw unprocessable('run is outside the leaderboard or after its current run');
  return run;
}

export interface Ranked {
  userId: string;
  rank: number;
  value: number;
}

const userOf = (member: string) => member.slice(16);

/** Every ranked entry of a group, skipping streaks that have lapsed (streak boards only). O(n), n ≤ 1000. */
async function allRanked(
  deps: Deps,
  board: LeaderboardRow,
  run: Run,
  group: string,
  asOf = deps.clock.now(),
): Promise<Ranked[]> {
  const bk = deps.keys.board(board.id);
  const streak = board.rankBy === 'streak';
  // A streak board's broken streaks stay ranked until a move drops them: leave out those whose
  // expiry has passed, read from the ranking's expiry index (the lapsed ones only) in the same round
  // trip; from the members' entries when the index is out of step with the ranking (another size, or
  // a lapsed entry the ranking does not hold: see lua/lib/board.lua boardDropLapsed).
  const pipe = deps.redis.multi();
  pipe.zrange(bk.ranking(run.start, group), 0, -1, 'WITHSCORES');
  if (streak) {
    pipe.zcard(bk.expiries(run.start, group));
    pipe.zrange(bk.expiries(run.start, group), '-inf', asOf, 'BYSCORE');
  }
  const [flat, indexed, lapsed] = (await execValues(pipe)) as [string[], number?, string[]?];
  let entries: Array<{ member: string; userId: string; value: number }> = [];
  for (let i = 0; i < flat.length; i += 2) {
    const member = flat[i]!;
    entries.push({ member, userId: userOf(member), value: boardValue(board, -Number(flat[i + 1])) });
  }
  if (streak && entries.length) {
    const gone = new Set(lapsed);
    const inStep = indexed === entries.length && (gone.size === 0 || matchedAll(entries, gone));
    if (inStep) {
      if (gone.size) entries = entries.filter((e) => !gone.has(e.member));
    } else {
      const meta = await deps.redis.hmget(bk.members(run.start), ...entries.map((e) => e.userId));
      entries = entries.filter((_, i) => {
        const expires = Number(meta[i]?.split('|')[4] ?? 0);
        return expires === 0 || expires > asOf;
      });
    }
  }
  return entries.map((e, i) => ({ userId: e.userId, value: e.value, rank: i + 1 }));
}

/** Whether every member of `wanted` is one of the entries'. */
function matchedAll(entries: ReadonlyArray<{ member: string }>, wanted: ReadonlySet<string>): boolean {
  let found = 0;
  for (const e of entries) if (wanted.has(e.member)) found++;
  return found === wanted.size;
}

/** An op whose board values unappliedBoardMoves checks (an outbox record's). */
export interface BoardValuesOf {
  userId: string;
  seq: number;
  localDate: string;
  boards: UserOpResult['boards'];
}

/**
 * Of each op's board values (`boards`: an outbox record's), those whose move is not applied yet. The
 * board script writes the op's seq into the user's member entry ("value|changedAt|group|seq|expires")
 * with every update it applies, ranked or not, and ignores one whose seq it has already seen: an entry
 * at this seq or a later one means applied. A value for another run than the board's run of the op's
 * date, or for a run already finalised (its rankings are its snapshot, its Redis keys are removed), is
 * never applied (applyBoardUpdates would not write the first; the second would bring back dropped keys).
 * The entries are read with one HMGET per board run for all the ops (a pass of the history writer holds
 * hundreds of records; on a Cluster every one of them has moves to check).
 */
export async function unappliedBoardMoves(
  deps: Deps,
  ops: BoardValuesOf[],
): Promise<Array<UserOpResult['boards']>> {
  const snap = deps.catalog.snapshot;
  const now = deps.clock.now();
  // Per board run's members key, the users to read and, per op, where its answer will be.
  const byKey = new Map<string, string[]>();
  const checks = ops.map((op) =>
    op.boards.flatMap((u) => {
      const board = snap.leaderboardsById.get(u.id);
      const run = board && runContaining(board, op.localDate);
      if (!board || !run || run.start !== u.run || isFinalised(board, run, now)) return [];
      const key = deps.keys.board(u.id).members(u.run);
      let users = byKey.get(key);
      if (!users) {
        users = [];
        byKey.set(key, users);
      }
      users.push(op.userId);
      return [{ value: u, key, at: users.length - 1 }];
    }),
  );
  const keys = [...byKey.keys()];
  const metas = await Promise.all(keys.map((key) => deps.redis.hmget(key, ...byKey.get(key)!)));
  const metaOf = new Map(keys.map((key, i) => [key, metas[i]!]));
  return checks.map((list, i) =>
    list
      .filter((c) => !(Number(metaOf.get(c.key)![c.at]?.split('|')[3] ?? -1) >= ops[i]!.seq))
      .map((c) => c.value),
  );
}

/** A window of ranked users: from `offset`, or from the user's index + offset when userId is given. */
export async function rankingsWindow(
  deps: Deps,
  board: LeaderboardRow,
  run: Run,
  group: string,
  opts: { offset: number; limit: number; userId?: string | undefined },
): Promise<Ranked[]> {
  if (isFinalised(board, run, deps.clock.now())) {
    const all = await snapshotRankings(deps, board, run, group);
    return windowOf(all, opts);
  }
  if (board.rankBy === 'streak') return windowOf(await allRanked(deps, board, run, group), opts);
  return (await liveWindow(deps, board, run, group, opts)).ranked;
}

/**
 * A window of a live ranking (not finalised, not a streak board). A window around a user is one
 * script call that also reads the board's ranking version (`version`; undefined for windows from an
 * offset), so a cached read that missed needs no second command.
 */
export async function liveWindow(
  deps: Deps,
  board: LeaderboardRow,
  run: Run,
  group: string,
  opts: { offset: number; limit: number; userId?: string | undefined },
): Promise<{ ranked: Ranked[]; version?: string | null }> {
  const bk = deps.keys.board(board.id);
  const zkey = bk.ranking(run.start, group);
  let start = opts.offset;
  let flat: Array<string | number>;
  let version: string | null | undefined;
  if (opts.userId !== undefined) {
    // One call: the version, the user's member entry, their index, and the window around it.
    const reply = await deps.redis.readWindow(
      3,
      bk.members(run.start),
      zkey,
      bk.version,
      opts.userId,
      String(opts.offset),
      String(opts.limit),
    );
    version = reply[0] === null || reply[0] === undefined ? null : String(reply[0]);
    if (reply[1] === null || reply[1] === undefined) return { ranked: [], version };
    start = Number(reply[1]);
    flat = reply.slice(2) as Array<string | number>;
  } else {
    if (opts.limit === 0) return { ranked: [] };
    flat = await deps.redis.zrange(zkey, start, start + opts.limit - 1, 'WITHSCORES');
  }
  const ranked: Ranked[] = [];
  for (let i = 0; i < flat.length; i += 2) {
    ranked.push({
      userId: userOf(String(flat[i])),
      value: boardValue(board, -Number(flat[i + 1])),
      rank: start + i / 2 + 1,
    });
  }
  return { ranked, version };
}

function windowOf(
  all: Ranked[],
  opts: { offset: number; limit: number; userId?: string | undefined },
): Ranked[] {
  let start = opts.offset;
  if (opts.userId !== undefined) {
    const idx = all.findIndex((e) => e.userId === opts.userId);
    if (idx < 0) return [];
    start = Math.max(0, idx + opts.offset);
  }
  return all.slice(start, start + opts.limit);
}

/** The user's rank and value in a run (both null when not ranked). */
export async function userStanding(
  deps: Deps,
  board: LeaderboardRow,
  run: Run,
  userId: string,
): Promise<{ rank: number | null; value: number | null; group: string | null }> {
  if (isFinalised(board, run, deps.clock.now())) {
    // A finalised run is read from its snapshot (its Redis keys are gone once the scheduler has taken it).
    const r = leaderboardRunResults;
    const rows = await deps.db
      .select({ userId: r.userId, rank: r.rank, value: r.value, group: r.groupKey })
      .from(r)
      .where(and(eq(r.leaderboardId, board.id), eq(r.runStart, run.start)))
      .orderBy(sql`${r.userId} = ${userId} desc`)
      .limit(1);
    const me = rows[0];
    if (me?.userId === userId) return { rank: me.rank, value: me.value, group: me.group };
    if (me) return { rank: null, value: null, group: null };
  }
  const meta = await deps.redis.hget(deps.keys.board(board.id).members(run.start), userId);
  if (!meta) return { rank: null, value: null, group: null };
  const group = meta.split('|')[2] ?? '';
  const [me] = await rankingsWindow(deps, board, run, group, { offset: 0, limit: 1, userId });
  return me ? { rank: me.rank, value: me.value, group } : { rank: null, value: null, group };
}

/**
 * The user's most recent rank/value changes in a run, oldest → newest: the rank history in Postgres
 * (src/workers/board-changes.ts records it from the board's change stream, so it lags by the
 * scheduler's interval at most).
 */
export async function userHistory(
  deps: Deps,
  board: LeaderboardRow,
  run: Run,
  userId: string,
  count: number,
) {
  if (count === 0) return [];
  const c = leaderboardRankChanges;
  const rows = await deps.db
    .select()
    .from(c)
    .where(and(eq(c.leaderboardId, board.id), eq(c.userId, userId), eq(c.runStart, run.start)))
    .orderBy(desc(c.streamSeq), desc(c.created))
    .limit(count);
  const conv = (v: number | null) => (v === null ? null : boardValue(board, v));
  return rows.reverse().map((e) => ({
    timestamp: e.created.toISOString(),
    previousRank: e.previousRank,
    rank: e.rank,
    previousValue: conv(e.previousValue),
    value: conv(e.value),
  }));
}

/**
 * When a run's rankings became final: 12:00 UTC the day after its end, or when an operator finished
 * the board (semantics §6.2), whichever is first; null while the run is still open.
 */
export function finalisedAt(board: LeaderboardRow, run: Run, nowMs: number): number | null {
  const byEnd = run.end !== null ? runFinalizationMs(run.end) : Number.POSITIVE_INFINITY;
  const byOperator =
    board.status === 'finished' && board.finishedAt ? board.finishedAt.getTime() : Number.POSITIVE_INFINITY;
  const at = Math.min(byEnd, byOperator);
  return at <= nowMs ? at : null;
}

export const isFinalised = (board: LeaderboardRow, run: Run, nowMs: number) =>
  finalisedAt(board, run, nowMs) !== null;

/**
 * Rankings of a finalised run, from its Postgres snapshot; the snapshot is taken on first need
 * (the scheduler takes it too) and never changes afterwards.
 */
export async function snapshotRankings(
  deps: Deps,
  board: LeaderboardRow,
  run: Run,
  group: string,
): Promise<Ranked[]> {
  const read = () =>
    deps.db
      .select()
      .from(leaderboardRunResults)
      .where(
        and(
          eq(leaderboardRunResults.leaderboardId, board.id),
          eq(leaderboardRunResults.runStart, run.start),
          eq(leaderboardRunResults.groupKey, group),
        ),
      )
      .orderBy(asc(leaderboardRunResults.rank));
  let rows = await read();
  if (rows.length === 0) {
    await finaliseRun(deps, board, run);
    rows = await read();
  }
  return rows.map((r) => ({ userId: r.userId, rank: r.rank, value: r.value }));
}

/** Copies every group of a run from Redis into leaderboard_run_results (idempotent). */
export async function finaliseRun(deps: Deps, board: LeaderboardRow, run: Run): Promise<number> {
  const bk = deps.keys.board(board.id);
  const members = await deps.redis.hgetall(bk.members(run.start));
  const groups = new Set(Object.values(members).map((m) => m.split('|')[2] ?? ''));
  // Lapsed streaks are judged at the moment the run became final, whenever the snapshot is taken.
  const asOf = finalisedAt(board, run, deps.clock.now()) ?? deps.clock.now();
  let written = 0;
  for (const group of groups) {
    const ranked = await allRanked(deps, board, run, group, asOf);
    if (!ranked.length) continue;
    await deps.db
      .insert(leaderboardRunResults)
      .values(
        ranked.map((e) => ({
          leaderboardId: board.id,
          runStart: run.start,
          runEnd: run.end,
          groupKey: group,
          userId: e.userId,
          rank: e.rank,
          value: e.value,
          finalizedAt: new Date(asOf),
        })),
      )
      .onConflictDoNothing();
    written += ranked.length;
  }
  return written;
}

/**
 * Removes a finalised run's rankings and member entries from Redis, once its snapshot is in Postgres
 * (every read of a finalised run uses the snapshot), and the scheduler's leaderboard.changed markers of
 * its groups: a board's Redis state holds its open runs only, so it does not grow with every run a user
 * ever took part in, nor with every run at all. Returns how many keys were removed.
 */
export async function dropFinalisedRun(deps: Deps, board: LeaderboardRow, run: Run): Promise<number> {
  const { groups, keys } = await runKeys(deps, board.id, run.start);
  let removed = 0;
  for (const key of keys) removed += await deps.redis.unlink(key);
  // The scheduler's markers of the run's groups: when each last sent leaderboard.changed (kept to
  // coalesce them and to tell their webhook event ids apart), unless a change is still to be sent.
  const done = deps.keys.sched.done;
  const runGroups = groups.map((g) => `${board.id}|${run.start}|${g}`);
  const dirty = await deps.redis.hmget(done, ...runGroups.map((m) => `lbd|${m}`));
  const settled = runGroups.filter((_, i) => dirty[i] === null).map((m) => `lbc|${m}`);
  if (settled.length) await deps.redis.hdel(done, ...settled);
  return removed;
}

/**
 * A board run's Redis keys: its members hash, and the ranking (and streak expiry index) of each
 * breakdown group its members entered (read from their entries; '' always), with those groups.
 */
export async function runKeys(
  deps: Deps,
  boardId: string,
  runStart: string,
): Promise<{ groups: string[]; keys: string[] }> {
  const bk = deps.keys.board(boardId);
  const members = await deps.redis.hvals(bk.members(runStart));
  const groups = [...new Set(['', ...members.map((m) => m.split('|')[2] ?? '')])];
  const keys = [
    bk.members(runStart),
    ...groups.flatMap((g) => [bk.ranking(runStart, g), bk.expiries(runStart, g)]),
  ];
  return { groups, keys };
}

/** The runs of a board whose snapshot has been taken (their Redis state may be gone). */
export async function snapshottedRuns(deps: Deps, boardId: string): Promise<Set<string>> {
  const r = leaderboardRunResults;
  const rows = await deps.db.selectDistinct({ run: r.runStart }).from(r).where(eq(r.leaderboardId, boardId));
  return new Set(rows.map((x) => x.run));
}

/**
 * Display names of ranked users, cached briefly (a top-100 read would otherwise look up 100 profiles),
 * by key prefix and user id, so servers sharing a process (tests) never read each other's names.
 */
export const NAME_TTL_MS = 5000;
const nameCache = new LRUCache<string, { name: string | null }>({ max: 100_000, ttl: NAME_TTL_MS });
/** Moves whenever this process learns a new display name (cached rankings hold names). */
let nameEpoch = 0;
export const namesEpoch = () => nameEpoch;

const nameKey = (deps: Pick<Deps, 'keys'>, userId: string) => `${deps.keys.prefix}\u0000${userId}`;

/** Called by user ops that set a name, so this process never serves its own stale name. */
export function rememberUserName(deps: Pick<Deps, 'keys'>, userId: string, name: string): void {
  const key = nameKey(deps, userId);
  if (nameCache.get(key)?.name !== name) nameEpoch++;
  nameCache.set(key, { name });
}

export async function userNames(deps: Deps, ids: string[]): Promise<Array<string | null>> {
  const out: Array<string | null> = new Array(ids.length).fill(null);
  const missing: number[] = [];
  const cacheKeys = ids.map((id) => nameKey(deps, id));
  cacheKeys.forEach((key, i) => {
    const hit = nameCache.get(key);
    if (hit) out[i] = hit.name;
    else missing.push(i);
  });
  if (missing.length === 0) return out;
  // One socket write on a single Redis; one command per user on Cluster (profiles in different slots).
  const pipe = crossSlotPipeline(deps.redis);
  for (const i of missing) pipe.hget(deps.keys.user(ids[i]!).hash, 'name');
  const fetched = await execValues(pipe);
  missing.forEach((i, k) => {
    out[i] = (fetched[k] as string | null | undefined) ?? null;
    nameCache.set(cacheKeys[i]!, { name: out[i] ?? null });
  });
  return out;
}
