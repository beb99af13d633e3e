// The background scheduler (semantics §0 "Background work", §4.5, §4.6, §5.6, §5.8, §6.2).
//
// Per-user due work is indexed in sorted sets by due time (src/redis/keys.ts `sched`), never found
// by scanning users:
//   time triggers  "<triggerId>|<activatedAtMs>|<userId>" -> next slot
//   streaks        userId -> when the streak next needs a rollover (local midnight after the period
//                  following the last met-or-bridged one)
//   freezes        "<autoEarnEnabledAtMs>|<userId>" -> next auto-earn slot
// Members are entered by the history writer from outbox records (user creation, every streak
// change; see scheduleHook) and by a one-off pass over the per-shard user indexes when a time trigger is
// activated or auto-earn is enabled.
//
// Exactly once per slot: a copy claims due members atomically (lua/claimDue.lua re-scores them to a
// lease, so other copies skip them), and the work itself is idempotent per slot inside the user's
// script (time-trigger slot and auto-earn slot markers; a rollover resolves a period once), so a
// copy that dies after claiming only delays the slot until the lease expires, never loses or
// doubles it. Lifecycle work (boost start/finish, leaderboard run start/finalisation) is computed
// from the configuration (few rows) and recorded with stable ids, so repeating it changes nothing.
import { and, asc, eq } from 'drizzle-orm';
import type { LeaderboardRow, Snapshot } from '../catalog/snapshot';
import { leaderboardRunResults } from '../db/schema';
import type { Deps } from '../deps';
import { retryStreakRecomputes } from '../engine/streak-recompute';
import { AppError } from '../errors';
import { leaderboardStatus, utcDate } from '../engine/leaderboard-status';
import { dropFinalisedRun, finaliseRun, type Ranked, rankingsWindow } from '../engine/leaderboards';
import { addDays, instantOfLocalMidnight, periodBounds, type Frequency } from '../engine/periods';
import { type Run, runByIndex, runContaining, runFinalizationMs } from '../engine/runs';
import { runUserOp } from '../engine/user-op';
import { drainBoardChanges } from './board-changes';
import type { OutboxEntry, RecordHook } from './history-writer';
import {
  anySubscriber,
  boostEvent,
  leaderboardPayload,
  recordWebhookEvents,
  type WebhookEvent,
  webhookEventId,
  withNames,
} from './webhook-events';
import { crossSlotPipeline } from '../redis/batch';
import { countBackendError, observeSchedulerPass } from '../metrics/hooks';
import { Runner } from './runner';

const HOUR = 3_600_000;
const DAY = 86_400_000;

export const triggerIntervalMs = (t: { timeUnit: 'hours' | 'days' | null; timeInterval: number | null }) =>
  (t.timeInterval ?? 0) * (t.timeUnit === 'hours' ? HOUR : DAY);

const ms = (d: Date | null | undefined) => (d ? d.getTime() : 0);

/** Time triggers that fire now: active, with a positive interval. */
function activeTimeTriggers(snap: Snapshot) {
  return snap.systems.flatMap((s) =>
    s.triggers.filter((t) => t.type === 'time' && t.status === 'active' && triggerIntervalMs(t) > 0),
  );
}

function autoEarn(snap: Snapshot) {
  const s = snap.streak;
  if (!s.freezesEnabled || !s.freezeAutoEarnAmount || !s.freezeAutoEarnInterval) return null;
  return {
    amount: s.freezeAutoEarnAmount,
    intervalMs: s.freezeAutoEarnInterval * DAY,
    since: ms(s.autoEarnEnabledAt),
  };
}

/** When a streak whose last met-or-bridged period is lastMet must next be rolled over. */
export function streakDueMs(freq: Frequency, lastMet: number, tz: string): number {
  return instantOfLocalMidnight(addDays(periodBounds(freq, lastMet + 1).end, 1), tz);
}

/**
 * History-writer hook: keeps the due indexes in step with every user's state, in outbox order (so
 * a later record always wins). Runs for every record, whichever process applied the op.
 */
