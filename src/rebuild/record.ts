import { type BulkPart, bulkPart } from '../db/bulk';
import type { Snapshot } from '../catalog/snapshot';
import type { leaderboardUpdates } from '../db/schema';
import type { Deps } from '../deps';
import { breakdownKeys, groupKey } from '../services/leaderboards';
import { runContaining } from '../engine/runs';
import { streakExpiry } from '../engine/streak-expiry';
import type { OutboxEntry } from '../redis/user-script';

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

/**
 * The `events.boards` text of an event's record (schema.ts: the entries `leaderboard_updates_all`
 * expands; no value can hold a separator: ids are UUIDs, runs dates, group keys URI-encoded), null when
 * it moved no board. One text value per event instead of a row per board: the history's Postgres
 * writes fewer rows and index entries per event.
 */
export function eventBoards(snap: Snapshot, r: OutboxEntry['record']): string | null {
  const updates = boardUpdatesOf(snap, r);
  if (!updates.length) return null;
  return updates
    .map((u) => {
      const head = `${u.leaderboardId}|${u.runStart}|${u.value}|${u.expires}|${u.ord}`;
      return u.groupKey === null || u.groupKey === undefined ? head : `${head}|${u.groupKey}`;
    })
    .join(';');
}

/**
 * The user state fields an op wrote, as `events.state` and `user_state_changes.state` keep them
 * (src/db/schema.ts; src/rebuild/user-states.ts folds them): its streak and counters hash fields as
 * flat [field, value, ...] lists, and its active streak index entry when its streak changed; null when
 * it wrote none.
 */
export function stateChange(snap: Snapshot, r: OutboxEntry['record']): string | null {
  const out: { s?: string[]; c?: string[]; a?: string } = {};
  if (r.sh?.length) out.s = r.sh;
  if (r.cw?.length) out.c = r.cw;
  const st = r.streak;
  if (st?.changed) out.a = st.length > 0 ? `${st.length}|${r.now}|${expiryOf(snap, r)}` : '';
  return out.s || out.c || out.a !== undefined ? JSON.stringify(out) : null;
}

/**
 * Rows that make Redis state rebuildable from Postgres (src/rebuild/rebuild.ts) for the ops that have
 * no event row to carry them (all but `inEvents`: see stateChange and eventBoards): each op's state
 * change and sequence number, and every board update with its commit order. Written with the history
 * (src/workers/history-writer.ts), only ever inserted and keyed by the op, so a batch written twice
 * changes nothing (`insertOnly` is the tail, see writeBatch).
 */
export function rebuildParts(
  deps: Deps,
  entries: OutboxEntry[],
  insertOnly: string,
  inEvents: ReadonlySet<string> = new Set(),
): BulkPart[] {
  const snap = deps.catalog.snapshot;
  const changes: Array<{ userId: string; seq: number; state: string | null }> = [];
  const updates: BoardUpdate[] = [];
  for (const { record: r } of entries) {
    if (inEvents.has(r.id)) continue;
    changes.push({ userId: r.user, seq: r.seq, state: stateChange(snap, r) });
    updates.push(...boardUpdatesOf(snap, r));
  }
  const stateChanges = bulkPart(
    'user_state_changes',
    [
      { column: 'user_id', type: 'text', value: (c) => c.userId },
      { column: 'seq', type: 'int8', value: (c) => c.seq },
      { column: 'state', type: 'text', value: (c) => c.state },
    ],
    changes,
    insertOnly,
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
  return [stateChanges, boardUpdates];
}
