// Every Prometheus metric of a Laurel process, in one registry per process (prom-client keeps values
// in memory; a scrape reads them). Names follow the Prometheus conventions: `laurel_` prefix, base
// units (seconds), `_total` on counters. Label values come from fixed sets (route templates, script
// names, error codes, webhook event types), never from request data, so the series stay bounded.
//
// The gauges that describe shared state (outbox backlog, scheduler due items, pending webhooks,
// Redis and Postgres reachability) are set by src/metrics/collect.ts at scrape time; with several
// processes in one scrape only the one serving /metrics sets them, hence `aggregator: 'max'`.
import { Counter, collectDefaultMetrics, Gauge, Histogram, Registry } from 'prom-client';

export const registry = new Registry();

// process_* and nodejs_* (CPU, memory, event-loop lag, GC, handles), under their usual names.
collectDefaultMetrics({ register: registry });
// Gauges named like counters, which `promtool check metrics` refuses; the same counts stay available
// by type as nodejs_active_handles, nodejs_active_requests and nodejs_active_resources.
for (const name of [
  'nodejs_active_handles_total',
  'nodejs_active_requests_total',
  'nodejs_active_resources_total',
]) {
  registry.removeSingleMetric(name);
}

const LATENCY_BUCKETS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];
const SCRIPT_BUCKETS = [0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1];
const LAG_BUCKETS = [0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600, 1800, 3600];

// ------------------------------------------------------------------ HTTP

export const httpRequests = new Counter({
  name: 'laurel_http_requests_total',
  help: 'HTTP requests answered, by method, route template and status',
  labelNames: ['method', 'route', 'status'] as const,
  registers: [registry],
});

export const httpDuration = new Histogram({
  name: 'laurel_http_request_duration_seconds',
  help: 'Time from the request reaching Laurel to its response headers, by method and route template',
  labelNames: ['method', 'route'] as const,
  buckets: LATENCY_BUCKETS,
  registers: [registry],
});

// ------------------------------------------------------------------ events and their effects

export const events = new Counter({
  name: 'laurel_events_total',
  help: 'Metric events by outcome (created, replayed, rejected, failed) and reason of a refusal',
  labelNames: ['outcome', 'reason'] as const,
  registers: [registry],
});

export const awards = new Counter({
  name: 'laurel_points_awards_total',
  help: 'Points awards, counted when the history writer writes them',
  registers: [registry],
});

export const completions = new Counter({
  name: 'laurel_achievement_completions_total',
  help: 'Achievement completions, counted when the history writer writes them',
  registers: [registry],
});

export const levelChanges = new Counter({
  name: 'laurel_level_changes_total',
  help: 'Points level changes (up or down), counted when the history writer writes them',
  registers: [registry],
});

// ------------------------------------------------------------------ Redis and Postgres

export const scriptCalls = new Counter({
  name: 'laurel_redis_script_calls_total',
  help: 'Lua script calls by script and result (ok, error)',
  labelNames: ['script', 'result'] as const,
  registers: [registry],
});

export const scriptDuration = new Histogram({
  name: 'laurel_redis_script_duration_seconds',
  help: 'Round trip of a Lua script call, by script',
  labelNames: ['script'] as const,
  buckets: SCRIPT_BUCKETS,
  registers: [registry],
});

export const boardMoves = new Counter({
  name: 'laurel_board_moves_total',
  help: 'Leaderboard moves sent in updateBoard calls (several per call under load: src/redis/board-moves.ts)',
  registers: [registry],
});

export const redisConnectionErrors = new Counter({
  name: 'laurel_redis_connection_errors_total',
  help: 'Connection errors reported by the Redis client',
  registers: [registry],
});

export const redisReconnects = new Counter({
  name: 'laurel_redis_reconnects_total',
  help: 'Reconnection attempts of the Redis client',
  registers: [registry],
});

export const backendErrors = new Counter({
  name: 'laurel_backend_errors_total',
  help: 'Redis or Postgres failures seen by requests (source http) and workers, by backend',
  labelNames: ['backend', 'source'] as const,
  registers: [registry],
});

export const redisUp = new Gauge({
  name: 'laurel_redis_up',
  help: '1 when Redis answered the last probe, 0 when it did not',
  aggregator: 'max',
  registers: [registry],
});

export const postgresUp = new Gauge({
  name: 'laurel_postgres_up',
  help: '1 when Postgres answered the last probe, 0 when it did not',
  aggregator: 'max',
  registers: [registry],
});

// ------------------------------------------------------------------ outbox and history

export const outboxBacklog = new Gauge({
  name: 'laurel_outbox_backlog',
  help: 'Outbox records not yet written to the history (read but unacknowledged included), by outbox stream (shard label: a Cluster user shard, 0 on a single Redis)',
  labelNames: ['shard'] as const,
  aggregator: 'max',
  registers: [registry],
});