export const scheduleHook: RecordHook = async (_tx, entries: OutboxEntry[], deps: Deps) => {
  const snap = deps.catalog.snapshot;
  const k = deps.keys.sched;
  const triggers = activeTimeTriggers(snap);
  const earn = autoEarn(snap);
  const streakOn = snap.streak.enabled && snap.streak.conditions.length > 0;
  // One command per key for the whole batch: NX members in record order (the first one counts),
  // streak members by user (the last record wins: a due time or a removal).
  const timeTriggers: Array<string | number> = [];
  const freezes: Array<string | number> = [];
  const streaks = new Map<string, number | null>();
  for (const { record: r } of entries) {
    if (r.created) {
      for (const t of triggers) {
        const anchor = Math.max(r.now, ms(t.activatedAt));
        timeTriggers.push(anchor + triggerIntervalMs(t), `${t.id}|${ms(t.activatedAt)}|${r.user}`);
      }
      if (earn) freezes.push(Math.max(r.now, earn.since) + earn.intervalMs, `${earn.since}|${r.user}`);
    }
    const s = r.streak;
    if (streakOn && s && s.length > 0 && s.lastMet !== undefined && s.lastMet !== null) {
      streaks.set(r.user, streakDueMs(r.freq ?? snap.streak.frequency, s.lastMet, r.tz));
    } else if (s) {
      streaks.set(r.user, null);
    }
  }
  const due: Array<string | number> = [];
  const gone: string[] = [];
  for (const [user, at] of streaks) {
    if (at === null) gone.push(user);
    else due.push(at, user);
  }
  const pipe = crossSlotPipeline(deps.redis);
  if (timeTriggers.length) pipe.zadd(k.timeTriggers, 'NX', ...timeTriggers);
  if (freezes.length) pipe.zadd(k.freezes, 'NX', ...freezes);
  if (due.length) pipe.zadd(k.streaks, ...due);
  if (gone.length) pipe.zrem(k.streaks, ...gone);
  if (pipe.length) await pipe.exec();
};

export interface SchedulerOptions {
  /** How long a claimed member stays invisible to other copies (default 5 minutes). */
  leaseMs?: number;
  /** Members claimed per pass and set. */
  batchSize?: number;
  /** Most slots granted for one member in one pass (the rest follow in the next pass). */
  maxSlotsPerMember?: number;
}

export interface SchedulerPass {
  grants: number;
  rollovers: number;
  freezeSlots: number;
  boostEvents: number;
  runsStarted: number;
  runsFinalised: number;
  /** Board change records read plus leaderboard.changed notifications sent. */
  boardChanges: number;
}

export class Scheduler {
  private readonly runner: Runner;

  constructor(
    private readonly deps: Deps,
    private readonly opts: SchedulerOptions = {},
  ) {
    const every = deps.config.SCHEDULER_INTERVAL_MS;
    this.runner = new Runner({
      pass: async () => {
        await this.runOnce();
        return every;
      },
      backoffMs: every,
      onError: (err) => {
        countBackendError('scheduler', err);
        deps.logger.warn({ err: (err as Error).message }, 'scheduler pass failed; retrying');
      },
    });
  }

  start(): void {
    this.runner.start();
  }

  /** Runs a pass now instead of at the end of the current wait. */
  wake(): void {
    this.runner.wake();
  }

  async stop(): Promise<void> {
    await this.runner.stop();
  }

  /** One pass over every kind of due work, at the clock's now. */
  async runOnce(): Promise<SchedulerPass> {
    const started = performance.now();
    const pass: SchedulerPass = {
      grants: 0,
      rollovers: 0,
      freezeSlots: 0,
      boostEvents: 0,
      runsStarted: 0,
      runsFinalised: 0,
      boardChanges: 0,
    };
    await this.enqueueActivations();
    await retryStreakRecomputes(this.deps);
    pass.boostEvents = await this.boosts();
    const lb = await this.leaderboards();
    pass.runsStarted = lb.started;
    pass.runsFinalised = lb.finalised;
    pass.boardChanges = await drainBoardChanges(this.deps);
    pass.boardChanges += await this.boardChangedDue();
    pass.grants = await this.timeTriggers();
    pass.rollovers = await this.streaks();
    pass.freezeSlots = await this.freezes();
    observeSchedulerPass(pass, performance.now() - started);
    return pass;
  }

  private async claim(key: string): Promise<Array<[string, number]>> {
    const now = this.deps.clock.now();
    const flat = await this.deps.redis.claimDue(
      1,
      key,
      String(now),
      String(now + (this.opts.leaseMs ?? 5 * 60_000)),
      String(this.opts.batchSize ?? 500),
    );
    const out: Array<[string, number]> = [];
    for (let i = 0; i < flat.length; i += 2) out.push([flat[i]!, Number(flat[i + 1])]);
    return out;
  }

