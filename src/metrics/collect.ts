// Shared state read at scrape time (and by the dashboard's health panel): outbox backlog and age per
// outbox stream, scheduler due items and lateness, pending webhooks, and whether Redis and Postgres
// answer. Bounded work whatever the load: Redis gets one pipeline of XLEN per outbox stream, then XRANGE
// COUNT 1 for the streams that hold records, then 8 commands on the scheduler's slot; Postgres one query over at
// most WEBHOOK_SCAN_LIMIT pending rows (index webhook_deliveries_due). A scrape reuses what was read
// in the last REUSE_MS (the dashboard in the last second), so a scraper polling every second or
// several scrapers do not multiply it; the alerts' thresholds are minutes, not seconds.
import { sql } from 'drizzle-orm';
import type { Deps } from '../deps';
import { crossSlotPipeline, execValues } from '../redis/batch';
import {
  collectErrors,
  historyLag,
  outboxBacklog,
  outboxOldestAge,
  postgresUp,
  redisUp,
  schedulerDue,
  schedulerLateness,
  webhookOldestPendingAge,
  webhookPending,
  webhookRetriesPending,
} from './registry';

/** Pending deliveries counted at most (a receiver down for days must not make the scrape slow). */
export const WEBHOOK_SCAN_LIMIT = 100_000;
/** A probe that takes longer than this counts as down. */
const PROBE_TIMEOUT_MS = 1500;
/** Collected state is reused this long by a scrape (about 5 ms of CPU per read with 256 busy shards). */
export const REUSE_MS = 5000;

export interface OutboxState {
  /** Records per outbox stream, by its index in Keys.outboxes (read but unacknowledged included). */
  backlog: number[];
  /** Age (s) of each stream's oldest record, 0 when empty. */
  oldestAge: number[];
}

export interface SchedulerState {
  queues: Array<{ queue: string; due: number; latenessSeconds: number }>;
}

export interface WebhookState {
  pending: number;
  retries: number;
  oldestPendingAgeSeconds: number;
}

export interface CollectedState {
  at: number;
  redisUp: boolean;
  postgresUp: boolean;
  outbox: OutboxState | null;
  scheduler: SchedulerState | null;
  webhooks: WebhookState | null;
}

function withTimeout<T>(p: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const expired = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`timed out after ${ms} ms`)), ms);
  });
  return Promise.race([p, expired]).finally(() => clearTimeout(timer));
}

/**
 * Backlog and oldest record age of every outbox stream (Keys.outboxes: one per user shard on a
 * Cluster, one on a single Redis), ages on Redis's clock (entry ids use it).
 */
export async function readOutbox(deps: Deps): Promise<OutboxState> {
  const streams = deps.keys.outboxes;
  const lengths = crossSlotPipeline(deps.redis);
  lengths.time();
  for (const stream of streams) lengths.xlen(stream);
  const [time, ...lens] = (await execValues(lengths)) as [[string, string], ...number[]];
  const nowMs = Number(time[0]) * 1000 + Math.floor(Number(time[1]) / 1000);
  const backlog = lens.map(Number);
  const oldestAge = backlog.map(() => 0);
  const busy = backlog.flatMap((n, i) => (n > 0 ? [i] : []));
  if (busy.length) {
    const heads = crossSlotPipeline(deps.redis);
    for (const i of busy) heads.xrange(streams[i]!, '-', '+', 'COUNT', 1);
    const replies = (await execValues(heads)) as Array<Array<[string, string[]]>>;
    replies.forEach((list, i) => {
      const id = list[0]?.[0];
      if (!id) return;
      oldestAge[busy[i]!] = Math.max(0, nowMs - Number(id.slice(0, id.indexOf('-')))) / 1000;
    });
  }
  return { backlog, oldestAge };
}

/** Per-user scheduler queues: items due now (not claimed) and how long the oldest has been due. */
export async function readScheduler(deps: Deps): Promise<SchedulerState> {
  const k = deps.keys.sched;
  const queues: Array<[string, string]> = [
    ['time_triggers', k.timeTriggers],
    ['streaks', k.streaks],
    ['freezes', k.freezes],
    ['leaderboard_changed', k.boardChanged],
  ];
  const now = deps.clock.now();
  const pipe = crossSlotPipeline(deps.redis);
  for (const [, key] of queues) {
    pipe.zcount(key, '-inf', now);
    pipe.zrange(key, 0, 0, 'WITHSCORES');
  }
  const replies = await execValues(pipe);
  return {
    queues: queues.map(([queue], i) => {
      const due = Number(replies[2 * i]);
      const first = replies[2 * i + 1] as string[];
      const score = first.length === 2 ? Number(first[1]) : Number.POSITIVE_INFINITY;
      return { queue, due, latenessSeconds: due > 0 && score <= now ? (now - score) / 1000 : 0 };
    }),
  };
}

