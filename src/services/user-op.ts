import { randomUUID } from 'node:crypto';
import calculateSlot from 'cluster-key-slot';
import type { Snapshot } from '../catalog/snapshot';
import type { Deps } from '../deps';
import { isCluster, outboxSlot } from '../redis/client';
import type { UserKeys } from '../redis/keys';
import { MAX_OPS_PER_CALL, PerTurn, Rounds, settleReplies, type Waiting } from '../redis/per-turn';
import { decodeCompletion } from '../redis/user-hash';
import {
  type LuaMove,
  oneReply,
  parseReply,
  quietOutcome,
  replyList,
  type UserScriptContext,
  type UserScriptInput,
  levelAtPosition,
} from '../redis/user-script';
import { AppError, isInfrastructureError, notFound, unavailable, unprocessable } from '../errors';
import { boostStatus } from '../engine/boost-status';
import { multiplierFraction } from '../engine/decimal';
import { leaderboardStatus } from '../engine/leaderboard-status';
import { DAY_MS, idempotencyField, idempotencyKeys, keyedEventId } from '../engine/idempotency';
import { evaluatedCall } from './evaluated-op';
import { dayIndex, localDate, periodIndex } from '../engine/periods';
import { applyBoardUpdates, type BoardMove, boardMove, rememberUserName } from './leaderboards';
import { wireRef } from './wire-snapshots';
import { TwoGenerationCache } from './zone-cache';
import { opWire, planFor, type Plan } from '../engine/plan';
import { runContaining, runFinalizationMs } from '../engine/runs';

import type { UserInput, UserOp, UserOpResult } from '../engine/user-op-result';

export type { UserInput, UserOp, UserOpResult } from '../engine/user-op-result';
export type { LuaAward, LuaStreak } from '../redis/user-script';

/**
 * Last time zone seen per user, by the user's hash key (which names the deployment's key prefix, so two
 * servers in one process never share an entry): the script checks it and asks again when it was wrong.
 */
const tzCache = new TwoGenerationCache<string>(100_000);

/** cjson writes empty arrays as {}: read any list through this. */
export const asArray = <T>(v: T[] | Record<string, never> | undefined | null): T[] =>
  Array.isArray(v) ? v : [];

type BoostInput = Record<
  string,
  Array<{ id: string; num: number; den: number; r: string; uf: [string, string][] }>
>;

type SystemBoost = Snapshot['systems'][number]['boosts'][number];

/**
 * A plan's boosts (per snapshot, as plans are): per system of the plan, those for every user and, for
 * each user with boosts of their own, theirs, each with its place in the system's list; and the
 * boosts for every user active on a date, kept per date.
 */
interface PlanBoosts {
  shared: Array<Array<[number, SystemBoost]>>;
  own: Map<string, Array<Array<[number, SystemBoost]>>>;
  byDate: Map<string, BoostInput>;
}
const planBoosts = new WeakMap<Plan, PlanBoosts>();

/**
 * The boosts active for this user on a local date, per system of the plan: one object per plan and
 * date for every user without a boost of their own (so the op's day share is kept too), and for a
 * user with one the shared boosts and theirs, in the system's order, without reading anyone else's
 * (a system may hold a boost for each of thousands of users).
 */
function boostsFor(snap: Snapshot, plan: Plan, userId: string, date: string): BoostInput {
  let pb = planBoosts.get(plan);
  if (!pb) {
    pb = { shared: [], own: new Map(), byDate: new Map() };
    for (const [i, ps] of plan.systems.entries()) {
      pb.shared.push([]);
      for (const [j, b] of snap.systemsById.get(ps.id)!.boosts.entries()) {
        if (b.userId === null) {
          pb.shared[i]!.push([j, b]);
          continue;
        }
        let lists = pb.own.get(b.userId);
        if (!lists) {
          lists = plan.systems.map(() => []);
          pb.own.set(b.userId, lists);
        }
        lists[i]!.push([j, b]);
      }
    }
    planBoosts.set(plan, pb);
  }
  const own = pb.own.get(userId);
  if (own) return computeBoosts(snap, plan, date, (i) => mergeByPlace(pb.shared[i]!, own[i]!));
  let out = pb.byDate.get(date);
  if (!out) {
    if (pb.byDate.size >= 1000) pb.byDate.clear();
    const shared = pb.shared;
    out = computeBoosts(snap, plan, date, (i) => shared[i]!);
    pb.byDate.set(date, out);
  }
  return out;
}

/** Two lists of a system's boosts, each in the system's order, as one in that order. */
function mergeByPlace<T>(a: Array<[number, T]>, b: Array<[number, T]>): Array<[number, T]> {
  if (!b.length) return a;
  if (!a.length) return b;
  const out: Array<[number, T]> = [];
  let i = 0;
  let j = 0;
  while (i < a.length || j < b.length) {
    if (j >= b.length || (i < a.length && a[i]![0] < b[j]![0])) out.push(a[i++]!);
    else out.push(b[j++]!);
  }
  return out;
}

