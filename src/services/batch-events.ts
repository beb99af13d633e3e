import { randomUUID } from 'node:crypto';
import type { Deps } from '../deps';
import { sha256Hex, uuidFromHex } from '../engine/idempotency';
import { isInfrastructureError, unavailable } from '../errors';
import { isCluster } from '../redis/client';
import { runUserOp, runUserOps, type UserInput, type UserOp } from './user-op';

/**
 * Batch event ingestion (admin-api §6): a validated batch is accepted in one atomic Redis write
 * (a hash with every item plus its entry in the set of unfinished batches, both in the `{batch}`
 * slot), then processed chunk by chunk. Durability and ordering:
 * - Each item's event id is derived from the batch id and its index, so a resumed item has the same
 *   op id; the user script answers an op it already committed from its reply marker instead of
 *   applying it again. Batch items keep their markers until their chunk is recorded: on a single
 *   Redis as fields of one hash per batch (keys.batches.marks), removed by the chunk's progress record
 *   in the same script; on a Cluster (and for batches accepted before that hash existed) as keys of
 *   their own in the user's slot, removed after the record.
 * - `done` (every item before it is committed) is recorded after each chunk, with the lease renewed,
 *   by lua/batchProgress.lua, only while this processor still owns the batch.
 * - A processor that dies leaves its lease to expire; any process's BatchResumer (src/workers/batches.ts)
 *   takes the batch over (lua/claimBatch.lua, which also fences the old owner out) and goes on from
 *   `done`. Items of one user run one after the other in array order; different users run in parallel.
 * - When every item is done the batch's keys are removed.
 */

/** One validated item, as stored in the batch record. */
export interface BatchItem {
  /** metric id */
  m: string;
  u: UserInput;
  /** value in millionths */
  v: number;
  /** event attributes */
  a?: Record<string, string>;
  /** idempotency key */
  k?: string;
}

export interface AcceptedBatch {
  id: string;
  owner: string;
  done: number;
  items: BatchItem[];
  /** The items' reply markers are fields of the batch's markers hash (else keys of their own). */
  marks: boolean;
}

/** Reply markers of batch items outlive any plausible wait for a resume (they are deleted per chunk). */
const MARK_MS = 7 * 24 * 3600 * 1000;

/** The event id of item `index` of a batch: stable, so a resumed item is recognised. */
export function batchEventId(batchId: string, index: number): string {
  return uuidFromHex(sha256Hex(`${batchId}:${index}`));
}

/** The event ids of a batch's items, each derived once (an item's op and then its reply marker's key). */
const itemIds = new WeakMap<AcceptedBatch, string[]>();
function itemId(batch: AcceptedBatch, index: number): string {
  let ids = itemIds.get(batch);
  if (!ids) {
    ids = [];
    itemIds.set(batch, ids);
  }
  ids[index] ??= batchEventId(batch.id, index);
  return ids[index]!;
}

/**
 * Durably accepts a validated batch: one MULTI in the batch slot. Redis unavailable → 503, nothing
 * accepted. The connection lost while the MULTI was in flight leaves its outcome unknown to us: the
 * write is atomic, so once Redis answers again the batch's record tells (accepted: go on as usual;
 * absent: nothing was accepted, 503).
 */
export async function acceptBatch(deps: Deps, items: BatchItem[]): Promise<AcceptedBatch> {
  if (deps.redis.status !== 'ready') throw unavailable();
  const id = randomUUID();
  const k = deps.keys.batches;
  const now = deps.clock.now();
  const leaseEnd = Date.now() + deps.config.BATCH_LEASE_MS;
  // A Cluster keeps per-item marker keys: a user's script cannot write the batch's slot.
  const marks = !isCluster(deps.redis);
  try {
    const res = await deps.redis
      .multi()
      .hset(k.batch(id), {
        items: JSON.stringify(items),
        n: String(items.length),
        done: '0',
        owner: '1',
        at: String(now),
        ...(marks ? { mk: '1' } : {}),
      })
      .zadd(k.pending, String(leaseEnd), id)
      .exec();
    if (!res || res.some(([err]) => err)) throw unavailable();
  } catch (err) {
    if (!isInfrastructureError(err)) throw err;
    if (NOT_SENT.test((err as Error).message) || !(await wasAccepted(deps, id, leaseEnd)))
      throw unavailable();
  }
  return { id, owner: '1', done: 0, items, marks };
}

