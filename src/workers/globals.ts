// The indexes that span users (user count and ids, achievement completion counts, points totals per
// system, current and longest streak rankings) are maintained by the history writer from the outbox,
// off the event path (ARCHITECTURE.md "Bounded per-user state"): their reads (rarity, points summaries,
// streak rankings) lag live state by the writer's lag. On a single Redis a chunk's index updates and
// its acknowledgement are one atomic script (lua/ackWithGlobals.lua), so each record counts exactly
// once; on Cluster the indexes live in their own slot and are updated a chunk of records a call
// before the acknowledgement (a record applied again, by a writer that failed or died between the
// two, counts twice in the user count and completion counts: verify-state reports it, rebuild
// recomputes them; its totals and streak are left as they are, lib/globals.lua). Records may come in
// any order.
import type { Deps } from '../deps';
import { expiryOf } from '../rebuild/record';
import { crossSlotPipeline, execValues } from '../redis/batch';
import { byOutboxMaster, isCluster } from '../redis/client';
import type { Cluster } from 'ioredis';
import type { OutboxEntry, OutboxRecord } from '../redis/user-script';

/** The first 7 keys of lib/globals.lua (the points totals of each system follow them). */
export function fixedGlobalKeys(deps: Deps): string[] {
  const g = deps.keys.global;
  return [
    g.userCount,
    g.achievementCompletions,
    g.streakActive,
    g.streakActiveMeta,
    g.streakLongest,
    g.streakLongestAt,
    g.appliedSeq,
  ];
}

/** What one outbox record changes in the indexes that span users (lib/globals.lua). */
export interface GlobalsRecord {
  user: string;
  seq: number;
  /** Commit time, ms, as its digits (when a longest length was first reached). */
  now: string;
  created: boolean;
  /** The current streak: unchanged, set to `length` (with its `meta`), or ended. */
  streak: '' | 'set' | 'del';
  length: number;
  /** "<reachedAtMs>|<expiresAtMs>" of a set streak, else ''. */
  meta: string;
  /** The op extended the streak (a set streak's length was reached by it). */
  extended: boolean;
  /** Achievement ids the op completed. */
  completions: string[];
  /** [systemId, the user's total after the op, or '' for a created user's 0 when absent]. */
  totals: Array<[string, string]>;
}

/** The record's part in the indexes, or null when it changes none. */
export function globalsOf(deps: Deps, r: OutboxRecord): GlobalsRecord | null {
  const totals = new Map<string, string>();
  // A new user counts (with 0) in every system that existed when the record was committed (as rebuild).
  if (r.created)
    for (const sys of deps.catalog.snapshot.systems)
      if (sys.created.getTime() <= r.now) totals.set(sys.id, '');
  for (const group of r.awards) {
    const last = group.awards[group.awards.length - 1];
    if (last) totals.set(group.sys, String(last.total));
  }
  const s = r.streak;
  const streak = s?.changed ? (s.length > 0 ? 'set' : 'del') : '';
  if (!r.created && r.completions.length === 0 && totals.size === 0 && streak === '') return null;
  return {
    user: r.user,
    seq: r.seq,
    now: String(r.now),
    created: r.created,
    streak,
    length: s?.length ?? 0,
    meta: streak === 'set' ? `${r.now}|${expiryOf(deps.catalog.snapshot, r)}` : '',
    extended: s?.extended === true,
    completions: r.completions.map((c) => c.id),
    totals: [...totals],
  };
}

/**
 * A chunk's records folded into lib/globals.lua applyGlobals's flat ARGV: what each index needs, in
 * one pass here rather than per record in Redis. Per guarded field (K[7]: a user's current streak, a
 * user's total in a system) only the chunk's newest record counts (by seq: the script applies it if
 * it is newer than the one that last set the field); per user only the chunk's longest length, and
 * the time of its first record of that length that extended the streak (the script compares it with
 * the stored longest). `totalsKey` gives the KEYS index of a system's points totals zset.
 */