/** Of each system's candidate boosts (`candidates(i)` for the plan's i-th system), those active on `date`. */
function computeBoosts(
  snap: Snapshot,
  plan: Plan,
  date: string,
  candidates: (i: number) => Array<[number, SystemBoost]>,
): BoostInput {
  const out: BoostInput = {};
  for (const [i, ps] of plan.systems.entries()) {
    const list = candidates(i)
      .filter(([, b]) => boostStatus(b.start, b.end, date) === 'active')
      .map(([, b]) => {
        const f = multiplierFraction(b.multiplier);
        return {
          id: b.id,
          num: f.num,
          den: f.den,
          r: b.rounding,
          uf: b.userAttributes.map(
            (x) => [snap.attributesById.get(x.attributeId)?.key ?? '', x.attributeValue] as [string, string],
          ),
        };
      });
    if (list.length) out[ps.id] = list;
  }
  return out;
}

/** The boards this op may move, with the run its local date falls in (semantics §6.3). */
function boardsFor(snap: Snapshot, plan: Plan, op: UserOp, now: number, date: string) {
  const out: Array<{ id: string; run: string; kind: string; ref: string }> = [];
  const systems = new Set(plan.systems.map((s) => s.id));
  for (const b of snap.leaderboards) {
    let ref: string | null = null;
    if (b.rankBy === 'metric' && op.kind === 'event' && b.metricId === op.metricId) ref = b.metricId;
    else if (b.rankBy === 'points' && b.pointsSystemId && systems.has(b.pointsSystemId))
      ref = b.pointsSystemId;
    else if (
      b.rankBy === 'streak' &&
      (op.kind === 'event' || op.kind === 'restore' || op.kind === 'upsert') &&
      plan.streak.on
    )
      ref = 'streak';
    if (!ref || leaderboardStatus(b, now) !== 'active') continue;
    const run = runContaining(b, date);
    if (!run || (run.end !== null && now >= runFinalizationMs(run.end))) continue;
    out.push({ id: b.id, run: run.start, kind: b.rankBy, ref });
  }
  return out;
}

function luaUser(u: UserInput) {
  return {
    id: u.id,
    email: u.email,
    name: u.name,
    tz: u.tz,
    dt: u.deviceTokens ? JSON.stringify(u.deviceTokens) : undefined,
    sub: u.subscribeToEmails,
    attrs: u.attributes && Object.keys(u.attributes).length ? u.attributes : undefined,
    prefs:
      u.preferences && Object.keys(u.preferences).length
        ? Object.fromEntries(Object.entries(u.preferences).map(([k, v]) => [k, JSON.stringify(v)]))
        : undefined,
  };
}

/**
 * The user script also applies the moves on boards without breakdowns (their group is known before
 * the op) that are not streak boards (their expiry needs the op's outcome and time-zone rules): one
 * call per event instead of one more per board. On a single Redis every such board (`node` ''); on a
 * Redis Cluster those whose slot the master of the op's user (`node`, as the client's slot table
 * says) serves too, which a "__multi_node" call reaches (lua/applyUserOp.lua checks them before it
 * writes anything), and none when the op's master is not known (`node` undefined). Returns the boards'
 * keys, which follow the op's `ownKeys` own keys, with the context's fuse.
 */
function fuseBoards(
  deps: Deps,
  boards: Array<{ id: string; run: string }>,
  ownKeys: number,
  node: string | undefined,
): { boardKeys: string[]; fuse?: UserScriptContext['fuse']; owners?: BoardOwners } {
  if (boards.length === 0 || node === undefined) return { boardKeys: [] };
  const slots = isCluster(deps.redis) ? deps.redis.slots : null;
  const owners: BoardOwners | undefined = slots ? [] : undefined;
  const snap = deps.catalog.snapshot;
  const boardKeys: string[] = [];
  const fuse: NonNullable<UserScriptContext['fuse']> = [];
  for (const [i, u] of boards.entries()) {
    const board = snap.leaderboardsById.get(u.id);
    if (!board || board.rankBy === 'streak' || board.breakdownAttributes.length) continue;
    if (slots && owners) {
      // Every key of a board shares its hash tag. Computed only when a day share is made (dayShareOf).
      const slot = calculateSlot(deps.keys.board(board.id).version);
      const here = slots[slot]?.[0] === node;
      owners.push([slot, here]);
      if (!here) continue;
    }
    const bk = deps.keys.board(board.id);
    const ki = ownKeys + boardKeys.length + 1;
    boardKeys.push(bk.members(u.run), bk.ranking(u.run, ''), bk.version, bk.changes);
    fuse.push({ b: i + 1, ki, kn: ownKeys + boardKeys.length + 1 - ki, max: board.maxParticipants });
  }
  if (fuse.length === 0) return { boardKeys: [], owners };
  return { boardKeys, fuse, owners };
}

