import type { BoostRow, PointsSystemConfig, Snapshot, TriggerRow } from '../catalog/snapshot';
import { boostStatus } from '../engine/boost-status';
import type { LuaAward } from '../services/user-op';
import { attributeFilters, isoMs, memo } from './common';

// PointsLevel and the system's base fields are in engine/levels.ts: the user script's plan carries
// them so that webhooks describe the configuration at commit.

/** PointsTrigger; deleted triggers show as archived. */
export function triggerResponse(snap: Snapshot, t: TriggerRow) {
  return memo(snap, `t:${t.id}`, () => buildTrigger(snap, t));
}

function buildTrigger(snap: Snapshot, t: TriggerRow) {
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

/** PointsBoost, with the status on `today` (user's local date or UTC date by context). */
export function boostResponse(b: BoostRow, today: string) {
  return {
    id: b.id,
    name: b.name,
    status: boostStatus(b.start, b.end, today),
    start: b.start,
    end: b.end,
    multiplier: b.multiplier,
    rounding: b.rounding,
  };
}

/** PointsAward from a stored award. */
export function awardResponse(snap: Snapshot, sys: PointsSystemConfig, a: LuaAward, today: string) {
  const trigger = snap.triggersById.get(a.trigger);
  const boosts = a.boosts
    .map((id) => sys.boosts.find((b) => b.id === id))
    .filter((b): b is BoostRow => b !== undefined)
    .map((b) => boostResponse(b, today));
  return {
    id: a.id,
    awarded: a.awarded,
    date: isoMs(a.date),
    total: a.total,
    trigger: trigger ? triggerResponse(snap, trigger) : { id: a.trigger, status: 'archived' },
    boosts,
  };
}