export const outboxOldestAge = new Gauge({
  name: 'laurel_outbox_oldest_age_seconds',
  help: "Age of the outbox stream's oldest record (0 when empty), by stream (a Cluster's user shard; 0 on a single Redis)",
  labelNames: ['shard'] as const,
  aggregator: 'max',
  registers: [registry],
});

export const historyLag = new Gauge({
  name: 'laurel_history_lag_seconds',
  help: 'Age of the oldest event not yet in the Postgres history, over every outbox stream (0 when caught up)',
  aggregator: 'max',
  registers: [registry],
});

export const historyBatch = new Histogram({
  name: 'laurel_history_batch_records',
  help: 'Outbox records written per history writer pass',
  buckets: [1, 5, 10, 25, 50, 100, 250, 500, 1000, 2500],
  registers: [registry],
});

export const historyWritten = new Counter({
  name: 'laurel_history_records_written_total',
  help: 'Outbox records written to the Postgres history',
  registers: [registry],
});

export const historyUnreadable = new Counter({
  name: 'laurel_history_records_unreadable_total',
  help: 'Outbox records the history writer could not read, set aside in the <prefix>:outbox-unreadable stream',
  registers: [registry],
});

export const historyWriteDuration = new Histogram({
  name: 'laurel_history_write_duration_seconds',
  help: 'Time to write one pass to Postgres and acknowledge it in Redis',
  buckets: LATENCY_BUCKETS,
  registers: [registry],
});

export const historyEndToEnd = new Histogram({
  name: 'laurel_history_end_to_end_lag_seconds',
  help: 'Time from an event being accepted (outbox record added) to its history being written',
  buckets: LAG_BUCKETS,
  registers: [registry],
});

// ------------------------------------------------------------------ webhooks

export const webhookDeliveries = new Counter({
  name: 'laurel_webhook_deliveries_total',
  help: 'Webhook delivery attempts by event type and result (succeeded, retrying, failed, cancelled)',
  labelNames: ['type', 'result'] as const,
  registers: [registry],
});

export const webhookPending = new Gauge({
  name: 'laurel_webhook_pending_deliveries',
  help: 'Webhook deliveries waiting to be sent (first attempts and retries)',
  aggregator: 'max',
  registers: [registry],
});

export const webhookRetriesPending = new Gauge({
  name: 'laurel_webhook_retries_pending',
  help: 'Pending webhook deliveries that failed at least once and wait for a retry',
  aggregator: 'max',
  registers: [registry],
});

export const webhookOldestPendingAge = new Gauge({
  name: 'laurel_webhook_oldest_pending_age_seconds',
  help: 'Age of the oldest pending webhook delivery (0 when none)',
  aggregator: 'max',
  registers: [registry],
});

// ------------------------------------------------------------------ scheduler

export const schedulerDue = new Gauge({
  name: 'laurel_scheduler_due_items',
  help: 'Per-user scheduler items due now and not yet claimed, by queue',
  labelNames: ['queue'] as const,
  aggregator: 'max',
  registers: [registry],
});

export const schedulerLateness = new Gauge({
  name: 'laurel_scheduler_lateness_seconds',
  help: 'How long the oldest due item of a queue has been due (0 when nothing is due), by queue',
  labelNames: ['queue'] as const,
  aggregator: 'max',
  registers: [registry],
});

export const schedulerWork = new Counter({
  name: 'laurel_scheduler_work_total',
  help: 'Work done by scheduler passes, by kind (grants, rollovers, freeze_slots, boost_events, runs_started, board_changes)',
  labelNames: ['kind'] as const,
  registers: [registry],
});

export const schedulerFinalisations = new Counter({
  name: 'laurel_scheduler_finalisations_total',
  help: 'Leaderboard runs finalised by the scheduler',
  registers: [registry],
});

export const schedulerPassDuration = new Histogram({
  name: 'laurel_scheduler_pass_duration_seconds',
  help: 'Duration of one scheduler pass over every kind of due work',
  buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
  registers: [registry],
});

// ------------------------------------------------------------------ the scrape itself

export const scrapeProcesses = new Gauge({
  name: 'laurel_metrics_processes',
  help: 'Processes whose metrics this scrape aggregates (the serving process and its API processes)',
  aggregator: 'max',
  registers: [registry],
});

export const collectErrors = new Counter({
  name: 'laurel_metrics_collect_errors_total',
  help: 'Scrape-time reads of Redis or Postgres state that failed (the gauges keep their last values)',
  labelNames: ['backend'] as const,
  registers: [registry],
});
