import type { Deps } from '../../deps';
import { anySubscriber, boostEvent, recordWebhookEvents, type WebhookEvent } from '../webhook-events';
import { DAY, doneMarkers, ms } from './due';

/** points.boost_started / points.boost_finished, once each, at 00:00 UTC boundaries (semantics §5.8). */
export async function boosts(deps: Deps): Promise<number> {
  const snap = deps.catalog.snapshot;
  if (!anySubscriber(snap, ['points.boost_started', 'points.boost_finished'])) return 0;
  const now = deps.clock.now();
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
  const done = await doneMarkers(
    deps,
    due.map((d) => d.marker),
  );
  const todo = due.filter((d) => !done.get(d.marker));
  if (!todo.length) return 0;
  await recordWebhookEvents(
    deps.db,
    todo.map((d) => d.event),
    now,
  );
  await deps.redis.hset(deps.keys.sched.done, ...todo.flatMap((d) => [d.marker, '1']));
  return todo.length;
}
