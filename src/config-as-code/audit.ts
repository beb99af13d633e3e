import { AsyncLocalStorage } from 'node:async_hooks';
import { randomUUID } from 'node:crypto';
import { desc, sql } from 'drizzle-orm';
import type { Context, MiddlewareHandler } from 'hono';
import { loadSnapshot } from '../catalog/snapshot';
import type { Db } from '../db/client';
import { configChanges } from '../db/schema';
import type { Deps } from '../deps';
import type { AppEnv } from '../app-env';
import { auditItems, diffItems, type ItemChange } from './items';

/**
 * Every configuration write takes this Postgres advisory lock (cross-process), so admin writes of
 * every path run one after the other: the audit log attributes each change to the write that made
 * it, and `apply` checks its version and changes everything without anything in between.
 */
export const CONFIG_LOCK = 0x6c61_7572; // "laur"

export interface Actor {
  keyId: string | null;
  keyName: string;
  keyPrefix: string | null;
  source: 'api' | 'dashboard' | 'config' | 'system';
}

/**
 * The admin and dashboard request in progress, for currentActor. In Node 20 any enabled
 * AsyncLocalStorage turns on promise hooks for every promise of the process (about 3 % of an event's
 * CPU, and more garbage), so the store is disabled whenever no such request is in flight, and the
 * event path never pays for it.
 */
const requestContext = new AsyncLocalStorage<Context<AppEnv>>();
let inFlight = 0;

/** Middleware of /admin/v1/* and /dashboard/*: makes the request's admin key known to currentActor. */
export const actorContext: MiddlewareHandler<AppEnv> = async (c, next) => {
  inFlight++;
  try {
    await requestContext.run(c, next);
  } finally {
    if (--inFlight === 0) requestContext.disable();
  }
};

/** Who is writing: the admin key of the current admin or dashboard request. */
export function currentActor(source?: Actor['source']): Actor {
  const c = requestContext.getStore();
  const key = c?.var.apiKey;
  if (!c || !key) return { keyId: null, keyName: 'system', keyPrefix: null, source: source ?? 'system' };
  return {
    keyId: key.id,
    keyName: key.name,
    keyPrefix: key.prefix,
    source: source ?? (c.req.path.startsWith('/dashboard') ? 'dashboard' : 'api'),
  };
}

/** One configuration write at a time per process, so at most one pooled connection waits for the lock. */
const queues = new WeakMap<Deps, Promise<unknown>>();
export function serialise<T>(deps: Deps, fn: () => Promise<T>): Promise<T> {
  const prev = queues.get(deps) ?? Promise.resolve();
  const run = prev.then(fn, fn);
  queues.set(
    deps,
    run.catch(() => {}),
  );
  return run;
}

const inside = new AsyncLocalStorage<boolean>();

/**
 * Runs an admin write (resource endpoints, dashboard forms) under the configuration lock and records
 * what it changed, item by item, in the audit log. The lock is a session lock on a reserved
 * connection because the resource services write through the pool, statement by statement.
 */
export async function recordAdminWrite<T>(deps: Deps, fn: () => Promise<T>): Promise<T> {
  if (inside.getStore()) return fn();
  const actor = currentActor();
  return serialise(deps, async () => {
    const conn = await deps.sql.reserve();
    try {
      await conn`select pg_advisory_lock(${CONFIG_LOCK})`;
      try {
        const nowMs = deps.clock.now();
        const before = auditItems(await loadSnapshot(deps.db, 0), nowMs);
        let failure: unknown = null;
        let result: T | undefined;
        try {
          result = await inside.run(true, fn);
        } catch (err) {
          failure = err;
        } finally {
          // Writes are one at a time (serialise): none is inside now. See requestContext.
          inside.disable();
        }
        try {
          const after = auditItems(await loadSnapshot(deps.db, 0), nowMs);
          await writeAudit(deps.db, actor, diffItems(before, after), deps.clock.now());
        } catch (err) {
          // The write itself stands; only its audit record is missing (Postgres went away meanwhile).
          if (!failure) deps.logger.warn({ err }, 'could not record configuration change');
        }
        if (failure) throw failure;
        return result as T;
      } finally {
        await conn`select pg_advisory_unlock(${CONFIG_LOCK})`.catch(() => {});
      }
    } finally {
      conn.release();
    }
  });
}

/** Writes one batch of audit rows (nothing when nothing changed). */
export async function writeAudit(db: Db, actor: Actor, changes: ItemChange[], nowMs: number): Promise<void> {
  if (changes.length === 0) return;
  const batch = randomUUID();
  const at = new Date(nowMs);
  await db.insert(configChanges).values(
    changes.map((c) => ({
      batch,
      at,
      keyId: actor.keyId,
      keyName: actor.keyName,
      keyPrefix: actor.keyPrefix,
      source: actor.source,
      resource: c.resource,
      item: c.key,
      action: c.action,
      before: c.before,
      after: c.after,
    })),
  );
}

/** One page of the audit log, newest first. */
export async function listChanges(deps: Deps, page: { limit: number; skip: number }) {
  const rows = await deps.db
    .select()
    .from(configChanges)
    .orderBy(desc(configChanges.id))
    .limit(page.limit)
    .offset(page.skip);
  const [{ total } = { total: 0 }] = await deps.db
    .select({ total: sql<number>`count(*)::int` })
    .from(configChanges);
  return { total, changes: rows.map(showChange) };
}

export function showChange(r: typeof configChanges.$inferSelect) {
  return {
    id: r.id,
    batch: r.batch,
    at: r.at.toISOString(),
    keyName: r.keyName,
    keyPrefix: r.keyPrefix,
    source: r.source,
    resource: r.resource,
    item: r.item,
    action: r.action,
    before: (r.before as Record<string, unknown> | null) ?? null,
    after: (r.after as Record<string, unknown> | null) ?? null,
  };
}
