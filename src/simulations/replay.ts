/**
 * Replays recorded history through the engine (runUserOp, the same Lua scripts as live traffic) under
 * a given configuration snapshot, into a Redis key prefix of its own. Nothing outside that prefix is
 * written: the ops' outbox records land in the prefix's own shard streams, which no history writer
 * reads, and the caller deletes the prefix afterwards (deletePrefix).
 *
 * Order: recorded events and API completions in time order (`now` = the recorded time), and, per user
 * and at their own times, what the scheduler would have done in between: time-trigger grants, freeze
 * auto-earn slots and streak rollovers. Users are independent, so several users' ops are in flight at
 * once (each user's own ops strictly in order), which pipelines the script calls.
 */
import type { Catalog } from '../catalog/cache';
import type { Snapshot } from '../catalog/snapshot';
import type { Clock } from '../clock';
import { userField } from '../redis/user-hash';
import type { Deps } from '../deps';
import { AppError } from '../errors';
import { dayIndex } from '../engine/periods';
import { runUserOp, type UserOp, type UserOpResult } from '../services/user-op';
import { crossSlotPipeline, execValues } from '../redis/batch';
import { isCluster } from '../redis/client';
import { Keys } from '../redis/keys';
import { periodExpiry } from '../engine/streak-expiry';
import { triggerIntervalMs } from '../workers/scheduler';

const DAY = 86_400_000;

/** One user of the replay (from the users table). */
export interface ReplayUser {
  id: string;
  created: number;
  tz: string | null;
  attributes: Record<string, string>;
  /** Streak pauses as [firstDayIndex, lastDayIndex] (copied into the user's streak state first). */
  pauses: Array<[number, number]>;
}

/** One recorded item: an event or an API completion. */
export type RecordedItem =
  | {
      kind: 'event';
      at: number;
      userId: string;
      metricId: string;
      valueMicros: number;
      attributes: Record<string, string>;
      tz: string;
    }
  | { kind: 'complete'; at: number; userId: string; achievementId: string };

/** Awards of one trigger on one UTC day. */
export interface AwardTally {
  points: number;
  awards: number;
}

export interface ReplayOutcome {
  /** Ops run through the user script (events, completions and scheduled work). */
  ops: number;
  events: number;
  /** Recorded items the configuration refused (e.g. completing an achievement the draft made non-API). */
  refused: number;
  /** Events of metrics the configuration does not have (skipped). */
  skipped: number;
  /** triggerId → day (YYYY-MM-DD, UTC) → tally. */
  awards: Map<string, Map<string, AwardTally>>;
  durationMs: number;
}

export interface ReplayOptions {
  /** Ops in flight at once (different users). */
  concurrency?: number;
  /** Called now and then with the share of recorded items done (0..1). */
  onProgress?: (done: number) => void;
  /** Checked between items: true stops the replay (it throws ReplayCancelled). */
  cancelled?: () => boolean;
  /**
   * Streak rollovers before a user's next op: 'auto' (default) leaves them to that op, which resolves
   * the ended periods the same way, unless a streak leaderboard or freeze auto-earn makes their timing
   * visible; 'all' runs every one at its time, like the scheduler.
   */
  rollovers?: 'auto' | 'all';
}

export class ReplayCancelled extends Error {
  constructor() {
    super('cancelled');
  }
}

/** Per-user due work, mirroring src/workers/scheduler/. */
interface UserTimeline {
  user: ReplayUser;
  started: boolean;
  /** triggerId → next slot. */
  grants: Map<string, number>;
  freezeSlot: number | null;
  rollover: number | null;
}

/** The deps of a replay: its own keys, its own configuration, a clock per op. */
export function replayDeps(deps: Deps, prefix: string, snapshot: Snapshot): Deps {
  const catalog = { snapshot } as Pick<Catalog, 'snapshot'>;
  return {
    ...deps,
    keys: new Keys(prefix, deps.config.USER_SHARDS, deps.keys.layout),
    catalog: catalog as Catalog,
    afterCommit: undefined,
    // The report ranks users by their final board values; per-op ranking writes would only cost time.
    rankings: false,
    history: false,
  };
}

const fixedClock = (ms: number): Clock => ({ now: () => ms });

/**
 * Replays `items` (sorted by time; callers stream them) for `users` under `snapshot` into `prefix`,
 * then runs the scheduled work due up to `to`.
 */