export function globalsArgs(records: GlobalsRecord[], totalsKey: (systemId: string) => number): string[] {
  let created = 0;
  const completions = new Map<string, number>();
  /** Guarded field -> the chunk's newest seq for it and its position (1-based) in fieldSeqs. */
  const fields = new Map<string, { seq: number; at: number }>();
  const fieldSeqs: Array<[string, number]> = [];
  /** The field's position if the record is the newest of the chunk for it so far, else null. */
  const newest = (field: string, seq: number): number | null => {
    const f = fields.get(field);
    if (!f) {
      fieldSeqs.push([field, seq]);
      fields.set(field, { seq, at: fieldSeqs.length });
      return fieldSeqs.length;
    }
    if (seq <= f.seq) return null;
    f.seq = seq;
    fieldSeqs[f.at - 1]![1] = seq;
    return f.at;
  };
  /** Per system: user -> [total, field position] of the user's newest total; users created in the chunk. */
  const totals = new Map<string, { set: Map<string, [string, number]>; absent: Set<string> }>();
  const streaks = new Map<string, { r: GlobalsRecord; at: number }>();
  const longest = new Map<string, { len: number; first: string }>();
  for (const r of records) {
    if (r.created) created++;
    for (const id of r.completions) completions.set(id, (completions.get(id) ?? 0) + 1);
    for (const [sys, total] of r.totals) {
      let t = totals.get(sys);
      if (!t) {
        t = { set: new Map(), absent: new Set() };
        totals.set(sys, t);
      }
      if (total === '') t.absent.add(r.user);
      else {
        const at = newest(`${r.user}\0${sys}`, r.seq);
        if (at !== null) t.set.set(r.user, [total, at]);
      }
    }
    if (r.streak !== '') {
      const at = newest(r.user, r.seq);
      if (at !== null) streaks.set(r.user, { r, at });
    }
    if (r.streak === 'set') {
      const l = longest.get(r.user);
      const first = r.extended ? r.now : '';
      if (!l) longest.set(r.user, { len: r.length, first });
      else if (r.length > l.len) {
        l.len = r.length;
        l.first = first;
      } else if (r.length === l.len && l.first === '') l.first = first;
    }
  }
  const out = [String(records.length), String(created), String(completions.size)];
  for (const [id, n] of completions) out.push(id, String(n));
  out.push(String(fieldSeqs.length));
  for (const [field, seq] of fieldSeqs) out.push(field, String(seq));
  out.push(String(totals.size));
  for (const [sys, t] of totals) {
    out.push(String(totalsKey(sys)), String(t.set.size));
    for (const [user, [total, at]] of t.set) out.push(user, total, String(at));
    // A created user's 0 counts only when the chunk sets no total of the user's: a total the script
    // leaves is older than one already there, so the user is in the zset either way.
    const absent = [...t.absent].filter((u) => !t.set.has(u));
    out.push(String(absent.length), ...absent);
  }
  out.push(String(streaks.size));
  for (const [user, { r, at }] of streaks) out.push(user, r.streak, String(r.length), r.meta, String(at));
  out.push(String(longest.size));
  for (const [user, l] of longest) out.push(user, String(l.len), l.first);
  return out;
}

/** Records per atomic call: long enough to amortise the call, short enough not to hold Redis. */
const CHUNK = 64;

/**
 * One chunk's call arguments: KEYS (the fixed keys, then the points totals zsets the records name,
 * and whatever `key` adds) and the chunk's folded index updates (globalsArgs).
 */
function chunkArgs(deps: Deps, chunk: OutboxEntry[]) {
  const g = deps.keys.global;
  const keys = fixedGlobalKeys(deps);
  const index = new Map<string, number>();
  const key = (k: string) => {
    let i = index.get(k);
    if (i === undefined) {
      keys.push(k);
      i = keys.length;
      index.set(k, i);
    }
    return i;
  };
  const records: GlobalsRecord[] = [];
  for (const e of chunk) {
    const u = globalsOf(deps, e.record);
    if (u) records.push(u);
  }
  return { keys, key, args: globalsArgs(records, (sys) => key(g.pointsTotals(sys))), n: records.length };
}

