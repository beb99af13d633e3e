import { Cluster, type Redis } from 'ioredis';
import { Keys } from '../../src/redis/keys';

/** One field of an INFO section as a number. */
export async function infoNumber(redis: Redis, section: string, field: string): Promise<number> {
  const text = await redis.info(section);
  const m = new RegExp(`^${field}:([0-9.]+)`, 'm').exec(text);
  if (!m) throw new Error(`INFO ${section} has no ${field}`);
  return Number(m[1]);
}

/** One Redis, or every master of a Cluster (each a plain client of one node). */
export type Nodes = Redis | Redis[];
const each = (nodes: Nodes): Redis[] => (Array.isArray(nodes) ? nodes : [nodes]);

/** CPU seconds the Redis server (or every node) has used (user + system), for the CPU columns. */
export async function redisCpuSeconds(nodes: Nodes): Promise<number> {
  const secs = await Promise.all(
    each(nodes).map(async (r) => {
      const text = await r.info('cpu');
      const field = (f: string) => Number(new RegExp(`^${f}:([0-9.]+)`, 'm').exec(text)?.[1] ?? Number.NaN);
      return field('used_cpu_user') + field('used_cpu_sys');
    }),
  );
  return secs.reduce((a, b) => a + b, 0);
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

/** The outbox streams under `prefix:`, each with its node. */
export type OutboxStreams = Array<[Redis, string]>;

/**
 * Finds the outbox streams under `prefix:` (a SCAN of the prefix's keys): done before a measured
 * window (bench:script --writer), so that the scan's Redis work is not counted as the writer's.
 */
export async function outboxStreams(nodes: Nodes, prefix: string): Promise<OutboxStreams> {
  const streams: OutboxStreams = [];
  for (const node of each(nodes)) {
    await scanPrefix(node, prefix, (keys) => {
      for (const k of keys) if (k.endsWith(':outbox')) streams.push([node, k]);
    });
  }
  return streams;
}

/**
 * Waits until the history writer has emptied every outbox stream under `prefix:` (it deletes what
 * it wrote), so that the next scenario is not measured while the writer catches up. Returns how
 * long that took and how many entries were still waiting when it gave up.
 */
export async function waitForOutboxDrain(
  nodes: Nodes,
  prefix: string,
  timeoutMs: number,
  found?: OutboxStreams,
): Promise<{ ms: number; left: number }> {
  const streams = found ?? (await outboxStreams(nodes, prefix));
  const started = Date.now();
  for (;;) {
    const lengths = await Promise.all(streams.map(([node, k]) => node.xlen(k)));
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
  /** Outbox streams still holding entries the history writer has not trimmed yet. */
  outboxKeys: number;
  outboxBytes: number;
  /** Mean MEMORY USAGE of a random sample of user keys, transient keys counted as 0. */
  sampledUserKeyBytes: number;
  /** Mean MEMORY USAGE of the transient keys of the sample, per sampled key (see TRANSIENT_TTL_MS). */
  sampledTransientBytes: number;
  /** Share of the sampled user keys that are transient. */
  transientKeyShare: number;
  sampleSize: number;
}

/**
 * Keys that expire within this many ms are transient (a committed op's reply marker, kept seconds so
 * a retry can be answered): they belong to the last seconds' requests, not to the users, and are
 * counted apart from the memory per user.
 */
export const TRANSIENT_TTL_MS = 60_000;

/** MEMORY USAGE of keys, each asked of the node that holds it, split into lasting and transient. */
async function memoryUsage(
  keys: Array<[Redis, string]>,
): Promise<{ bytes: number; transient: number; transientKeys: number }> {
  const out = { bytes: 0, transient: 0, transientKeys: 0 };
  for (let i = 0; i < keys.length; i += 200) {
    const batch = keys.slice(i, i + 200);
    const byNode = new Map<Redis, string[]>();
    for (const [node, k] of batch) byNode.set(node, [...(byNode.get(node) ?? []), k]);
    for (const [node, ks] of byNode) {
      const pipe = node.pipeline();
      for (const k of ks) pipe.memory('USAGE', k, 'SAMPLES', 0).pttl(k);
      const replies = (await pipe.exec()) ?? [];
      for (let j = 0; j + 1 < replies.length; j += 2) {
        const bytes = Number(replies[j]![1] ?? 0);
        const ttl = Number(replies[j + 1]![1] ?? -1);
        // -2: the key expired between the SCAN and now (a reply marker), so it was transient too.
        if (ttl === -2 || (ttl >= 0 && ttl <= TRANSIENT_TTL_MS)) {
          out.transient += bytes;
          out.transientKeys++;
        } else out.bytes += bytes;
      }
    }
  }
  return out;
}

/**
 * Counts Laurel's keys under the prefix by kind and measures them with MEMORY USAGE. Unlike the
 * used_memory delta this is not disturbed by anything else running against the same Redis.
 */
export async function censusKeys(nodes: Nodes, prefix: string, sampleSize = 2000): Promise<KeyCensus> {
  const profile = /:user:[^:]+$/;
  const userSample: Array<[Redis, string]> = [];
  const boards: Array<[Redis, string]> = [];
  const outboxes: Array<[Redis, string]> = [];
  let userKeys = 0;
  let users = 0;
  for (const node of each(nodes)) {
    await scanPrefix(node, prefix, (keys) => {
      for (const k of keys) {
        if (k.startsWith(`${prefix}:bl:`)) continue; // the baseline server's keys
        if (k.includes(':user:')) {
          userKeys++;
          if (profile.test(k)) users++;
          // Reservoir sampling: a uniform sample without holding every key name.
          if (userSample.length < sampleSize) userSample.push([node, k]);
          else {
            const j = Math.floor(Math.random() * userKeys);
            if (j < sampleSize) userSample[j] = [node, k];
          }
        } else if (k.includes('{lb:')) boards.push([node, k]);
        else if (k.endsWith(':outbox')) outboxes.push([node, k]);
      }
    });
  }
  const sampled = await memoryUsage(userSample);
  const n = Math.max(1, userSample.length);
  return {
    userKeys,
    users,
    boardKeys: boards.length,
    boardBytes: (await memoryUsage(boards)).bytes,
    outboxKeys: outboxes.length,
    outboxBytes: (await memoryUsage(outboxes)).bytes,
    sampledUserKeyBytes: sampled.bytes / n,
    sampledTransientBytes: sampled.transient / n,
    transientKeyShare: sampled.transientKeys / n,
    sampleSize: userSample.length,
  };
}

export interface UserMemory {
  /** Users measured. */
  users: number;
  /** Mean MEMORY USAGE of a user's own keys (`…:user:<id>` and `…:user:<id>:…`), bytes, transient keys left out. */
  bytesPerUser: number;
  keysPerUser: number;
  /** Mean MEMORY USAGE and number of the user's transient keys (see TRANSIENT_TTL_MS). */
  transientBytesPerUser: number;
  transientKeysPerUser: number;
  /** Mean MEMORY USAGE of the user's rank-history keys on leaderboards (`…:hist:<id>`), bytes. */
  boardHistoryBytesPerUser: number;
  boardHistoryKeysPerUser: number;
  /**
   * Mean number of the user's fields in the longest streaks' "first reached at" index
   * (`{global}:streak:longest-at`, fields `<userId>|<length>`): bounded at one per user.
   */
  longestAtFieldsPerUser: number;
}

/**
 * The Redis memory of some users, measured key by key: one SCAN over the prefix picks each user's
 * own keys (and, reported apart, the user's rank-history keys on leaderboards).
 */
export async function userMemory(nodes: Nodes, prefix: string, ids: string[]): Promise<UserMemory> {
  const wanted = new Set(ids);
  const own: Array<[Redis, string]> = [];
  const hist: Array<[Redis, string]> = [];
  const ownKey = /:user:([^:]+)(?::|$)/;
  const histKey = /:hist:([^:]+)$/;
  for (const node of each(nodes)) {
    await scanPrefix(node, prefix, (keys) => {
      for (const k of keys) {
        const o = ownKey.exec(k);
        if (o && wanted.has(o[1]!)) own.push([node, k]);
        else {
          const h = histKey.exec(k);
          if (h && k.includes('{lb:') && wanted.has(h[1]!)) hist.push([node, k]);
        }
      }
    });
  }
  const n = Math.max(1, ids.length);
  const per = (x: number) => Math.round((x / n) * 100) / 100;
  const mine = await memoryUsage(own);
  const history = await memoryUsage(hist);
  // One pass over the index, counting the sampled users' fields ("<userId>|<length>").
  let longestAt = 0;
  // The global keys do not depend on the shard count.
  const indexKey = new Keys(prefix, 1, { cluster: false }).global.streakLongestAt;
  const sampled = new Set(ids);
  for (const node of each(nodes)) {
    let cursor = '0';
    do {
      const [next, flat] = await node.hscan(indexKey, cursor, 'COUNT', 1000);
      cursor = next;
      for (let i = 0; i < flat.length; i += 2) {
        const field = flat[i]!;
        if (sampled.has(field.slice(0, field.lastIndexOf('|')))) longestAt++;
      }
    } while (cursor !== '0');
  }
  return {
    users: ids.length,
    bytesPerUser: Math.round(mine.bytes / n),
    keysPerUser: per(own.length - mine.transientKeys),
    transientBytesPerUser: Math.round(mine.transient / n),
    transientKeysPerUser: per(mine.transientKeys),
    boardHistoryBytesPerUser: Math.round(history.bytes / n),
    boardHistoryKeysPerUser: per(hist.length - history.transientKeys),
    longestAtFieldsPerUser: per(longestAt),
  };
}

export type CommandStats = Map<string, { calls: number; usec: number }>;

/** Server-wide INFO commandstats, summed over nodes (commands run inside scripts are counted too, on Redis 7). */
export async function commandStats(nodes: Nodes): Promise<CommandStats> {
  const out: CommandStats = new Map();
  for (const text of await Promise.all(each(nodes).map((r) => r.info('commandstats')))) {
    for (const m of text.matchAll(/^cmdstat_([^:]+):calls=(\d+),usec=(\d+)/gm)) {
      const prev = out.get(m[1]!) ?? { calls: 0, usec: 0 };
      out.set(m[1]!, { calls: prev.calls + Number(m[2]), usec: prev.usec + Number(m[3]) });
    }
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

/** A Cluster client and a plain client per master (SCAN, INFO and MEMORY are per node). */
export async function connectCluster(nodes: string): Promise<{ client: Cluster; masters: Redis[] }> {
  const client = new Cluster(
    nodes.split(',').map((hp) => {
      const i = hp.lastIndexOf(':');
      return { host: hp.slice(0, i), port: Number(hp.slice(i + 1)) };
    }),
    { redisOptions: { maxRetriesPerRequest: 1 } },
  );
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error('the Redis Cluster was not ready within 10 s')), 10_000);
    client.once('ready', () => {
      clearTimeout(timer);
      resolve();
    });
  });
  return { client, masters: client.nodes('master') };
}
