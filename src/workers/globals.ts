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
import { isCluster } from '../redis/client';
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

/** updateGlobals arguments of one record (A[1..9+n]) and its totals [systemId, total | ''], or null. */
export function globalsOf(
  deps: Deps,
  r: OutboxRecord,
): { args: string[]; totals: Array<[string, string]> } | null {
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
  const meta = streak === 'set' ? `${r.now}|${expiryOf(deps.catalog.snapshot, r)}` : '';
  return {
    args: [
      r.user,
      String(r.seq),
      String(r.now),
      r.created ? '1' : '0',
      streak,
      String(s?.length ?? 0),
      meta,
      s?.extended ? '1' : '0',
      String(r.completions.length),
      ...r.completions.map((c) => c.id),
    ],
    totals: [...totals],
  };
}

/** Records per atomic call: long enough to amortise the call, short enough not to hold Redis. */
const CHUNK = 64;

/**
 * One chunk's call arguments: KEYS (the fixed keys, then the points totals zsets the records name,
 * and whatever `key` adds) and the records' flat ARGV (lib/globals.lua globalsRecords: R, then per
 * record its A, its number of totals and their (KEYS index, total) pairs).
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
  const records = [''];
  let n = 0;
  for (const e of chunk) {
    const u = globalsOf(deps, e.record);
    if (!u) continue;
    n++;
    for (const a of u.args) records.push(a);
    records.push(String(u.totals.length));
    for (const [id, total] of u.totals) records.push(String(key(g.pointsTotals(id))), total);
  }
  records[0] = String(n);
  return { keys, key, records, n };
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
      const { keys, records, n } = chunkArgs(deps, entries.slice(i, i + CHUNK));
      if (n === 0) continue;
      any = true;
      pipe.updateGlobals(keys.length, ...keys, ...records);
    }
    if (any) await execValues(pipe);
    await ack(deps, entries, group);
    return;
  }
  for (let i = 0; i < entries.length; i += CHUNK) {
    const chunk = entries.slice(i, i + CHUNK);
    const { keys, key, records } = chunkArgs(deps, chunk);
    // lua/ackWithGlobals.lua's flat ARGV: the group, the records, then the entries by stream.
    const args = [group, ...records];
    const byStream = idsByStream(chunk);
    args.push(String(byStream.size));
    for (const [stream, ids] of byStream) args.push(String(key(stream)), String(ids.length), ...ids);
    await deps.redis.ackWithGlobals(keys.length, ...keys, ...args);
  }
}

/** Acknowledges and deletes entries, one pipeline over their streams. */
async function ack(deps: Deps, entries: OutboxEntry[], group: string): Promise<void> {
  const done = crossSlotPipeline(deps.redis);
  for (const [stream, ids] of idsByStream(entries)) {
    done.xack(stream, group, ...ids);
    done.xdel(stream, ...ids);
  }
  await execValues(done);
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