export async function replayHistory(
  deps: Deps,
  prefix: string,
  snapshot: Snapshot,
  users: Map<string, ReplayUser>,
  items: AsyncIterable<RecordedItem[]>,
  totalItems: number,
  to: number,
  opts: ReplayOptions = {},
): Promise<ReplayOutcome> {
  const started = Date.now();
  const base = replayDeps(deps, prefix, snapshot);
  const concurrency = opts.concurrency ?? 64;
  const out: ReplayOutcome = {
    ops: 0,
    events: 0,
    refused: 0,
    skipped: 0,
    awards: new Map(),
    durationMs: 0,
  };
  const timeTriggers = snapshot.systems.flatMap((s) =>
    s.triggers.filter((t) => t.type === 'time' && t.status === 'active' && triggerIntervalMs(t) > 0),
  );
  const st = snapshot.streak;
  const streakOn = st.enabled && st.conditions.length > 0;
  const earn =
    st.freezesEnabled && st.freezeAutoEarnAmount && st.freezeAutoEarnInterval
      ? {
          amount: st.freezeAutoEarnAmount,
          every: st.freezeAutoEarnInterval * DAY,
          since: st.autoEarnEnabledAt?.getTime() ?? 0,
        }
      : null;
  const timelines = new Map<string, UserTimeline>();
  const lazyRollovers =
    (opts.rollovers ?? 'auto') === 'auto' &&
    !earn &&
    !snapshot.leaderboards.some((b) => b.rankBy === 'streak');

  const tally = (r: UserOpResult) => {
    for (const p of r.points) {
      for (const a of p.awards) {
        let byDay = out.awards.get(a.trigger);
        if (!byDay) {
          byDay = new Map();
          out.awards.set(a.trigger, byDay);
        }
        const day = new Date(a.date).toISOString().slice(0, 10);
        const t = byDay.get(day) ?? { points: 0, awards: 0 };
        t.points += a.awarded;
        t.awards += 1;
        byDay.set(day, t);
      }
    }
  };

  const run = async (at: number, op: UserOp): Promise<UserOpResult | null> => {
    const d: Deps = { ...base, clock: fixedClock(at) };
    out.ops++;
    try {
      const r = await runUserOp(d, op);
      tally(r);
      return r;
    } catch (err) {
      // A recorded item the configuration refuses (not found, locked, not eligible) is what the
      // configuration would have answered; anything else (Redis down) fails the replay.
      if (err instanceof AppError && err.status < 500) {
        out.refused++;
        return null;
      }
      throw err;
    }
  };

  const afterOp = (tl: UserTimeline, r: UserOpResult | null) => {
    if (!r || !streakOn) return;
    const s = r.streak;
    tl.rollover =
      s && s.length > 0 && s.lastMet !== undefined && s.lastMet !== null
        ? periodExpiry(st.frequency, s.lastMet + 1, r.tz)
        : null;
  };

  /**
   * The user's creation (when it came before the first recorded item, or the user has none) and the
   * pauses.
   */
  const begin = async (tl: UserTimeline, first: { at: number; tz?: string; only?: boolean }) => {
    tl.started = true;
    const u = tl.user;
    const at = Math.min(u.created, first.at);
    const tz = first.tz ?? u.tz ?? undefined;
    const attributes = Object.keys(u.attributes).length ? u.attributes : undefined;
    if (u.pauses.length) {
      await base.redis.hset(
        base.keys.user(u.id).hash,
        userField('streak', 'pauses'),
        JSON.stringify(u.pauses),
      );
    }
    if (u.created < first.at || attributes || first.only) {
      const r = await run(at, { kind: 'upsert', user: { id: u.id, tz, attributes } });
      afterOp(tl, r);
    }
    for (const t of timeTriggers) {
      tl.grants.set(t.id, Math.max(at, t.activatedAt?.getTime() ?? 0) + triggerIntervalMs(t));
    }
    if (earn) tl.freezeSlot = Math.max(at, earn.since) + earn.every;
  };

  /** Runs the user's scheduled work due before `until` (inclusive when `inclusive`), in time order. */
  const catchUp = async (tl: UserTimeline, until: number, inclusive: boolean) => {
    const due = (t: number | null | undefined): t is number =>
      t !== null && t !== undefined && (inclusive ? t <= until : t < until);
    for (;;) {
      let next = Number.POSITIVE_INFINITY;
      let what: 'grant' | 'freeze' | 'rollover' | null = null;
      let triggerId = '';
      for (const [id, slot] of tl.grants) {
        if (due(slot) && slot < next) {
          next = slot;
          what = 'grant';
          triggerId = id;
        }
      }
      if (due(tl.freezeSlot) && tl.freezeSlot < next) {
        next = tl.freezeSlot;
        what = 'freeze';
      }
      // A rollover before the user's next op: that op resolves the ended periods itself.
      if (lazyRollovers && !inclusive && due(tl.rollover)) tl.rollover = null;
      if (due(tl.rollover) && tl.rollover < next) {
        next = tl.rollover;
        what = 'rollover';
      }
      if (what === null) return;
      const user = { id: tl.user.id };
      if (what === 'grant') {
        const t = snapshot.triggersById.get(triggerId)!;
        const r = await run(next, { kind: 'grant', user, triggerIds: [triggerId], at: next });
        afterOp(tl, r);
        tl.grants.set(triggerId, next + triggerIntervalMs(t));
      } else if (what === 'freeze') {
        const r = await run(next, { kind: 'freeze', user, count: earn!.amount, slot: next });
        afterOp(tl, r);
        tl.freezeSlot = next + earn!.every;
      } else {
        tl.rollover = null;
        const r = await run(next, { kind: 'upsert', user, mustExist: true });
        afterOp(tl, r);
        // A rollover that changed nothing leaves the same due time: never loop on it.
        if (tl.rollover !== null && tl.rollover <= next) tl.rollover = null;
      }
    }
  };

  const handle = async (item: RecordedItem) => {
    const tl = timelines.get(item.userId)!;
    if (!tl.started) await begin(tl, { at: item.at, tz: item.kind === 'event' ? item.tz : undefined });
    await catchUp(tl, item.at, false);
    if (item.kind === 'event') {
      out.events++;
      if (!snapshot.metricsById.has(item.metricId)) {
        out.skipped++;
        return;
      }
      const r = await run(item.at, {
        kind: 'event',
        metricId: item.metricId,
        user: { id: item.userId, tz: item.tz },
        valueMicros: item.valueMicros,
        eventAttributes: item.attributes,
      });
      afterOp(tl, r);
    } else {
      if (!snapshot.achievementsById.has(item.achievementId)) {
        out.refused++;
        return;
      }
      const r = await run(item.at, {
        kind: 'complete',
        achievementId: item.achievementId,
        user: { id: item.userId },
      });
      afterOp(tl, r);
    }
  };

  // Per-user chains with a bound on what is in flight across users.
  const chains = new Map<string, Promise<void>>();
  const inFlight = new Set<Promise<void>>();
  let failure: unknown = null;
  let done = 0;
  let lastProgress = 0;
  const submit = async (userId: string, work: () => Promise<void>) => {
    const p = (chains.get(userId) ?? Promise.resolve()).then(work);
    chains.set(userId, p);
    const tracked = p.then(
      () => {},
      (err) => {
        failure ??= err;
      },
    );
    inFlight.add(tracked);
    void tracked.finally(() => {
      inFlight.delete(tracked);
      if (chains.get(userId) === p) chains.delete(userId);
    });
    while (inFlight.size >= concurrency) await Promise.race(inFlight);
  };

  for (const u of users.values()) {
    timelines.set(u.id, { user: u, started: false, grants: new Map(), freezeSlot: null, rollover: null });
  }
  try {
    for await (const batch of items) {
      for (const item of batch) {
        if (failure) throw failure;
        if (opts.cancelled?.()) throw new ReplayCancelled();
        if (!timelines.has(item.userId)) continue;
        await submit(item.userId, () => handle(item));
        done++;
      }
      if (opts.onProgress && Date.now() - lastProgress > 250) {
        lastProgress = Date.now();
        opts.onProgress(totalItems ? Math.min(1, done / totalItems) : 0);
      }
    }
    // Users without recorded items in the window still exist (and get their scheduled work).
    for (const tl of timelines.values()) {
      if (failure) throw failure;
      if (opts.cancelled?.()) throw new ReplayCancelled();
      await submit(tl.user.id, async () => {
        if (!tl.started) {
          if (tl.user.created > to) return;
          await begin(tl, { at: tl.user.created, only: true });
        }
        await catchUp(tl, to, true);
      });
    }
  } finally {
    // Never leave ops running behind a cancel or a failure: the caller deletes the prefix next.
    await Promise.all(inFlight);
  }
  if (failure) throw failure;
  opts.onProgress?.(1);
  out.durationMs = Date.now() - started;
  return out;
}

/** Deletes every key under a replay prefix (SCAN: maintenance, never on a request path). */
export async function deletePrefix(deps: Pick<Deps, 'redis'>, prefix: string): Promise<number> {
  const nodes = isCluster(deps.redis) ? deps.redis.nodes('master') : [deps.redis];
  let n = 0;
  for (const node of nodes) {
    let cursor = '0';
    do {
      const [next, batch] = await node.scan(cursor, 'MATCH', `${prefix}:*`, 'COUNT', 1000);
      cursor = next;
      if (batch.length) {
        const pipe = crossSlotPipeline(deps.redis);
        for (const k of batch) pipe.unlink(k);
        await execValues(pipe);
        n += batch.length;
      }
    } while (cursor !== '0');
  }
  return n;
}

/** Pauses of a user as the user script reads them. */
export const pauseRanges = (rows: Array<{ start: string; end: string }>): Array<[number, number]> =>
  rows.map((r) => [dayIndex(r.start), dayIndex(r.end)]);