  // ---------------------------------------------------------------- one-off enqueue passes

  /**
   * When a time trigger is activated or auto-earn is enabled, every existing user is entered once
   * (batches over the per-shard user indexes; members are added with NX, so repeating adds nothing).
   * Users created after the scan are entered by the history writer. The pass runs twice (at activation and
   * again a few minutes later) to cover users whose first record was written while the activation
   * was not yet visible to the history writer.
   */
  private async enqueueActivations(): Promise<void> {
    const snap = this.deps.catalog.snapshot;
    const now = this.deps.clock.now();
    const k = this.deps.keys.sched;
    const jobs: Array<{
      marker: string;
      since: number;
      add: (userId: string, created: number) => [number, string];
    }> = [];
    for (const t of activeTimeTriggers(snap)) {
      const act = ms(t.activatedAt);
      const every = triggerIntervalMs(t);
      jobs.push({
        marker: `tt|${t.id}|${act}`,
        since: act,
        add: (u, created) => [Math.max(created, act) + every, `${t.id}|${act}|${u}`],
      });
    }
    const earn = autoEarn(snap);
    if (earn) {
      jobs.push({
        marker: `fz|${earn.since}`,
        since: earn.since,
        add: (u, created) => [Math.max(created, earn.since) + earn.intervalMs, `${earn.since}|${u}`],
      });
    }
    if (!jobs.length) return;
    const done = await this.deps.redis.hmget(k.done, ...jobs.map((j) => j.marker));
    for (const [i, job] of jobs.entries()) {
      const level = Number(done[i] ?? 0);
      const want = now >= job.since + 5 * 60_000 ? 2 : 1;
      if (level >= want) continue;
      const key = job.marker.startsWith('tt|') ? k.timeTriggers : k.freezes;
      // Every user from the per-shard user indexes, which the user script writes as it creates a
      // user: a user created while the activation commits is found here even when the history
      // writer has not written it to Postgres yet (nor seen the activation when it does).
      for (let shard = 0; shard < this.deps.keys.shards; shard++) {
        for (let from = 0; ; from += 1000) {
          const flat = await this.deps.redis.zrange(
            this.deps.keys.shardUsers(shard),
            from,
            from + 999,
            'WITHSCORES',
          );
          if (!flat.length) break;
          const pipe = crossSlotPipeline(this.deps.redis);
          for (let i = 0; i < flat.length; i += 2) {
            const [score, member] = job.add(flat[i]!, Number(flat[i + 1]));
            pipe.zadd(key, 'NX', score, member);
          }
          await pipe.exec();
          if (flat.length < 2000) break;
        }
      }
      await this.deps.redis.hset(k.done, job.marker, String(want));
    }
  }

  // ---------------------------------------------------------------- per-user due work

  private async timeTriggers(): Promise<number> {
    const k = this.deps.keys.sched.timeTriggers;
    let grants = 0;
    for (;;) {
      const due = await this.claim(k);
      if (!due.length) break;
      for (const [member, slot] of due) grants += await this.grantSlots(k, member, slot);
    }
    return grants;
  }

  /** Grants every due slot of one (trigger, user), each dated at its slot, then re-scores the member. */
  private async grantSlots(key: string, member: string, first: number): Promise<number> {
    const [triggerId, act, userId] = splitMember(member, 3);
    const t = this.deps.catalog.snapshot.triggersById.get(triggerId);
    const every = t ? triggerIntervalMs(t) : 0;
    if (!t || t.deletedAt || t.status !== 'active' || String(ms(t.activatedAt)) !== act || every <= 0) {
      await this.deps.redis.zrem(key, member); // deactivated, re-activated (new anchor) or deleted
      return 0;
    }
    const now = this.deps.clock.now();
    const next = await this.nextSlot(userId, `tt:${triggerId}`, Number(act), every);
    if (next === null) {
      await this.deps.redis.zrem(key, member);
      return 0;
    }
    void first;
    let slot = next;
    let n = 0;
    const max = this.opts.maxSlotsPerMember ?? 1000;
    while (slot <= now && n < max) {
      try {
        await runUserOp(this.deps, {
          kind: 'grant',
          user: { id: userId },
          triggerIds: [triggerId],
          at: slot,
        });
      } catch (err) {
        if (err instanceof AppError && err.code === 'NOT_FOUND') {
          await this.deps.redis.zrem(key, member);
          return n;
        }
        throw err; // the lease expires and the slot is retried
      }
      n++;
      slot += every;
    }
    await this.deps.redis.zadd(key, 'XX', slot, member);
    return n;
  }