/** Pending webhook deliveries, each count over at most WEBHOOK_SCAN_LIMIT rows of the due index. */
export async function readWebhooks(deps: Deps): Promise<WebhookState> {
  const now = deps.clock.now();
  const rows = (await deps.db.execute(sql`
    select
      (select count(*)::int from (
         select 1 from webhook_deliveries where status = 'pending' limit ${WEBHOOK_SCAN_LIMIT}) p) as pending,
      (select count(*)::int from (
         select 1 from webhook_deliveries where status = 'pending' and attempts > 0
          limit ${WEBHOOK_SCAN_LIMIT}) r) as retries,
      (select min(created) from (
         select created from webhook_deliveries where status = 'pending'
          limit ${WEBHOOK_SCAN_LIMIT}) o) as oldest`)) as unknown as Array<{
    pending: number;
    retries: number;
    oldest: Date | string | null;
  }>;
  const r = rows[0]!;
  const oldest = r.oldest === null ? null : new Date(r.oldest).getTime();
  return {
    pending: r.pending,
    retries: r.retries,
    oldestPendingAgeSeconds: oldest === null ? 0 : Math.max(0, now - oldest) / 1000,
  };
}

/**
 * Deliveries whose last attempt, in the past hour, failed (for the dashboard; Prometheus has
 * laurel_webhook_deliveries_total). Scans the failed and pending rows of the retention window.
 */
export async function webhookFailuresLastHour(deps: Deps): Promise<number> {
  const hourAgo = new Date(deps.clock.now() - 3_600_000).toISOString();
  const rows = (await deps.db.execute(sql`
    select count(*)::int as n from webhook_deliveries
     where status in ('pending', 'failed') and last_error is not null
       and last_attempt_at >= ${hourAgo}`)) as unknown as Array<{ n: number }>;
  return rows[0]?.n ?? 0;
}

const cache = new WeakMap<Deps, { at: number; state: Promise<CollectedState> }>();

/** Reads every piece of shared state (each part on its own: Postgres down still reports Redis). */
export function collectState(deps: Deps, reuseMs = REUSE_MS): Promise<CollectedState> {
  const hit = cache.get(deps);
  if (hit && Date.now() - hit.at < reuseMs) return hit.state;
  const state = (async (): Promise<CollectedState> => {
    const settle = <T>(p: Promise<T>) =>
      withTimeout(p, PROBE_TIMEOUT_MS).then(
        (v) => v,
        () => null,
      );
    const [outbox, scheduler, webhooks] = await Promise.all([
      settle(readOutbox(deps)),
      settle(readScheduler(deps)),
      settle(readWebhooks(deps)),
    ]);
    return {
      at: Date.now(),
      redisUp: outbox !== null && scheduler !== null,
      postgresUp: webhooks !== null,
      outbox,
      scheduler,
      webhooks,
    };
  })();
  cache.set(deps, { at: Date.now(), state });
  return state;
}

let lastCounted: CollectedState | null = null;

/** Sets the scrape-time gauges from the shared state; a part that could not be read keeps its last values. */
export async function updateStateGauges(deps: Deps, reuseMs = REUSE_MS): Promise<void> {
  const s = await collectState(deps, reuseMs);
  // A failed read counts once, however many scrapes reuse it.
  const fresh = s !== lastCounted;
  lastCounted = s;
  const failed = (backend: 'redis' | 'postgres') => fresh && collectErrors.labels(backend).inc();
  redisUp.set(s.redisUp ? 1 : 0);
  postgresUp.set(s.postgresUp ? 1 : 0);
  if (s.outbox) {
    let lag = 0;
    s.outbox.backlog.forEach((n, shard) => {
      outboxBacklog.labels(String(shard)).set(n);
      const age = s.outbox!.oldestAge[shard]!;
      outboxOldestAge.labels(String(shard)).set(age);
      lag = Math.max(lag, age);
    });
    historyLag.set(lag);
  } else failed('redis');
  if (s.scheduler) {
    for (const q of s.scheduler.queues) {
      schedulerDue.labels(q.queue).set(q.due);
      schedulerLateness.labels(q.queue).set(q.latenessSeconds);
    }
  } else failed('redis');
  if (s.webhooks) {
    webhookPending.set(s.webhooks.pending);
    webhookRetriesPending.set(s.webhooks.retries);
    webhookOldestPendingAge.set(s.webhooks.oldestPendingAgeSeconds);
  } else failed('postgres');
}
