// The webhook wire objects an op commits with (src/engine/plan.ts opWire: ~1 KB of JSON per plan and
// boost set) are stored once in Postgres (wire_snapshots), content-addressed, and the user script
// carries only their id into the outbox record: the API sends ~1 KB less per script call, Redis
// appends and keeps ~1 KB less per outbox entry, and the history writer reads less. The writer resolves
// the ids of a pass with one query (resolveWires).
//
// The event path never waits on Postgres for more than the first op of a new configuration in a
// process; if Postgres does not answer then, the op carries the JSON itself (the record format accepts
// both), and the id is tried again a little later.
import { createHash } from 'node:crypto';
import { inArray } from 'drizzle-orm';
import { wireSnapshots } from '../db/schema';
import type { Deps } from '../deps';
import { type OutboxEntry, type PlanWire, parseWire, resolveLevels } from '../redis/user-script';

/**
 * Ids already stored, by process (deps), and stores in flight; after a failed store, the time until
 * which ops of that id carry the JSON (by deps too: one database's outage says nothing of another's).
 */
const stored = new WeakMap<
  Deps,
  { stores: Map<string, true | Promise<boolean>>; failedUntil: Map<string, number> }
>();
/** Content id of a wire JSON (the same string object is passed on every op of a plan: cached). */
const ids = new Map<string, string>();
/** After a failed store, ops of that id carry the JSON for this long. */
const RETRY_MS = 5_000;

export function wireId(json: string): string {
  let id = ids.get(json);
  if (id === undefined) {
    id = `w${createHash('sha256').update(json).digest('base64url').slice(0, 27)}`;
    if (ids.size >= 1024) ids.clear();
    ids.set(json, id);
  }
  return id;
}

/**
 * What an op passes as its wire argument: the id of `json` once it is stored (at most one insert per
 * process and configuration), or `json` itself while Postgres cannot store it; '' where no history is
 * written. Synchronous when known.
 */
export function wireRef(deps: Deps, json: string): string | Promise<string> {
  // Replays (src/simulations/) write no outbox record: nothing will read the wire objects.
  if (deps.history === false) return '';
  const id = wireId(json);
  let state = stored.get(deps);
  if (!state) {
    state = { stores: new Map(), failedUntil: new Map() };
    stored.set(deps, state);
  }
  const { stores, failedUntil } = state;
  const known = stores.get(id);
  if (known === true) return id;
  if (known) return known.then((ok) => (ok ? id : json));
  const until = failedUntil.get(id);
  if (until !== undefined && Date.now() < until) return json;
  const store = (async () => {
    try {
      await deps.db.insert(wireSnapshots).values({ id, body: json }).onConflictDoNothing();
      stores.set(id, true);
      failedUntil.delete(id);
      return true;
    } catch (err) {
      stores.delete(id);
      failedUntil.set(id, Date.now() + RETRY_MS);
      deps.logger.warn({ err, id }, 'wire snapshot not stored; ops carry its JSON meanwhile');
      return false;
    }
  })();
  if (stores.size >= 4096) stores.clear();
  stores.set(id, store);
  return store.then((ok) => (ok ? id : json));
}

/** Parsed wire objects by id (the writer's passes name the same few). */
const parsed = new Map<string, PlanWire>();

/**
 * Completes the records of a history pass: the levels and configured objects of records that name a
 * stored wire snapshot (one query for the ids not yet known) or carry its JSON (older records, or an
 * op that committed while Postgres was away).
 */
export async function resolveWires(deps: Pick<Deps, 'db' | 'logger'>, entries: OutboxEntry[]): Promise<void> {
  const missing = new Set<string>();
  for (const { record: r } of entries) {
    const ref = r.wire;
    if (ref && !ref.startsWith('{') && !parsed.has(ref)) missing.add(ref);
  }
  if (missing.size) {
    const rows = await deps.db
      .select({ id: wireSnapshots.id, body: wireSnapshots.body })
      .from(wireSnapshots)
      .where(inArray(wireSnapshots.id, [...missing]));
    if (parsed.size + rows.length > 256) parsed.clear();
    for (const row of rows) parsed.set(row.id, parseWire(row.body));
    for (const id of missing)
      if (!parsed.has(id))
        deps.logger.error({ id }, 'wire snapshot missing: its webhooks show no level or configured objects');
  }
  for (const { record: r } of entries) {
    const ref = r.wire;
    resolveLevels(r, ref === undefined ? {} : ref.startsWith('{') ? parseWire(ref) : (parsed.get(ref) ?? {}));
  }
}
