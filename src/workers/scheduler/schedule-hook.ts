import type { Deps } from '../../deps';
import { periodExpiry } from '../../engine/streak-expiry';
import { crossSlotPipeline } from '../../redis/batch';
import type { OutboxEntry, RecordHook } from '../history-writer';
import { activeTimeTriggers, autoEarn, ms, triggerIntervalMs } from './due';

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
      // Due when the period after the last met-or-bridged one ends (its rollover).
      streaks.set(r.user, periodExpiry(r.freq ?? snap.streak.frequency, s.lastMet + 1, r.tz));
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