/** On a Cluster, each fusable board's slot and whether the op's master served it (fuseBoards). */
type BoardOwners = Array<[slot: number, here: boolean]>;

/** Whether the client's slot table still says what `owners` were worked out from, for ops of `node`. */
function ownersHold(deps: Deps, owners: BoardOwners, node: string | undefined): boolean {
  if (!isCluster(deps.redis)) return true;
  const slots = deps.redis.slots;
  for (const [slot, here] of owners) if ((slots[slot]?.[0] === node) !== here) return false;
  return true;
}

/** The moves the user script applied (by board id); a board it left (err GROUP) is not among them. */
function fusedMoves(snap: Snapshot, r: UserOpResult, replies: LuaMove[]): Map<string, BoardMove> {
  const out = new Map<string, BoardMove>();
  for (const m of replies) {
    const board = snap.leaderboardsById.get(m.id);
    const run = board ? runContaining(board, r.localDate) : null;
    if (m.err || !board || !run) continue;
    out.set(m.id, boardMove(snap, board, run, '', m));
  }
  return out;
}

/**
 * An op's fixed part: plan, keys and event id, the same on every attempt (a retry reuses its op id; the
 * script derives the ids of the op's completions and awards from the event id, lua/applyUserOp.lua
 * derivedId).
 */
interface PreparedOp {
  op: UserOp;
  snap: Snapshot;
  compiled: ReturnType<typeof planFor>;
  plan: Plan;
  keys: UserKeys;
  eventId: string;
  now: number;
  /** The op's own keys (lua/applyUserOp.lua KEYS[1 .. 6 + systems]); boards' and older idempotency buckets' follow. */
  allKeys: string[];
  /** The idempotency buckets before the current one (a window), appended after the boards' keys. */
  olderIdemKeys: string[];
  idem: UserScriptInput['idem'];
  /** The zone the next attempt assumes, and the stored zone before this request. */
  tz: string;
  prevTz: string;
  /** The zone this process knew for the user when the op was prepared (refreshed when it differs). */
  cachedTz: string | undefined;
}

function prepareOp(deps: Deps, op: UserOp, at?: number): PreparedOp {
  const snap = deps.catalog.snapshot;
  const ref =
    op.kind === 'event'
      ? op.metricId
      : op.kind === 'complete' || op.kind === 'backdate'
        ? op.achievementId
        : undefined;
  const compiled = planFor(snap, op.kind, ref);
  const { plan } = compiled;
  const keys = deps.keys.user(op.user.id);
  const now = at ?? deps.clock.now();
  // The reply marker's id: a batch item's own (stable across a resume), else this request's. An event
  // with an idempotency key has the id derived from the key and this first use (stored compactly).
  const opId = (op.kind === 'event' && op.opId) || randomUUID();
  const derivedId = op.kind === 'event' && !op.opId && op.idempotencyKey !== undefined;
  const eventId = derivedId ? keyedEventId(op.user.id, op.metricId, op.idempotencyKey!, now) : opId;
  const systemKeys = plan.systems.map((s) => keys.awards(s.id));
  const idemKeys =
    op.kind === 'event' && op.idempotencyKey
      ? idempotencyKeys(keys, deps.config.IDEMPOTENCY_WINDOW_DAYS * DAY_MS, now)
      : undefined;
  // lua/applyUserOp.lua's KEYS, in its order.
  const allKeys = [
    keys.hash,
    idemKeys?.current ?? keys.idempotency,
    keys.outbox,
    (op.kind === 'event' && op.opId && op.markHash) || keys.op(opId),
    keys.users,
    keys.streakHistory,
    ...systemKeys,
  ];
  const olderIdemKeys = idemKeys?.previous && idemKeys.old ? [idemKeys.previous, idemKeys.old] : [];
  // prevKi and oldKi (their KEYS indexes) are set per attempt, after the boards' keys.
  const idem =
    op.kind === 'event' && op.idempotencyKey && idemKeys
      ? {
          f: idempotencyField(op.metricId, op.idempotencyKey),
          k: op.idempotencyKey,
          d: derivedId || undefined,
          win: idemKeys.windowMs,
          exp: idemKeys.expireAt,
          prevKi: undefined,
          oldKi: undefined,
        }
      : undefined;
  // The stored zone before this request (checked by the script when the request changes it).
  const cachedTz = tzCache.get(keys.hash);
  const prevTz = cachedTz ?? 'UTC';
  const tz = op.user.tz ?? prevTz;
  return {
    op,
    snap,
    compiled,
    plan,
    keys,
    eventId,
    now,
    allKeys,
    olderIdemKeys,
    idem,
    tz,
    prevTz,
    cachedTz,
  };
}

/**
 * What every op of one plan and local date shares within half a UTC day: the period, the boards' runs
 * and keys, the boosts and the context JSON. Computed once and kept (dayShareOf), not once per op.
 */
