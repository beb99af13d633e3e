import { runUserOp } from '../../services/user-op';
import { AppError } from '../../errors';
import { claimDue, type JobContext, ms, nextSlot, splitMember, triggerIntervalMs } from './due';

/** Time-trigger grants: every due slot of every (trigger, user), each dated at its slot. */
export async function timeTriggers(ctx: JobContext): Promise<number> {
  const k = ctx.deps.keys.sched.timeTriggers;
  let grants = 0;
  for (;;) {
    const due = await claimDue(ctx, k);
    if (!due.length) break;
    for (const [member] of due) grants += await grantSlots(ctx, k, member);
  }
  return grants;
}

/** Grants every due slot of one (trigger, user), each dated at its slot, then re-scores the member. */
async function grantSlots({ deps, opts }: JobContext, key: string, member: string): Promise<number> {
  const [triggerId, act, userId] = splitMember(member, 3);
  const t = deps.catalog.snapshot.triggersById.get(triggerId);
  const every = t ? triggerIntervalMs(t) : 0;
  if (!t || t.deletedAt || t.status !== 'active' || String(ms(t.activatedAt)) !== act || every <= 0) {
    await deps.redis.zrem(key, member); // deactivated, re-activated (new anchor) or deleted
    return 0;
  }
  const now = deps.clock.now();
  const next = await nextSlot(deps, userId, `tt:${triggerId}`, Number(act), every);
  if (next === null) {
    await deps.redis.zrem(key, member);
    return 0;
  }
  let slot = next;
  let n = 0;
  const max = opts.maxSlotsPerMember ?? 1000;
  while (slot <= now && n < max) {
    try {
      await runUserOp(deps, {
        kind: 'grant',
        user: { id: userId },
        triggerIds: [triggerId],
        at: slot,
      });
    } catch (err) {
      if (err instanceof AppError && err.code === 'NOT_FOUND') {
        await deps.redis.zrem(key, member);
        return n;
      }
      throw err; // the lease expires and the slot is retried
    }
    n++;
    slot += every;
  }
  await deps.redis.zadd(key, 'XX', slot, member);
  return n;
}
