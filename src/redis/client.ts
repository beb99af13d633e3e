import type { Socket } from 'node:net';
import calculateSlot from 'cluster-key-slot';
import { Cluster, Redis } from 'ioredis';

export type RedisClient = Redis | Cluster;

/** True for a Redis Cluster client: keys in different slots cannot share a script or a pipeline. */
export const isCluster = (client: RedisClient): client is Cluster => client instanceof Cluster;

/** Slots by outbox stream, computed once each (at most one stream per user shard: USER_SHARDS ≤ 16,384). */
const outboxSlots = new Map<string, number>();

/**
 * The slot of a user shard's outbox stream, which is every key of the shard's users' slot (the shard's
 * hash tag): where a Cluster's user ops and the writer's acknowledgements of the shard go.
 */
export function outboxSlot(outbox: string): number {
  let slot = outboxSlots.get(outbox);
  if (slot === undefined) {
    if (outboxSlots.size >= 16_384) outboxSlots.clear();
    slot = calculateSlot(outbox);
    outboxSlots.set(outbox, slot);
  }
  return slot;
}

/**
 * Items of outbox streams by the master the client's slot table says serves each stream ("host:port"),
 * and apart those whose master it does not know (to be sent on their own, routed by their key): what
 * one call per master can carry (lua/readOutboxes.lua, lua/ackOutboxes.lua).
 */
export function byOutboxMaster<T>(
  redis: Cluster,
  items: Iterable<T>,
  streamOf: (item: T) => string,
): { byNode: Map<string, T[]>; alone: T[] } {
  const slots = redis.slots;
  const byNode = new Map<string, T[]>();
  const alone: T[] = [];
  for (const item of items) {
    const owner = slots[outboxSlot(streamOf(item))]?.[0];
    const list = owner === undefined ? alone : byNode.get(owner);
    if (list) list.push(item);
    else byNode.set(owner!, [item]);
  }
  return { byNode, alone };
}

export interface RedisOptions {
  url: string;
  clusterNodes?: string | undefined;
}

/** A Redis or Redis Cluster client (REDIS_CLUSTER_NODES switches to Cluster). */
export function createRedis(opts: RedisOptions, onError?: (err: Error) => void): RedisClient {
  const client = connect(opts);
  // Connection errors surface on the commands that fail (503); the event only needs a listener.
  client.on('error', (err: Error) => onError?.(err));
  return client;
}

function connect(opts: RedisOptions): RedisClient {
  const common = {
    maxRetriesPerRequest: 1,
    // No auto-pipelining: ioredis keeps one auto-pipeline in flight per connection and holds every
    // later command until all of its replies are back, so Node and Redis took turns (Redis idle while
    // Node worked through a batch of replies, Node idle while Redis ran the next batch of scripts).
    // Written at once, commands overlap with Redis's work. On the event bench: 2,240-2,750 events/s
    // over six runs (median about 2,550) against 2,200-2,340 with auto-pipelining. (Corking the
    // socket for a tick to save write syscalls measured slower: 2,150-2,370.)
    enableAutoPipelining: false,
    // Disconnected: fail at once (503) instead of queueing requests until Redis returns.
    enableOfflineQueue: false,
    connectTimeout: 2000,
    // Never queue forever when Redis is down: requests fail fast with 503 and recover by themselves.
    retryStrategy: (times: number) => Math.min(times * 100, 1000),
    // A command in flight when the connection drops is failed, not silently resent: the caller
    // decides (user ops retry with the same op id, which the script answers from its marker).
    autoResendUnfulfilledCommands: false,
  };
  if (opts.clusterNodes) {
    const nodes = opts.clusterNodes.split(',').map((hp) => {
      const i = hp.lastIndexOf(':');
      return { host: hp.slice(0, i), port: Number(hp.slice(i + 1)) };
    });
    const cluster = new Cluster(nodes, {
      redisOptions: common,
      scaleReads: 'master',
      // While a slot moves, an op whose keys are part moved (its reply marker is always a new key)
      // is answered TRYAGAIN until the slot's last key has gone, which for a slot of many users takes
      // seconds: keep asking every 100 ms for about 5 s (the user op's own deadline, callScript)
      // instead of ioredis's 16 tries (1.6 s), after which the event would fail with 503.
      maxRedirections: 50,
      retryDelayOnTryAgain: 100,
    });
    // The calls a turn sends to one master (its events' call, src/services/user-op.ts, and the board
    // moves of the boards it serves, src/redis/board-moves.ts) leave in one write. Measured when every
    // event still made a call of its own, alternated: API CPU per event 833 and 792 -> 724 and 703 us,
    // the Cluster's Redis 627 and 626 -> 516 and 500 us.
    cluster.on('+node', (node: Redis) => {
      node.on('connect', () => corkPerTurn(node.stream));
    });
    return cluster;
  }
  return new Redis(opts.url, common);
}

const CORKED = new WeakSet<Socket>();

/**
 * Holds a socket's writes of one turn of the event loop (cork) and sends them together when the
 * turn's I/O callbacks have run (uncork at setImmediate): one write and one syscall instead of one
 * per command. A socket is set up once (a reconnect brings a new socket).
 */
export function corkPerTurn(socket: Socket | undefined): void {
  if (!socket || CORKED.has(socket)) return;
  CORKED.add(socket);
  const write = socket.write.bind(socket) as (...args: unknown[]) => boolean;
  let corked = false;
  socket.write = ((...args: unknown[]) => {
    if (!corked) {
      corked = true;
      socket.cork();
      setImmediate(() => {
        corked = false;
        socket.uncork();
      });
    }
    return write(...args);
  }) as Socket['write'];
}

/** Resolves when the client is connected (commands fail fast while it is not). */
export async function waitReady(client: RedisClient, timeoutMs = 10_000): Promise<void> {
  if (client.status === 'ready') return;
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => {
      client.off('ready', onReady);
      reject(new Error(`Redis not reachable within ${timeoutMs} ms`));
    }, timeoutMs);
    const onReady = () => {
      clearTimeout(timer);
      resolve();
    };
    client.once('ready', onReady);
  });
}

/** A second connection for SUBSCRIBE (a subscribed connection cannot run commands). */
export function duplicateForSubscribe(client: RedisClient): RedisClient {
  return client.duplicate();
}