interface DayShare {
  periodIdx: number;
  boosts: BoostInput;
  boardKeys: string[];
  context: string;
  /** `context` before encoding (the evaluation in this process reads it: src/services/evaluated-op.ts). */
  contextObject: UserScriptContext;
  /** On a Cluster, where the fusable boards' slots were when the share was made (fuseBoards). */
  owners?: BoardOwners;
}

/**
 * What an op's day share is for besides its plan: its local date, its boosts, and on a Cluster the
 * master it goes to (attemptOf's `node`).
 */
interface ShareOf {
  date: string;
  boosts: BoostInput;
  node: string | undefined;
}

function dayShare(deps: Deps, p: PreparedOp, { date, boosts, node }: ShareOf): DayShare {
  const { op, snap, plan, now, allKeys } = p;
  const boards = boardsFor(snap, plan, op, now, date);
  // The user script also moves the user on boards without breakdowns (fuseBoards). Simulations
  // (deps.rankings === false) keep per-user board values but move no ranking.
  const fused = deps.rankings === false ? { boardKeys: [] } : fuseBoards(deps, boards, allKeys.length, node);
  const contextObject: UserScriptContext = { boosts, boards, fuse: fused.fuse };
  return {
    periodIdx: periodIndex(plan.streak.freq, date),
    boosts,
    boardKeys: fused.boardKeys,
    // ARGV[4]: what the op shares with every op of the same plan, day and boards, decoded once per
    // string by the script; stringified once per share (dayShareOf).
    context: JSON.stringify(contextObject),
    contextObject,
    owners: fused.owners,
  };
}

const HALF_DAY_MS = 43_200_000;

/** Day shares kept per server and plan (a plan is its snapshot's: a configuration change starts over). */
const dayShares = new WeakMap<Deps, WeakMap<PreparedOp['compiled'], Map<string, DayShare>>>();

/**
 * The op's day share, kept by op kind, local date, half UTC day and (on a Cluster) the master the op
 * goes to: what a share depends on besides its plan, date and boosts is the instant only through a
 * board's status and its run's finalisation (boardsFor), which change at 00:00 or 12:00 UTC
 * (src/engine/leaderboard-status.ts, src/engine/runs.ts runFinalizationMs), so every instant of one
 * half day gives the same share; and the boards it fuses (fuseBoards). Boosts are one object per plan
 * and date unless a boost is personal (boostsFor): a share with other boosts is computed again. A
 * Cluster's share also depends on which master serves its boards' slots: it is computed again when
 * the client's slot table no longer says what it was made from (a slot moved).
 */
function dayShareOf(deps: Deps, p: PreparedOp, of: ShareOf): DayShare {
  const { date, boosts, node } = of;
  let perDeps = dayShares.get(deps);
  if (!perDeps) {
    perDeps = new WeakMap();
    dayShares.set(deps, perDeps);
  }
  let perPlan = perDeps.get(p.compiled);
  if (!perPlan) {
    perPlan = new Map();
    perDeps.set(p.compiled, perPlan);
  }
  const key = `${p.op.kind}|${date}|${Math.floor(p.now / HALF_DAY_MS)}|${node ?? '-'}`;
  let share = perPlan.get(key);
  if (
    share === undefined ||
    share.boosts !== boosts ||
    (share.owners !== undefined && !ownersHold(deps, share.owners, node))
  ) {
    share = dayShare(deps, p, of);
    if (perPlan.size >= 256) perPlan.clear();
    perPlan.set(key, share);
  }
  return share;
}

/**
 * One attempt's script call: its keys and input for the zone the op assumes now. `node`: on a Redis
 * Cluster the master the op's call goes to ("host:port", as the client's slot table says; undefined
 * when it does not say, or with `fuse` false: a call routed by the op's keys alone), '' on a single
 * Redis.
 */
