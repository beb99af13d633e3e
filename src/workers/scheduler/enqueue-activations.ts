import type { Deps } from '../../deps';
import { crossSlotPipeline } from '../../redis/batch';
import { activeTimeTriggers, autoEarn, ms, triggerIntervalMs } from './due';

/**
 * When a time trigger is activated or auto-earn is enabled, every existing user is entered once
 * (batches over the per-shard user indexes; members are added with NX, so repeating adds nothing).
 * Users created after the scan are entered by the history writer. The pass runs twice (at activation and
 * again a few minutes later) to cover users whose first record was written while the activation
 * was not yet visible to the history writer.
 */
export async function enqueueActivations(deps: Deps): Promise<void> {
  const snap = deps.catalog.snapshot;
  const now = deps.clock.now();
  const k = deps.keys.sched;
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
  const done = await deps.redis.hmget(k.done, ...jobs.map((j) => j.marker));
  for (const [i, job] of jobs.entries()) {
    const level = Number(done[i] ?? 0);
    const want = now >= job.since + 5 * 60_000 ? 2 : 1;
    if (level >= want) continue;
    const key = job.marker.startsWith('tt|') ? k.timeTriggers : k.freezes;
    // Every user from the per-shard user indexes, which the user script writes as it creates a
    // user: a user created while the activation commits is found here even when the history
    // writer has not written it to Postgres yet (nor seen the activation when it does).
    for (let shard = 0; shard < deps.keys.shards; shard++) {
      for (let from = 0; ; from += 1000) {
        const flat = await deps.redis.zrange(deps.keys.shardUsers(shard), from, from + 999, 'WITHSCORES');
        if (!flat.length) break;
        const pipe = crossSlotPipeline(deps.redis);
        for (let i = 0; i < flat.length; i += 2) {
          const [score, member] = job.add(flat[i]!, Number(flat[i + 1]));
          pipe.zadd(key, 'NX', score, member);
        }
        await pipe.exec();
        if (flat.length < 2000) break;
      }
    }
    await deps.redis.hset(k.done, job.marker, String(want));
  }
}