/**
 * Applies the index updates of written outbox entries and acknowledges (and deletes) them, in
 * outbox order, CHUNK records a call. `group` is the history consumer group. On a single Redis each
 * chunk's updates and acknowledgement are one atomic call (lua/ackWithGlobals.lua). On Cluster the
 * indexes live in their own slot: the chunks' updates (lua/updateGlobals.lua) go first, then the
 * acknowledgement.
 */
export async function ackWithGlobals(deps: Deps, entries: OutboxEntry[], group: string): Promise<void> {
  if (isCluster(deps.redis)) {
    const pipe = crossSlotPipeline(deps.redis);
    let any = false;
    for (let i = 0; i < entries.length; i += CHUNK) {
      const { keys, args, n } = chunkArgs(deps, entries.slice(i, i + CHUNK));
      if (n === 0) continue;
      any = true;
      pipe.updateGlobals(keys.length, ...keys, ...args);
    }
    if (any) await execValues(pipe);
    await ack(deps.redis, entries, group);
    return;
  }
  for (let i = 0; i < entries.length; i += CHUNK) {
    const chunk = entries.slice(i, i + CHUNK);
    const { keys, key, args: updates } = chunkArgs(deps, chunk);
    // lua/ackWithGlobals.lua's flat ARGV: the group, the index updates, then the entries by stream.
    const args = [group, ...updates];
    const byStream = idsByStream(chunk);
    args.push(String(byStream.size));
    for (const [stream, ids] of byStream) args.push(String(key(stream)), String(ids.length), ...ids);
    await deps.redis.ackWithGlobals(keys.length, ...keys, ...args);
  }
}

/** At most this many entry ids per lua/ackOutboxes.lua call, so one call never holds Redis for long. */
const ACK_IDS_PER_CALL = 512;

/**
 * On a Cluster, acknowledges written entries and removes every entry the group is done with, as a
 * single Redis does (lib/streams.lua): one lua/ackOutboxes.lua call per master and at most
 * ACK_IDS_PER_CALL ids, for the streams the client's slot table says it serves, instead of an XACK and
 * an XDEL per stream. A stream the call could not acknowledge (its slot moved meanwhile) and one whose
 * master the client does not know are acknowledged on their own (lua/ackStream.lua), routed by their key.
 */
async function ack(redis: Cluster, entries: OutboxEntry[], group: string): Promise<void> {
  const { byNode, alone } = byOutboxMaster(redis, idsByStream(entries), ([stream]) => stream);
  const calls: Array<Promise<unknown>> = [];
  const failed = new Set<string>();
  for (const list of byNode.values()) {
    let args: string[] = [];
    let ids = 0;
    const send = () => {
      calls.push(
        redis.ackOutboxes(1, args[0]!, group, ...args).then((refused) => {
          for (let k = 0; k < refused.length; k += 2) failed.add(refused[k]!);
        }),
      );
      args = [];
      ids = 0;
    };
    for (const [stream, streamIds] of list) {
      args.push(stream, String(streamIds.length), ...streamIds);
      ids += streamIds.length;
      if (ids >= ACK_IDS_PER_CALL) send();
    }
    if (args.length) send();
  }
  await Promise.all(calls);
  for (const list of byNode.values()) for (const pair of list) if (failed.has(pair[0])) alone.push(pair);
  await Promise.all(alone.map(([stream, ids]) => redis.ackStream(1, stream, group, ...ids)));
}

/** The entries' ids by outbox stream, in their order. */
function idsByStream(entries: OutboxEntry[]): Map<string, string[]> {
  const byStream = new Map<string, string[]>();
  for (const e of entries) {
    const ids = byStream.get(e.stream);
    if (ids) ids.push(e.entryId);
    else byStream.set(e.stream, [e.entryId]);
  }
  return byStream;
}