function attemptOf(deps: Deps, p: PreparedOp, fuse = true) {
  const { op, now, allKeys, olderIdemKeys, eventId, tz, prevTz } = p;
  const date = localDate(op.kind === 'grant' ? op.at : now, tz);
  // Personal boosts make the context the user's own (boostsFor answers one object per plan and date
  // otherwise).
  const boosts = boostsFor(p.snap, p.plan, op.user.id, date);
  const node = !isCluster(deps.redis)
    ? ''
    : fuse
      ? deps.redis.slots[outboxSlot(p.keys.outbox)]?.[0]
      : undefined;
  const share = dayShareOf(deps, p, { date, boosts, node });
  const { periodIdx, context } = share;
  // Local dates skipped entirely by a change of zone to the east (semantics §4.7).
  let skip: [number, number] | undefined;
  if (op.user.tz !== undefined && op.user.tz !== prevTz) {
    const from = dayIndex(localDate(now, prevTz)) + 1;
    const to = dayIndex(date) - 1;
    if (to >= from) skip = [from, to];
  }
  // KEYS: the op's own, the boards', then the older idempotency buckets (last, so the boards' key
  // indexes in the fuse depend on the plan only).
  const nKeys = allKeys.length + share.boardKeys.length + olderIdemKeys.length;
  const idem =
    p.idem && olderIdemKeys.length ? Object.assign({}, p.idem, { prevKi: nKeys - 1, oldKi: nKeys }) : p.idem;
  const input: UserScriptInput = {
    op: op.kind,
    now,
    eventId,
    user: luaUser(op.user),
    assumedTz: tz,
    prevTz,
    skip,
    localDate: date,
    periodIdx,
    value: op.kind === 'event' ? String(op.valueMicros) : undefined,
    eattrs:
      op.kind === 'event' && op.eventAttributes && Object.keys(op.eventAttributes).length
        ? op.eventAttributes
        : undefined,
    idem,
    mustExist:
      op.kind === 'upsert' ? op.mustExist : op.kind === 'event' || op.kind === 'complete' ? undefined : true,
    grant: op.kind === 'grant' ? op.triggerIds : undefined,
    at: op.kind === 'grant' ? op.at : undefined,
    count: op.kind === 'freeze' ? op.count : undefined,
    slot: op.kind === 'freeze' ? op.slot : undefined,
    fromIdx: op.kind === 'restore' ? op.fromIdx : undefined,
    // A batch item's marker in its batch's hash (mf) lives until its chunk is recorded, not markMs.
    markMs: op.kind === 'event' && !op.markHash ? op.markMs : undefined,
    mf: op.kind === 'event' && op.opId && op.markHash ? true : undefined,
    noHistory: deps.history === false ? true : undefined,
  };
  return {
    node,
    nKeys,
    boardKeys: share.boardKeys,
    input: JSON.stringify(input),
    inputObject: input,
    context,
    contextObject: share.contextObject,
    date,
    periodIdx,
    boosts,
  };
}

type Attempt = ReturnType<typeof attemptOf>;

/** What a committed op teaches this process: the user's zone, and its display name when it stored one. */
function committed(deps: Deps, p: PreparedOp, stored: boolean): void {
  if (p.cachedTz !== p.tz) tzCache.set(p.keys.hash, p.tz);
  // A replay stored nothing, so only a processed op may refresh the cached display name.
  if (stored && p.op.user.name !== undefined) rememberUserName(deps, p.op.user.id, p.op.user.name);
}

/** The result of a script reply, or the zone to retry with. */
async function finishOp(deps: Deps, p: PreparedOp, a: Attempt, raw: string): Promise<UserOpResult | 'retry'> {
  const { op, snap, now } = p;
  const { date, periodIdx } = a;
  const tz = p.tz;
  const reply = parseReply(raw);
  if (reply.kind === 'error') {
    if (reply.err === 'TZ') {
      p.tz = reply.tz!;
      if (reply.prevTz) p.prevTz = reply.prevTz;
      return 'retry';
    }
    throw scriptError(reply.err);
  }
  // The result objects are written out property by property, never spread from a shared part: V8
  // gives an object made by spreading one it cannot clone fast a map of its own, and every property
  // added after that a new map too (about 13 maps and descriptor arrays an event, all garbage in the
  // old generation: `node --log-maps`, see the commit).
  if (reply.kind === 'replay') {
    committed(deps, p, false);
    const { replay } = reply;
    // '' : the id derived from the key and its first use (src/engine/idempotency.ts).
    const original =
      replay.replay || keyedEventId(p.op.user.id, p.plan.metricId!, p.idem!.k, Number(replay.at));
    return {
      tz,
      localDate: date,
      periodIdx,
      now,
      replayOf: original,
      eventId: original,
      totalMicros: Number(replay.total),
      created: false,
      seq: 0,
      completions: [],
      points: [],
      streak: { ...replay.streak, extended: false },
      boards: [],
      breakdown: {},
      profile: {},
      userId: op.user.id,
    };
  }
  const r = reply.record;
  committed(deps, p, true);
  // Levels come back as positions in the plan's lists: the objects are the plan's (as at commit).
  const levels = p.compiled.levels;
  const result: UserOpResult = {
    tz,
    localDate: date,
    periodIdx,
    now,
    eventId: r.id,
    totalMicros: Number(r.total ?? 0),
    created: r.created,
    seq: r.seq,
    completions: r.completions,
    points: (r.points ?? []).map((x) =>
      Object.assign({}, x, {
        lb: levelAtPosition(levels.get(x.sys), x.lb),
        la: levelAtPosition(levels.get(x.sys), x.la),
      }),
    ),
    streak: r.streak,
    boards: r.boards,
    breakdown: r.battrs ?? {},
    profile: r.profile ?? {},
    userId: op.user.id,
  };
  if (r.already) result.already = decodeCompletion(r.already) ?? undefined;
  if (typeof r.granted === 'number') result.granted = r.granted;
  if (r.restore) result.restore = r.restore;
  // Board moves the user script made; the rest are applied here, one script per board.
  const made = fusedMoves(snap, result, r.moves ?? []);
  const rest = made.size ? result.boards.filter((b) => !made.has(b.id)) : result.boards;
  // Board moves on other slots (or with breakdowns), one script per board. The cross-user indexes
  // follow from the outbox (src/workers/globals.ts).
  const moves =
    rest.length && deps.rankings !== false
      ? await applyBoardUpdates(deps, {
          boards: rest,
          localDate: date,
          breakdown: result.breakdown,
          seq: result.seq,
          now,
          tz,
          userId: result.userId,
          streak: result.streak,
        })
      : [];
  result.boardMoves = made.size
    ? result.boards
        .map((b) => made.get(b.id) ?? moves.find((m) => m.board.id === b.id))
        .filter((m): m is BoardMove => m !== undefined)
    : moves;
  return result;
}

