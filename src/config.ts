import { z } from 'zod';

const intFromEnv = (def: number, min: number, max: number) =>
  z
    .string()
    .regex(/^[0-9]+$/, 'must be a whole number')
    .default(String(def))
    .transform(Number)
    .pipe(z.number().int().min(min).max(max));

const boolFromEnv = (def: boolean) =>
  z
    .enum(['true', 'false', '1', '0'])
    .default(def ? 'true' : 'false')
    .transform((v) => v === 'true' || v === '1');

/** The only schema over process.env. Every variable has a default that works on a developer machine. */
export const envSchema = z.object({
  PORT: intFromEnv(3000, 0, 65535),
  HOST: z.string().min(1).default('0.0.0.0'),
  ROLE: z.enum(['all', 'api', 'worker']).default('all'),
  /** API processes sharing the port (Node's cluster module); the primary runs the workers. */
  API_PROCESSES: intFromEnv(1, 1, 64),
  /**
   * CPU niceness a ROLE=worker process gives itself (0 = leave it): on a host shared with API
   * processes, Redis and Postgres, background work yields to requests (src/workers/priority.ts).
   */
  WORKER_NICE: intFromEnv(10, 0, 19),
  REDIS_URL: z.string().url().default('redis://127.0.0.1:6379'),
  REDIS_CLUSTER_NODES: z
    .string()
    .regex(/^[^,\s]+:[0-9]+(,[^,\s]+:[0-9]+)*$/, 'must be a comma list of host:port')
    .optional(),
  REDIS_KEY_PREFIX: z
    .string()
    .regex(/^[A-Za-z0-9_.-]{1,32}$/, 'must be 1-32 characters of [A-Za-z0-9_.-]')
    .default('lr'),
  DATABASE_URL: z.string().url().default('postgres://postgres@127.0.0.1:5432/laurel'),
  LOG_LEVEL: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
  ADMIN_API_KEY: z
    .string()
    .regex(
      /^[a-z0-9]{8}\.[A-Za-z0-9_-]{43}$/,
      'must be {prefix}.{secret}: 8 of [a-z0-9], a dot, 43 base64url',
    )
    .optional(),
  BODY_LIMIT_BYTES: intFromEnv(1024 * 1024, 1024, 100 * 1024 * 1024),
  ADMIN_BODY_LIMIT_BYTES: intFromEnv(5 * 1024 * 1024, 1024, 500 * 1024 * 1024),
  RATE_LIMIT_PER_SECOND: intFromEnv(1000, 1, 1_000_000),
  /** Bucket size as a multiple of the rate (contract: bursts up to twice the rate). */
  RATE_LIMIT_BURST_FACTOR: intFromEnv(2, 1, 100),
  /** Origins allowed to call /v1 and /admin/v1 from a browser (comma list); none by default. */
  ALLOWED_ORIGINS: z
    .string()
    .default('')
    .transform((s) =>
      s
        .split(',')
        .map((o) => o.trim())
        .filter(Boolean),
    ),
  USER_SHARDS: intFromEnv(256, 1, 16384),
  WEBHOOK_TIMEOUT_MS: intFromEnv(30_000, 100, 300_000),
  WEBHOOK_MAX_RETRIES: intFromEnv(5, 3, 20),
  WEBHOOK_RETENTION_DAYS: intFromEnv(7, 1, 365),
  SCHEDULER_INTERVAL_MS: intFromEnv(5_000, 50, 600_000),
  /** Outbox entries a history writer read but did not acknowledge for this long are claimed by another. */
  HISTORY_CLAIM_IDLE_MS: intFromEnv(30_000, 100, 3_600_000),
  /**
   * While records arrive, a history writer's pass starts at most this often: how long a record
   * normally waits for Postgres, the cross-user indexes and its webhooks, against passes of few records.
   */
  HISTORY_PASS_INTERVAL_MS: intFromEnv(200, 10, 5_000),
  /**
   * On a Redis Cluster, how long the answers of one turn's script calls wait for the slowest master's
   * before they are handed out (src/redis/per-turn.ts Rounds): answered together, their events' board
   * moves leave in one call per board.
   */
  CLUSTER_ROUND_GRACE_MS: intFromEnv(5, 0, 1_000),
  SHUTDOWN_TIMEOUT_MS: intFromEnv(10_000, 0, 600_000),
  MIGRATE_ON_START: boolFromEnv(true),
  /** An event batch whose processor has not renewed its lease for this long is resumed by another process. */
  BATCH_LEASE_MS: intFromEnv(10_000, 200, 600_000),
  /** Items of an event batch processed between two progress records (users in a chunk run in parallel). */
  BATCH_CHUNK_SIZE: intFromEnv(200, 1, 1000),
  /** How long an Idempotency-Key is remembered after its first use (application-api §4); 0 = forever. */
  IDEMPOTENCY_WINDOW_DAYS: intFromEnv(30, 0, 3650),
  /**
   * Experimental, off by default: single events on a single Redis are evaluated in the API process
   * (src/engine/evaluate-event.ts) and committed by lua/commitUserOp.lua when the user is unchanged
   * since it was read (src/services/evaluated-op.ts). Off, every op runs in lua/applyUserOp.lua. It
   * costs more CPU than the user script today and loses closed-loop throughput (bench/HISTORY.md,
   * 2026-11-28, the second and third sessions).
   */
  EVALUATE_EVENTS: boolFromEnv(false),
  /** Signs dashboard session cookies; when absent each process derives a random one (sessions end on restart). */
  DASHBOARD_SESSION_SECRET: z.string().min(32, 'must be at least 32 characters').optional(),
  /** Port of the Prometheus endpoint (/metrics), never the public port; 0 turns it off. */
  METRICS_PORT: intFromEnv(9464, 0, 65535),
  /** Address of the metrics port: loopback unless an operator opens it (then set METRICS_TOKEN). */
  METRICS_HOST: z.string().min(1).default('127.0.0.1'),
  /** When set, /metrics asks for `Authorization: Bearer <token>`. */
  METRICS_TOKEN: z.string().min(16, 'must be at least 16 characters').optional(),
});

export type AppConfig = z.output<typeof envSchema>;

/** Parses the environment; throws one line per bad variable, naming it. */
export function loadConfig(env: NodeJS.ProcessEnv = process.env): AppConfig {
  const present = Object.fromEntries(Object.entries(env).filter(([, v]) => v !== undefined && v !== ''));
  const parsed = envSchema.safeParse(present);
  if (!parsed.success) {
    const lines = parsed.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`);
    throw new Error(`Invalid configuration: ${lines.join('; ')}`);
  }
  return parsed.data;
}
