import { runUserOp } from '../../services/user-op';
import { AppError } from '../../errors';
import { autoEarn, claimDue, type JobContext, nextSlot, splitMember } from './due';

/** Streak freeze auto-earn: every due slot of every user, once each. */
export async function freezes(ctx: JobContext): Promise<number> {
  const { deps } = ctx;
  const k = deps.keys.sched.freezes;
  let n = 0;
  for (;;) {
    const due = await claimDue(ctx, k);
    if (!due.length) break;
    for (const [member] of due) {
      const earn = autoEarn(deps.catalog.snapshot);
      const [since, userId] = splitMember(member, 2);
      if (!earn || String(earn.since) !== since) {
        await deps.redis.zrem(k, member);
        continue;
      }
      const now = deps.clock.now();
      const next = await nextSlot(deps, userId, 'fz', Number(since), earn.intervalMs);
      if (next === null) {
        await deps.redis.zrem(k, member);
        continue;
      }
      let slot = next;
      let gone = false;
      while (slot <= now) {
        try {
          await runUserOp(deps, { kind: 'freeze', user: { id: userId }, count: earn.amount, slot });
        } catch (err) {
          if (err instanceof AppError && err.code === 'NOT_FOUND') {
            await deps.redis.zrem(k, member);
            gone = true;
            break;
          }
          throw err;
        }
        n++;
        slot += earn.intervalMs;
      }
      if (!gone) await deps.redis.zadd(k, 'XX', slot, member);
    }
  }
  return n;
}