/**
 * An op's wire objects: the plan's, with the boosts its attempt may apply. The script's ARGV[3] is
 * their id in wire_snapshots (src/services/wire-snapshots.ts wireRef).
 */
const wireOf = (p: PreparedOp, a: Attempt) => opWire(p.snap, p.compiled, a.boosts);

/** The wire objects of one "__multi" call (one plan): with the boosts any of its ops may apply. */
function multiWire(ops: Array<[PreparedOp, Attempt]>): string {
  const [first] = ops[0]!;
  const union: Record<string, Array<{ id: string }>> = {};
  for (const [, a] of ops) {
    for (const [sys, list] of Object.entries(a.boosts)) {
      const into = union[sys] ?? [];
      union[sys] = into;
      for (const b of list) if (!into.some((x) => x.id === b.id)) into.push(b);
    }
  }
  return opWire(first.snap, first.compiled, union);
}

/**
 * Applies one op to one user in a single atomic script call (plus a retry when the user's time
 * zone was not the one assumed). The cross-user indexes follow from the outbox (src/workers/globals.ts).
 */
export async function runUserOp(deps: Deps, op: UserOp): Promise<UserOpResult> {
  const p = prepareOp(deps, op);
  const evaluate = evaluable(deps, p);
  for (let attempt = 0; attempt < 3; attempt++) {
    const a = attemptOf(deps, p);
    const raw = (evaluate && (await evaluated(deps, p, a))) || (await gathered(deps, p, a));
    const r = await finishOp(deps, p, a, raw);
    if (r !== 'retry') return r;
  }
  throw new AppError('UNAVAILABLE', 'Service unavailable');
}

/**
 * Whether the op is evaluated in this process (src/services/evaluated-op.ts): a single event on a
 * single Redis that writes history and moves rankings (not a batch item, not a simulation's replay).
 */
function evaluable(deps: Deps, p: PreparedOp): boolean {
  return (
    deps.config.EVALUATE_EVENTS &&
    p.op.kind === 'event' &&
    !p.op.opId &&
    deps.history !== false &&
    deps.rankings !== false &&
    !isCluster(deps.redis)
  );
}

/** The op evaluated here and committed by lua/commitUserOp.lua; null: leave it to the user script. */
function evaluated(deps: Deps, p: PreparedOp, a: Attempt): Promise<string | null> {
  return callScript(deps, () =>
    evaluatedCall(deps.redis, {
      plan: p.plan,
      input: a.inputObject,
      context: a.contextObject,
      keys: [...p.allKeys, ...a.boardKeys, ...p.olderIdemKeys],
      previousBucket: p.olderIdemKeys[0],
      wire: () => wireRef(deps, wireOf(p, a)),
    }),
  );
}

/** One op's script call of its own. */
async function callOne(deps: Deps, p: PreparedOp, a: Attempt): Promise<string> {
  const ref = wireRef(deps, wireOf(p, a));
  const wire = typeof ref === 'string' ? ref : await ref;
  return callScript(deps, () =>
    deps.redis
      .applyUserOp(
        a.nKeys,
        ...p.allKeys,
        ...a.boardKeys,
        ...p.olderIdemKeys,
        p.compiled.json,
        a.input,
        wire,
        a.context,
      )
      .then(oneReply),
  );
}

interface GatheredOp extends Waiting<string> {
  p: PreparedOp;
  a: Attempt;
  deps: Deps;
}

/**
 * Per client, the ops of this turn by plan; on a Redis Cluster by master too (the node that serves the
 * op's slot, "host:port", as the client's slot table says).
 */
const gatheredOps = new WeakMap<Deps['redis'], Map<string, PerTurn<PreparedOp['compiled'], GatheredOp>>>();

/**
 * The ops a process has for one plan within one turn of its event loop (events from many requests
 * arriving together) travel in one call of lua/applyUserOp.lua: the plan, the context and the wire
 * reference once, one round trip and one function call for all, each op applied and answered as if
 * called alone, a failing op failing alone. A lone op is called alone.
 * - Single Redis: one "__multi_full" call per plan.
 * - Redis Cluster: one "__multi_node" call per plan and master, for ops of users in any of the slots
 *   that master serves. An op whose slot has moved meanwhile fails in that call before anything of it
 *   is written (Redis refuses a key the master does not serve) and is sent again alone, routed by its
 *   keys; so is an op whose slot the client does not know yet. The calls of one turn answer together
 *   (roundOf), so the board moves that follow gather again, one call per board.
 */
