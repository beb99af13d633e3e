import calculateSlot from 'cluster-key-slot';
import { type Cluster, Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { userMaster, userSlot, usersPerCall } from '../helpers/gathered';
import { spyOwnCalls } from '../helpers/spy';
import { getBoard } from '../helpers/leaderboards';
import { type UserOp, runUserOp } from '../../src/services/user-op';
import { type LocalCluster, startRedisCluster } from '../helpers/redis-cluster';
import { adminCreate, createTestServer, type TestServer } from '../helpers/server';

// On a Redis Cluster, the events a process has for one configuration within one turn of its event loop
// travel in one "__multi_node" call per master (src/services/user-op.ts gathered), for users of any of the
// slots that master serves; an op whose slot the master no longer serves is sent again alone. Runs on a
// throwaway Cluster of its own (it moves a slot), in the main suite.

let cluster: LocalCluster;
let t: TestServer;
let metricId: string;

beforeAll(async () => {
  cluster = await startRedisCluster();
  // A grace long enough for a loaded machine (5 ms by default): the gathering test below counts calls.
  t = await createTestServer({ env: { REDIS_CLUSTER_NODES: cluster.nodes, CLUSTER_ROUND_GRACE_MS: '500' } });
  [{ id: metricId }] = (await adminCreate(t, '/metrics', [{ key: 'cg-m', name: 'M' }])) as [{ id: string }];
  await t.deps.catalog.reload();
}, 60_000);

afterAll(async () => {
  await t?.close();
  for (const c of nodeClients.values()) c.disconnect();
  await cluster?.stop();
});

/** An event of `value` (of the suite's metric, or another). */
const event = (user: string, value: number, metric = metricId): UserOp => ({
  kind: 'event',
  metricId: metric,
  user: { id: user },
  valueMicros: value * 1_000_000,
});

const slotOf = (user: string) => userSlot(t, user);
const masterOf = (user: string) => userMaster(t, user);

/**
 * Two users whose slots one master serves (`from`), in different slots, b with one event of state
 * already, and another master (`to`).
 */
async function pairOnOneMaster(tag: string) {
  const ids = Array.from({ length: 200 }, (_, i) => `cg-${tag}${i}`);
  const a = ids[0]!;
  const b = ids.find((u) => masterOf(u) === masterOf(a) && slotOf(u) !== slotOf(a))!;
  await runUserOp(t.deps, event(b, 1));
  const from = masterOf(b);
  return { a, b, slot: slotOf(b), from, to: mastersOf().find((n) => n !== from)! };
}

/**
 * Events of a (2) and b (3) sent together: they go in one call to a's master, where b's op is refused
 * and goes again alone; each counts once (b had 1 already).
 */
async function sendBoth(a: string, b: string): Promise<void> {
  let results: Awaited<ReturnType<typeof runUserOp>>[] = [];
  const calls = await usersPerCall(t, async () => {
    results = await Promise.all([runUserOp(t.deps, event(a, 2)), runUserOp(t.deps, event(b, 3))]);
  });
  expect(calls).toEqual([[a, b], [b]]);
  expect(results.map((r) => [r.totalMicros, r.seq])).toEqual([
    [2_000_000, 1],
    [4_000_000, 2],
  ]);
}

describe('events gathered per master on a Redis Cluster', () => {
  it('sends one call per master for the users of its slots, each op answered as if alone', async () => {
    const users = Array.from({ length: 15 }, (_, i) => `cg-u${i}`);
    let results: Awaited<ReturnType<typeof runUserOp>>[] = [];
    const calls = await usersPerCall(t, async () => {
      results = await Promise.all(users.map((u, i) => runUserOp(t.deps, event(u, i + 1))));
    });
    const masters = new Set(users.map(masterOf));
    expect(masters.size).toBe(3);
    expect(calls).toHaveLength(3);
    for (const call of calls) expect(new Set(call.map(masterOf)).size).toBe(1);
    expect(calls.flat().sort()).toEqual([...users].sort());
    // The users of one call are in several slots (16 shards over 3 masters).
    expect(Math.max(...calls.map((c) => new Set(c.map(slotOf)).size))).toBeGreaterThan(1);
    expect(results.map((r) => r.totalMicros)).toEqual(users.map((_, i) => (i + 1) * 1_000_000));
    for (const u of users) expect(await t.deps.redis.hget(t.deps.keys.user(u).hash, 'seq')).toBe('1');
  });

  it('sends an op again alone when its slot has moved to another master since the client last looked', async () => {
    const redis = t.deps.redis as Cluster;
    const { a, b, slot, from, to } = await pairOnOneMaster('s');
    // b's slot moves to another master, keys and all (as redis-cli --cluster reshard does it).
    await moveSlot(slot, from, to);
    // The client has not looked again yet: it still believes the slot is where it was.
    redis.slots[slot] = [from];
    // b's op fails in the call both go in, before anything of it is written (its keys are no longer
    // on that master), then goes alone, routed by its keys (MOVED takes it to the new master).
    await sendBoth(a, b);
    expect(masterOf(b)).toBe(to);
    expect(await nodeClient(from).cluster('COUNTKEYSINSLOT', slot)).toBe(0);
    // b's two events left two outbox records, on the new master.
    const records = (await redis.xrange(t.deps.keys.user(b).outbox, '-', '+')).filter(([, f]) =>
      f.some((v) => v.includes(`"user":"${b}"`)),
    );
    expect(records).toHaveLength(2);
  });

  it('writes nothing of an op whose slot is half moved, and applies it once the move is done', async () => {
    const redis = t.deps.redis as Cluster;
    const { a, b, slot, from, to } = await pairOnOneMaster('h');
    // Mid-move: the slot is migrating and its outbox has gone ahead, while b's hash is still here. The
    // user script writes b's hash before it appends to the outbox: the op must be refused before that
    // (its first read, of its reply marker, is of a key not here), not fail halfway.
    const { finish } = await startMove(slot, from, to, [t.deps.keys.user(b).outbox]);
    const done = (async () => {
      await new Promise((r) => setTimeout(r, 300));
      await finish();
    })();
    // b's second event counts once: nothing of its refused attempt was written.
    await sendBoth(a, b);
    await done;
    expect(await redis.hget(t.deps.keys.user(b).hash, 'seq')).toBe('2');
    expect(await nodeClient(from).cluster('COUNTKEYSINSLOT', slot)).toBe(0);
  });

  it('holds an event of a slot being moved until the move is done, for up to about 5 s', async () => {
    const { b, slot, from, to } = await pairOnOneMaster('w');
    const { finish } = await startMove(slot, from, to, [t.deps.keys.user(b).outbox]);
    // A slot of many keys takes seconds to move; Redis answers TRYAGAIN meanwhile (the op's keys are
    // part here, part there), and the client keeps asking.
    const done = (async () => {
      await new Promise((r) => setTimeout(r, 2500));
      await finish();
    })();
    const r = await runUserOp(t.deps, event(b, 3));
    await done;
    expect([r.totalMicros, r.seq]).toEqual([4_000_000, 2]);
    // It ended on the new master (through MOVED or, before every master was told, ASK), and counted once.
    expect(await nodeClient(to).hget(t.deps.keys.user(b).hash, 'seq')).toBe('2');
    expect(await nodeClient(from).cluster('COUNTKEYSINSLOT', slot)).toBe(0);
  }, 15_000);

  it('hands out the answers of one turn’s calls together, so their events’ board moves leave in one call per board', async () => {
    const { boardMetric, boardMaster } = await boardOfItsOwn('cg-b', 'cg-board');
    const users = Array.from({ length: 15 }, (_, i) => `cg-r${i}`);
    expect(new Set(users.map(masterOf)).size).toBe(3);
    // The users of the board's master have their moves made by the user script (fused); the others'
    // leave in one updateBoard call.
    const apart = users.filter((u) => masterOf(u) !== boardMaster);
    expect(apart.length).toBeGreaterThan(1);
    expect(apart.length).toBeLessThan(users.length);
    const moves = spyOwnCalls(t.deps.redis, 'updateBoard');
    let results: Awaited<ReturnType<typeof runUserOp>>[] = [];
    try {
      const calls = await usersPerCall(t, async () => {
        results = await Promise.all(
          users.map((u, i) =>
            runUserOp(t.deps, {
              kind: 'event',
              metricId: boardMetric,
              user: { id: u },
              valueMicros: (i + 1) * 1_000_000,
            }),
          ),
        );
      });
      expect(calls).toHaveLength(3);
      // One call for the moves of the two other masters' users (each master's answer arrives on its
      // own; without rounds each answer's moves left in a call of their own).
      const sent = moves.calls();
      expect(sent).toHaveLength(1);
      // The key count, the keys, '' (several moves) and one packed argument per move, each of a user
      // apart (a packed move ends with its user's id).
      const packed = sent[0]!.slice(2 + Number(sent[0]![0])).map(String);
      expect(packed.map((m) => m.slice(m.lastIndexOf('|') + 1)).sort()).toEqual([...apart].sort());
    } finally {
      moves.restore();
    }
    // Each move answered as if alone, and the board holds every user, ranked by value.
    for (const r of results) expect(r.boardMoves?.map((m) => m.value)).toEqual([r.totalMicros / 1_000_000]);
    const board = await getBoard(t, 'cg-board', { limit: 100 });
    expect(board.status).toBe(200);
    expect(board.body.rankings.map((e: { userId: string }) => e.userId)).toEqual([...users].reverse());
  });

  it('moves a user on a board whose slot its master serves in the user script, and on the others by calls of their own', async () => {
    const { boardMetric, boardMaster } = await boardOfItsOwn('cg-f', 'cg-fboard');
    const ids = Array.from({ length: 200 }, (_, i) => `cg-f${i}`);
    const near = ids.find((u) => masterOf(u) === boardMaster)!;
    const far = ids.find((u) => masterOf(u) !== boardMaster)!;
    const moves = spyOwnCalls(t.deps.redis, 'updateBoard');
    try {
      // One at a time: a lone op with a fused board still goes in a "__multi_node" call.
      const a = await runUserOp(t.deps, event(near, 5, boardMetric));
      expect(moves.calls()).toHaveLength(0);
      const b = await runUserOp(t.deps, event(far, 3, boardMetric));
      expect(moves.calls()).toHaveLength(1);
      expect(a.boardMoves?.map((m) => [m.value, m.rank])).toEqual([[5, 1]]);
      expect(b.boardMoves?.map((m) => [m.value, m.rank])).toEqual([[3, 2]]);
    } finally {
      moves.restore();
    }
    const board = await getBoard(t, 'cg-fboard', { limit: 10 });
    expect(board.body.rankings.map((e: { userId: string; value: number }) => [e.userId, e.value])).toEqual([
      [near, 5],
      [far, 3],
    ]);
  });

  it('writes nothing of an op whose fused board’s slot is half moved, and applies it once the move is done', async () => {
    const { boardId, boardMetric, boardMaster } = await boardOfItsOwn('cg-hm', 'cg-mboard');
    const ids = Array.from({ length: 200 }, (_, i) => `cg-m${i}`);
    const [u, v] = ids.filter((x) => masterOf(x) === boardMaster);
    const send = (user: string, value: number) => runUserOp(t.deps, event(user, value, boardMetric));
    await send(v!, 1);
    // Mid-move: the board's slot is migrating to another master and its version key has gone ahead.
    // The user script writes u's hash before it moves u on the board: the op must be refused before
    // that (its check of the board's keys), not fail halfway, then go again alone without the board,
    // whose move follows as a call of its own (ASK takes it to the key's new master).
    const bk = t.deps.keys.board(boardId);
    const slot = calculateSlot(bk.version);
    const to = mastersOf().find((n) => n !== boardMaster)!;
    const { finish } = await startMove(slot, boardMaster, to, [bk.version]);
    const moves = spyOwnCalls(t.deps.redis, 'updateBoard');
    let r: Awaited<ReturnType<typeof runUserOp>>;
    try {
      const done = (async () => {
        await new Promise((res) => setTimeout(res, 300));
        await finish();
      })();
      r = await send(u!, 2);
      await done;
      expect(moves.calls().length).toBeGreaterThan(0);
    } finally {
      moves.restore();
    }
    // u's event counted once, and its move was made once.
    expect([r.totalMicros, r.seq]).toEqual([2_000_000, 1]);
    // u was not on the board before: nothing of the refused attempt's move was left there.
    expect(r.boardMoves?.map((m) => [m.prevRank, m.prevValue, m.value, m.rank])).toEqual([
      [null, null, 2, 1],
    ]);
    expect(await t.deps.redis.hget(t.deps.keys.user(u!).hash, 'seq')).toBe('1');
    expect(await nodeClient(boardMaster).cluster('COUNTKEYSINSLOT', slot)).toBe(0);
    const board = await getBoard(t, 'cg-mboard', { limit: 10 });
    expect(board.body.rankings.map((e: { userId: string; value: number }) => [e.userId, e.value])).toEqual([
      [u, 2],
      [v, 1],
    ]);
    // The op's user is on the board's old master: its next event fuses no board there any more.
    const moved = spyOwnCalls(t.deps.redis, 'updateBoard');
    try {
      await send(u!, 1);
      expect(moved.calls()).toHaveLength(1);
    } finally {
      moved.restore();
    }
  });
});

/**
 * A metric of its own with a perpetual board ranked by it: its ids and the master of the board's slot.
 * The client's slot table is read afresh first: the tests above move slots, and one leaves it stale
 * on purpose (an op of such a slot would be refused and sent again alone, without fused boards).
 */
async function boardOfItsOwn(metricKey: string, boardKey: string) {
  await new Promise<void>((resolve, reject) =>
    (t.deps.redis as Cluster).refreshSlotsCache((err) => (err ? reject(err) : resolve())),
  );
  const [{ id: boardMetric }] = (await adminCreate(t, '/metrics', [{ key: metricKey, name: metricKey }])) as [
    { id: string },
  ];
  const [{ id: boardId }] = (await adminCreate(t, '/leaderboards', [
    { key: boardKey, name: boardKey, status: 'active', rankBy: 'metric', metricId: boardMetric },
  ])) as [{ id: string }];
  await t.deps.catalog.reload();
  const boardMaster = (t.deps.redis as Cluster).slots[calculateSlot(t.deps.keys.board(boardId).version)]![0]!;
  return { boardId, boardMetric, boardMaster };
}

/** Plain clients of the Cluster's masters by "host:port", for moving slots. */
const nodeClients = new Map<string, Redis>();
function nodeClient(node: string): Redis {
  let c = nodeClients.get(node);
  if (!c) {
    const [host, port] = node.split(':');
    c = new Redis({ host, port: Number(port), lazyConnect: false });
    nodeClients.set(node, c);
  }
  return c;
}

/** The Cluster's masters, "host:port". */
const mastersOf = () =>
  (t.deps.redis as Cluster).nodes('master').map((n) => `${n.options.host}:${n.options.port}`);

/**
 * Starts moving a slot from one master to another (importing there, migrating here) and moves `first`
 * of its keys; `finish` moves the rest and tells every master (as redis-cli --cluster reshard does).
 */
async function startMove(slot: number, from: string, to: string, first: string[] = []) {
  const src = nodeClient(from);
  const dst = nodeClient(to);
  const [srcId, dstId] = [await src.cluster('MYID'), await dst.cluster('MYID')];
  const [host, port] = to.split(':');
  const migrate = (keys: string[]) => src.migrate(host!, port!, '', 0, 5000, 'KEYS', ...keys);
  await dst.cluster('SETSLOT', slot, 'IMPORTING', srcId);
  await src.cluster('SETSLOT', slot, 'MIGRATING', dstId);
  if (first.length) await migrate(first);
  return {
    async finish() {
      for (;;) {
        const keys = (await src.cluster('GETKEYSINSLOT', slot, 100)) as string[];
        if (!keys.length) break;
        await migrate(keys);
      }
      // The new owner first, then the old one, then the rest.
      for (const node of [to, from, ...mastersOf().filter((n) => n !== to && n !== from)])
        await nodeClient(node).cluster('SETSLOT', slot, 'NODE', dstId);
    },
  };
}

/** Moves a slot and its keys from one master to another, and tells every master. */
async function moveSlot(slot: number, from: string, to: string): Promise<void> {
  await (await startMove(slot, from, to)).finish();
}
