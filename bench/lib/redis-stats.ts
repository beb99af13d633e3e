import type { Redis } from 'ioredis';

/** One field of an INFO section as a number. */
export async function infoNumber(redis: Redis, section: string, field: string): Promise<number> {
  const text = await redis.info(section);
  const m = new RegExp(`^${field}:([0-9.]+)`, 'm').exec(text);
  if (!m) throw new Error(`INFO ${section} has no ${field}`);
  return Number(m[1]);
}

/** CPU seconds the Redis server has used (user + system), for the per-scenario CPU column. */
export async function redisCpuSeconds(redis: Redis): Promise<number> {
  return (await infoNumber(redis, 'cpu', 'used_cpu_user')) + (await infoNumber(redis, 'cpu', 'used_cpu_sys'));
}

/** Every key under `prefix:` (SCAN, never KEYS), handed over in batches. */
export async function scanPrefix(
  redis: Redis,
  prefix: string,
  onBatch: (keys: string[]) => Promise<void> | void,
) {
  let cursor = '0';
  do {
    const [next, keys] = await redis.scan(cursor, 'MATCH', `${prefix}:*`, 'COUNT', 2000);
    cursor = next;
    if (keys.length) await onBatch(keys);
  } while (cursor !== '0');
}

/** Deletes this run's keys, and only those: SCAN + UNLINK on the bench's own prefix. */
export async function deletePrefix(redis: Redis, prefix: string): Promise<number> {
  let n = 0;
  await scanPrefix(redis, prefix, async (keys) => {
    n += await redis.unlink(...keys);
  });
  return n;
}

/**
 * Waits until the history writer has emptied every outbox stream under `prefix:` (it deletes what
 * it wrote), so that the next scenario is not measured while the writer catches up. Returns how
 * long that took and how many entries were still waiting when it gave up.
 */
export async function waitForOutboxDrain(
  redis: Redis,
  prefix: string,
  timeoutMs: number,
): Promise<{ ms: number; left: number }> {
  const streams: string[] = [];
  await scanPrefix(redis, prefix, (keys) => {
    streams.push(...keys.filter((k) => k.endsWith(':outbox')));
  });
  const started = Date.now();
  for (;;) {
    const lengths = await Promise.all(streams.map((k) => redis.xlen(k)));
    const left = lengths.reduce((a, b) => a + b, 0);
    if (left === 0 || Date.now() - started > timeoutMs) return { ms: Date.now() - started, left };
    await new Promise((r) => setTimeout(r, 200));
  }
}

export interface KeyCensus {
  /** Keys of Laurel user state (`…:user:<id>` and its sub-keys). */
  userKeys: number;
  /** Profile keys: one per user the server has seen. */
  users: number;
  /** Leaderboard keys and their MEMORY USAGE (exact, every key measured). */
  boardKeys: number;
  boardBytes: number;
  /** Shard outbox streams still holding entries the history writer has not trimmed yet. */
  outboxKeys: number;
  outboxBytes: number;
  /** Mean MEMORY USAGE of a random sample of user keys. */
  sampledUserKeyBytes: number;
  sampleSize: number;
}

/**
 * Counts Laurel's keys under the prefix by kind and measures them with MEMORY USAGE. Unlike the
 * used_memory delta this is not disturbed by anything else running against the same Redis.
 */
export async function censusKeys(redis: Redis, prefix: string, sampleSize = 2000): Promise<KeyCensus> {
  const profile = /:user:[^:]+$/;
  const userSample: string[] = [];
  const boards: string[] = [];
  const outboxes: string[] = [];
  let userKeys = 0;
  let users = 0;
  await scanPrefix(redis, prefix, (keys) => {
    for (const k of keys) {
      if (k.startsWith(`${prefix}:bl:`)) continue; // the baseline server's keys
      if (k.includes(':user:')) {
        userKeys++;
        if (profile.test(k)) users++;
        // Reservoir sampling: a uniform sample without holding every key name.
        if (userSample.length < sampleSize) userSample.push(k);
        else {
          const j = Math.floor(Math.random() * userKeys);
          if (j < sampleSize) userSample[j] = k;
        }
      } else if (k.includes('{lb:')) boards.push(k);
      else if (k.endsWith(':outbox')) outboxes.push(k);
    }
  });
  const usage = async (keys: string[]) => {
    let total = 0;
    for (let i = 0; i < keys.length; i += 200) {
      const pipe = redis.pipeline();
      for (const k of keys.slice(i, i + 200)) pipe.memory('USAGE', k, 'SAMPLES', 0);
      for (const [, v] of (await pipe.exec()) ?? []) total += Number(v ?? 0);
    }
    return total;
  };
  const sampled = await usage(userSample);
  return {
    userKeys,
    users,
    boardKeys: boards.length,
    boardBytes: await usage(boards),
    outboxKeys: outboxes.length,
    outboxBytes: await usage(outboxes),
    sampledUserKeyBytes: userSample.length ? sampled / userSample.length : 0,
    sampleSize: userSample.length,
  };
}

export type CommandStats = Map<string, { calls: number; usec: number }>;

/** Server-wide INFO commandstats (commands run inside scripts are counted too, on Redis 7). */
export async function commandStats(redis: Redis): Promise<CommandStats> {
  const out: CommandStats = new Map();
  for (const m of (await redis.info('commandstats')).matchAll(/^cmdstat_([^:]+):calls=(\d+),usec=(\d+)/gm)) {
    out.set(m[1]!, { calls: Number(m[2]), usec: Number(m[3]) });
  }
  return out;
}

export interface CommandCost {
  command: string;
  calls: number;
  usecPerCall: number;
  /** Redis time spent in this command per request of the scenario, in µs. */
  usecPerRequest: number;
}

/** The commands that used the most Redis time between two snapshots. */
export function commandCosts(
  before: CommandStats,
  after: CommandStats,
  requests: number,
  top = 8,
): CommandCost[] {
  const rows: CommandCost[] = [];
  for (const [command, a] of after) {
    const b = before.get(command) ?? { calls: 0, usec: 0 };
    const calls = a.calls - b.calls;
    const usec = a.usec - b.usec;
    if (calls <= 0) continue;
    rows.push({
      command,
      calls,
      usecPerCall: Math.round((usec / calls) * 100) / 100,
      usecPerRequest: Math.round((usec / Math.max(1, requests)) * 100) / 100,
    });
  }
  return rows.sort((x, y) => y.usecPerRequest - x.usecPerRequest).slice(0, top);
}