/** ioredis's refusal to write a command on a connection that is not writable (nothing was sent). */
const NOT_SENT = /Stream isn't writeable/;

/**
 * Whether batch `id`, whose accepting MULTI was lost in flight, was accepted: waits up to 5 s for
 * Redis, then reads the batch's record. The answer is certain until its lease ends (`leaseEnd`): until
 * then no other process can have taken the batch over, finished it and removed its record. Past it,
 * or Redis still away, the outcome stays unknown: throws (503).
 */
async function wasAccepted(deps: Deps, id: string, leaseEnd: number): Promise<boolean> {
  const deadline = Math.min(leaseEnd, Date.now() + 5000);
  for (;;) {
    if (Date.now() > deadline) throw unavailable();
    let found: boolean | undefined;
    if (deps.redis.status === 'ready') {
      try {
        found = (await deps.redis.exists(deps.keys.batches.batch(id))) === 1;
      } catch (err) {
        if (!isInfrastructureError(err)) throw err;
      }
    }
    if (found) return true;
    if (found === false) {
      if (Date.now() < leaseEnd) return false;
      throw unavailable();
    }
    await new Promise((r) => setTimeout(r, 50));
  }
}

export type BatchOutcome = 'done' | 'interrupted' | 'lost';

/**
 * Processes a batch from `done` to its end. 'interrupted': Redis failed or `stop()` asked; the
 * lease will expire and another pass resumes it. 'lost': another processor took the batch over.
 */
export async function processBatch(
  deps: Deps,
  batch: AcceptedBatch,
  opts: { stopping?: () => boolean } = {},
): Promise<BatchOutcome> {
  const k = deps.keys.batches;
  const chunkSize = deps.config.BATCH_CHUNK_SIZE;
  const leaseMs = deps.config.BATCH_LEASE_MS;
  let done = batch.done;
  let lost = false;
  const record = async (upTo: number) => {
    const r = await deps.redis.batchProgress(
      3,
      k.pending,
      k.batch(batch.id),
      k.marks(batch.id),
      batch.id,
      batch.owner,
      String(upTo),
      String(Date.now() + leaseMs),
    );
    if (r !== 1) lost = true;
    return r === 1;
  };
  // The lease is renewed while a chunk runs (a chunk can outlast it when Redis is slow).
  const renew = setInterval(
    () => {
      record(done).catch(() => {});
    },
    Math.max(50, Math.floor(leaseMs / 3)),
  );
  renew.unref();
  try {
    while (done < batch.items.length) {
      if (lost) return 'lost';
      if (opts.stopping?.()) return 'interrupted';
      const end = Math.min(batch.items.length, done + chunkSize);
      const ok = await runChunk(deps, batch, done, end);
      if (!ok) return 'interrupted';
      if (!(await record(end))) return 'lost';
      if (!batch.marks) await forgetMarkers(deps, batch, done, end);
      done = end;
    }
    return 'done';
  } catch (err) {
    if (isInfrastructureError(err) || (err as { code?: string })?.code === 'UNAVAILABLE')
      return 'interrupted';
    throw err;
  } finally {
    clearInterval(renew);
  }
}

