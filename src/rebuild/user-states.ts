/**
 * A user's stored state as rebuild and verify need it: the streak and counters hash fields as last
 * written, the active streak index entry, and the last op's sequence number. Each op's changes are kept
 * with the op (`events.state`, or `user_state_changes` for ops without an event row: src/db/schema.ts,
 * written by src/rebuild/record.ts stateChange), and folded here in op order, as HSET applied them.
 * `user_states` holds what versions before migration 0010 merged there: the base the changes fold over.
 */
import { inArray, sql } from 'drizzle-orm';
import { events, userStateChanges, userStates } from '../db/schema';
import type { Deps } from '../deps';

export interface StoredState {
  userId: string;
  seq: number;
  streak: Record<string, string>;
  counters: Record<string, string>;
  indexes: Record<string, string>;
}

/** One op's state change as stored: its user, sequence number and change (stateChange's JSON, or null). */
export interface StateChange {
  userId: string;
  seq: number | null;
  state: string | null;
}

/** Sets the fields of a flat [field, value, ...] list on `out`; with `onlyNew`, those it lacks only. */
function assignPairs(out: Record<string, string>, flat: string[] | undefined, onlyNew: boolean): void {
  if (!flat) return;
  for (let i = 0; i + 1 < flat.length; i += 2) {
    if (onlyNew && Object.hasOwn(out, flat[i]!)) continue;
    out[flat[i]!] = flat[i + 1]!;
  }
}

function apply(s: StoredState, state: string | null, onlyNew: boolean): void {
  if (state === null) return;
  const c = JSON.parse(state) as { s?: string[]; c?: string[]; a?: string };
  assignPairs(s.streak, c.s, onlyNew);
  assignPairs(s.counters, c.c, onlyNew);
  if (c.a !== undefined && !(onlyNew && Object.hasOwn(s.indexes, 'active'))) s.indexes.active = c.a;
}

/**
 * Each user's state: its `user_states` row (if any) with its changes folded over it. Changes after the
 * row's seq apply in op order, later ones winning; changes at or before it (an op written after the
 * migration that an earlier version had not written yet) add only the fields the row lacks, newest
 * first: the stored fields win, as the earlier versions' merge did.
 */
export function foldStates(
  bases: Array<Omit<StoredState, 'userId'> & { userId: string }>,
  changes: StateChange[],
): Map<string, StoredState> {
  const out = new Map<string, StoredState>();
  for (const b of bases) {
    out.set(b.userId, {
      userId: b.userId,
      seq: b.seq,
      streak: { ...b.streak },
      counters: { ...b.counters },
      indexes: { ...b.indexes },
    });
  }
  const byUser = new Map<string, StateChange[]>();
  for (const c of changes) {
    if (c.seq === null) continue;
    const list = byUser.get(c.userId);
    if (list) list.push(c);
    else byUser.set(c.userId, [c]);
  }
  for (const [userId, list] of byUser) {
    let s = out.get(userId);
    if (!s) {
      s = { userId, seq: 0, streak: {}, counters: {}, indexes: {} };
      out.set(userId, s);
    }
    const baseSeq = s.seq;
    list.sort((a, b) => a.seq! - b.seq!);
    let older = 0;
    while (older < list.length && list[older]!.seq! <= baseSeq) older++;
    for (let i = older - 1; i >= 0; i--) apply(s, list[i]!.state, true);
    for (let i = older; i < list.length; i++) {
      apply(s, list[i]!.state, false);
      s.seq = list[i]!.seq!;
    }
  }
  return out;
}

/**
 * What the states of `userIds` fold from besides their events: the rows of `user_states` and the other
 * ops' changes (foldStates takes both with the events' changes).
 */
export async function stateSources(deps: Deps, userIds: string[]) {
  const [bases, changes] = await Promise.all([
    deps.db.select().from(userStates).where(inArray(userStates.userId, userIds)),
    deps.db.select().from(userStateChanges).where(inArray(userStateChanges.userId, userIds)),
  ]);
  return { bases, changes };
}

/** The stored states of `userIds` (what rebuild would restore; tests read them). */
export async function storedStates(deps: Deps, userIds: string[]): Promise<Map<string, StoredState>> {
  if (!userIds.length) return new Map();
  const [{ bases, changes }, eventChanges] = await Promise.all([
    stateSources(deps, userIds),
    deps.db
      .select({ userId: events.userId, seq: events.seq, state: events.state })
      .from(events)
      .where(inArray(events.userId, userIds)),
  ]);
  return foldStates(bases, [...changes, ...eventChanges]);
}

/**
 * The last op sequence number the history holds for each of `userIds` (users with none are absent):
 * the highest of their `user_states` row, events and other ops' changes.
 */
export async function historySeqs(deps: Deps, userIds: string[]): Promise<Map<string, number>> {
  if (!userIds.length) return new Map();
  const rows = await deps.db.execute<{ user_id: string; seq: string }>(sql`
    select user_id, max(seq)::text as seq from (
      select user_id, seq from ${userStates} where ${inArray(userStates.userId, userIds)}
      union all
      select user_id, seq from ${userStateChanges} where ${inArray(userStateChanges.userId, userIds)}
      union all
      select user_id, seq from ${events} where ${inArray(events.userId, userIds)} and seq is not null
    ) s group by user_id`);
  return new Map(rows.map((r) => [r.user_id, Number(r.seq)]));
}
