// The calls the rest of Laurel makes into its metrics: one line at each place where something worth
// counting happens (a history pass, a webhook attempt, a scheduler pass, a failure). In-memory
// counters only; none of these talks to Redis or Postgres.
import type { Deps } from '../deps';
import { isInfrastructureError } from '../errors';
import { levelChanged, levelOf } from '../engine/levels';
import type { OutboxEntry } from '../redis/user-script';
import {
  awards,
  backendErrors,
  completions,
  historyBatch,
  historyEndToEnd,
  historyWriteDuration,
  historyWritten,
  levelChanges,
  schedulerFinalisations,
  schedulerPassDuration,
  schedulerWork,
  webhookDeliveries,
} from './registry';

/** postgres.js error codes of a lost or refused connection (its own, and Postgres's classes 08 and 57P). */
const POSTGRES_CODES = /^(CONNECTION_CLOSED|CONNECTION_DESTROYED|CONNECTION_ENDED|CONNECT_TIMEOUT|08|57P0)/;

/**
 * Which backend an infrastructure error came from, by its shape: postgres.js errors are
 * PostgresError or carry its connection codes, and raw socket errors (ECONNREFUSED …) reach callers
 * only from postgres.js (ioredis with its offline queue off answers "Stream isn't writeable" and
 * "Connection is closed" instead). Anything else that isInfrastructureError accepts is Redis.
 */
export function backendOf(err: unknown): 'redis' | 'postgres' {
  for (let e = err as (Error & { code?: string }) | undefined, depth = 0; e && depth < 5; depth++) {
    if (e.name === 'PostgresError') return 'postgres';
    if (typeof e.code === 'string' && (POSTGRES_CODES.test(e.code) || /^E[A-Z]+$/.test(e.code))) {
      return 'postgres';
    }
    e = e.cause as typeof e;
  }
  return 'redis';
}

/** Counts a Redis or Postgres failure seen by a request or a worker; other errors are not counted. */
export function countBackendError(
  source: 'http' | 'history_writer' | 'scheduler' | 'webhooks',
  err: unknown,
) {
  if (isInfrastructureError(err)) backendErrors.labels(backendOf(err), source).inc();
}

/**
 * A history writer pass that committed: batch size, write time, records, and for each record the
 * time since the event was accepted (its outbox entry id is Redis's clock when it was added). Awards,
 * completions and level changes are counted here, once per written record, whichever process or
 * worker made them.
 */
export function observeHistoryPass(deps: Deps, entries: OutboxEntry[], writeMs: number): void {
  historyBatch.observe(entries.length);
  historyWritten.inc(entries.length);
  historyWriteDuration.observe(writeMs / 1000);
  const now = Date.now();
  const snap = deps.catalog.snapshot;
  let awarded = 0;
  let completed = 0;
  let levels = 0;
  for (const { entryId, record: r } of entries) {
    const acceptedMs = Number(entryId.slice(0, entryId.indexOf('-')));
    if (Number.isFinite(acceptedMs)) historyEndToEnd.observe(Math.max(0, now - acceptedMs) / 1000);
    completed += r.completions.length;
    // Level changes as committed (the record's levels); older records: from the configuration.
    if (r.levels) levels += r.levels.filter((l) => levelChanged(l.b, l.a)).length;
    for (const group of r.awards) {
      awarded += group.awards.length;
      if (r.levels) continue;
      const sys = snap.systemsById.get(group.sys);
      if (!sys?.levels.length || !group.awards.length) continue;
      const first = group.awards[0]!;
      const last = group.awards[group.awards.length - 1]!;
      if (levelChanged(levelOf(sys, first.total - first.awarded), levelOf(sys, last.total))) levels++;
    }
  }
  if (awarded) awards.inc(awarded);
  if (completed) completions.inc(completed);
  if (levels) levelChanges.inc(levels);
}

export type WebhookResult = 'succeeded' | 'retrying' | 'failed' | 'cancelled';

/** One webhook delivery attempt and how it ended. */
export function observeWebhookAttempt(type: string, result: WebhookResult): void {
  webhookDeliveries.labels(type, result).inc();
}

/** The work counts of a scheduler pass (SchedulerPass in workers/scheduler.ts) and their `kind` labels. */
const PASS_KINDS = [
  ['grants', 'grants'],
  ['rollovers', 'rollovers'],
  ['freezeSlots', 'freeze_slots'],
  ['boostEvents', 'boost_events'],
  ['runsStarted', 'runs_started'],
  ['runsFinalised', 'runs_finalised'],
  ['boardChanges', 'board_changes'],
] as const;

/** What a scheduler pass reports (declared here so that metrics do not import the scheduler). */
export type SchedulerPassCounts = Record<(typeof PASS_KINDS)[number][0], number>;

/** A scheduler pass that completed: its work by kind, finalisations, and its duration. */
export function observeSchedulerPass(pass: SchedulerPassCounts, ms: number): void {
  for (const [field, kind] of PASS_KINDS) if (pass[field]) schedulerWork.labels(kind).inc(pass[field]);
  if (pass.runsFinalised) schedulerFinalisations.inc(pass.runsFinalised);
  schedulerPassDuration.observe(ms / 1000);
}