  /**
   * The next slot of a per-user schedule anchored at max(user creation, since), from the user's own
   * record of the last slot granted (so a claim's lease never shifts a slot); null for an unknown user.
   */
  private async nextSlot(
    userId: string,
    field: string,
    since: number,
    every: number,
  ): Promise<number | null> {
    const uk = this.deps.keys.user(userId);
    const [created, last] = await Promise.all([
      this.deps.redis.hget(uk.profile, 'created'),
      this.deps.redis.hget(uk.counters, field),
    ]);
    if (created === null) return null;
    const anchor = Math.max(Number(created), since);
    const lastSlot = last === null ? 0 : Number(last);
    if (lastSlot < anchor) return anchor + every;
    return lastSlot + every;
  }

  private async streaks(): Promise<number> {
    const k = this.deps.keys.sched.streaks;
    const snap = this.deps.catalog.snapshot;
    let n = 0;
    for (;;) {
      const due = await this.claim(k);
      if (!due.length) break;
      for (const [userId] of due) {
        if (!snap.streak.enabled) {
          await this.deps.redis.zrem(k, userId);
          continue;
        }
        try {
          // A no-op upsert: the user's script resolves every ended period (freeze, pause or break)
          // and writes the outcome, webhooks included, to the outbox; the history writer then
          // re-scores the member from the new state (or removes it after a break).
          await runUserOp(this.deps, { kind: 'upsert', user: { id: userId }, mustExist: true });
          n++;
        } catch (err) {
          if (err instanceof AppError && err.code === 'NOT_FOUND') await this.deps.redis.zrem(k, userId);
          else throw err;
        }
      }
    }
    return n;
  }

  private async freezes(): Promise<number> {
    const k = this.deps.keys.sched.freezes;
    let n = 0;
    for (;;) {
      const due = await this.claim(k);
      if (!due.length) break;
      for (const [member, first] of due) {
        const earn = autoEarn(this.deps.catalog.snapshot);
        const [since, userId] = splitMember(member, 2);
        if (!earn || String(earn.since) !== since) {
          await this.deps.redis.zrem(k, member);
          continue;
        }
        const now = this.deps.clock.now();
        const next = await this.nextSlot(userId, 'fz', Number(since), earn.intervalMs);
        void first;
        if (next === null) {
          await this.deps.redis.zrem(k, member);
          continue;
        }
        let slot = next;
        let gone = false;
        while (slot <= now) {
          try {
            await runUserOp(this.deps, { kind: 'freeze', user: { id: userId }, count: earn.amount, slot });
          } catch (err) {
            if (err instanceof AppError && err.code === 'NOT_FOUND') {
              await this.deps.redis.zrem(k, member);
              gone = true;
              break;
            }
            throw err;
          }
          n++;
          slot += earn.intervalMs;
        }
        if (!gone) await this.deps.redis.zadd(k, 'XX', slot, member);
      }
    }
    return n;
  }

  // ---------------------------------------------------------------- lifecycle (from configuration)

  /** Markers of lifecycle work already done (an optimisation: the work itself is idempotent). */
  private async doneMarkers(fields: string[]): Promise<Map<string, string | null>> {
    const out = new Map<string, string | null>();
    if (!fields.length) return out;
    const vals = await this.deps.redis.hmget(this.deps.keys.sched.done, ...fields);
    for (const [i, f] of fields.entries()) out.set(f, vals[i] ?? null);
    return out;
  }