/** Items [from, to): users in parallel, each user's items in array order. false: Redis failed. */
async function runChunk(deps: Deps, batch: AcceptedBatch, from: number, to: number): Promise<boolean> {
  const byUser = new Map<string, number[]>();
  for (let i = from; i < to; i++) {
    const uid = batch.items[i]!.u.id;
    const list = byUser.get(uid);
    if (list) list.push(i);
    else byUser.set(uid, [i]);
  }
  const chains = [...byUser.values()];
  try {
    if (!isCluster(deps.redis)) {
      // Waves of one item per user (so each user's items stay in order), each wave in a few script
      // calls of up to MULTI_OPS ops (lua/applyUserOp.lua "__multi").
      for (let k = 0; ; k++) {
        const wave = chains.filter((c) => c.length > k).map((c) => c[k]!);
        if (!wave.length) break;
        const calls: Promise<void>[] = [];
        for (let w = 0; w < wave.length; w += MULTI_OPS) {
          const part = wave.slice(w, w + MULTI_OPS);
          calls.push(
            runUserOps(
              deps,
              part.map((i) => itemOp(deps, batch, i)),
            ).then((results) =>
              results.forEach((err, j) => {
                if (err) refused(deps, batch, part[j]!, err);
              }),
            ),
          );
        }
        await Promise.all(calls);
      }
      return true;
    }
    await Promise.all(
      chains.map(async (indexes) => {
        for (const i of indexes) {
          try {
            await runUserOp(deps, itemOp(deps, batch, i));
          } catch (err) {
            if (isUnavailable(err)) throw err;
            refused(deps, batch, i, err as Error);
          }
        }
      }),
    );
    return true;
  } catch (err) {
    if (isUnavailable(err)) return false;
    throw err;
  }
}

/** Ops per multi-op script call: long enough to share the plan, short enough not to stall Redis. */
const MULTI_OPS = 25;

const isUnavailable = (err: unknown) =>
  isInfrastructureError(err) || (err as { code?: string })?.code === 'UNAVAILABLE';

function itemOp(deps: Deps, batch: AcceptedBatch, i: number): UserOp {
  const item = batch.items[i]!;
  return {
    kind: 'event',
    metricId: item.m,
    user: item.u,
    valueMicros: item.v,
    eventAttributes: item.a,
    idempotencyKey: item.k,
    opId: itemId(batch, i),
    markMs: MARK_MS,
    markHash: batch.marks ? deps.keys.batches.marks(batch.id) : undefined,
  };
}

/**
 * An item refused by the user's state at its turn (e.g. a total would pass its bound, or the metric
 * was deleted since acceptance): it has no effect, as that single event would have had.
 */
function refused(deps: Deps, batch: AcceptedBatch, index: number, err: Error): void {
  deps.logger.warn({ batch: batch.id, index, err: err.message }, 'batch item refused; skipped');
}

/** Reply markers of a recorded chunk are no longer needed: best effort (they expire anyway). */
async function forgetMarkers(deps: Deps, batch: AcceptedBatch, from: number, to: number): Promise<void> {
  const keys: string[] = [];
  for (let i = from; i < to; i++) keys.push(deps.keys.user(batch.items[i]!.u.id).op(itemId(batch, i)));
  try {
    if (!isCluster(deps.redis)) await deps.redis.unlink(...keys);
    else await Promise.all(keys.map((key) => deps.redis.unlink(key)));
  } catch {
    // The markers expire by themselves.
  }
}

/** Claims one batch whose lease has expired, or null. */
export async function claimExpiredBatch(deps: Deps): Promise<AcceptedBatch | null> {
  const k = deps.keys.batches;
  const now = Date.now();
  const due = await deps.redis.zrangebyscore(k.pending, '-inf', String(now), 'LIMIT', 0, 5);
  for (const id of due) {
    const r = await deps.redis.claimBatch(
      2,
      k.pending,
      k.batch(id),
      id,
      String(now),
      String(now + deps.config.BATCH_LEASE_MS),
    );
    if (!r) continue;
    const [owner, done, items, mk] = r;
    return {
      id,
      owner: String(owner),
      done: Number(done),
      items: JSON.parse(items) as BatchItem[],
      marks: mk === '1',
    };
  }
  return null;
}
