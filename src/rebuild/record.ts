import { sql } from 'drizzle-orm';
import { type BulkPart, bulkPart } from '../db/bulk';
import type { Snapshot } from '../catalog/snapshot';
import type { leaderboardUpdates } from '../db/schema';
import type { Deps } from '../deps';
import { breakdownKeys, groupKey } from '../services/leaderboards';
import { runContaining } from '../engine/runs';
import { streakExpiry } from '../engine/streak-expiry';
import type { OutboxEntry } from '../redis/user-script';

/** Sets the fields of a flat [field, value, ...] list on `out` (later ones win, as HSET). */
const assignPairs = (out: Record<string, string>, flat: string[] | undefined): void => {
  if (!flat) return;
  for (let i = 0; i + 1 < flat.length; i += 2) out[flat[i]!] = flat[i + 1]!;
};

/** Ms of Redis TIME µs (sortable integer; below 2^53 until the year 2255). */
export const ordOf = (ts: string | undefined, nowMs: number) => (ts ? Number(ts) : nowMs * 1000);

/** The settings epoch of a record (older records carry none: the current one). */
export const epochOf = (deps: Deps, r: OutboxEntry['record']) =>
  r.epoch ?? deps.catalog.snapshot.streak.epoch;

/** streakExpiry results per configuration snapshot, by what they depend on besides it. */
const expiries = new WeakMap<Snapshot, Map<string, number>>();

/**
 * streakExpiry of a record, remembered per snapshot: the records of a pass share a few streak states
 * (last met period, freezes, pauses) and zones, and each is asked for it two or three times (user
 * state index, streak boards, global streak index).
 */
export function expiryOf(snap: Snapshot, r: OutboxEntry['record']): number {
  const s = r.streak;
  if (s.length <= 0 || s.lastMet === undefined) return 0;
  let memo = expiries.get(snap);
  if (!memo) {
    memo = new Map();
    expiries.set(snap, memo);
  }
  const key = `${s.lastMet}|${s.freezes}|${r.tz}|${s.pauses?.length ? JSON.stringify(s.pauses) : ''}`;
  let at = memo.get(key);
  if (at === undefined) {
    at = streakExpiry(snap, r);
    if (memo.size >= 4096) memo.clear();
    memo.set(key, at);
  }
  return at;
}

/** The breakdown group the API sent a board update with, or null when it sent none (see applyBoardUpdates). */
function groupFor(snap: Snapshot, boardId: string, run: string, r: OutboxEntry['record']): string | null {
  const board = snap.leaderboardsById.get(boardId);
  if (!board) return null;
  const containing = runContaining(board, r.date);
  if (!containing || containing.start !== run) return null;
  const values = breakdownKeys(snap, board).map((k) => r.battrs?.[k]);
  if (values.some((v) => v === undefined)) return null;
  return groupKey(values as string[]);
}

type BoardUpdate = Omit<typeof leaderboardUpdates.$inferInsert, 'created'> & { created: number };

/** The per-run leaderboard values of a record, as rebuild replays them. */
function boardUpdatesOf(snap: Snapshot, r: OutboxEntry['record']): BoardUpdate[] {
  if (!r.boards.length) return [];
  const ord = ordOf(r.ts, r.now);
  return r.boards.map((b) => {
    const board = snap.leaderboardsById.get(b.id);
    return {
      opId: r.id,
      leaderboardId: b.id,
      runStart: b.run,
      userId: r.user,
      seq: r.seq,
      value: Number(b.value),
      groupKey: groupFor(snap, b.id, b.run, r),
      expires: board?.rankBy === 'streak' ? expiryOf(snap, r) : 0,
      ord,
      created: r.now,
    };
  });
}

const SEPARATOR = /[|;]/;

/**
 * The `events.boards` text of an event's record (schema.ts: the entries `leaderboard_updates_all`
 * expands), null when it moved no board, or undefined when a value would hold a separator (none can:
 * ids are UUIDs, runs dates, group keys URI-encoded), so that its updates are written as rows instead.
 * One text value per event instead of a row per board: the history's Postgres writes fewer rows and
 * index entries per event.
 */