  /** points.boost_started / points.boost_finished, once each, at 00:00 UTC boundaries (semantics §5.8). */
  private async boosts(): Promise<number> {
    const snap = this.deps.catalog.snapshot;
    if (!anySubscriber(snap, ['points.boost_started', 'points.boost_finished'])) return 0;
    const now = this.deps.clock.now();
    const due: Array<{ marker: string; event: WebhookEvent }> = [];
    for (const sys of snap.systems) {
      for (const b of sys.boosts) {
        const created = ms(b.created);
        const startAt = Date.parse(`${b.start}T00:00:00Z`);
        const endAt = b.end === null ? Number.POSITIVE_INFINITY : Date.parse(`${b.end}T00:00:00Z`) + DAY;
        const startedAt = Math.max(startAt, created);
        if (now >= startedAt && startedAt < endAt) {
          due.push({ marker: `boost|${b.id}|started`, event: boostEvent(sys, b, 'started', startedAt) });
        }
        if (now >= endAt && created < endAt) {
          due.push({ marker: `boost|${b.id}|finished`, event: boostEvent(sys, b, 'finished', endAt) });
        }
      }
    }
    const done = await this.doneMarkers(due.map((d) => d.marker));
    const todo = due.filter((d) => !done.get(d.marker));
    if (!todo.length) return 0;
    await recordWebhookEvents(
      this.deps.db,
      todo.map((d) => d.event),
      now,
    );
    await this.deps.redis.hset(this.deps.keys.sched.done, ...todo.flatMap((d) => [d.marker, '1']));
    return todo.length;
  }

  /**
   * Leaderboard runs: leaderboard.started when a run begins (or at activation), finalisation 12 hours
   * after a run's last UTC day — snapshot to Postgres, then leaderboard.finished per group. Boards
   * move from scheduled to active and to finished by the clock (leaderboardStatus); what the job adds
   * is the snapshot and the webhooks. Activity stops counting at finalisation (user-op boardsFor).
   */
  private async leaderboards(): Promise<{ started: number; finalised: number }> {
    const snap = this.deps.catalog.snapshot;
    const now = this.deps.clock.now();
    let started = 0;
    let finalised = 0;
    const boards = snap.leaderboards.filter((b) => {
      const s = leaderboardStatus(b, now);
      return (s === 'active' || s === 'finished') && b.activatedAt;
    });
    const markers = await this.doneMarkers(boards.flatMap((b) => [`lb|${b.id}|started`, `lb|${b.id}|final`]));
    for (const b of boards) {
      const first = firstRunIndex(b);
      // Runs that have begun (UTC date), from the one in progress at activation.
      const today = utcDate(now);
      let si = Number(markers.get(`lb|${b.id}|started`) ?? first);
      for (;;) {
        const run = runByIndex(b, si);
        if (!run || run.start > today) break;
        await this.runStarted(b, run);
        started++;
        si++;
        await this.deps.redis.hset(this.deps.keys.sched.done, `lb|${b.id}|started`, String(si));
      }
      let fi = Number(markers.get(`lb|${b.id}|final`) ?? first);
      for (;;) {
        const run = runByIndex(b, fi);
        if (!run) break;
        const at = runFinalisedAt(b, run, now);
        if (at === null) break;
        await finaliseRun(this.deps, b, run);
        await this.runFinished(b, run, at);
        await dropFinalisedRun(this.deps, b, run);
        finalised++;
        fi++;
        await this.deps.redis.hset(this.deps.keys.sched.done, `lb|${b.id}|final`, String(fi));
      }
    }
    return { started, finalised };
  }

  /** Sends the due coalesced leaderboard.changed notifications with the group's top 10 at sending time. */
  private async boardChangedDue(): Promise<number> {
    const k = this.deps.keys.sched;
    let n = 0;
    for (;;) {
      const due = await this.claim(k.boardChanged);
      if (!due.length) break;
      for (const [member] of due) {
        const snap = this.deps.catalog.snapshot;
        const [boardId, runStart, group] = splitMember(member, 3);
        const b = snap.leaderboardsById.get(boardId);
        const run = b ? runContaining(b, runStart) : null;
        const dirty = Number((await this.deps.redis.hget(k.done, `lbd|${member}`)) ?? 0);
        if (b && run && dirty > 0) {
          const now = this.deps.clock.now();
          const last = (await this.deps.redis.hget(k.done, `lbc|${member}`)) ?? '0';
          const top = await rankingsWindow(this.deps, b, run, group, { offset: 0, limit: 10 });
          await recordWebhookEvents(
            this.deps.db,
            [
              {
                id: webhookEventId(`leaderboard.changed|${member}|${last}`),
                type: 'leaderboard.changed',
                timestamp: now,
                fields: {
                  leaderboard: leaderboardPayload(
                    snap,
                    b,
                    run,
                    leaderboardStatus(b, now),
                    group,
                    await withNames(this.deps, top),
                  ),
                },
              },
            ],
            now,
          );
          await this.deps.redis.hset(k.done, `lbc|${member}`, String(now));
          n++;
        }
        // Changes that arrived while sending keep the member due (a minute later); otherwise it goes.
        const left = await this.deps.redis.hincrby(k.done, `lbd|${member}`, -dirty);
        if (left > 0) {
          await this.deps.redis.zadd(k.boardChanged, this.deps.clock.now() + 60_000, member);
        } else {
          await this.deps.redis.zrem(k.boardChanged, member);
          await this.deps.redis.hdel(k.done, `lbd|${member}`);
        }
      }
    }
    return n;
  }

