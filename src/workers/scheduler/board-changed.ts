import { leaderboardStatus } from '../../engine/leaderboard-status';
import { rankingsWindow } from '../../services/leaderboards';
import { runContaining } from '../../engine/runs';
import { leaderboardPayload, recordWebhookEvents, webhookEventId, withNames } from '../webhook-events';
import { claimDue, type JobContext, splitMember } from './due';

/** Sends the due coalesced leaderboard.changed notifications with the group's top 10 at sending time. */
export async function boardChangedDue(ctx: JobContext): Promise<number> {
  const { deps } = ctx;
  const k = deps.keys.sched;
  let n = 0;
  for (;;) {
    const due = await claimDue(ctx, k.boardChanged);
    if (!due.length) break;
    for (const [member] of due) {
      const snap = deps.catalog.snapshot;
      const [boardId, runStart, group] = splitMember(member, 3);
      const b = snap.leaderboardsById.get(boardId);
      const run = b ? runContaining(b, runStart) : null;
      const dirty = Number((await deps.redis.hget(k.done, `lbd|${member}`)) ?? 0);
      if (b && run && dirty > 0) {
        const now = deps.clock.now();
        const last = (await deps.redis.hget(k.done, `lbc|${member}`)) ?? '0';
        const top = await rankingsWindow(deps, b, run, group, { offset: 0, limit: 10 });
        await recordWebhookEvents(
          deps.db,
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
                  await withNames(deps, top),
                ),
              },
            },
          ],
          now,
        );
        await deps.redis.hset(k.done, `lbc|${member}`, String(now));
        n++;
      }
      // Changes that arrived while sending keep the member due (a minute later); otherwise it goes.
      const left = await deps.redis.hincrby(k.done, `lbd|${member}`, -dirty);
      if (left > 0) {
        await deps.redis.zadd(k.boardChanged, deps.clock.now() + 60_000, member);
      } else {
        await deps.redis.zrem(k.boardChanged, member);
        await deps.redis.hdel(k.done, `lbd|${member}`);
      }
    }
  }
  return n;
}