function gathered(deps: Deps, p: PreparedOp, a: Attempt): Promise<string> {
  // On a Cluster, an op whose master the client does not know goes alone, routed by its keys (its
  // attempt fuses no board).
  const node = a.node;
  if (node === undefined) return callOne(deps, p, a);
  let byNode = gatheredOps.get(deps.redis);
  if (!byNode) {
    byNode = new Map();
    gatheredOps.set(deps.redis, byNode);
  }
  let turn = byNode.get(node);
  if (!turn) {
    turn = new PerTurn(MAX_OPS_PER_CALL, sendGathered);
    byNode.set(node, turn);
  }
  const perTurn = turn;
  return new Promise((resolve, reject) => perTurn.add(p.compiled, { p, a, deps, resolve, reject }));
}

/** Redis's refusal of a key the master running a script does not serve (lua/applyUserOp.lua "__multi_node"). */
const NOT_LOCAL = /non local key|cluster is down/;

/**
 * Per Cluster client, the rounds of its gathered calls: one per master and plan from the same turn,
 * answered together, so the board moves of their events leave in one call per board (Rounds). The
 * grace bounds what a slow master costs the others' events.
 */
const clusterRounds = new WeakMap<Deps['redis'], Rounds>();

/** On a Cluster, the round this turn's call joins: its answer is handed out through it. */
function roundOf(deps: Deps): ((handOut: () => void) => void) | null {
  if (!isCluster(deps.redis)) return null;
  let rounds = clusterRounds.get(deps.redis);
  if (!rounds) {
    rounds = new Rounds(deps.config.CLUSTER_ROUND_GRACE_MS);
    clusterRounds.set(deps.redis, rounds);
  }
  return rounds.join();
}

function sendGathered(ops: GatheredOp[]): void {
  const first = ops[0]!;
  const { deps } = first;
  const joined = roundOf(deps);
  const handOut = joined ?? ((f: () => void) => f());
  const cluster = joined !== null;
  // A lone op goes alone, but on a Cluster one with fused boards: their keys are in other slots of
  // its master, which only a "__multi_node" call reaches.
  if (ops.length === 1 && !(cluster && first.a.boardKeys.length)) {
    callOne(deps, first.p, first.a).then(
      (reply) => handOut(() => first.resolve(reply)),
      (err) => handOut(() => first.reject(err)),
    );
    return;
  }
  const pairs = ops.map((o): [PreparedOp, Attempt] => [o.p, o.a]);
  const { keys, list, order } = multiArgs(pairs);
  // The replies come in the call's order (ops grouped by context).
  const waiting = order.map((j): Waiting<string> => {
    const op = ops[j]!;
    if (!cluster) return op;
    const w: Waiting<string> = { resolve: op.resolve, reject: op.reject };
    // Set as a member, not in the literal: the function stays anonymous (no keepNames call).
    // Sent again alone, routed by its keys, without fused boards (its boards' moves follow as calls of
    // their own).
    w.reject = (err) =>
      NOT_LOCAL.test(String((err as Error)?.message))
        ? callOne(deps, op.p, attemptOf(deps, op.p, false)).then(op.resolve, op.reject)
        : op.reject(err);
    return w;
  });
  // An anonymous function: tsx names the named ones it creates (esbuild's keepNames) on every call.
  (async () => {
    const ref = wireRef(deps, multiWire(pairs));
    const wire = typeof ref === 'string' ? ref : await ref;
    const plan = first.p.compiled.json;
    return callScript(deps, () =>
      cluster
        ? // One declared key, of the call's first op, routes the call to its master; the ops' keys
          // travel as arguments (a Function's declared keys must share a slot).
          deps.redis.applyUserOp(
            1,
            ops[order[0]!]!.p.allKeys[0]!,
            '__multi_node',
            plan,
            wire,
            String(keys.length),
            ...keys,
            ...list,
          )
        : deps.redis.applyUserOp(keys.length, ...keys, '__multi_full', plan, wire, ...list),
    );
  })().then(
    (replies) => handOut(() => settleReplies('applyUserOp', waiting, replies)),
    (err) =>
      handOut(() => {
        for (const op of ops) op.reject(err);
      }),
  );
}

/**
 * The KEYS and op arguments of one "__multi" call (lua/applyUserOp.lua): ops that share a context and
 * the boards' keys (the same day and runs) form a group that sends them once, each op its own keys,
 * older idempotency buckets and input (a JSON string of its own, not a list the script would decode
 * twice). `order`: the ops' positions in the call's order (the replies' order).
 */