  private async runStarted(b: LeaderboardRow, run: Run): Promise<void> {
    const snap = this.deps.catalog.snapshot;
    if (!anySubscriber(snap, ['leaderboard.started'])) return;
    const at = Math.max(Date.parse(`${run.start}T00:00:00Z`), ms(b.activatedAt));
    await recordWebhookEvents(
      this.deps.db,
      [
        {
          id: webhookEventId(`leaderboard.started|${b.id}|${ms(b.activatedAt)}|${run.start}`),
          type: 'leaderboard.started',
          timestamp: at,
          fields: { leaderboard: leaderboardPayload(snap, b, run, 'active', null, []) },
        },
      ],
      this.deps.clock.now(),
    );
  }

  private async runFinished(b: LeaderboardRow, run: Run, at: number): Promise<void> {
    const snap = this.deps.catalog.snapshot;
    if (!anySubscriber(snap, ['leaderboard.finished'])) return;
    const rows = await this.deps.db
      .select()
      .from(leaderboardRunResults)
      .where(
        and(eq(leaderboardRunResults.leaderboardId, b.id), eq(leaderboardRunResults.runStart, run.start)),
      )
      .orderBy(asc(leaderboardRunResults.groupKey), asc(leaderboardRunResults.rank));
    const groups = new Map<string, Ranked[]>();
    if (!b.breakdownAttributes.length) groups.set('', []);
    for (const r of rows) {
      const list = groups.get(r.groupKey) ?? [];
      if (list.length < 10) list.push({ userId: r.userId, rank: r.rank, value: r.value });
      groups.set(r.groupKey, list);
    }
    const status =
      run.end !== null && b.end !== null && run.end >= b.end ? 'finished' : leaderboardStatus(b, at);
    const events: WebhookEvent[] = [];
    for (const [group, top] of groups) {
      events.push({
        id: webhookEventId(`leaderboard.finished|${b.id}|${run.start}|${group}`),
        type: 'leaderboard.finished',
        timestamp: at,
        fields: {
          leaderboard: leaderboardPayload(snap, b, run, status, group, await withNames(this.deps, top)),
        },
      });
    }
    await recordWebhookEvents(this.deps.db, events, this.deps.clock.now());
  }
}

/**
 * When a run's rankings became final (semantics §6.2): 12:00 UTC the day after its last date, or when
 * an operator finished the board, whichever is first; null while the run is still open.
 */
export function runFinalisedAt(board: LeaderboardRow, run: Run, nowMs: number): number | null {
  const byEnd = run.end !== null ? runFinalizationMs(run.end) : Number.POSITIVE_INFINITY;
  const byOperator =
    board.status === 'finished' && board.finishedAt ? board.finishedAt.getTime() : Number.POSITIVE_INFINITY;
  const at = Math.min(byEnd, byOperator);
  return at <= nowMs ? at : null;
}

/** The first run that can hold activity: the one in progress a day before activation (local dates lag UTC). */
function firstRunIndex(b: LeaderboardRow): number {
  if (!b.activatedAt) return 0;
  const d = addDays(utcDate(b.activatedAt.getTime()), -1);
  const clamped = d < b.start ? b.start : b.end !== null && d > b.end ? b.end : d;
  return runContaining(b, clamped)?.index ?? 0;
}

/** Splits a member on its first n - 1 bars (user ids may contain bars). */
function splitMember(member: string, n: number): [string, string, string] {
  const out: string[] = [];
  let rest = member;
  for (let i = 0; i < n - 1; i++) {
    const at = rest.indexOf('|');
    out.push(rest.slice(0, at));
    rest = rest.slice(at + 1);
  }
  out.push(rest);
  return out as [string, string, string];
}
