import { runUserOp } from '../../services/user-op';
import { AppError } from '../../errors';
import { claimDue, type JobContext } from './due';

/** Streak rollovers: every user whose streak period has ended since it was last resolved. */
export async function streaks(ctx: JobContext): Promise<number> {
  const { deps } = ctx;
  const k = deps.keys.sched.streaks;
  const snap = deps.catalog.snapshot;
  let n = 0;
  for (;;) {
    const due = await claimDue(ctx, k);
    if (!due.length) break;
    for (const [userId] of due) {
      if (!snap.streak.enabled) {
        await deps.redis.zrem(k, userId);
        continue;
      }
      try {
        // A no-op upsert: the user's script resolves every ended period (freeze, pause or break)
        // and writes the outcome, webhooks included, to the outbox; the history writer then
        // re-scores the member from the new state (or removes it after a break).
        await runUserOp(deps, { kind: 'upsert', user: { id: userId }, mustExist: true });
        n++;
      } catch (err) {
        if (err instanceof AppError && err.code === 'NOT_FOUND') await deps.redis.zrem(k, userId);
        else throw err;
      }
    }
  }
  return n;
}
