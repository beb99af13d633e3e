import type { BoostRow, Snapshot, TriggerRow } from '../catalog/snapshot';
import type { StoredFilter } from '../db/schema';

// The PointsTrigger object and a boost's configured fields, shared by responses (src/wire/points.ts)
// and the user script's wire side channel (plan.ts), which carries them so that webhooks describe the
// triggers and boosts of an award as configured when the request committed (semantics §0).

/** Attribute filters as responses show them: [{key, value}] (a deleted attribute's key is ''). */
export function attributeFilters(snap: Snapshot, filters: StoredFilter[]) {
  return filters.map((f) => ({
    key: snap.attributesById.get(f.attributeId)?.key ?? '',
    value: f.attributeValue,
  }));
}

/** PointsTrigger as configured in `snap`; deleted triggers show as archived. */
export function triggerShape(snap: Snapshot, t: TriggerRow): Record<string, unknown> {
  const out: Record<string, unknown> = {
    id: t.id,
    type: t.type,
    points: t.points,
    status: t.deletedAt ? 'archived' : t.status,
    created: t.created.toISOString(),
    updated: t.updated.toISOString(),
    userAttributes: attributeFilters(snap, t.userAttributes),
  };
  if (t.type === 'metric') {
    out.metricId = t.metricId;
    out.metricName = (t.metricId && snap.metricsById.get(t.metricId)?.name) ?? '';
    out.metricThreshold = t.metricThreshold;
    const ef = attributeFilters(snap, t.eventAttributes);
    out.eventAttributes = ef;
    if (ef.length) out.eventAttribute = ef[0];
  }
  if (t.type === 'streak') out.streakLengthThreshold = t.streakLength;
  if (t.type === 'achievement') {
    out.achievementId = t.achievementId;
    out.achievementName = (t.achievementId && snap.achievementsById.get(t.achievementId)?.name) ?? '';
  }
  if (t.type === 'time') {
    out.timeUnit = t.timeUnit === 'hours' ? 'hour' : 'day';
    out.timeInterval = t.timeInterval;
  }
  return out;
}

/** A boost's fields as PointsBoost shows them, but its status (which depends on the date shown for). */
export type BoostFields = Pick<BoostRow, 'id' | 'name' | 'start' | 'end' | 'multiplier' | 'rounding'>;

export const boostFields = (b: BoostRow): BoostFields => ({
  id: b.id,
  name: b.name,
  start: b.start,
  end: b.end,
  multiplier: b.multiplier,
  rounding: b.rounding,
});
