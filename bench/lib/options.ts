/** Bench settings: `--name=value` / `--name value` flags win over BENCH_* variables, which win over defaults. */

export type BenchMode = 'single' | 'cluster' | 'two-api';

export interface BenchOptions {
  /** Measured seconds per scenario (the warm-up is extra). */
  duration: number;
  warmup: number;
  connections: number;
  /**
   * Requests per second over all connections of the fixed-rate scenarios (the closed-loop ones send
   * as fast as answered). A fixed rate below capacity measures what a request costs (CPU µs per
   * request) without the contention of a saturated machine, so runs on a noisy machine compare better.
   */
  rate: number;
  /** Distinct user ids each new-user event scenario cycles over. */
  users: number;
  /** Veteran users (a year of daily history each) seeded for the veteran scenario; 0 skips it. */
  veterans: number;
  /** Also measures events on a throwaway 3-master Redis Cluster (single mode only). */
  cluster: boolean;
  mode: BenchMode;
  redisUrl: string;
  /** Postgres server URL; the bench creates and drops its own database on it. */
  databaseUrl: string;
  /** Also measures the leaderboard read endpoints (when the server has them). */
  reads: boolean;
  /**
   * Node options given to every Laurel process on its command line (BENCH_NODE_ARGS, space-separated):
   * V8 flags that NODE_OPTIONS refuses, such as --single-threaded-gc, can be compared this way.
   */
  nodeArgs: string[];
  /** Writes a V8 CPU profile of the Laurel server to bench/results/profiles/. */
  profile: boolean;
  /**
   * Runs the event scenario twice more, with a scraper polling every Laurel process's /metrics once
   * a second and without it, and reports the difference (the cost of being scraped).
   */
  scrape: boolean;
  /**
   * After the single-Redis scenarios (their history drained), runs verify-state over every user the
   * run wrote (src/rebuild/verify.ts): the live state against the history in Postgres.
   */
  verify: boolean;
}

const MODES: BenchMode[] = ['single', 'cluster', 'two-api'];

function flag(argv: string[], name: string): string | undefined {
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]!;
    if (a === `--${name}`) return argv[i + 1];
    if (a.startsWith(`--${name}=`)) return a.slice(name.length + 3);
  }
  return undefined;
}

function int(raw: string | undefined, def: number, min: number, max: number, name: string): number {
  if (raw === undefined || raw === '') return def;
  const n = Number(raw);
  if (!Number.isInteger(n) || n < min || n > max)
    throw new Error(`${name} must be a whole number in ${min}..${max}`);
  return n;
}

/** Refuses anything but a loopback host: the bench deletes keys and drops a database where it points. */
function local(url: string, name: string): string {
  const host = new URL(url).hostname;
  if (!['127.0.0.1', 'localhost', '::1', '[::1]'].includes(host)) {
    throw new Error(
      `${name} must point at this machine (got ${host}); the bench only runs against local services`,
    );
  }
  return url;
}

export function parseOptions(argv: string[], env: NodeJS.ProcessEnv): BenchOptions {
  const pick = (name: string, envName: string) => flag(argv, name) ?? env[envName];
  const mode = (pick('mode', 'BENCH_MODE') ?? 'single') as BenchMode;
  if (!MODES.includes(mode)) throw new Error(`BENCH_MODE must be one of ${MODES.join(', ')}`);
  return {
    duration: int(pick('duration', 'BENCH_DURATION'), 10, 1, 600, 'BENCH_DURATION'),
    warmup: int(pick('warmup', 'BENCH_WARMUP'), 2, 0, 60, 'BENCH_WARMUP'),
    connections: int(pick('connections', 'BENCH_CONNECTIONS'), 50, 1, 1000, 'BENCH_CONNECTIONS'),
    rate: int(pick('rate', 'BENCH_RATE'), 1500, 1, 1_000_000, 'BENCH_RATE'),
    users: int(pick('users', 'BENCH_USERS'), 100_000, 1, 10_000_000, 'BENCH_USERS'),
    veterans: int(pick('veterans', 'BENCH_VETERANS'), 200, 0, 100_000, 'BENCH_VETERANS'),
    cluster: !(argv.includes('--no-cluster') || ['0', 'false'].includes(env.BENCH_CLUSTER ?? '')),
    mode,
    redisUrl: local(env.REDIS_URL || 'redis://127.0.0.1:6379', 'REDIS_URL'),
    databaseUrl: local(env.DATABASE_URL || 'postgres://postgres@127.0.0.1:5432/postgres', 'DATABASE_URL'),
    reads: !(argv.includes('--no-reads') || ['0', 'false'].includes(env.BENCH_READS ?? '')),
    nodeArgs: (env.BENCH_NODE_ARGS ?? '').split(' ').filter(Boolean),
    profile: argv.includes('--profile') || ['1', 'true'].includes(env.BENCH_PROFILE ?? ''),
    scrape: argv.includes('--scrape') || ['1', 'true'].includes(env.BENCH_SCRAPE ?? ''),
    verify: argv.includes('--verify') || ['1', 'true'].includes(env.BENCH_VERIFY ?? ''),
  };
}