export function eventBoards(snap: Snapshot, r: OutboxEntry['record']): string | null | undefined {
  const updates = boardUpdatesOf(snap, r);
  if (!updates.length) return null;
  const entries: string[] = [];
  for (const u of updates) {
    const group = u.groupKey ?? null;
    if (SEPARATOR.test(u.runStart) || SEPARATOR.test(u.leaderboardId) || (group && SEPARATOR.test(group)))
      return undefined;
    const head = `${u.leaderboardId}|${u.runStart}|${u.value}|${u.expires}|${u.ord}`;
    entries.push(group === null ? head : `${head}|${group}`);
  }
  return entries.join(';');
}

/**
 * Rows that make Redis state rebuildable from Postgres (src/rebuild/rebuild.ts): each user's merged
 * streak/counters fields and op sequence, and every board update with its commit order. Written with
 * the history (src/workers/history-writer.ts), idempotently (a batch written twice changes nothing):
 * `insertOnly` is the tail of the board updates, which are only ever inserted (see writeBatch). The
 * board updates of the ops in `boardsInEvent` travel in their event rows instead (eventBoards).
 */
export function rebuildParts(
  deps: Deps,
  entries: OutboxEntry[],
  insertOnly: string,
  boardsInEvent: ReadonlySet<string> = new Set(),
): BulkPart[] {
  const snap = deps.catalog.snapshot;
  const states = new Map<
    string,
    {
      seq: number;
      streak: Record<string, string>;
      counters: Record<string, string>;
      indexes: Record<string, string>;
    }
  >();
  const updates: BoardUpdate[] = [];
  const ordered = [...entries].sort((a, b) => a.record.seq - b.record.seq);
  for (const { record: r } of ordered) {
    let s = states.get(r.user);
    if (!s) {
      s = { seq: 0, streak: {}, counters: {}, indexes: {} };
      states.set(r.user, s);
    }
    s.seq = Math.max(s.seq, r.seq);
    assignPairs(s.streak, r.sh);
    assignPairs(s.counters, r.cw);
    const st = r.streak;
    if (st?.changed) {
      s.indexes.active = st.length > 0 ? `${st.length}|${r.now}|${expiryOf(snap, r)}` : '';
    }
    if (!boardsInEvent.has(r.id)) updates.push(...boardUpdatesOf(snap, r));
  }
  const rows = [...states.entries()].map(([userId, s]) => ({ userId, ...s }));
  const userStates = bulkPart(
    'user_states',
    [
      { column: 'user_id', type: 'text', value: (r) => r.userId },
      { column: 'seq', type: 'int8', value: (r) => r.seq },
      { column: 'streak', type: 'jsonb', value: (r) => r.streak },
      { column: 'counters', type: 'jsonb', value: (r) => r.counters },
      { column: 'indexes', type: 'jsonb', value: (r) => r.indexes },
    ],
    rows,
    // Each part holds the fields as the pass's last op left them. A pass older than what is stored (a
    // claimed straggler, or one of another writer) adds the fields it changed that a newer one did not
    // change: the stored fields win over its own.
    sql`on conflict (user_id) do update set seq = greatest(user_states.seq, excluded.seq),
      streak = case when excluded.seq > user_states.seq then user_states.streak || excluded.streak
        else excluded.streak || user_states.streak end,
      counters = case when excluded.seq > user_states.seq then user_states.counters || excluded.counters
        else excluded.counters || user_states.counters end,
      indexes = case when excluded.seq > user_states.seq then user_states.indexes || excluded.indexes
        else excluded.indexes || user_states.indexes end,
      updated = now()`,
  );
  const boardUpdates = bulkPart(
    'leaderboard_updates',
    [
      { column: 'op_id', type: 'uuid', value: (u) => u.opId },
      { column: 'leaderboard_id', type: 'uuid', value: (u) => u.leaderboardId },
      { column: 'run_start', type: 'date', value: (u) => u.runStart },
      { column: 'user_id', type: 'text', value: (u) => u.userId },
      { column: 'seq', type: 'int8', value: (u) => u.seq },
      { column: 'value', type: 'int8', value: (u) => u.value },
      { column: 'group_key', type: 'text', value: (u) => u.groupKey },
      { column: 'expires', type: 'int8', value: (u) => u.expires },
      { column: 'ord', type: 'int8', value: (u) => u.ord },
      { column: 'created', type: 'epoch_ms', value: (u) => u.created },
    ],
    updates,
    insertOnly,
  );
  return [userStates, boardUpdates];
}