function multiArgs(ops: Array<[PreparedOp, Attempt]>): { keys: string[]; list: string[]; order: number[] } {
  // The context names the boards and runs the boards' keys are of (dayShare): one key set per context.
  const groups = new Map<string, { tail: string[]; context: string; members: number[] }>();
  ops.forEach(([, a], j) => {
    const g = groups.get(a.context);
    if (g) g.members.push(j);
    else groups.set(a.context, { tail: a.boardKeys, context: a.context, members: [j] });
  });
  const keys: string[] = [];
  const list: string[] = [];
  const order: number[] = [];
  for (const g of groups.values()) {
    keys.push(...g.tail);
    list.push(String(g.members.length), String(g.tail.length), g.context);
    for (const j of g.members) {
      const [p, a] = ops[j]!;
      keys.push(...p.allKeys, ...p.olderIdemKeys);
      list.push(String(p.allKeys.length), String(p.olderIdemKeys.length), a.input);
      order.push(j);
    }
  }
  return { keys, list, order };
}

/**
 * Applies ops of different users in one script call per plan (single Redis only; lua/applyUserOp.lua
 * "__multi"): the plan is sent and decoded once, and the calls of a batch chunk overlap. Each op is
 * committed on its own, as runUserOp would; an op that must be retried (time zone) goes through
 * runUserOp. Per op: null when it committed (or replayed), or the error it would have thrown; its
 * result is not built (a batch answers none), unless boards remain to be moved. Redis failing throws.
 */
export async function runUserOps(deps: Deps, ops: UserOp[]): Promise<Array<Error | null>> {
  // One instant for the call's ops (their events' created times are equal).
  const now = deps.clock.now();
  const prepared = ops.map((op) => prepareOp(deps, op, now));
  const byPlan = new Map<PreparedOp['compiled'], number[]>();
  prepared.forEach((p, i) => {
    const list = byPlan.get(p.compiled);
    if (list) list.push(i);
    else byPlan.set(p.compiled, [i]);
  });
  const out: Array<Error | null> = new Array(ops.length).fill(null);
  await Promise.all(
    [...byPlan].map(async ([compiled, indexes]) => {
      const attempts = indexes.map((i) => attemptOf(deps, prepared[i]!));
      const { keys, list, order } = multiArgs(indexes.map((i, j) => [prepared[i]!, attempts[j]!]));
      const wire = await wireRef(deps, multiWire(indexes.map((i, j) => [prepared[i]!, attempts[j]!])));
      const replies = await callScript(deps, () =>
        deps.redis.applyUserOp(keys.length, ...keys, '__multi', compiled.json, wire, ...list).then(replyList),
      );
      await Promise.all(
        order.map(async (j, r) => {
          const i = indexes[j]!;
          try {
            const p = prepared[i]!;
            const quiet = quietOutcome(replies[r]!);
            if (quiet !== 'full') committed(deps, p, quiet === 'done');
            else if ((await finishOp(deps, p, attempts[j]!, replies[r]!)) === 'retry')
              await runUserOp(deps, ops[i]!);
          } catch (err) {
            if (isInfrastructureError(err)) throw err;
            out[i] = err as Error;
          }
        }),
      );
    }),
  );
  return out;
}

/**
 * Calls a user script. Redis not connected: 503 at once (nothing was sent). The connection lost
 * while the call was in flight: it may have committed, so the same call (same op id) is retried
 * until Redis is back, for up to 5 s; the script answers a committed op from its reply marker.
 */
export async function callScript<T>(deps: Pick<Deps, 'redis'>, call: () => Promise<T>): Promise<T> {
  if (deps.redis.status !== 'ready') throw unavailable();
  const deadline = Date.now() + 5000;
  for (let attempt = 0; ; attempt++) {
    try {
      return await call();
    } catch (err) {
      // Refused before anything was written (the socket has ended while the client still reads
      // 'ready'): on a first attempt nothing can have committed.
      if (attempt === 0 && NOT_SENT.test((err as Error)?.message)) throw unavailable();
      if (!isInfrastructureError(err) || Date.now() > deadline) throw err;
      // Always wait on a timer: such a refusal comes back without I/O, so retrying at once would
      // spin in microtasks and hold the whole process (the close event is never read) until the
      // deadline.
      do await new Promise((r) => setTimeout(r, 50));
      while (deps.redis.status !== 'ready' && Date.now() <= deadline);
    }
  }
}

/** ioredis's refusal to write a command on a connection that is not writable. */
const NOT_SENT = /Stream isn't writeable/;

function scriptError(code: string): AppError {
  switch (code) {
    case 'NO_USER':
      return notFound('User not found');
    case 'OVERFLOW':
      return unprocessable('value would carry a total beyond 9007199254 in magnitude');
    case 'POINTS_OVERFLOW':
      return unprocessable('The event would carry a points total beyond 9007199254');
    case 'LOCKED':
      return unprocessable('Achievement is locked');
    case 'NOT_ELIGIBLE':
      return unprocessable('User is not eligible for this achievement');
    default:
      return new AppError('INTERNAL', `Unexpected script error ${code}`);
  }
}
