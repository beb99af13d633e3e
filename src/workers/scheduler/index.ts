// The background scheduler (semantics §0 "Background work", §4.5, §4.6, §5.6, §5.8, §6.2).
//
// Per-user due work is indexed in sorted sets by due time (src/redis/keys.ts `sched`), never found
// by scanning users:
//   time triggers  "<triggerId>|<activatedAtMs>|<userId>" -> next slot
//   streaks        userId -> when the streak next needs a rollover (local midnight after the period
//                  following the last met-or-bridged one)
//   freezes        "<autoEarnEnabledAtMs>|<userId>" -> next auto-earn slot
// Members are entered by the history writer from outbox records (user creation, every streak
// change; see schedule-hook.ts) and by a one-off pass over the per-shard user indexes when a time trigger is
// activated or auto-earn is enabled.
//
// Exactly once per slot: a copy claims due members atomically (lua/claimDue.lua re-scores them to a
// lease, so other copies skip them), and the work itself is idempotent per slot inside the user's
// script (time-trigger slot and auto-earn slot markers; a rollover resolves a period once), so a
// copy that dies after claiming only delays the slot until the lease expires, never loses or
// doubles it. Lifecycle work (boost start/finish, leaderboard run start/finalisation) is computed
// from the configuration (few rows) and recorded with stable ids, so repeating it changes nothing.
//
// One file per job; due.ts holds what they share (claiming, markers, slots).
import { resumeStreakEpoch, retryStreakRecomputes } from '../../services/streak-recompute';
import { observeSchedulerPass } from '../../metrics/hooks';
import { drainBoardChanges } from '../board-changes';
import { worker } from '../runner';
import { boardChangedDue } from './board-changed';
import { boosts } from './boosts';
import type { JobContext, SchedulerOptions } from './due';
import { enqueueActivations } from './enqueue-activations';
import { freezes } from './freezes';
import { leaderboardRuns } from './leaderboard-runs';
import { streaks } from './streaks';
import { timeTriggers } from './time-triggers';

export { triggerIntervalMs, type SchedulerOptions } from './due';
export { scheduleHook } from './schedule-hook';

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

/** Runs every job once per pass, every SCHEDULER_INTERVAL_MS, in any number of copies. */
export class Scheduler extends worker<SchedulerOptions>({
  source: 'scheduler',
  message: 'scheduler pass failed; retrying',
  backoff: (_opts, deps) => ({ backoffMs: deps.config.SCHEDULER_INTERVAL_MS }),
}) {
  private readonly ctx: JobContext = { deps: this.deps, opts: this.opts };

  protected async poll(): Promise<number> {
    await this.runOnce();
    return this.ctx.deps.config.SCHEDULER_INTERVAL_MS;
  }

  /** One pass over every kind of due work, at the clock's now. */
  async runOnce(): Promise<SchedulerPass> {
    const { deps } = this.ctx;
    const started = performance.now();
    await enqueueActivations(deps);
    await resumeStreakEpoch(deps);
    await retryStreakRecomputes(deps);
    const boostEvents = await boosts(deps);
    const runs = await leaderboardRuns(deps);
    let boardChanges = await drainBoardChanges(deps);
    boardChanges += await boardChangedDue(this.ctx);
    const grants = await timeTriggers(this.ctx);
    const rollovers = await streaks(this.ctx);
    const freezeSlots = await freezes(this.ctx);
    const pass: SchedulerPass = {
      grants,
      rollovers,
      freezeSlots,
      boostEvents,
      runsStarted: runs.started,
      runsFinalised: runs.finalised,
      boardChanges,
    };
    observeSchedulerPass(pass, performance.now() - started);
    return pass;
  }
}
